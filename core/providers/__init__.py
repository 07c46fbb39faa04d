"""The HTTP model providers: configuration, the two dialects, and `doctor`'s check.

The public surface is re-exported here; each name lives in one small module:

- `config`      — `ModelConfig`, `resolve_model_config` (init options, then
                  environment, then `~/.mecha/sidecar.toml`), `NO_MODEL_HELP`.
- `_factory`    — `provider_from_config`, `require_provider` (`NoModel` when
                  nothing is configured).
- `openai`      — `OpenAIProvider`, `/v1/chat/completions`.
- `anthropic`   — `AnthropicProvider`, `/v1/messages`.
- `_http`       — the shared POST with timeouts, bounded retries and scrubbing.
- `agent_cli`   — `AgentCliProvider`, an agent's own command line
                  (`claude -p`, `codex exec`) per request.
- `_reach`      — `check_reachable`, a cheap `GET /v1/models`.

Importing this package does not import httpx. The harness endpoint resolves
the model config at `initialize` for every agent run and usually never makes a
model call itself, so the provider classes and `check_reachable` are loaded on
first use (PEP 562 `__getattr__`), and the factory imports them only when it
builds one.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mecha.core.providers._factory import provider_from_config, require_provider
from mecha.core.providers.config import (
    NO_MODEL_HELP,
    InvalidModelConfig,
    ModelConfig,
    resolve_model_config,
)

if TYPE_CHECKING:
    from mecha.core.providers._reach import check_reachable
    from mecha.core.providers.anthropic import AnthropicProvider
    from mecha.core.providers.openai import OpenAIProvider

__all__ = [
    "NO_MODEL_HELP",
    "AnthropicProvider",
    "InvalidModelConfig",
    "ModelConfig",
    "OpenAIProvider",
    "check_reachable",
    "provider_from_config",
    "require_provider",
    "resolve_model_config",
]

_LAZY = {
    "OpenAIProvider": ".openai",
    "AnthropicProvider": ".anthropic",
    "check_reachable": "._reach",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        from importlib import import_module

        value = getattr(import_module(_LAZY[name], __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
