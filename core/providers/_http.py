"""The HTTP behaviour both dialects share: one POST, retried within bounds.

Every decision is a small pure function — which statuses are worth another
try, how long to wait, how to read `Retry-After`, how to make text safe to
show — and `post_json` only wires them together, so each rule is tested on
its own and the loop stays readable.

Retries: a 429, any 5xx, a timeout or a connection failure is retried, at most
`max_retries` times — except an error whose body names the request field
that carries the reply mode (`structured.ModeRefused`: the server refusing
the mode, which asking again will not change), with exponential backoff and jitter capped at
`max_backoff_s`. A `Retry-After` from the server replaces the computed wait
(capped the same way): it is the one signal that says how long the server
actually needs. Any other 4xx is the request's fault, and sending it again
would only spend time. A 200 whose body is not JSON is not retried either:
the passes have their own parse-retry rules one level up, and retrying here
as well would multiply them.

Secrets: the API key is passed in as a secret, and every string that reaches a
`ModelFailure` or a log record goes through `scrub` first — including the
server's own error body, because some servers echo the credentials they
rejected. Headers are never logged. Exceptions are raised `from None` so a
traceback written into a job file cannot carry a chained message past the
scrubber.

Each attempt has one deadline covering connect, send and read: httpx's read
timeout alone restarts with every byte, so a server that trickles could hold a
pass for ever.

Bounds: a reply is read as a stream and never past what the request's
`max_tokens` could produce (`reply_byte_bound`): a server that sends more —
600 MB once took a pass to 1.8 GB of memory — is cut off there, and the call
fails with `UnusableReply` naming the bound, which a pass counts as an
unusable answer (three of those set the work aside) rather than a fault that
fails it. An error body is read only as far as its quote needs. A body that
nests deeper than `nesting.MAX_REPLY_DEPTH` is refused the same way before
any decoder recurses into it.
"""

from __future__ import annotations

import email.utils
import functools
import logging
import math
import random
import ssl
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import anyio
import httpx
import msgspec

from mecha.core.errors import ModelFailure, UnusableReply
from mecha.core.nesting import MAX_REPLY_DEPTH, json_nesting
from mecha.core.providers.config import ModelConfig
from mecha.core.providers.structured import MODE_FIELDS, ModeRefused, names_mode_field

log = logging.getLogger("mecha.core.providers")

#: How much of a server's error body a `ModelFailure` quotes: enough to read
#: the server's reason, short enough to keep a job file readable.
BODY_EXCERPT_CHARS = 300

#: What replaces a secret in any text we show.
REDACTED = "[redacted]"

#: The most bytes one token of a reply can take in the body: a token is a few
#: characters, and JSON may spell each as a six-byte `\uXXXX` escape (a
#: surrogate pair is twelve). Generous on purpose: a reply that used its
#: whole token budget is cut off, and unusable, however it is read.
BYTES_PER_TOKEN = 32

#: What a body carries besides the reply's tokens: ids, usage, the finish
#: reason, a reasoning model's summary fields.
ENVELOPE_BYTES = 64 * 1024

#: How much of an error body is read: enough for any quote of it.
ERROR_BODY_BYTES = 64 * 1024


def reply_byte_bound(max_tokens: int) -> int:
    """The largest body a reply to a request for `max_tokens` tokens can be."""
    return max(0, max_tokens) * BYTES_PER_TOKEN + ENVELOPE_BYTES


# ─── Decisions ──────────────────────────────────────────────────────────────


def retryable_status(status: int) -> bool:
    """429 (rate limited) and 5xx (the server's trouble) may succeed on a
    later try; any other status will not."""
    return status == 429 or 500 <= status <= 599


def parse_retry_after(value: str | None, now: float | None = None) -> float | None:
    """Seconds to wait from a `Retry-After` header: delta-seconds or an
    HTTP-date. Decimal seconds are accepted too (some proxies send them).
    `None` when absent or unreadable; never negative."""
    if value is None:
        return None
    value = value.strip()
    if not value:
        return None
    try:
        seconds = float(value)
    except ValueError:
        pass
    else:
        return max(0.0, seconds) if math.isfinite(seconds) else None
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        return None
    now = time.time() if now is None else now
    return max(0.0, when.timestamp() - now)


def backoff_delay(attempt: int, base_s: float, cap_s: float, rand: float) -> float:
    """The wait after failed attempt `attempt` (1-based): `base * 2^(attempt-1)`,
    capped, then jittered into its upper half with `rand` in [0, 1) so that
    many clients backing off together do not return together."""
    step = min(cap_s, base_s * (2.0 ** (attempt - 1)))
    return step * (0.5 + rand / 2)


def retry_delay(attempt: int, retry_after: float | None, cfg: ModelConfig, rand: float) -> float:
    """What to wait before the next attempt: the server's `Retry-After` when it
    gave one, our own backoff otherwise; either way at most `max_backoff_s`."""
    if retry_after is not None:
        return min(retry_after, cfg.max_backoff_s)
    return backoff_delay(attempt, cfg.backoff_base_s, cfg.max_backoff_s, rand)


def scrub(text: str, secrets: Iterable[str]) -> str:
    """`text` with every secret replaced. Applied before truncating, so a cut
    cannot leave half a key behind."""
    for secret in secrets:
        if secret:
            text = text.replace(secret, REDACTED)
    return text


def excerpt(text: str, limit: int = BODY_EXCERPT_CHARS) -> str:
    """A short, single-line quote of a body."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def safe_url(url: str) -> str:
    """The URL without any `user:password@` in it."""
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url
    host = parts.netloc.rsplit("@", 1)[1]
    return urlunsplit((parts.scheme, f"{REDACTED}@{host}", parts.path, parts.query, parts.fragment))


def api_url(base_url: str, path: str) -> str:
    """`base_url` + `/v1` + `path`, without doubling a `/v1` the base already
    ends with (Ollama's and OpenAI's documented base URLs include it)."""
    base = base_url.rstrip("/")
    if not base.endswith("/v1"):
        base += "/v1"
    return base + path


# ─── Wiring ─────────────────────────────────────────────────────────────────


@functools.cache
def _ssl_context() -> ssl.SSLContext:
    # Building one loads the CA bundle (~50 ms); a pass makes a call per
    # reflection, each with a fresh client, so the context is built once.
    return httpx.create_ssl_context()


def new_client(timeout_s: float) -> httpx.AsyncClient:
    """A client with one timeout for connect, read, write and pool. Fresh per
    call: the `Provider` protocol has no close, and at model latencies a
    reused connection saves nothing worth a lifecycle."""
    return httpx.AsyncClient(timeout=httpx.Timeout(timeout_s), verify=_ssl_context())


def api_key(cfg: ModelConfig, env: Mapping[str, str]) -> str | None:
    """The key named by `cfg.api_key_env`, `None` when no key is configured.
    A named variable that is unset is an error now, not a 401 later."""
    if not cfg.api_key_env:
        return None
    key = env.get(cfg.api_key_env, "").strip()
    if not key:
        raise ModelFailure(
            f"the model configuration (from {cfg.source}) reads the API key from "
            f"${cfg.api_key_env}, but that variable is not set"
        )
    return key


class _Attempt(Exception):
    """One failed attempt, already described safely; `retry_after` from the
    server if it sent one."""

    def __init__(self, detail: str, *, retryable: bool, retry_after: float | None = None, status: int | None = None,
                 mode_refused: bool = False):
        super().__init__(detail)
        self.detail = detail
        self.retryable = retryable
        self.retry_after = retry_after
        self.status = status
        self.mode_refused = mode_refused


async def post_json(
    cfg: ModelConfig,
    url: str,
    headers: Mapping[str, str],
    body: Mapping[str, Any],
    *,
    secrets: Iterable[str] = (),
    label: str,
    rand: Callable[[], float] = random.random,
    attempts: int | None = None,
    max_tokens: int | None = None,
) -> Any:
    """POST `body` as JSON and return the decoded JSON reply, retrying within
    `cfg`'s bounds (or making at most `attempts` tries). Raises
    `ModelFailure` with a scrubbed message, or `UnusableReply` for a body
    larger than a reply of `max_tokens` (default: `body["max_tokens"]`) can
    be or nested deeper than any reply is."""
    secrets = tuple(s for s in secrets if s)
    shown_url = safe_url(url)
    total = cfg.max_retries + 1 if attempts is None else max(1, min(attempts, cfg.max_retries + 1))
    payload = msgspec.json.encode(body)
    if max_tokens is None:
        asked = body.get("max_tokens")
        max_tokens = asked if isinstance(asked, int) else 4096
    carries_mode = any(field in body for field in MODE_FIELDS.get(cfg.api, ()))
    async with new_client(cfg.timeout_s) as client:
        for attempt in range(1, total + 1):
            try:
                return await _attempt(client, cfg, url, headers, payload, secrets, max_tokens, carries_mode)
            except _TooLarge as big:
                raise UnusableReply(f"{label} at {shown_url}: {big.detail}; not retried") from None
            except _Attempt as failure:
                where = f"{label} at {shown_url}"
                if not failure.retryable:
                    kind = ModeRefused if failure.mode_refused else ModelFailure
                    raise kind(
                        f"{where}: {failure.detail} (attempt {attempt} of {total}, not retried)",
                        status=failure.status,
                    ) from None
                if attempt == total:
                    raise ModelFailure(
                        f"{where}: {failure.detail} (attempt {attempt} of {total}; giving up)",
                        status=failure.status,
                    ) from None
                delay = retry_delay(attempt, failure.retry_after, cfg, rand())
                log.warning(
                    "%s: %s (attempt %d of %d); retrying in %.2fs",
                    where, failure.detail, attempt, total, delay,
                )
                await anyio.sleep(delay)
    raise AssertionError("unreachable: the loop returns or raises")  # pragma: no cover


class _TooLarge(Exception):
    """A 2xx body past its bound, or nested past any reply's depth."""

    def __init__(self, detail: str):
        super().__init__(detail)
        self.detail = detail


async def _read_bounded(response: httpx.Response, limit: int, *, max_tokens: int | None = None) -> bytes:
    """The body, read as a stream up to `limit` bytes. Past it: `_TooLarge`
    for a reply (`max_tokens` given: what the bound came from), else what was
    read (an error body, only ever quoted)."""
    def too_large(how: str) -> _TooLarge:
        return _TooLarge(
            f"the reply body is larger than {limit:,} bytes, more than a reply of the request's "
            f"max_tokens ({max_tokens}) can be; {how}"
        )

    declared = response.headers.get("content-length", "")
    if max_tokens is not None and declared.isdigit() and int(declared) > limit:
        raise too_large(f"it declares {int(declared):,}, none of it read")
    chunks: list[bytes] = []
    size = 0
    async for chunk in response.aiter_bytes():
        chunks.append(chunk)
        size += len(chunk)
        if size > limit:
            if max_tokens is not None:
                raise too_large("stopped reading there")
            return b"".join(chunks)[:limit]
    return b"".join(chunks)


def _refused(cfg: ModelConfig, status: int, text: str, retry_after: str | None, carries_mode: bool) -> _Attempt:
    """What a non-2xx reply (its body `text`, scrubbed) says: its status and
    body, a hint when the key is the problem, and whether to retry."""
    hint = ""
    if status in (401, 403):
        hint = (
            f"; check the key in ${cfg.api_key_env}" if cfg.api_key_env
            else "; the server wants an API key: set apiKeyEnv / api_key_env to the variable that holds it"
        )
    refused = carries_mode and names_mode_field(cfg.api, status, text)
    return _Attempt(
        f"HTTP {status}: {excerpt(text) or '(empty body)'}{hint}",
        retryable=retryable_status(status) and not refused,
        retry_after=parse_retry_after(retry_after),
        status=status,
        mode_refused=refused,
    )


async def _attempt(
    client: httpx.AsyncClient,
    cfg: ModelConfig,
    url: str,
    headers: Mapping[str, str],
    payload: bytes,
    secrets: tuple[str, ...],
    max_tokens: int,
    carries_mode: bool = False,
) -> Any:
    # Asked uncompressed: a bound on the decoded body is the one that matters,
    # and a compressed body can grow a thousandfold in one chunk.
    sent = {**headers, "accept-encoding": "identity"}
    try:
        with anyio.fail_after(cfg.timeout_s):
            async with client.stream("POST", url, content=payload, headers=sent) as response:
                status = response.status_code
                ok = 200 <= status < 300
                if ok:
                    content = await _read_bounded(response, reply_byte_bound(max_tokens), max_tokens=max_tokens)
                else:
                    content = await _read_bounded(response, ERROR_BODY_BYTES)
                retry_after = response.headers.get("retry-after")
    except (TimeoutError, httpx.TimeoutException):
        raise _Attempt(f"timed out after {cfg.timeout_s:g}s", retryable=True) from None
    except httpx.TransportError as exc:
        detail = scrub(f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__, secrets)
        raise _Attempt(f"connection error ({excerpt(detail)})", retryable=True) from None

    text = scrub(content.decode("utf-8", errors="replace"), secrets)
    if not ok:
        raise _refused(cfg, status, text, retry_after, carries_mode)
    if json_nesting(content, MAX_REPLY_DEPTH) > MAX_REPLY_DEPTH:
        raise _TooLarge(f"the reply body nests deeper than {MAX_REPLY_DEPTH} levels, more than any reply has; not decoded")
    try:
        return msgspec.json.decode(content)
    except msgspec.DecodeError:
        raise _Attempt(
            f"HTTP {status} but the body is not JSON: {excerpt(text) or '(empty body)'}",
            retryable=False,
        ) from None
