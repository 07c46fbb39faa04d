"""Sharing a rule with the team: the person's decision, never an accept's.

An accepted rule is the person's and goes where each agent reads the
person's own instructions (`export_targets`), so `git status` never shows
it. A rule the person wants their team to have as well is *shared*:
`share RULE…` writes it into the repository's tracked instructions — its
`CLAUDE.md` (Claude Code) and its `AGENTS.md` (Codex and the others), each
that exists at the repository's root, or a new `CLAUDE.md` when neither
does — and says to commit them. Nothing is committed for the person: what
goes into a team's history is theirs to review.

The shared rules sit in the file's managed section (`export.splice`, with
all of `confined.rewrite_file`'s safety), one `- ` line each under a heading
that says where they came from. A second share adds to what is there: the
section's rule lines are read back (`shared_lines`) and the new ones
appended, so a rule shared last week is not dropped by this week's. The
rule itself stays in the store as it was, with its sources and its record;
sharing changes no rules file and no proposal.

A rule is named by its id, or a unique prefix of one, among the learned
rules of the repository's project and the global ones (`find_rules`); an
id that names none, or several, is refused by name before anything is
written. So is a folder in no git repository: it has no team's tracked
files, and a `CLAUDE.md` made there (or a folder made for one) would be a
file nobody asked for.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

import msgspec

from mecha.core import shellwords
from mecha.core.agents.export import section_lines, splice
from mecha.core.environment.agents import AGENTS
from mecha.core.environment.confined import rewrite_file
from mecha.core.errors import Ambiguous, ExportFailed, NotFound
from mecha.core.store.layout import GIT_MARKER
from mecha.core.store.learning_store import LearningStore
from mecha.core.visible import shown

#: The team's instruction files at a repository's root, in the order they
#: are written; the first is made when none is there.
TEAM_FILES = tuple(dict.fromkeys(a.instructions_team for a in AGENTS))
#: The heading of the shared section (inside the managed markers).
SHARED_HEADING = "## Rules shared from mecha-sidecar"
SHARED_PREAMBLE = (
    "Learned from one person's corrections and shared with the team on purpose; "
    "follow them as you follow the rest of this file."
)


class SharedRule(msgspec.Struct, frozen=True):
    id: str
    text: str
    domain: str
    #: The project the rule belongs to (its root), `None`: a global rule.
    project: str | None = None


class ShareOutcome(msgspec.Struct, frozen=True):
    rules: list[SharedRule]
    #: Each file written (or already holding every rule: `changed` false).
    files: list[tuple[str, bool]]
    #: The repository the files are in.
    repository: str


def commit_command(done: ShareOutcome) -> str | None:
    """The git commands that commit a share, for the person to paste after
    a look (`shellwords`: each word quoted; the message spells out any
    character of a rule that hides); `None` when the repository's path
    itself cannot be pasted faithfully."""
    names = [os.path.relpath(path, done.repository) for path, _ in done.files]
    message = "Share learned rules: " + shown(", ".join(r.text[:60] for r in done.rules))
    add = shellwords.command_or_none("git", "-C", done.repository, "add", *names)
    commit = shellwords.command_or_none("git", "-C", done.repository, "commit", "-m", message)
    return None if add is None or commit is None else f"{add} && {commit}"


def find_rules(store: LearningStore, ids: Iterable[str], project: str) -> list[SharedRule]:
    """Each id (or unique prefix) as an active learned rule of `project` or
    of the global scope; `NotFound` / `Ambiguous` naming the id otherwise."""
    candidates: list[SharedRule] = []
    for scope in (project, None):
        domains = store.project_domains(scope) if scope is not None else store.domains()
        for domain in domains:
            for rule in store.learned_rules(domain, scope):
                if rule.id and rule.enabled and not rule.retired_at:
                    candidates.append(SharedRule(rule.id, rule.text, domain, scope))
    out: list[SharedRule] = []
    for wanted in ids:
        exact = [c for c in candidates if c.id == wanted]
        found = exact or [c for c in candidates if c.id.startswith(wanted)]
        if not found:
            raise NotFound(
                f"no active learned rule {wanted!r} in {project} or the global rules "
                "(`mecha-sidecar lessons` or `proposals show` name them)")
        if len(found) > 1:
            raise Ambiguous(f"rule id {wanted!r} matches {', '.join(c.id for c in found)}", [c.id for c in found])
        if found[0] not in out:
            out.append(found[0])
    return out


def shared_block(texts: list[str]) -> str:
    """The shared section's text: heading, one line on where the rules
    come from, then one `- ` line per rule."""
    lines = "\n".join(f"- {' '.join(t.split())}" for t in texts)
    return f"{SHARED_HEADING}\n\n{SHARED_PREAMBLE}\n\n{lines}"


def shared_lines(raw: bytes | None) -> list[str]:
    """The rule lines the file's managed section already holds (their text,
    without the `- `)."""
    if raw is None:
        return []
    text = raw.decode("utf-8", errors="replace")
    return [line[2:] for line in section_lines(text) if line.startswith("- ")]


def team_files(repository: str) -> list[Path]:
    """The files a share writes in the repository at `repository`."""
    there = [Path(repository) / name for name in TEAM_FILES if os.path.lexists(Path(repository) / name)]
    return there or [Path(repository) / TEAM_FILES[0]]


def share(store: LearningStore, ids: list[str], repository: str) -> ShareOutcome:
    """Write the rules `ids` names into the team's files of `repository`."""
    if not ids:
        raise ExportFailed("name at least one rule to share (its id, as `proposals show` or `lessons` gives it)")
    if not os.path.lexists(os.path.join(repository, GIT_MARKER)):
        # `project_root` names a folder in no repository as its own project:
        # it has no tracked files for a team, and nothing is made in it.
        raise ExportFailed(
            f"{repository} is in no git repository: sharing writes a repository's tracked instructions "
            "for the team to commit; name a folder inside one")
    rules = find_rules(store, ids, repository)
    written: list[tuple[str, bool]] = []
    for path in team_files(repository):
        name = str(path)

        def render(raw: bytes | None, name: str = name) -> bytes:
            have = shared_lines(raw)  # as the file spells them: hidden characters escaped
            texts = have + [r.text for r in rules if shown(" ".join(r.text.split()), keep_layout=True) not in have]
            existing = raw.decode("utf-8") if raw is not None else ""
            return splice(existing, shared_block(texts), name=name).encode("utf-8")

        outcome = rewrite_file(path, render, within=Path(repository), what="the shared rules")
        written.append((name, outcome.changed))
    return ShareOutcome(rules=rules, files=written, repository=repository)
