"""The plain case of the wire, read and written with the standard library.

The harness endpoint's first stage (`mecha.sidecar.first_stage`) answers a
run's first requests before msgspec is imported, and hands everything else to
the full server. This module is what it knows of the wire, and it knows only
the *plain* case: whatever it does not recognise, it refuses (returns `None`
or `REFUSED`), and the full server — `framing`, `jsonrpc`, `initialize` and
`methods`, which stay the wire's definition — reads the same bytes as if the
first stage had never looked at them.

Plain means what a well-behaved client sends, and what this module can be
sure the full server reads the same way:

- a frame is exactly `Content-Length: N\\r\\n\\r\\n` and N bytes, N under a
  mebibyte (any other header, case or spacing is the framing module's to
  judge);
- a body is strict UTF-8 JSON without duplicate keys, `NaN`/`Infinity`,
  lone surrogates, integers outside 64 bits, non-finite numbers or deep
  nesting — each a place where Python's `json` and msgspec could disagree;
- an envelope has `"jsonrpc": "2.0"`, a string `method`, at most `id` and
  `params` besides, and an `id` (if any) that is an integer or a short
  printable-ASCII string, so it is written back exactly as msgspec would;
- params are spelled exactly as `initialize.InitializeParams` and
  `methods.RulesPromptBlockParams` read them (a test holds the key lists
  here to those Structs).

What this module writes is a result frame around a result the full server
encoded itself (`blockcache`): `{"jsonrpc":"2.0","id":…,"result":…}`, byte
for byte the envelope `jsonrpc.encode_result` makes.
"""

from __future__ import annotations

try:
    # The `json` package's own C scanner, without the package: importing
    # `json` compiles six regular expressions, a tenth of a bare interpreter's
    # start, for a decoder this module drives with the same settings.
    from _json import make_scanner as _make_scanner
except ImportError:  # pragma: no cover - an interpreter without the accelerator
    from json.scanner import make_scanner as _make_scanner

#: The one header of the base protocol, as every endpoint writes it (and
#: `framing` reads it, in any case).
CONTENT_LENGTH = b"Content-Length"
_FRAME_HEAD = CONTENT_LENGTH + b": %d\r\n\r\n"


def encode_frame(body: bytes) -> bytes:
    """`body` as one frame: the only way this project writes one."""
    return _FRAME_HEAD % len(body) + body


#: A plain frame header: this, 1–7 digits, `\r\n\r\n`. Matched by hand
#: rather than by a regular expression, whose compilation alone costs the
#: first stage a measurable share of its start.
_HEADER_NAME = CONTENT_LENGTH + b": "
_HEADER_END = b"\r\n\r\n"
_MAX_DIGITS = 7
#: Largest plain body: the requests the first stage serves are tens of bytes.
MAX_PLAIN_BODY = 1 << 20

#: `plain_frame`: the buffer holds the start of what may be a plain frame.
INCOMPLETE = "incomplete"

#: Returned where a value is not the plain case: hand the message over.
REFUSED = object()
#: `Plain.params` of a message that has none.
ABSENT = object()

_MAX_DEPTH = 32
_INT_RANGE = range(-(1 << 63), 1 << 63)
_MAX_ID_CHARS = 128

#: The keys `initialize.InitializeParams` and its parts read (others are
#: ignored there, as here).
INITIALIZE_PARAMS_KEYS = ("initializationOptions", "processId", "clientInfo")
CLIENT_INFO_KEYS = ("name", "version")
#: Every key of `initialize.InitializationOptions`; any other key there is
#: refused rather than guessed at.
INITIALIZATION_OPTIONS_KEYS = ("learningDir", "finalAnswerNudge", "harnessVoices", "model")
#: Every key of `initializationOptions.model` (`providers.config.INIT_KEYS`);
#: an `initialize` with any other is handed over, so the full server names it.
MODEL_OPTION_KEYS = (
    "api", "baseUrl", "model", "apiKeyEnv", "timeoutS", "maxRetries", "maxBackoffS", "structured", "concurrency",
)
#: The keys `methods.RulesPromptBlockParams` reads.
RULES_PROMPT_BLOCK_KEYS = ("domain", "project")


def plain_frame(buf: bytes | bytearray, pos: int) -> tuple[int, int] | str | None:
    """`(start, end)` of the body of the plain frame at `buf[pos:]`;
    `INCOMPLETE` while what is there could still become one; `None` when
    it is not a plain frame."""
    head = bytes(buf[pos : pos + len(_HEADER_NAME) + _MAX_DIGITS + len(_HEADER_END)])
    if not head.startswith(_HEADER_NAME):
        return INCOMPLETE if _HEADER_NAME.startswith(head) else None
    rest = head[len(_HEADER_NAME) :]
    digits = len(rest) - len(rest.lstrip(b"0123456789"))
    tail = rest[digits:]
    if digits > _MAX_DIGITS or (digits == 0 and tail):
        return None
    if not tail.startswith(_HEADER_END):
        # Shorter than the terminator only where the input ends for now.
        return INCOMPLETE if len(tail) < len(_HEADER_END) and _HEADER_END.startswith(tail) else None
    length = int(rest[:digits])
    if length > MAX_PLAIN_BODY:
        return None
    start = pos + len(_HEADER_NAME) + digits + len(_HEADER_END)
    if len(buf) < start + length:
        return INCOMPLETE
    return start, start + length


class Plain:
    """One plain JSON-RPC message: `id` is the id as it is written back
    (`None` for a notification), `params` the decoded params or `ABSENT`."""

    __slots__ = ("id", "method", "params")

    def __init__(self, id: bytes | None, method: str, params: object):
        self.id = id
        self.method = method
        self.params = params


def _object(pairs: list[tuple[str, object]]) -> dict[str, object]:
    out = dict(pairs)
    if len(out) != len(pairs):
        raise ValueError("duplicate key")
    return out


def _constant(name: str) -> object:
    raise ValueError(f"{name} is not JSON")


def _plain_value(value: object, depth: int = 0) -> bool:
    """Whether `value` (decoded JSON) is read the same by msgspec."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:  # a lone surrogate from a `\\ud800` escape
            return False
        return True
    if isinstance(value, bool) or value is None:
        return True
    if isinstance(value, int):
        return value in _INT_RANGE
    if isinstance(value, float):
        return value - value == 0.0  # finite
    if depth >= _MAX_DEPTH:
        return False
    if isinstance(value, list):
        return all(_plain_value(v, depth + 1) for v in value)
    if isinstance(value, dict):
        return all(_plain_value(k) and _plain_value(v, depth + 1) for k, v in value.items())
    return False


def _plain_id_string(value: str) -> bool:
    """Printable ASCII with nothing to escape: written back as it is."""
    return (
        0 < len(value) <= _MAX_ID_CHARS
        and value.isascii()
        and value.isprintable()
        and '"' not in value
        and "\\" not in value
    )


def _id_bytes(value: object) -> bytes | None:
    if isinstance(value, int) and not isinstance(value, bool) and value in _INT_RANGE:
        return b"%d" % value
    if isinstance(value, str) and _plain_id_string(value):
        return b'"' + value.encode("ascii") + b'"'
    return None


class _Strict:
    """The settings `json.loads(text, object_pairs_hook=_object,
    parse_constant=_constant)` gives its scanner."""

    strict = True
    object_hook = None
    object_pairs_hook = staticmethod(_object)
    parse_float = float
    parse_int = int
    parse_constant = staticmethod(_constant)
    memo: dict[str, str] = {}


_scan = _make_scanner(_Strict())  # type: ignore[arg-type]  # the scanner reads only these attributes

#: What JSON counts as whitespace around a value.
_JSON_SPACE = " \t\n\r"


def loads(text: str) -> object:
    """`json.loads(text)` with duplicate keys and `NaN`/`Infinity` refused:
    `ValueError` (or `RecursionError`) for anything else than one value."""
    text = text.strip(_JSON_SPACE)
    try:
        value, end = _scan(text, 0)
    except StopIteration:
        raise ValueError("not JSON") from None
    if end != len(text):
        raise ValueError("extra data after the JSON value")
    return value


def decode_plain(body: bytes) -> Plain | None:
    """The message in `body` if it is a plain request or notification."""
    try:
        obj = loads(body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return None
    if not isinstance(obj, dict) or obj.get("jsonrpc") != "2.0" or not _plain_value(obj):
        return None
    method = obj.get("method")
    if not isinstance(method, str) or not set(obj) <= {"jsonrpc", "id", "method", "params"}:
        return None
    id: bytes | None = None
    if "id" in obj:
        id = _id_bytes(obj["id"])
        if id is None:
            return None
    return Plain(id, method, obj.get("params", ABSENT))


def ignored_params(params: object) -> bool:
    """Params of a message whose params nobody reads (`shutdown`, `exit`,
    `initialized`), in the plain case: none, `null` or `{}`."""
    return params is ABSENT or params is None or params == {}


def _is_str(value: object) -> bool:
    return isinstance(value, str)


def _optional_str(value: object) -> bool:
    return value is None or isinstance(value, str)


def initialize_learning_dir(params: object) -> object:
    """`initializationOptions.learningDir` (`None` when not given) from
    `initialize` params that `initialize.InitializeParams` reads without
    complaint, else `REFUSED`."""
    if params is ABSENT:
        return None
    if not isinstance(params, dict):
        return REFUSED
    pid = params.get("processId")
    if pid is not None and (not isinstance(pid, int) or isinstance(pid, bool)):
        return REFUSED
    info = params.get("clientInfo")
    if info is not None:
        if not isinstance(info, dict):
            return REFUSED
        if "name" in info and not _is_str(info["name"]):
            return REFUSED
        if not _optional_str(info.get("version")):
            return REFUSED
    options = params.get("initializationOptions")
    if options is None:
        return None
    if not isinstance(options, dict) or not set(options) <= set(INITIALIZATION_OPTIONS_KEYS):
        return REFUSED
    if not (_optional_str(options.get("learningDir")) and _optional_str(options.get("finalAnswerNudge"))):
        return REFUSED
    voices = options.get("harnessVoices", [])
    if not isinstance(voices, list) or not all(_is_str(v) for v in voices):
        return REFUSED
    model = options.get("model")
    if model is not None and not (isinstance(model, dict) and set(model) <= set(MODEL_OPTION_KEYS)):
        return REFUSED
    return options.get("learningDir")


def rules_block_params(params: object) -> object:
    """`(domain, project)` (each a string or `None`) from
    `mecha/rulesPromptBlock` params in the plain case, else `REFUSED`.
    Whether the domain is *valid* is not asked here: an invalid one was
    never answered, so it is never found in the cache. A project that is
    not an absolute path is refused: the full server's error says why."""
    if params is ABSENT:
        return None, None
    if not isinstance(params, dict) or not set(params) <= set(RULES_PROMPT_BLOCK_KEYS):
        return REFUSED
    domain, project = params.get("domain"), params.get("project")
    if not (_optional_str(domain) and _optional_str(project)):
        return REFUSED
    if project is not None and (not project.startswith("/") or "\x00" in project):
        return REFUSED
    return domain, project


def result_frame(id: bytes, result: bytes) -> bytes:
    """The frame the full server writes for a result whose JSON is `result`."""
    return encode_frame(b'{"jsonrpc":"2.0","id":' + id + b',"result":' + result + b"}")
