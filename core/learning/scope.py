"""Where a lesson applies: globally, or in one project.

Before scopes every lesson was global, so "this repository indents with two
spaces", learned in one checkout, was told to the agent in all of them. Now
a lesson carries the project its session ran in, and is learned for that
project; it reaches every repository only when a person says so.

- **A project is a directory**: the git root of the session's working
  directory, or the directory itself outside any repository
  (`layout.project_root`). How it is named on disk is `layout`'s. Only a
  repository gets its lessons written into an instructions file when every
  scope is exported: a folder outside any repository holds other projects,
  whose agents would read them too (`export_targets.not_a_repository`).
- **Learned project-scoped by default.** A reflection keeps its session's
  project, and a learn pass pools one domain *in one scope*.
- **Global by a person's word**: accepting a project's proposal as global
  (`proposals accept ID --global`), or accepting a *promotion proposal*,
  which is filed — never applied — when the same lesson is live in two or
  more projects (`promotion_candidates`).

What counts as "the same lesson" is `rules.rule_key`: identical text
up to case, whitespace and a final full stop. Conservative on purpose; a
near match is left for a person to notice.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence

from mecha.core.domain.rules import Rule, rule_key
from mecha.core.errors import InvalidInput
from mecha.core.store.layout import GLOBAL_SCOPE, branch_known, project_root, root_problem


def resolve_project(given: object, field: str = "project") -> str:
    """The project root for a directory a client named: an absolute path,
    resolved to its git root where there is one. Anything else is
    `InvalidInput` naming `field` — a relative path would be resolved
    against the sidecar's working directory, which is not the run's."""
    if not isinstance(given, str) or not given:
        raise InvalidInput(f"{field}: must be an absolute directory path")
    problem = root_problem(given)
    if problem is not None:
        raise InvalidInput(f"{field}: not a directory path: it {problem}")
    if not os.path.isabs(given):
        raise InvalidInput(f"{field}: {given!r} is not an absolute path")
    return project_root(given)


def project_of_cwd(cwd: str | None) -> str | None:
    """The project a session recorded in `cwd` ran in, or `None` when it
    recorded none (or one that is not an absolute path: no directory can be
    told from it, so the lesson stays global — as it was before scopes,
    not in some other project)."""
    if not cwd or root_problem(cwd) is not None or not os.path.isabs(cwd):
        return None
    return project_root(cwd)


def project_of_session(cwd: str | None, branch: str | None) -> str | None:
    """The project of a session that ran in `cwd` on `branch`: its
    repository (`project_of_cwd`) — and, when `cwd` is gone, the repository
    it was a linked worktree of, if that is still on this machine
    (`repository_of_removed_worktree`). Worktrees named after an issue and
    removed after merge made four one-lesson projects of one repository,
    none of which ever reached a learn pass."""
    if cwd and branch and os.path.isabs(cwd) and root_problem(cwd) is None and not os.path.lexists(cwd):
        found = repository_of_removed_worktree(cwd, branch)
        if found is not None:
            return found
    return project_of_cwd(cwd)


#: How far above a removed worktree's folder its repository is looked for:
#: `<repo>/.worktrees/<name>`, `<parent>/<repo>-worktrees/<name>` and
#: `<parent>/<repo>-<name>` put it within two levels up, or beside one of them.
_WORKTREE_SEARCH_UP = 3
#: How many folders beside those are looked into, at most, per level.
_WORKTREE_SEARCH_WIDE = 200


def repository_of_removed_worktree(path: str, branch: str) -> str | None:
    """The main worktree of the repository a removed linked worktree at
    `path` belonged to, when exactly one is found; else `None`.

    Git forgets a worktree when it is removed (`.git/worktrees/<name>`
    goes), so what is left to go by is what the session recorded — the
    folder it ran in and the branch checked out there — and the repository's
    own metadata. A candidate is a repository's main worktree at or beside
    one of the folders above `path` that still exist (the layouts people
    use: `<repo>/.worktrees/<name>`, `<parent>/<repo>-worktrees/<name>`,
    `<parent>/<repo>-<name>`); it is the one when its git directory knows the
    branch: a ref (`refs/heads/<branch>`, a remote's, `packed-refs`) or its
    reflogs naming it (a merge of it, a checkout of it). Read as plain
    files, no `git` process. Two candidates that both know the branch (a
    fork beside its origin) are no answer: the session stays a project of
    its own, as before."""
    branch = branch.strip()
    if not branch or "\n" in branch or branch in ("HEAD", "main", "master"):
        return None
    found: set[str] = set()
    for parent in _existing_ancestors(path)[:_WORKTREE_SEARCH_UP]:
        for candidate in _beside(parent):
            if branch_known(candidate, branch):
                found.add(candidate)
        if found:
            break
    return found.pop() if len(found) == 1 else None


def _existing_ancestors(path: str) -> list[str]:
    """The folders above `path` that exist, nearest first."""
    out: list[str] = []
    here = os.path.dirname(os.path.normpath(path))
    while True:
        if os.path.isdir(here):
            out.append(os.path.realpath(here))
        parent = os.path.dirname(here)
        if parent == here:
            return out
        here = parent


def _beside(folder: str) -> list[str]:
    """`folder` and the folders in it that are a repository's main worktree."""
    out = [folder] if os.path.isdir(os.path.join(folder, ".git")) else []
    try:
        names = sorted(os.listdir(folder))[:_WORKTREE_SEARCH_WIDE]
    except OSError:
        return out
    for name in names:
        candidate = os.path.join(folder, name)
        if os.path.isdir(os.path.join(candidate, ".git")) and not os.path.islink(candidate):
            out.append(candidate)
    return out


def scope_label(project: str | None) -> str:
    """How a scope is named to a person: `global`, or `project <root>`."""
    return GLOBAL_SCOPE if project is None else f"project {project}"


def new_rules(before: Sequence[Rule], after: Sequence[Rule]) -> list[Rule]:
    """The active rules of `after` whose lesson `before` does not hold: what
    a proposal adds, which is what `accept --global` sends to the global
    scope."""
    known = {rule_key(r.text) for r in before}
    return [r for r in after if r.active() and rule_key(r.text) not in known]


def promotion_candidates(
    global_rules: Sequence[Rule], project_rules: Mapping[str, Sequence[Rule]], already: Iterable[str] = ()
) -> list[tuple[Rule, list[str]]]:
    """Lessons live in two or more projects and not in the global rules:
    each as the first project's rule and the sorted projects that hold it.
    A lesson the global rules hold retired is not one either — a person
    retired it from every repository. `already` are lesson keys a
    promotion is already pending for (or was refused), so none is proposed
    twice."""
    skip = {rule_key(r.text) for r in global_rules} | set(already)
    found: dict[str, tuple[Rule, set[str]]] = {}
    for project in sorted(project_rules):
        for rule in project_rules[project]:
            if not rule.active():
                continue
            key = rule_key(rule.text)
            if key in skip:
                continue
            found.setdefault(key, (rule, set()))[1].add(project)
    return [(rule, sorted(where)) for rule, where in found.values() if len(where) >= 2]
