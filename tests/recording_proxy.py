"""A recording HTTP proxy for a real model server.

A real server shows nothing of what it was sent, yet the real-model tests
must assert exactly that (every request carried its reply schema) and what
came back (every reply met it). This forwards each request unchanged to the
real server and records both bodies. Loopback only; one upstream.
"""

from __future__ import annotations

import json
import threading
import urllib.error
import urllib.request
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Exchange:
    path: str
    request: Any
    status: int
    response: Any


class RecordingProxy:
    def __init__(self, upstream: str, *, timeout_s: float = 900.0):
        self.upstream = upstream.rstrip("/")
        self.timeout_s = timeout_s
        self.exchanges: list[Exchange] = []
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def completions(self) -> list[Exchange]:
        with self._lock:
            return [e for e in self.exchanges if e.path.startswith("/v1/chat/completions")]

    def __enter__(self) -> RecordingProxy:
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.0"

            def log_message(self, *args: Any) -> None:
                pass

            def _forward(self, body: bytes | None) -> None:
                req = urllib.request.Request(
                    proxy.upstream + self.path, data=body, method=self.command,
                    headers={"content-type": "application/json"} if body is not None else {},
                )
                try:
                    with urllib.request.urlopen(req, timeout=proxy.timeout_s) as r:
                        status, data = r.status, r.read()
                except urllib.error.HTTPError as e:
                    status, data = e.code, e.read()
                try:
                    parsed_req = json.loads(body) if body else None
                except ValueError:
                    parsed_req = None
                try:
                    parsed = json.loads(data)
                except ValueError:
                    parsed = None
                with proxy._lock:
                    proxy.exchanges.append(Exchange(self.path, parsed_req, status, parsed))
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:  # noqa: N802
                self._forward(None)

            def do_POST(self) -> None:  # noqa: N802
                self._forward(self.rfile.read(int(self.headers.get("content-length") or 0)))

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
