"""The rules files of one store: `rules/<domain>[@<project id>].<kind>.toml`,
found, read and (the learned kind only) written.

The person's own files (`user`) are never written by code; a learned file
changes only when a person accepts a proposal. A rules file that does not
parse raises `InvalidStore` naming the file and line, because silently
dropping a person's rules would change what every run is told.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from mecha.core.domain.rules import MAX_ACTIVE_RULES_PER_DOMAIN, Rule, active_count, validate_domain
from mecha.core.errors import InvalidDomain, InvalidStore
from mecha.core.nesting import toml_problem
from mecha.core.store import files as _files
from mecha.core.store.layout import (
    LEARNED_KIND,
    RULES_DIR,
    USER_KIND,
    project_id,
    rules_file_name,
    rules_fingerprint,
    split_rules_name,
)
from mecha.core.store.rules_text import parse_rules_file, render_learned_toml, rules_file_project


def parse_rules_name(name: str) -> tuple[str, str, str | None] | None:
    """`(domain, kind, project id or None)` for a rules file's name, or
    `None` when it names no rules file (an invalid domain or project id)."""
    found = split_rules_name(name, (USER_KIND, LEARNED_KIND))
    if found is None:
        return None
    try:
        validate_domain(found[0])
    except InvalidDomain:
        return None
    return found


def rules_file_path(root: Path, domain: str, kind: str, project: str | None = None) -> Path:
    """`<root>/rules/<domain>[@<project id>].<kind>.toml`, after the domain is
    validated."""
    return root / RULES_DIR / rules_file_name(validate_domain(domain), kind, project)



class RulesFiles:
    """The rules files under one store root."""

    def __init__(self, root: Path):
        self._root = root

    @property
    def directory(self) -> Path:
        return self._root / RULES_DIR

    def path(self, domain: str, kind: str, project: str | None = None) -> Path:
        """`rules/<domain>.<kind>.toml`, or the file of the project whose root
        is `project` (`layout`), after the domain is validated."""
        return rules_file_path(self._root, domain, kind, project)

    def _load(self, path: Path) -> list[Rule]:
        try:
            size = path.stat().st_size
        except OSError:
            size = 0  # missing, or unreadable: the read below says which
        problem = toml_problem(size)
        if problem is not None:  # refused unread: reading it is most of the cost
            raise InvalidStore(f"{path}:1: {problem}", path=str(path), line=1)
        data = _files.read_bytes(path)
        if data is None:
            return []
        return parse_rules_file(data, str(path))

    def user(self, domain: str, project: str | None = None) -> list[Rule]:
        """The person's own rules (globally, or for one project). Nothing in
        this codebase writes that file: the learner is told these are
        immutable, and this is that made structural rather than left to a
        model."""
        return self._load(self.path(domain, USER_KIND, project))

    def learned(self, domain: str, project: str | None = None) -> list[Rule]:
        """A domain's learned rules in one scope: global, or the project
        whose root is `project`."""
        return self._load(self.path(domain, LEARNED_KIND, project))

    def render_learned(self, domain: str, rules: Sequence[Rule], project: str | None = None) -> tuple[Path, bytes]:
        """The learned file of `domain` in `project`'s scope and the bytes
        that would make it hold exactly `rules`, written nowhere yet (its
        folder is made, and a link in the way refused). An existing file is
        edited in place where possible, keeping a person's comments
        (`render_learned_toml`). Only an accept's transaction puts these
        bytes in place — unattended learning proposes, it never applies —
        by a rename, since runs read the file with no lock and a torn TOML
        would fail an unrelated run at startup."""
        path = self.path(domain, LEARNED_KIND, project)
        _files.ensure_private_dir(path.parent, root=self._root)
        _files.refuse_links(self._root, path)
        data = _files.read_bytes(path)
        existing: str | None = None
        if data is not None:
            try:
                existing = data.decode("utf-8")
            except UnicodeDecodeError:
                existing = None
        return path, render_learned_toml(existing, rules, domain, project).encode("utf-8")

    def names(self) -> list[tuple[str, str, str, str | None]]:
        """`(file name, domain, kind, project id)` of every rules file."""
        try:
            names = os.listdir(self._root / RULES_DIR)
        except (FileNotFoundError, NotADirectoryError):
            return []
        out = []
        for name in sorted(names):
            found = parse_rules_name(name)
            if found is not None:
                out.append((name, *found))
        return out

    def domains(self) -> list[str]:
        """Every domain with a rules file on disk, in any scope, sorted. A
        file whose name is not a valid domain is not a domain (and is never
        loaded)."""
        return sorted({domain for _, domain, _, _ in self.names()})

    def projects(self) -> dict[str, str | None]:
        """Every project with a rules file on disk: its id → its root as the
        file names it (`project` key), or `None` where no file of it does
        (a file a person wrote by hand without the key)."""
        out: dict[str, str | None] = {}
        for name, _, _, pid in self.names():
            if pid is None:
                continue
            if out.get(pid) is None:
                data = _files.read_bytes(self._root / RULES_DIR / name)
                out[pid] = None if data is None else rules_file_project(data)
        return out

    def project_domains(self, project: str) -> list[str]:
        """The domains with a rules file for the project whose root is `project`."""
        pid = project_id(project)
        return sorted({d for _, d, _, p in self.names() if p == pid})

    def fingerprint(self) -> list[list[Any]] | None:
        """The identity of every rules file, `None` without a rules directory
        (`layout.rules_fingerprint`): what a cached rules block is keyed by,
        in this process and across runs."""
        return rules_fingerprint(self._root)

    def over_budget(self, project: str | None) -> list[tuple[str, str | None, int]]:
        """`(domain, scope, active)` for every learned file over the cap, in
        the global scope and, given a project root, in that project (each
        scope has its own cap)."""
        out: list[tuple[str, str | None, int]] = []
        scopes: list[tuple[str | None, list[str]]] = [(None, self.domains())]
        if project is not None:
            scopes.append((project, self.project_domains(project)))
        for where, domains in scopes:
            for domain in domains:
                if where is None and not self.path(domain, LEARNED_KIND).exists():
                    continue
                active = active_count(self.learned(domain, where))
                if active > MAX_ACTIVE_RULES_PER_DOMAIN:
                    out.append((domain, where, active))
        return out
