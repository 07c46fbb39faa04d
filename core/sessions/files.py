"""Transcript files, as a person points the CLI at them.

Two shapes are read: a JSON object `{"session_id", "messages",
"taint_timeline"?, "interactive"?}`, or JSONL with one message per line (the
session id is then the file's stem, and with no timeline every intervention
classifies untrusted — fail closed). The sample session bundled with the
package is what `mine` and `demo` show on a fresh machine.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

import msgspec

from mecha.core.errors import InvalidInput
from mecha.core.sessions.transcript import Message, TaintCheckpoint


class SessionFile(msgspec.Struct):
    session_id: str
    messages: list[Message]
    taint_timeline: list[TaintCheckpoint] | None = None
    interactive: bool = True


_message = msgspec.json.Decoder(Message)
_session = msgspec.json.Decoder(SessionFile)


def load_transcript(path: Path) -> SessionFile:
    """A transcript file in either shape; a clear `InvalidInput` naming the
    file (and line, for JSONL) when it is neither."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise InvalidInput(f"{path}: {exc.strerror or exc}") from None
    return parse_transcript(path, data)


def parse_transcript(path: Path, data: bytes) -> SessionFile:
    """`load_transcript` on bytes already read (`path` names the file in
    errors and gives a JSONL file its session id)."""
    stripped = data.lstrip()
    if path.suffix == ".json" or (stripped.startswith(b"{") and b'"messages"' in stripped[:4096] and path.suffix != ".jsonl"):
        try:
            return _session.decode(data)
        except msgspec.DecodeError as exc:
            raise InvalidInput(f"{path}: reading as a mecha transcript: not a session object: {exc}") from None
    messages = []
    for number, line in enumerate(data.splitlines(), 1):
        if not line.strip():
            continue
        try:
            messages.append(_message.decode(line))
        except msgspec.DecodeError as exc:
            raise InvalidInput(f"{path}:{number}: reading as a mecha transcript: not a message: {exc}") from None
    return SessionFile(session_id=path.stem, messages=messages)


def samples_dir() -> Path:
    return Path(str(resources.files("mecha.core") / "samples"))


def sample_session_path() -> Path:
    return samples_dir() / "session.json"
