"""The agents this project works with, one row each: where to look for a
fact about Claude Code or Codex, and where a third agent would be added.

Each row says, for one agent, what the rest of the code used to spell on
its own: the name it goes by in hooks, `import`, `--format` and the wire
(`claude`, `codex`), the `api` spelling a model configuration uses for its
command line (`claude-code`), the program a person types and where its
installers put it, where it keeps sessions, which hook events `hooks
install` writes and into which settings file, which instruction files it
reads (user level and project level), where it reads skills, what it
records in the person's voice that no person wrote, and how a session id
of its files is told apart in the store. Code that does something per
agent looks the row up (`agent`, `by_api`) or walks
`AGENTS`; it never compares against a name it spelled itself (the
structure test holds every module outside this package to that).

What an agent *does* differently stays with the code that does it: the
session readers (`sessions.claude_code`, `sessions.codex_cli`) are
modules of their own, chosen by the row's `name`.

Only the standard library, and none of its slow modules: the session-start
hook, which every agent session waits on, reads this table. The order of
`AGENTS` is the preference when several agents' command lines could serve
as the passes' model: Claude Code first (its `--json-schema` holds the
reply to the contract inside the CLI and validates it), then Codex
(`--output-schema`).
"""

from __future__ import annotations

import os

TYPE_CHECKING = False  # `typing` is a cost the session-start hook does not pay
if TYPE_CHECKING:
    from collections.abc import Mapping

#: Set in the environment of every call a pass makes on an agent's command
#: line (`mecha.core.providers.agent_cli`): the project's hooks see it and do
#: nothing, so a pass's own call is never queued as a session nor told of
#: proposals. Here because the session-start hook may import nothing more.
OWN_CALL_ENV = "MECHA_OWN_MODEL_CALL"

#: The hook commands' own subcommands: `hook AGENT session-end` queues the
#: session the hook's input names and starts a reflect pass; `hook AGENT
#: session-start` prints the pending-proposals notice.
SESSION_END = "session-end"
SESSION_START = "session-start"

#: The session-start hook runs before every session and the agent's first
#: answer waits for it; it takes tens of milliseconds, so a few seconds is
#: room for a loaded machine, not a wait anyone sees.
START_TIMEOUT_S = 10
#: The session-end hook returns in a fraction of a second on a session read
#: before; reading a very large session the first time can take longer than
#: Claude Code's default 1.5 s exit budget, which this raises (only when a
#: hook is still running).
END_TIMEOUT_S = 10
#: Codex caps a `SessionEnd` hook's timeout at 3 s (and warns at every start
#: about a larger one).
CODEX_END_TIMEOUT_S = 3

#: SessionStart sources worth a notice: a new, resumed or cleared session,
#: not the restart after a compaction (the same session, told already).
START_MATCHER = "startup|resume|clear"


class HookSpec:
    """One hook entry `hooks install` writes: the agent's event, our
    subcommand for it, its timeout and matcher (`None`: every occurrence)."""

    __slots__ = ("event", "subcommand", "timeout", "matcher")

    def __init__(self, event: str, subcommand: str, timeout: int, matcher: str | None = None) -> None:
        self.event = event
        self.subcommand = subcommand
        self.timeout = timeout
        self.matcher = matcher

    def __repr__(self) -> str:
        return f"HookSpec({self.event!r}, {self.subcommand!r}, {self.timeout!r}, {self.matcher!r})"


class Agent:
    """One agent's row (see the rows below for each field's meaning). Paths
    are tuples of parts: `*_home` under the person's home folder, `home_*`
    under the agent's own home (`home`, or `$home_env` when set), `*_project`
    and `instructions_*` under a project's (or checkout's) root."""

    #: What the agent is called in hooks (`hook claude session-end`),
    #: `import`, `--format`, `--voices`, `export`, queued hook entries and
    #: the wire.
    name: str
    #: What a person calls it.
    label: str
    #: The `api` of a model configuration that runs the passes on this
    #: agent's command line (`MECHA_MODEL_API=claude-code`).
    api: str
    #: The program a person types, and where its installers may put it
    #: without adding it to `PATH` (under home); how it answers one prompt
    #: headless; whose account such a run is on.
    program: str
    program_places: tuple[str, ...]
    headless: str
    account: str
    #: Its own folder under home, and the variable that moves it (or `None`).
    home: tuple[str, ...]
    home_env: str | None
    #: What one of its session files is called in a message, and what its
    #: reader puts before a file's own session id.
    format_name: str
    session_id_prefix: str
    #: Where it keeps its session files, under home.
    sessions_home: tuple[str, ...]
    #: Its hook settings file: the person's (under home) and a project's;
    #: and what `hooks install` writes into it.
    settings_home: tuple[str, ...]
    settings_project: tuple[str, ...]
    hooks: tuple[HookSpec, ...]
    #: The person's own instruction files it reads in every session (under
    #: its home; the export writes the first).
    home_instructions: tuple[str, ...]
    #: A project's instruction files: the person's own (kept out of git;
    #: the export's default) and the team's (tracked; written only when
    #: named), and every instruction file it reads in each folder up from
    #: where it runs.
    instructions_personal: tuple[str, ...]
    instructions_team: str
    instructions_read: tuple[tuple[str, ...], ...]
    #: Where it reads a person's skills (under home) and a project's (under
    #: its root); `None` where `hooks install` puts no skills.
    skills_home: tuple[str, ...] | None
    skills_project: tuple[str, ...] | None
    #: Text it records as a user turn that no person wrote, matched as a
    #: prefix by the miner (`--voices NAME`).
    voices: tuple[str, ...]

    __slots__ = (
        "name", "label", "api", "program", "program_places", "headless", "account", "home", "home_env", "format_name", "session_id_prefix",
        "sessions_home", "settings_home", "settings_project", "hooks", "home_instructions", "instructions_personal",
        "instructions_team", "instructions_read", "skills_home", "skills_project", "voices",
    )

    def __init__(self, **fields: object) -> None:
        missing = set(self.__slots__) - set(fields)
        if missing or len(fields) != len(self.__slots__):
            raise TypeError(f"an agent's row names every field once: missing {sorted(missing)}, given {sorted(fields)}")
        for key, value in fields.items():
            setattr(self, key, value)

    def __repr__(self) -> str:
        return f"Agent({self.name!r})"


CLAUDE = Agent(
    name="claude",
    label="Claude Code",
    api="claude-code",
    program="claude",
    # Claude Code's native installer and its older "local" install (which
    # only sets a shell alias).
    program_places=(".local/bin/claude", ".claude/local/claude"),
    headless="claude -p",
    account="Claude Code",
    home=(".claude",),
    home_env=None,
    format_name="a Claude Code session",
    session_id_prefix="",
    sessions_home=(".claude", "projects"),
    # Claude Code's hooks reference, code.claude.com/docs/en/hooks.
    settings_home=(".claude", "settings.json"),
    settings_project=(".claude", "settings.json"),
    hooks=(
        HookSpec("SessionStart", SESSION_START, START_TIMEOUT_S, START_MATCHER),
        HookSpec("PreCompact", SESSION_END, END_TIMEOUT_S),
        HookSpec("SessionEnd", SESSION_END, END_TIMEOUT_S),
    ),
    home_instructions=("CLAUDE.md",),
    # Checked with the real CLI, 2.1.328: `CLAUDE.local.md` beside the
    # team's `CLAUDE.md` is read in the project.
    instructions_personal=("CLAUDE.local.md",),
    instructions_team="CLAUDE.md",
    instructions_read=(("CLAUDE.md",), ("CLAUDE.local.md",), (".claude", "CLAUDE.md")),
    skills_home=None,
    skills_project=None,
    voices=(
        "This session is being continued from a previous conversation",
        "[Request interrupted by user",
        "Caveat: The messages below were generated by the user while running local commands",
        "<command-name>",
        "<command-message>",
        "<local-command-stdout>",
        "<local-command-stderr>",
        "<bash-input>",
        "<bash-stdout>",
        "<bash-stderr>",
        "<system-reminder>",
        "<task-notification>",
        "<user-prompt-submit-hook>",
        "Stop hook feedback:",
        "No response requested.",
        # Its reply to a slash command naming no skill it knows (`/btw`).
        "Unknown skill: ",
    ),
)

CODEX = Agent(
    name="codex",
    label="Codex CLI",
    api="codex",
    program="codex",
    program_places=(".local/bin/codex",),
    headless="codex exec",
    account="Codex",
    home=(".codex",),
    home_env="CODEX_HOME",
    format_name="a Codex CLI rollout",
    session_id_prefix="codex:",
    sessions_home=(".codex", "sessions"),
    # Codex's hooks docs, developers.openai.com/codex/hooks; `codex-rs/hooks`.
    settings_home=(".codex", "hooks.json"),
    settings_project=(".codex", "hooks.json"),
    hooks=(
        HookSpec("SessionStart", SESSION_START, START_TIMEOUT_S, START_MATCHER),
        HookSpec("PreCompact", SESSION_END, END_TIMEOUT_S),
        HookSpec("SessionEnd", SESSION_END, CODEX_END_TIMEOUT_S),
    ),
    home_instructions=("AGENTS.md", "AGENTS.override.md"),
    # Its project configuration's `developer_instructions` (checked with the
    # real CLI, 0.169.0, `codex debug prompt-input`).
    instructions_personal=(".codex", "config.toml"),
    # `AGENTS.md` is read by Codex and by other agents alike.
    instructions_team="AGENTS.md",
    instructions_read=(("AGENTS.md",), ("AGENTS.override.md",), (".codex", "config.toml")),
    # Codex (0.169) lists a person's skills from `$HOME/.agents/skills` and
    # a repository's from `<repo>/.agents/skills`.
    skills_home=(".agents", "skills"),
    skills_project=(".agents", "skills"),
    voices=(
        "<environment_context>",
        "<user_instructions>",
        "# AGENTS.md instructions",
        "<turn_aborted>",
        "<user_shell_command>",
        "<INSTRUCTIONS>",
    ),
)

#: Where in Codex's home the command rules an accept writes live: its
#: `rules` folder, whose every `*.rules` file Codex loads at start
#: (`prefix_rule(...)`, checked with the real CLI, 0.169.0, `codex
#: execpolicy check`), and the file there that is the project's alone.
CODEX_RULES_FILE = ("rules", "mecha.rules")

#: Every agent, in order of preference as the passes' model.
AGENTS: tuple[Agent, ...] = (CLAUDE, CODEX)

#: Their names, as hooks, `import`, `--format` and the wire take them.
NAMES: tuple[str, ...] = tuple(a.name for a in AGENTS)
#: The `export` target (and `[export]` key) for every agent that reads a
#: project's `AGENTS.md` — Codex and others: the team's file, written only
#: when named.
AGENTS_MD = "agents"
#: Its file, at a project's root.
AGENTS_MD_FILE = CODEX.instructions_team
#: The `export` targets, as `export` and `[export]` take them: each agent
#: by its name (where it reads a person's own instructions), then `AGENTS_MD`.
EXPORT_TARGETS: tuple[str, ...] = (*NAMES, AGENTS_MD)
#: Their `api` spellings in a model configuration.
APIS: tuple[str, ...] = tuple(a.api for a in AGENTS)


def agent(name: str) -> Agent | None:
    """The row named `name`, or `None`."""
    return next((a for a in AGENTS if a.name == name), None)


def by_api(api: str) -> Agent | None:
    """The row whose command line a model configuration's `api` names."""
    return next((a for a in AGENTS if a.api == api), None)


def agent_home(row: Agent, home: str, env: Mapping[str, str]) -> str:
    """`row`'s own folder: `$home_env` when set, else under `home`."""
    named = (env.get(row.home_env) or "").strip() if row.home_env else ""
    return os.path.expanduser(named) if named else os.path.join(home, *row.home)


def of_session_id(session_id: str) -> Agent:
    """The agent whose reader gave a session this id: the one whose prefix
    it carries, else the one with no prefix (Claude Code's bare ids)."""
    prefixed = next((a for a in AGENTS if a.session_id_prefix and session_id.startswith(a.session_id_prefix)), None)
    return prefixed or next(a for a in AGENTS if not a.session_id_prefix)
