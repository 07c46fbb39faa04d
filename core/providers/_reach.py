"""Is the configured model server there? The check behind `doctor`.

A `GET /v1/models` is the cheapest request both dialects answer: it spends no
tokens and proves the URL, the network path and (when one is sent) the key.
It runs once, with a short timeout and no retries: `doctor` reports the state
of things, and a person waiting at a terminal should hear about a dead server
in seconds. The detail may quote the server, scrubbed of the key like every
other message this package produces.

A 404 still counts as reachable — some OpenAI-compatible servers do not list
models, yet answer completions fine — while 401/403 does not: a rejected key
would fail every pass.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

import anyio
import httpx
import msgspec

from mecha.core.errors import ModelFailure
from mecha.core.providers._http import api_key, api_url, excerpt, new_client, safe_url, scrub
from mecha.core.providers.anthropic import anthropic_headers
from mecha.core.providers.config import ModelConfig

#: Long enough for a server on another continent, short enough for a person
#: at a terminal waiting on `doctor`.
REACH_TIMEOUT_S = 5.0


async def check_reachable(
    cfg: ModelConfig,
    *,
    env: Mapping[str, str] | None = None,
    timeout_s: float = REACH_TIMEOUT_S,
) -> tuple[bool, str]:
    """`(ok, detail)` for `doctor`; never raises for a network problem and
    never puts the key in `detail`."""
    env = os.environ if env is None else env
    try:
        key = api_key(cfg, env)
    except ModelFailure as exc:
        return False, str(exc)
    secrets = (key,) if key else ()
    if cfg.api == "anthropic":
        headers = anthropic_headers(key)
    else:
        headers = {"accept": "application/json"}
        if key:
            headers["authorization"] = f"Bearer {key}"
    url = api_url(cfg.base_url, "/models")
    shown = safe_url(url)
    timeout = min(timeout_s, cfg.timeout_s)
    try:
        async with new_client(timeout) as client:
            with anyio.fail_after(timeout):
                response = await client.get(url, headers=headers)
    except (TimeoutError, httpx.TimeoutException):
        return False, f"unreachable: no answer from {shown} within {timeout:g}s"
    except httpx.HTTPError as exc:
        detail = scrub(f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__, secrets)
        return False, f"unreachable: {shown}: {excerpt(detail)}"

    status = response.status_code
    if status in (401, 403):
        where = f"${cfg.api_key_env}" if cfg.api_key_env else "apiKeyEnv / api_key_env (none is set)"
        return False, f"reachable, but {shown} refused the credentials (HTTP {status}); check {where}"
    if status >= 500:
        body = excerpt(scrub(response.text, secrets), 120)
        return False, f"reachable, but {shown} is failing (HTTP {status}): {body}"
    if status == 200:
        return True, f"reachable: {shown} answered HTTP 200{_model_listed(response.content, cfg.model)}"
    return True, f"reachable: {shown} answered HTTP {status} (it may not list models)"


def _model_listed(content: bytes, model: str) -> str:
    """A note on whether the configured model is among those listed, when the
    listing reads as `{"data": [{"id": ...}]}` (both dialects use that shape)."""
    try:
        data = msgspec.json.decode(content)
    except msgspec.DecodeError:
        return ""
    items = data.get("data") if isinstance(data, dict) else None
    if not isinstance(items, list):
        return ""
    ids = [item["id"] for item in items if isinstance(item, dict) and isinstance(item.get("id"), str)]
    if not ids:
        return ""
    if model in ids:
        return f"; model {model!r} is listed"
    return f"; model {model!r} is not among the {len(ids)} listed"
