"""The wire shapes of the rules an agent reads: `mecha/exportRules` (the
rules where each agent reads the person's own instructions, or a file they
name) and `mecha/shareRules` (chosen rules into a repository's tracked
instructions, for its team), and each file's outcome in an accept's
`exports`. Kept apart from `methods` only for its length; `methods`
re-exports every name here."""

from __future__ import annotations

import msgspec

from mecha.core.environment.spellings import ExportTargetName


class ExportRulesParams(msgspec.Struct):
    #: Whose instructions: `claude`, `codex`, or `agents` (any `AGENTS.md` reader).
    target: ExportTargetName
    #: One file, told the rules of the scope it is in. Absent, and no
    #: `project`: every scope's file, where the agent reads the person's own
    #: — for `claude` `~/.claude/CLAUDE.md` and each project's
    #: `CLAUDE.local.md`, for `codex` `~/.codex/AGENTS.md` and each
    #: project's `.codex/config.toml`; for `agents` each project's
    #: `AGENTS.md` (and the sidecar's working directory's project's).
    path: str | None = None
    #: Write nothing; say whether the file is up to date.
    check: bool = False
    #: A directory (absolute): only its project's file (or `path`, told that
    #: project's rules).
    project: str | None = None


class ExportRulesResult(msgspec.Struct):
    #: The file (with several, the first).
    path: str
    #: Whether the file was written (with `check`: whether it would be);
    #: with several, whether any was.
    changed: bool
    up_to_date: bool
    check: bool
    #: Every file exported, in order, each with its scope (`project`) and
    #: what happened to it, `error` naming why one could not be written.
    exports: list[ExportResult] = msgspec.field(default_factory=list)


class ShareRulesParams(msgspec.Struct):
    #: The rules to share: each an id (or a unique prefix) of an active
    #: learned rule of the repository's project or of the global rules.
    rules: list[str]
    #: A directory (absolute) inside the repository whose tracked files get
    #: them; absent: the sidecar's working directory.
    project: str | None = None


class SharedRuleInfo(msgspec.Struct):
    id: str
    text: str
    domain: str
    #: The rule's project (its root); `null`: a global rule.
    project: str | None = None


class SharedFile(msgspec.Struct):
    path: str
    #: Whether the file changed (`false`: it held every rule already).
    changed: bool


class ShareRulesResult(msgspec.Struct):
    #: The repository whose tracked files were written.
    repository: str
    rules: list[SharedRuleInfo]
    files: list[SharedFile]
    #: The command that commits them, for the person to run after a look
    #: (each word quoted for a POSIX shell); empty when the repository's
    #: path holds a character that hides, and no command is offered.
    commit: str


class ExportResult(msgspec.Struct):
    """One `[export]` target of `sidecar.toml` that an accept rewrote."""

    #: The file as configured (or the config file, when its `[export]`
    #: table could not be read).
    path: str
    #: Whether the file was written (`false`: already up to date, or failed).
    changed: bool = False
    #: Why the export failed, naming the file (`ExportFailed: …`); `null`
    #: when it did not. The accept stands either way.
    error: str | None = None
    #: The project whose rules the file carries (its root); `null`: the
    #: global rules.
    project: str | None = None
    #: Why the file was left alone on purpose, and where the rules went
    #: instead (a project folder that is not a repository); `null` when it
    #: was exported.
    skipped: str | None = None
