"""From a resolved config to a provider, and from no config to `NoModel`.

The dialect modules import httpx, which this module must not do at import
time: `require_provider` is what a pass calls first, and the cheap failure —
no model configured — should not pay for an HTTP stack it will never use.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from mecha.core.errors import NoModel
from mecha.core.providers.config import NO_MODEL_HELP, ModelConfig

if TYPE_CHECKING:
    from mecha.core.providers.agent_cli import AgentCliProvider
    from mecha.core.providers.anthropic import AnthropicProvider
    from mecha.core.providers.openai import OpenAIProvider
    from mecha.core.providers.structured import ModeMemory


def provider_from_config(
    cfg: ModelConfig, *, env: Mapping[str, str] | None = None, memory: ModeMemory | None = None
) -> OpenAIProvider | AnthropicProvider | AgentCliProvider:
    """The provider for `cfg.api`. `env` is where the key variable is read
    (default: the process environment); `memory` remembers which structured
    mode the server accepted (none: probe on every call)."""
    if cfg.api == "anthropic":
        from mecha.core.providers.anthropic import AnthropicProvider

        return AnthropicProvider(cfg, env=env, memory=memory)
    if cfg.api == "openai":
        from mecha.core.providers.openai import OpenAIProvider

        return OpenAIProvider(cfg, env=env, memory=memory)
    if cfg.runs_agent:
        from mecha.core.providers.agent_cli import AgentCliProvider

        return AgentCliProvider(cfg, env=env)
    # `ModelConfig` is validated on the way in; a hand-built one may not be.
    raise ValueError(f"unknown model api {cfg.api!r} (model configuration from {cfg.source})")


def require_provider(
    cfg: ModelConfig | None, *, env: Mapping[str, str] | None = None, memory: ModeMemory | None = None
) -> OpenAIProvider | AnthropicProvider | AgentCliProvider:
    """The provider a pass needs, or `NoModel` with instructions to configure one."""
    if cfg is None:
        raise NoModel(no_model_help(env))
    return provider_from_config(cfg, env=env, memory=memory)


def no_model_help(env: Mapping[str, str] | None = None) -> str:
    """`NO_MODEL_HELP`, led by the agent installed here when there is one:
    the model the person already has is the first thing to offer. Looking
    costs a `--version` run per agent, paid only on this failure."""
    from mecha.core.environment.installed import find_agents

    found = find_agents(env)
    if not found:
        return NO_MODEL_HELP
    best = found[0]
    return (
        f"{best.label} is installed here ({best.describe()}): MECHA_MODEL_API={best.agent.api}, "
        f'or api = "{best.agent.api}" in the [model] table of ~/.mecha/sidecar.toml, '
        "runs the passes on it, on your own account.\n\n" + NO_MODEL_HELP
    )
