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
    """One agent's row. Paths are tuples of parts, relative to the home
    folder (`*_home`) or to a project's root (`*_project`)."""

    __slots__ = (
        "name", "label", "api", "program", "program_places", "format_name", "session_id_prefix",
        "sessions_home", "settings_home", "settings_project", "hooks",
        "instructions_home", "instructions_project", "skills_home", "skills_project",
        "voices",
    )

    def __init__(
        self,
        *,
        name: str,
        label: str,
        api: str,
        program: str,
        program_places: tuple[str, ...],
        format_name: str,
        session_id_prefix: str,
        sessions_home: tuple[str, ...],
        settings_home: tuple[str, ...],
        settings_project: tuple[str, ...],
        hooks: tuple[HookSpec, ...],
        instructions_home: tuple[str, ...] | None,
        instructions_project: str,
        skills_home: tuple[str, ...] | None,
        skills_project: tuple[str, ...] | None,
        voices: tuple[str, ...],
    ) -> None:
        #: What the agent is called in hooks (`hook claude session-end`),
        #: `import`, `--format`, `--voices`, queued hook entries and the wire.
        self.name = name
        #: What a person calls it.
        self.label = label
        #: The `api` of a model configuration that runs the passes on this
        #: agent's command line (`MECHA_MODEL_API=claude-code`).
        self.api = api
        #: The program a person types.
        self.program = program
        #: Where its installers may put the program without adding it to
        #: `PATH`, relative to the home folder.
        self.program_places = program_places
        #: What one of its session files is called in a message.
        self.format_name = format_name
        #: What its readers put before a file's own session id (Codex ids
        #: would otherwise be bare UUIDs like Claude Code's).
        self.session_id_prefix = session_id_prefix
        #: Where it keeps its session files, under the home folder.
        self.sessions_home = sessions_home
        #: Its hook settings file: the person's (under home) and a project's.
        self.settings_home = settings_home
        self.settings_project = settings_project
        #: What `hooks install` writes into that file.
        self.hooks = hooks
        #: The instruction file it reads in every session (under home), if
        #: the export writes one; and a project's, at the project's root.
        self.instructions_home = instructions_home
        self.instructions_project = instructions_project
        #: Where it reads a person's skills (under home) and a project's
        #: (under its root); `None` where `hooks install` puts no skills.
        self.skills_home = skills_home
        self.skills_project = skills_project
        #: Text it records as a user turn that no person wrote, matched as a
        #: prefix by the miner (`--voices NAME`).
        self.voices = voices

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
    instructions_home=(".claude", "CLAUDE.md"),
    instructions_project="CLAUDE.md",
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
    ),
)

CODEX = Agent(
    name="codex",
    label="Codex CLI",
    api="codex",
    program="codex",
    program_places=(".local/bin/codex",),
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
    instructions_home=None,
    instructions_project="AGENTS.md",
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

#: Every agent, in order of preference as the passes' model.
AGENTS: tuple[Agent, ...] = (CLAUDE, CODEX)

#: Their names, as hooks, `import`, `--format` and the wire take them.
NAMES: tuple[str, ...] = tuple(a.name for a in AGENTS)
#: The `export` target (and `[export]` key) for every agent that reads a
#: project's `AGENTS.md` — Codex and others: the team's file, written only
#: when named.
AGENTS_MD = "agents"
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


def of_session_id(session_id: str) -> Agent:
    """The agent whose reader gave a session this id: the one whose prefix
    it carries, else the one with no prefix (Claude Code's bare ids)."""
    prefixed = next((a for a in AGENTS if a.session_id_prefix and session_id.startswith(a.session_id_prefix)), None)
    return prefixed or next(a for a in AGENTS if not a.session_id_prefix)
