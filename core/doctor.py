"""Health checks over a store and the loop around it.

Each check answers one question a person debugging "why is nothing being
learned?" would ask, in the order they would ask it: is the store there and
private, is its history kept, do the rule files parse, is any domain over
budget or loaded by nothing, is the learner starved of learnable lessons,
is anything waiting for review or stuck, and can a pass reach a model.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import msgspec

from mecha.core.domain.rules import LEARN_MIN_REFLECTIONS, MAX_ACTIVE_RULES_PER_DOMAIN, routed_domains
from mecha.core.environment.installed import FoundAgent, install_command
from mecha.core.errors import InvalidStore
from mecha.core.store import jobs as jobs_mod
from mecha.core.store.learning_store import LearningStore


class Check(msgspec.Struct):
    name: str
    ok: bool
    detail: str


def _permissions(store: LearningStore) -> Check:
    loose = store.loose_entries()
    if loose:
        return Check("permissions", False, "readable by others: " + ", ".join(loose[:10]) + (" …" if len(loose) > 10 else ""))
    return Check("permissions", True, "owner-only")


def run_checks(root: Path, model_options: Mapping[str, Any] | None = None, *, env: Mapping[str, str] | None = None) -> list[Check]:
    env = os.environ if env is None else env
    store = LearningStore.open_existing(root)
    if store is None:
        # Not a fault: a fresh install has no store until something writes one.
        checks = [Check("store", True, f"none at {root} yet: the first import, hook or pass creates it")]
    else:
        checks = [Check("store", True, str(root)), _permissions(store), _history_check(store)]
        checks += [_rules_files_check(store), _budget_check(store), _routing_check(store), _learner_check(store)]
        checks += [_proposals_check(store), _jobs_check(root), _inbox_check(store), _hooks_check(store)]
    checks.extend(_model_checks(model_options, env, root if store is not None else None))
    return checks


def _history_check(store: LearningStore) -> Check:
    has_git = shutil.which("git") is not None
    repo = store.has_history()
    if has_git and repo:
        from mecha.core.store.history import History

        stalled = History(store.root).stall()
        if stalled is not None:
            return Check("git", False, stalled)
        return Check("git", True, "history kept in the store's git repository")
    return Check("git", False, "git is not installed: no audit trail" if not has_git else "the store is not a git repository")


def _rules_files_check(store: LearningStore) -> Check:
    broken = []
    for domain in store.domains():
        for loader in (store.user_rules, store.learned_rules):
            try:
                loader(domain)
            except InvalidStore as exc:
                broken.append(str(exc))
    return Check("rules files", not broken, "; ".join(broken) if broken else f"{len(store.domains())} domain(s) parse")


def _budget_check(store: LearningStore) -> Check:
    try:
        over = store.over_budget_domains()
    except InvalidStore:
        over = []
    detail = ", ".join(f"{d}: {n} active learned rules (cap {MAX_ACTIVE_RULES_PER_DOMAIN})" for d, n in over)
    return Check("budget", not over, detail or "every domain within the cap")


def _routing_check(store: LearningStore) -> Check:
    unrouted = [d for d in store.domains() if d not in routed_domains()]
    if unrouted:
        return Check("routing", False, "loaded by no run or pass unless a run names it: " + ", ".join(unrouted))
    return Check("routing", True, "every domain on disk is loaded by a run or a pass")


def _learner_check(store: LearningStore) -> Check:
    reflections = store.reflexions()
    starved = []
    for domain in sorted({r.domain for r in reflections}):
        pool = [r for r in reflections if r.domain == domain and not r.is_processed]
        learnable = [r for r in pool if r.learnable()]
        if len(pool) >= LEARN_MIN_REFLECTIONS and len(learnable) < LEARN_MIN_REFLECTIONS:
            starved.append(f"{domain}: {len(pool)} unprocessed, {len(learnable)} learnable (needs {LEARN_MIN_REFLECTIONS})")
    return Check("learner", not starved, "; ".join(starved) or "no domain is starved of learnable reflections")


def _hooks_check(store: LearningStore) -> Check:
    """Sessions an agent's session-end hook could not queue (the disk
    full) and nothing has read since: named, with what reads them."""
    from mecha.core.agents.hooks import imported_since, lost_session_ends

    lost = lost_session_ends(store.root, imported_since(store.imports()))
    if not lost:
        return Check("hooks", True, "every session end a hook saw was queued")
    agents = sorted({e.agent for e in lost})
    how = " and ".join(f"`mecha-sidecar import {a}`" for a in agents)
    latest = lost[-1]
    return Check("hooks", False, f"{len(lost)} session end(s) could not be queued (latest: session "
                                 f"{latest.session_id} of {latest.agent}, {latest.at}); the next hook, import or "
                                 f"learn queues them again once there is room, or {how} reads them now")


def _proposals_check(store: LearningStore) -> Check:
    from mecha.core.learning.proposals import pending_for

    pending = pending_for(store)
    if not pending:
        return Check("proposals", True, "none pending")
    return Check("proposals", True, f"{len(pending)} pending: " + ", ".join(f"{p.id} ({p.domain})" for p in pending))


def failing_passes(jobs: list[jobs_mod.Job]) -> list[jobs_mod.Job]:
    """The passes whose kind's latest finished run failed, newest first
    (`jobs` newest first, as `list_jobs` gives them). A failure a later run
    of the same kind got past is history, not a problem; the last reflect
    pass failing is: every session's corrections wait on it. Doctor once
    said "ok" beside "2 failed" while every pass failed with NoModel."""
    latest: dict[str, jobs_mod.Job] = {}
    for job in jobs:
        if job.state != "running":
            latest.setdefault(job.kind, job)
    return [j for j in latest.values() if j.state == "failed"]


def _jobs_check(root: Path) -> Check:
    jobs = jobs_mod.list_jobs(root, limit=20)
    died = [j for j in jobs if j.state == "failed"]
    running = [j for j in jobs if j.state == "running"]
    detail = f"{len(running)} running, {len(died)} failed among the last {len(jobs)}"
    failing = failing_passes(jobs)
    if failing:
        said = "; ".join(f"the last {j.kind} pass failed ({j.id}): {j.outcome}" for j in failing)
        return Check("jobs", False, f"{detail}; {said} — `mecha-sidecar jobs` lists them")
    if died:
        detail += f"; latest failure {died[0].id}, since followed by a pass of its kind that did not fail"
    return Check("jobs", True, detail)


def _inbox_check(store: Any) -> Check:
    """What waits for a reflect pass, and what a pass set aside — named, with
    how to retry or drop it. Not a failure: set-aside work is kept, and held
    out of the way on purpose."""
    from mecha.core.store.inbox import count_waiting, list_set_aside

    waiting, aside = count_waiting(store), list_set_aside(store)
    detail = f"{waiting} waiting for a reflect pass"
    if aside:
        shown = "; ".join(f"{e.id} ({e.label or 'unreadable'}): {e.reason}" for e in aside[:5])
        detail += (
            f"; {len(aside)} set aside: {shown}" + (" …" if len(aside) > 5 else "")
            + " — retry with `mecha-sidecar inbox retry ID`, drop with `mecha-sidecar inbox drop ID`"
        )
    return Check("inbox", True, detail)


def _agents_check(found: list[FoundAgent]) -> Check:
    """The agents' command lines installed here, and which would serve as
    the passes' model. Not a failure either way: it is an offer."""
    if not found:
        return Check(
            "agents", True,
            "no Claude Code or Codex command line found (on PATH or where their installers put them); "
            "with one installed, api = \"claude-code\" or \"codex\" runs the passes on your own account",
        )
    listed = "; ".join(f.describe() for f in found)
    best = found[0]
    return Check(
        "agents", True,
        f"{listed} — {best.label} would serve: MECHA_MODEL_API={best.agent.api}, "
        f"or api = \"{best.agent.api}\" in [model] of ~/.mecha/sidecar.toml",
    )


def _local_model_check() -> Check:
    """Whether the bundled local model can be started here (the `local`
    extra's server is importable), and how."""
    import importlib.util

    if importlib.util.find_spec("xllamacpp") is None:
        return Check(
            "local model", True,
            f"the bundled local model is not installed ({install_command('local')}, then `mecha-sidecar model serve`)",
        )
    return Check("local model", True, "the bundled local model can be started: `mecha-sidecar model serve` (it prints the settings)")


def _no_model_detail(found: list[FoundAgent]) -> str:
    offer = (
        f"{found[0].label} is installed: set MECHA_MODEL_API={found[0].agent.api} to use it"
        if found else "run `mecha-sidecar model serve` for the bundled model, or configure a server or an API key"
    )
    return (
        "no model configured: reflect and learn passes will fail with NoModel; "
        f"{offer} (initializationOptions.model, MECHA_MODEL_* variables, or [model] in ~/.mecha/sidecar.toml)"
    )


def _agent_model_check(cfg: Any, found: list[FoundAgent]) -> Check:
    """An agent's command line as the model: is its program here and does
    it run. Nothing is asked of it — a call would spend the person's quota."""
    mine = next((f for f in found if f.agent.api == cfg.api), None)
    if mine is None:
        return Check(
            "model", False,
            f"{cfg.describe()}: its program is not installed or does not run; install it, or configure another model",
        )
    return Check(
        "model", True,
        f"{cfg.describe()}: {mine.describe()}; each pass says how many calls it makes on your account before its first",
    )


def _model_checks(model_options: Mapping[str, Any] | None, env: Mapping[str, str], root: Path | None) -> list[Check]:
    from mecha.core.environment.installed import find_agents
    from mecha.core.environment.settings import config_path
    from mecha.core.providers import check_reachable, resolve_model_config

    found = find_agents(env)
    offers = [_agents_check(found), _local_model_check()]
    try:
        cfg = resolve_model_config(model_options, env, config_path(env))
    except ValueError as exc:
        return [*offers, Check("model", False, f"misconfigured: {exc}")]
    if cfg is None:
        return [*offers, Check("model", False, _no_model_detail(found))]
    if cfg.runs_agent:
        return [*offers, _agent_model_check(cfg, found)]
    import asyncio

    try:
        reachable, detail = asyncio.run(check_reachable(cfg))
    except Exception as exc:  # never let the doctor crash on its own check
        reachable, detail = False, f"{type(exc).__name__}: {exc}"
    checks = [*offers, Check("model", reachable, f"{cfg.api} {cfg.model} at {cfg.base_url} ({cfg.source}): {detail}")]
    if reachable:
        checks.append(_structured_check(cfg, env, root))
    return checks


def _structured_check(cfg: Any, env: Mapping[str, str], root: Path | None) -> Check:
    """Which structured mode the server accepts: what an earlier pass found
    (remembered in the store), else one short constrained call now — a few
    tokens, and then remembered for the passes too."""
    import asyncio

    from mecha.core.learning.reflection import BEHAVIOR_CONTRACT
    from mecha.core.providers import provider_from_config
    from mecha.core.providers.base import CompletionRequest
    from mecha.core.providers.structured import ModeMemory
    memory = ModeMemory(LearningStore(root).structured_modes_path, root=root) if root is not None else None
    key = ModeMemory.key(cfg.api, cfg.base_url, cfg.model)
    if cfg.structured != "auto":
        return Check("structured", True, f"replies constrained as {cfg.structured} (set in the configuration)")
    known = memory.get(key) if memory is not None else None
    if known is not None:
        return Check("structured", known != "off", f"the server accepted {known} replies (found by an earlier pass)")
    probe = CompletionRequest(
        system="Answer with the JSON object only.", user="Is there a lesson here? There is none.",
        max_tokens=24, reply_schema=BEHAVIOR_CONTRACT.reply_schema(),
    )
    try:
        response = asyncio.run(provider_from_config(cfg, env=env, memory=memory).complete(probe))
    except Exception as exc:
        return Check("structured", False, f"a constrained probe failed: {exc}")
    mode = response.structured
    if mode == "off":
        return Check("structured", False, "the server took no reply schema: replies are read unconstrained, and small models then rarely write usable JSON")
    return Check("structured", True, f"the server accepts {mode} replies")
