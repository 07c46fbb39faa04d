"""Which agent command lines are installed here: the model a person already has.

A person who runs Claude Code or Codex every day already pays for a strong
model, and both command lines answer one prompt headless (`claude -p`,
`codex exec`). So before asking for an API key or a local model, the
sidecar looks for them: `find_agents()` is what `doctor`, `hooks install`
and the demo call to say which one would serve.

An agent is looked for on `PATH` first (how a person runs it), then in the
places its own installers put it when they do not touch `PATH` (Claude
Code's native and "local" installs). Finding the file is not enough: it
must run and say its version (`--version`, a few seconds at most, no
network, no account), because a half-removed install or a binary for
another CPU would otherwise be offered and fail the first pass. Nothing
here logs in or spends a call: whether the person is signed in is only
known when the agent is asked something, and the pass says so then.

The passes' own calls on these programs run from a folder of their own
(`own_calls_dir`), with `OWN_CALL_ENV` set: the importer skips a session
that ran there (`is_own_call`), and this project's hooks do nothing when
they see the variable, so a call never comes back as a lesson. This module
imports only the standard library and the agent table (`agents`), whose
order is the preference when several are installed.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from mecha.core.environment.agents import AGENTS, Agent

__all__ = ["FoundAgent", "find_agent", "find_agents", "is_own_call", "own_calls_dir"]


#: How long `--version` may take. Both answer in well under a second; a
#: program that hangs here is not one a pass should rely on.
VERSION_TIMEOUT_S = 15.0


@dataclass(frozen=True, kw_only=True)
class FoundAgent:
    agent: Agent
    #: The program that ran, as an absolute path.
    path: str
    #: What `--version` printed (its last line), e.g. "2.1.328 (Claude Code)".
    version: str

    @property
    def label(self) -> str:
        return self.agent.label

    def describe(self) -> str:
        """E.g. "Claude Code: `claude` 2.1.328 (Claude Code) at /usr/local/bin/claude"."""
        return f"{self.label}: `{self.agent.program}` {self.version} at {self.path}"


def locate(agent: Agent, env: Mapping[str, str] | None = None) -> Path | None:
    """The agent's program: on `env`'s PATH, else where its installer puts
    it; `None` when it is nowhere."""
    env = os.environ if env is None else env
    found = shutil.which(agent.program, path=env.get("PATH", os.defpath))
    if found:
        return Path(found).absolute()
    home = env.get("HOME", "").strip()
    if not home:
        return None
    for place in agent.program_places:
        candidate = Path(home) / place
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return candidate
    return None


def agent_version(path: Path, env: Mapping[str, str] | None = None) -> str | None:
    """What `PROGRAM --version` says, or `None` when it does not run or
    says nothing."""
    try:
        done = subprocess.run(
            [str(path), "--version"], capture_output=True, text=True, timeout=VERSION_TIMEOUT_S,
            env=dict(os.environ if env is None else env), stdin=subprocess.DEVNULL, check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    lines = [line.strip() for line in done.stdout.splitlines() if line.strip()]
    if done.returncode != 0 or not lines:
        return None
    return lines[-1]


def find_agent(agent: Agent, env: Mapping[str, str] | None = None) -> FoundAgent | None:
    """One agent, if it is installed and runs."""
    path = locate(agent, env)
    if path is None:
        return None
    version = agent_version(path, env)
    if version is None:
        return None
    return FoundAgent(agent=agent, path=str(path), version=version)


def find_agents(env: Mapping[str, str] | None = None) -> list[FoundAgent]:
    """Every agent command line installed here that runs, best first (the
    first is the one to offer)."""
    found = (find_agent(agent, env) for agent in AGENTS)
    return [f for f in found if f is not None]



def own_calls_dir(env: Mapping[str, str] | None = None) -> Path:
    """The folder the agents' calls run from: `$XDG_CACHE_HOME` (default
    `~/.cache`) / `mecha-sidecar/agent-calls`. A session whose working
    directory is in it is one of ours."""
    env = os.environ if env is None else env
    home = env.get("HOME", "").strip() or str(Path.home())
    base = env.get("XDG_CACHE_HOME", "").strip() or str(Path(home) / ".cache")
    return Path(base) / "mecha-sidecar" / "agent-calls"


def is_own_call(cwd: str | None, env: Mapping[str, str] | None = None) -> bool:
    """Whether a session that ran in `cwd` was one of the passes' own model
    calls (and so never a person's work to learn from)."""
    if not cwd:
        return False
    own = own_calls_dir(env)
    here = Path(cwd)
    return here == own or own in here.parents


def install_command(extra: str, executable: str | None = None) -> str:
    """The command that adds the optional dependencies `extra` (`local`: the
    bundled model's server) to this installation, as it works here: an
    editable install from a checkout of the repository (the README's way)
    installs the checkout again with the extra, `pip install -e
    'CHECKOUT[EXTRA]'`; any other install names the package. Both through
    this installation's own interpreter, by its absolute path, so the extra
    lands where the program runs. (`pip install 'mecha-sidecar[local]'`
    once named a package no index serves.)"""
    import sys

    from mecha.core import shellwords

    python = os.path.abspath(executable or sys.executable)
    checkout = Path(__file__).resolve().parents[2]
    pyproject = checkout / "pyproject.toml"
    try:
        ours = pyproject.is_file() and 'name = "mecha-sidecar"' in pyproject.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        ours = False
    target = ["-e", f"{checkout}[{extra}]"] if ours else [f"mecha-sidecar[{extra}]"]
    return (shellwords.command_or_none(python, "-m", "pip", "install", *target)
            or f"pip install of the {extra} extra into this installation's interpreter (its path holds characters "
               "that hide, so no command to paste is offered)")
