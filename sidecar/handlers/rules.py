"""`mecha/rulesPromptBlock`: the rules block a run starts with — the
harness's hot path — and the in-process cache of its answers.

This module is what a harness's first request loads, so it imports only the
store's readers and the rule names; an accept (in `proposals`) calls
`refresh_blocks` here so both copies of the cache follow the new rules.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import msgspec

from mecha.core.domain.rules import MAX_ACTIVE_RULES_PER_DOMAIN, active_count, run_domains_including, validate_domain
from mecha.core.errors import InvalidStore
from mecha.core.store import blockcache
from mecha.core.store.layout import RACY_FINE_NS, racy_until
from mecha.core.store.learning_store import LearningStore
from mecha.protocol import methods as m

from .._version import code_identity
from ..context import Context
from ..rpc import Cancel


class _BlockCache:
    """`rulesPromptBlock` answers keyed by the store root and its rules
    fingerprint (`LearningStore.rules_fingerprint`: name, inode, size, mtime
    and ctime of every rules file, a link's target included). A pass's
    rename gives a new inode, so it is seen on the next call; nothing is
    served from a file that changed.

    This is not a second cache but this process's view of the one the
    store keeps on disk (`mecha.core.store.blockcache`, which the next run's
    first stage answers from): the same answers under the same key, filled
    where the disk copy is written (`ctx.on_block_rendered`), and both
    refreshed together by what writes the rules (`refresh_blocks`, after an
    accept). It holds the answers decoded, so a long-lived server does not
    read and decode the file again at every call."""

    def __init__(self) -> None:
        self.key: tuple[Any, ...] | None = None
        #: `(domain, project root)` → the answer.
        self.value: dict[tuple[str | None, str | None], m.RulesPromptBlockResult] = {}

    def identity(self, root: Path) -> tuple[Any, ...] | None:
        fingerprint = LearningStore(root).rules_fingerprint()
        return None if fingerprint is None else (str(root), fingerprint)


_block_cache = _BlockCache()


def _empty_block(domains: list[str], project: str | None) -> m.RulesPromptBlockResult:
    return m.RulesPromptBlockResult(
        block=None, rules_hash=None, rule_ids=[], domains=domains, over_budget=[], project=project
    )


def rules_prompt_block(ctx: Context, p: m.RulesPromptBlockParams, cancel: Cancel) -> m.RulesPromptBlockResult:
    if p.domain is not None:
        validate_domain(p.domain)
    if p.project is None:
        project = None
    else:
        # Here, not at the top: a run that names no project (the first
        # request a harness sends, in the cold-path budget) does not load it.
        from mecha.core.learning.scope import resolve_project

        project = resolve_project(p.project)
    key = _block_cache.identity(ctx.root)
    if key is None:
        return _empty_block(run_domains_including(p.domain), project)
    if key != _block_cache.key:
        _block_cache.key = key
        _block_cache.value = {}
    cached = _block_cache.value.get((p.domain, project))
    if cached is not None:
        return cached
    store = ctx.existing_store()
    if store is None:
        return _empty_block(run_domains_including(p.domain), project)
    result = _block_result(store, p.domain, project)
    # Kept only if no rules file changed while it was read: a block read
    # across an accept must not be filed under the identity from before it.
    if _block_cache.identity(ctx.root) == key:
        _block_cache.value[(p.domain, project)] = result
        if ctx.on_block_rendered is not None:
            ctx.on_block_rendered(p.domain, project, result, key[1])
    return result


def _block_result(store: LearningStore, domain: str | None, project: str | None) -> m.RulesPromptBlockResult:
    rendered = store.render_block(domain, project)
    return m.RulesPromptBlockResult(
        block=rendered.block,
        rules_hash=rendered.rules_hash,
        rule_ids=rendered.rule_ids,
        domains=rendered.domains,
        over_budget=_over_budget(store, project),
        project=project,
    )


def refresh_blocks(ctx: Context) -> int:
    """After the rules changed (an accept): render again every answer the
    block cache holds — on disk and in this process — under the new rules,
    and keep them, so the next run's first stage answers at once instead of
    handing over to the full server to render them. How many were kept on
    disk.

    A fingerprint is trusted beyond this process only once its newest change
    is older than a clock tick (`layout.is_racy`), so this waits that long
    (at most `RACY_FINE_NS`) before writing; where timestamps are coarse,
    it does not wait and the next run renders them. A cache that cannot be
    written is a later miss, never an error of the accept."""
    code = code_identity()
    kept = blockcache.read(ctx.root, code)
    wanted = set(_block_cache.value) | set(() if kept is None else blockcache.kept_keys(kept))
    store = ctx.existing_store()
    key = _block_cache.identity(ctx.root)
    if store is None or key is None or not wanted:
        return 0
    results = {(d, pr): _block_result(store, d, pr) for d, pr in sorted(wanted, key=repr)}
    if _block_cache.identity(ctx.root) != key:
        return 0  # changed again while rendered: the next call renders it
    _block_cache.key, _block_cache.value = key, results
    until = racy_until(key[1])
    if kept is None or (until is not None and until - time.time_ns() > RACY_FINE_NS):
        return 0
    if until is not None:
        time.sleep(max(0, until - time.time_ns() + 1_000_000) / 1e9)
    if _block_cache.identity(ctx.root) != key:
        return 0
    answers = {k: msgspec.json.encode(r) for k, r in results.items()}
    written = blockcache.write_answers(ctx.root, code, key[1], answers, kept.initialize, time.time_ns(), merge=False)
    return len(answers) if written else 0


def _over_budget(store: Any, project: str | None = None) -> list[m.OverBudget]:
    """`over_budget_scopes` (global, and the run's project), except that a
    learned file this run does not load and that does not parse must not
    cost the run its rules block: the rendering above already refused any
    file the run *does* load, and the doctor reports the rest by file and
    line."""
    try:
        return [m.OverBudget(domain=d, active=n, project=w) for d, w, n in store.over_budget_scopes(project)]
    except InvalidStore:
        pass
    out = []
    scopes = [(None, store.domains())] + ([(project, store.project_domains(project))] if project else [])
    for where, domains in scopes:
        for domain in domains:
            try:
                active = active_count(store.learned_rules(domain, where))
            except InvalidStore:
                continue
            if active > MAX_ACTIVE_RULES_PER_DOMAIN:
                out.append(m.OverBudget(domain=domain, active=active, project=where))
    return out
