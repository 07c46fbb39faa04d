"""The agents' real command lines, each in a home of its own, pointed at a
scripted model on 127.0.0.1 (`tests.agent_server`).

`agent_env(server)` is the environment a person's machine would have with
the agent installed and configured: the program on PATH (linked from the
realparts cache), Claude Code told its API address and a key (it never
reaches a real service), Codex given a model provider in its own
`config.toml`. Nothing is signed in anywhere.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.agent_server import AgentModelServer
from tests.realparts import manifest

AgentEnv = Callable[[AgentModelServer], dict[str, str]]


def codex_config(url: str) -> str:
    return (
        'model_provider = "scripted"\n'
        'model = "scripted-model"\n'
        "[model_providers.scripted]\n"
        'name = "scripted"\n'
        f'base_url = "{url}/v1"\n'
        'wire_api = "responses"\n'
    )


@pytest.fixture
def agent_env(tmp_path: Path) -> AgentEnv:
    parts = manifest("agents")

    def make(server: AgentModelServer) -> dict[str, str]:
        home = tmp_path / "home"
        (home / ".codex").mkdir(parents=True, exist_ok=True)
        (home / ".codex" / "config.toml").write_text(codex_config(server.url))
        bin_dir = tmp_path / "bin"
        bin_dir.mkdir(exist_ok=True)
        for name in ("claude", "codex"):
            if not (bin_dir / name).exists():
                (bin_dir / name).symlink_to(parts[name])
        return {
            "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '/usr/bin:/bin')}",
            "HOME": str(home),
            "LANG": "C.UTF-8",
            "ANTHROPIC_BASE_URL": server.url,
            "ANTHROPIC_API_KEY": "scripted-key-not-a-secret",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "CODEX_HOME": str(home / ".codex"),
        }

    return make


@pytest.fixture
def server() -> Iterator[AgentModelServer]:
    with AgentModelServer() as s:
        yield s
