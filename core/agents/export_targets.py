"""Which instructions file gets which rules: the export, per scope.

Rules are global or one project's (`mecha.core.learning.scope`), and they
are the person's: learned from their corrections. An accept writes them
where each agent the person connected (our plugin or hooks,
`connected_agents`) reads a person's own instructions, with no
configuration (`personal_targets`; where that is, and why, is
`personal`'s docstring):

- **Claude Code**: the global rules into `~/.claude/CLAUDE.md`, a
  project's rules alone into `CLAUDE.local.md` at each of its checkouts'
  roots — the global ones are read already, and twice would only spend the
  agent's context.
- **Codex**: the global rules into `AGENTS.md` in Codex's home, a
  project's rules alone into its `.codex/config.toml`
  (`developer_instructions`).

A file made in a checkout is kept out of git first, so `git status` shows
nothing after an accept. The team's tracked files (`CLAUDE.md`,
`AGENTS.md`) are written only when the
person names them: a file named by hand (`export claude FILE`, a path in
`[export]`) is told the rules of the scope it is in — an `AGENTS.md` those
of its folder's project; a `CLAUDE.md` at a repository's root (or in its
`.claude/` folder) that repository's, any other `CLAUDE.md` the global
rules. `[export]` changes the default per agent (`configured_targets`):
`claude = false` turns it off, `agents = true` writes every project's
`AGENTS.md` for an agent that reads nothing else. Every project the store
holds rules for is a target; a project whose folder is gone is reported,
not created, and a file with no rules yet is made only when there is a
rule for it. A project that is not a repository (a session run in `~/src`)
is listed and left alone, with the reason (`not_a_repository`): an
instructions file there is read in every repository below it.

A project is a repository, and the agent reads the file of the checkout it
runs in, so a repository with linked worktrees (`git worktree add`) has its
project's file written in each: the main worktree's and every linked
worktree's, each kept inside its own checkout by the same checks. A store
from before worktrees were one project may hold a linked worktree as a
project of its own: that scope is listed and left alone
(`superseded_worktree`), since its folder's file is its repository's now.

What goes into each file is written by `export.export_block` (or, for
Codex's key, `confined.rewrite_file`), with all of its safety (the managed
section, the checks, the exchange)."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable, Mapping
from pathlib import Path

import msgspec

from mecha.core.agents import personal
from mecha.core.agents.export import export_block
from mecha.core.domain.rules import run_domains_including
from mecha.core.environment.agents import AGENTS, AGENTS_MD, AGENTS_MD_FILE, CLAUDE, CODEX, EXPORT_TARGETS, NAMES
from mecha.core.environment.confined import ExportOutcome, reach_problem, rewrite_file
from mecha.core.environment.settings import Unreadable, read_table
from mecha.core.errors import ExportFailed, InvalidInput
from mecha.core.store.layout import GIT_MARKER, checkout_root, linked_worktrees, project_root
from mecha.core.store.learning_store import LearningStore
from mecha.core.store.rules_block import render_rules

#: What each agent calls its instructions file in a project (the team's,
#: tracked: written only when named by hand).
PROJECT_FILES = {**{a.name: a.instructions_team for a in AGENTS}, AGENTS_MD: AGENTS_MD_FILE}
#: How a target holds the rules: a managed Markdown section
#: (`export.export_block`), or Codex's `developer_instructions` key in a
#: project's `.codex/config.toml` (`personal.codex_config_after`).
SECTION, CODEX_KEY = "section", "codex_key"
#: The agents an accept exports to by default, once the person connected
#: them (plugin or hooks), each to the person's own files
#: (`personal_targets`). `agents` (any `AGENTS.md` reader) is exported to
#: only when `[export]` names it.
PERSONAL_AGENTS = NAMES
#: The keys `[export]` knows.
EXPORT_KEYS = EXPORT_TARGETS


class ExportTarget(msgspec.Struct, frozen=True):
    """One file to export into, and whose rules it is told."""

    #: `claude` or `agents`: which agent reads it (and so what it holds).
    agent: str
    path: Path
    #: The project whose rules it carries (its root); `None`: the global rules.
    project: str | None = None
    #: Why the file is left alone on purpose (`not_a_repository`), or `None`.
    skip: str | None = None
    #: The checkout the file must stay inside when it is not the project's
    #: own folder (a linked worktree's), or `None`: the project's.
    checkout: str | None = None
    #: `SECTION` or `CODEX_KEY`.
    form: str = SECTION
    #: A person's own file inside a checkout: kept out of git
    #: (`personal.keep_out_of_git`) before it is written.
    personal: bool = False


def global_claude_file(home: Path) -> Path:
    return home.joinpath(*CLAUDE.home, CLAUDE.home_instructions[0])


def target_for_file(agent: str, path: Path, *, home: Path) -> ExportTarget:
    """The scope of a file named by hand (see the module docstring)."""
    path = Path(os.path.abspath(path.expanduser()))
    if agent == CODEX.name and path == Path(os.path.abspath(personal.codex_home(home) / personal.CODEX_GLOBAL_FILE)):
        return ExportTarget(agent, path, None)
    if agent in (AGENTS_MD, CODEX.name):
        agent = AGENTS_MD
        project, checkout = project_root(path.parent), checkout_root(path.parent)
        return ExportTarget(agent, path, project, checkout=None if checkout == project else checkout)
    if path == Path(os.path.abspath(global_claude_file(home))):
        return ExportTarget(agent, path, None)
    folder = path.parent.parent if path.parent.name == CLAUDE.home[0] else path.parent
    real = os.path.realpath(folder)
    if not (os.path.lexists(folder / GIT_MARKER) and checkout_root(folder) == real):
        return ExportTarget(agent, path, None)
    project = project_root(folder)
    return ExportTarget(agent, path, project, checkout=None if project == real else real)


def project_target(agent: str, project: str) -> ExportTarget:
    """A project's own instructions file for `agent`, at its root."""
    return ExportTarget(agent, Path(project) / PROJECT_FILES[agent], project)


def project_targets(agent: str, project: str) -> list[ExportTarget]:
    """Every file of `project`'s for `agent`: the one at its root, then one
    in each linked worktree of its repository (`layout.linked_worktrees`),
    since the agent reads the file of the checkout it runs in and every
    checkout of a repository is the one project. A worktree removed since
    is not listed."""
    name = PROJECT_FILES[agent]
    return [project_target(agent, project)] + [
        ExportTarget(agent, Path(wt) / name, project, checkout=wt) for wt in linked_worktrees(project)
    ]


def superseded_worktree(project: str) -> str | None:
    """Why a project the store holds rules for is no longer exported on its
    own, or `None`: a linked worktree that a store written before worktrees
    were one project with their repository kept as a project of its own.
    Its file now carries its repository's rules (`project_targets`), and
    two scopes must not take turns writing one file."""
    main = project_root(project)
    if main == project:
        return None
    return (
        f"not exported: {project} is a worktree of the repository at {main}, which is now its project; "
        f"the worktree's file carries that project's rules. Its earlier lessons and rules stay in the store "
        "under the worktree's path (`mecha-sidecar lessons` lists them)"
    )


def not_a_repository(project: str) -> str | None:
    """Why a project's own file is not written when every scope is
    exported, or `None` when it is. A project is a repository; a session
    run in a folder outside any (`~/src`, say) is its own project in the
    store, but an instructions file there is read by the agent in every
    repository below it — a lesson from one folder would reach them all.
    So its lessons stay where they are: in the store, for runs in that
    very folder (the rules block the harness asks for), and out of every
    file. Naming the folder (`export --project DIR`, or a file by hand) is
    the person's word, and writes it."""
    if os.path.lexists(os.path.join(project, GIT_MARKER)) or not os.path.isdir(project):
        return None  # a repository; or a folder gone, which `export_to` names
    return (
        f"not exported: {project} is not a repository (no {GIT_MARKER}), and an instructions file there is read "
        "in every repository below it; its lessons stay in the store and reach runs started in that folder "
        "through the rules block. Name it to write it anyway: export --project DIR"
    )


def scope_targets(agent: str, projects: Iterable[str], *, home: Path) -> list[ExportTarget]:
    """Every scope's file for `agent`: the global `CLAUDE.md` (for claude),
    then each project's file, by path — a project that is not a repository
    listed with the reason it is left alone (`not_a_repository`)."""
    out = [ExportTarget(agent, global_claude_file(home), None)] if agent == CLAUDE.name else []
    for p in sorted(set(projects)):
        skip = superseded_worktree(p) or not_a_repository(p)
        if skip is not None:
            out.append(msgspec.structs.replace(project_target(agent, p), skip=skip))
        else:
            out += project_targets(agent, p)
    return out


def chosen_targets(
    agent: str, path: Path | None, project: str | None, *, projects: Iterable[str], home: Path, cwd: str
) -> list[ExportTarget]:
    """The files an export writes: `path` alone, told its own scope's rules
    (`project`'s when one is named); `project`'s own file; or, with
    neither, every scope's (`scope_targets`) — for `agents` the working
    directory's project's too, as `AGENTS.md` there always was."""
    if path is not None:
        named = target_for_file(agent, path, home=home)
        if project is None or project == named.project:
            return [named]
        return [ExportTarget(named.agent, named.path, project)]
    if agent in PERSONAL_AGENTS:
        mine = personal_targets(agent, [project] if project is not None else projects, home=home)
        return [t for t in mine if t.project is not None] if project is not None else mine
    if project is not None:
        return project_targets(agent, project)
    return scope_targets(agent, [*projects, project_root(cwd)], home=home)


def personal_targets(agent: str, projects: Iterable[str], *, home: Path,
                     env: Mapping[str, str] | None = None) -> list[ExportTarget]:
    """The person's own files for `agent` (`personal`): the global one in
    the agent's home, then, for each project that is a repository, one in
    each of its checkouts — Claude Code's `CLAUDE.local.md`, Codex's
    project configuration — kept out of git. A project that is no
    repository, or a superseded worktree, is listed with its reason."""
    if agent == CLAUDE.name:
        out = [ExportTarget(agent, global_claude_file(home), None)]
    else:
        out = [ExportTarget(agent, personal.codex_home(home, env) / personal.CODEX_GLOBAL_FILE, None)]
    for p in sorted(set(projects)):
        skip = superseded_worktree(p) or not_a_repository(p)
        if skip is not None:
            out.append(ExportTarget(agent, _personal_file(agent, p), p, skip=skip, personal=True))
            continue
        for checkout in [p, *linked_worktrees(p)]:
            out.append(ExportTarget(
                agent, _personal_file(agent, checkout), p, checkout=None if checkout == p else checkout,
                form=SECTION if agent == CLAUDE.name else CODEX_KEY, personal=True,
            ))
    return out


def _personal_file(agent: str, checkout: str) -> Path:
    return personal.claude_local_file(checkout) if agent == CLAUDE.name else personal.codex_project_config(checkout)


def connected_agents(home: Path, projects: Iterable[str] = (), env: Mapping[str, str] | None = None) -> list[str]:
    """The agents the person connected to this store, of `PERSONAL_AGENTS`:
    Claude Code with our plugin switched on or our hooks in its user
    settings or in a project's; Codex with our hooks in its user or a
    project's hook settings. Only these are exported to by default — a
    person who never connected an agent finds no file of it made."""
    from mecha.core.agents import hooks as hk
    from mecha.core.agents.plugin import find_claude_plugins

    def hooked(agent: str) -> bool:
        places = [hk.settings_path(agent, "user", home=home, cwd=home)]
        places += [hk.settings_path(agent, "project", home=home, cwd=Path(p)) for p in projects if os.path.isdir(p)]
        if agent == CODEX.name:
            places.append(personal.codex_home(home, env) / CODEX.settings_home[-1])
        for path in places:
            try:
                if hk.installed(hk.read_settings(path), agent).events:
                    return True
            except Exception:  # an unreadable settings file connects nothing; `hooks status` names it
                continue
        return False

    out = []
    if any(p.enabled for p in find_claude_plugins(home)) or hooked(CLAUDE.name):
        out.append(CLAUDE.name)
    if hooked(CODEX.name):
        out.append(CODEX.name)
    return out


def store_projects(store: LearningStore | None) -> list[str]:
    """The roots of every project the store holds rules for."""
    if store is None:
        return []
    return sorted(root for root in store.projects().values() if root is not None)


def block_for(store: LearningStore | None, target: ExportTarget) -> str | None:
    """The rules `target` is told: a project's `CLAUDE.md` its project's
    rules alone, anything else the block a run in its scope gets."""
    if store is None:
        return None
    if target.agent in NAMES and target.project is not None:
        project = target.project
        sets = [(d, store.user_rules(d, project), store.learned_rules(d, project)) for d in run_domains_including(None)]
        return render_rules([], sets).block
    return store.render_block(None, target.project).block


#: What an export says of a file it did not make because its scope has no
#: rule yet.
NO_RULES_YET = (
    "no rule for this scope yet, so no file was made; accept a proposal first (`mecha-sidecar proposals`)"
)


def export_to(store: LearningStore | None, target: ExportTarget, *, check: bool = False) -> ExportOutcome:
    """Write `target`'s rules into it (`export.export_block`). A project
    file is not created for nothing: with no rule for it and no section in
    it yet, it is left as it is — and so is the global file (a person who
    exports before accepting anything must not find an empty
    `~/.claude/CLAUDE.md` made for them); and a project whose folder is gone is an
    `ExportFailed` naming it, since writing there would make the folder."""
    block = block_for(store, target)
    within = None
    if target.project is not None:
        folder = Path(target.checkout or target.project) if target.form == CODEX_KEY else target.path.parent
        if not os.path.isdir(folder):
            raise ExportFailed(
                f"{target.path}: the folder of the project at {target.project} is not there (moved or removed); "
                "nothing was written"
            )
        within = Path(target.checkout or target.project)
    if block is None and not _has_section(target.path):
        return ExportOutcome(path=str(target.path), changed=False, skipped=NO_RULES_YET)
    if target.personal and not check:
        if target.project is not None and target.skip is None:
            personal.keep_out_of_git(target.checkout or target.project, target.path)
    if target.form == CODEX_KEY:
        name = str(target.path)
        if not check:
            if within is not None and (problem := reach_problem(target.path.parent, within)) is not None:
                raise ExportFailed(f"{target.path}: {problem}; nothing was written")
            target.path.parent.mkdir(exist_ok=True)
        return rewrite_file(target.path, lambda raw: personal.codex_config_after(raw, block, name=name),
                            check=check, within=within, appends=False, what="the rules key")
    return export_block(target.path, block, check=check, within=within)


def _has_section(path: Path) -> bool:
    """Whether the file holds a rules section; `True` for anything but a
    missing or plain file without one, so that `export_block` names what
    it is. Opened without blocking: a FIFO there has no writer."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        return False
    except OSError:
        return True
    with open(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return True
        data = f.read()
        return b"<!-- mecha:rules:begin" in data or personal.CODEX_INSTRUCTIONS_KEY.encode() in data


def configured_targets(
    config_path: Path, *, projects: Iterable[str] = (), home: Path | None = None,
    connected: Iterable[str] | None = None, env: Mapping[str, str] | None = None,
) -> list[ExportTarget]:
    """The files an accept writes. By default, for each agent the person
    connected (`connected`, else `connected_agents`), the person's own
    files (`personal_targets`), with no configuration at all. The
    `[export]` table of `sidecar.toml` changes that per key — `claude`,
    `codex`: `true` (the person's files, connected or not), `false` (none),
    a file path or a list of them (each told its own scope's rules,
    `target_for_file`); `agents`: `true` (every project's `AGENTS.md`, the
    team's file, for an agent that reads nothing else) or paths. A relative
    path is relative to the config file's folder. Read only when an accept
    asks, never on a run's path."""
    table = _export_table(config_path) or {}
    home = Path.home() if home is None else home
    projects = list(projects)
    for key in table:
        if key not in EXPORT_KEYS:
            raise InvalidInput(f"{config_path}: [export] {key}: unknown target (known: {', '.join(EXPORT_KEYS)})")
    on = list(connected_agents(home, projects, env) if connected is None else connected)
    out: list[ExportTarget] = []
    for key in [*table, *(k for k in PERSONAL_AGENTS if k not in table)]:
        value = table.get(key, True if key in on else None)
        if value is None or value is False:
            continue
        if value is True:
            out += personal_targets(key, projects, home=home, env=env) if key in PERSONAL_AGENTS else scope_targets(
                key, projects, home=home)
            continue
        for v in value if isinstance(value, list) else [value]:
            if not isinstance(v, str) or not v:
                raise InvalidInput(
                    f"{config_path}: [export] {key}: expected true, false, a file path or a list of them")
            target = Path(v).expanduser()
            out.append(target_for_file(key, target if target.is_absolute() else config_path.parent / target, home=home))
    return out


def _export_table(config_path: Path) -> dict[str, object] | None:
    try:
        table = read_table(config_path, "export", skim=True)
    except Unreadable as unreadable:
        exc = unreadable.exc
        raise InvalidInput(f"{config_path}: {exc.strerror or exc if isinstance(exc, OSError) else exc}") from None
    if table is not None and not isinstance(table, dict):
        raise InvalidInput(f"{config_path}: [export] must be a table")
    return table


class TargetResult(msgspec.Struct, frozen=True):
    """What one export did: the file, its scope, and whether it was written
    (with `check`: whether it is out of date), or why it could not be."""

    path: str
    project: str | None = None
    changed: bool = False
    error: str | None = None
    #: Why the file was left alone on purpose (`ExportTarget.skip`).
    skipped: str | None = None


def export_all(store: LearningStore | None, targets: Iterable[ExportTarget], *, check: bool = False) -> list[TargetResult]:
    """Each target exported in turn (`export_to`), one failing never
    stopping the rest: every failure is reported by name in its result
    (`ExportFailed: <file>: …`), and one this module did not foresee is
    logged with its traceback too."""
    import logging

    log = logging.getLogger(__name__)
    out: list[TargetResult] = []
    for target in targets:
        if target.skip is not None:
            out.append(TargetResult(str(target.path), target.project, skipped=target.skip))
            continue
        try:
            outcome = export_to(store, target, check=check)
        except Exception as exc:  # reported per file; the others still go
            if not isinstance(exc, InvalidInput):
                log.exception("export to %s failed", target.path)
            out.append(TargetResult(str(target.path), target.project, error=f"{type(exc).__name__}: {exc}"))
        else:
            out.append(TargetResult(str(target.path), target.project, changed=outcome.changed, skipped=outcome.skipped))
    return out
