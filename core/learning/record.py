"""A rule's record: does the rule change what the agent does?

A saved rule that does not change what the agent does is the complaint
people file most about every memory system: the line is saved, and next
week the agent does the same thing again. Nothing counted it. This module
does, from what the store already sees, at no extra model call:

- **Corrected again** (`Repeat`): every correction goes to the reflector
  anyway; its prompt shows the live rules of the correction's scope
  (`reflection.live_rules_section`) and its reply names the ones the
  correction shows were not followed. The reflect pass records each on
  the rule (`repeats.jsonl`): the session, the line, the person's words,
  and when the person said them (`Repeat.corrected_at`: the session file's
  time of that message; for a session the harness handed over, which
  carries none, when the pass recorded it). Only a correction made after
  the rule went live is "corrected again": an old session imported after
  the accept is evidence from before, and counts with the figures below.
- **Exposure**: the sessions that ran in the rule's scope while it was
  live *and* that it reached — the session-start hook records which rule
  lines the agent's instruction files held as it began (`agents.started`),
  so a rule the person's agent never read is not counted as having failed
  there. A harness's run says which rules its prompt carried when it hands
  the transcript over (`harness_start`), and is counted the same way.
- **Before**: the corrections it was learned from (its sources), and the
  sessions in its scope before it went live — with those of corrections
  the reflector named that were made before it went live.

`rule_record` folds those into one `RuleRecord` and one line a person
reads (`record_line`) wherever they look at a rule: `why`, `rules`, the
review command, the editors' hover. Two offers follow from a record, and
both are proposals, never changes: a rule corrected again
`REWRITE_AFTER_REPEATS` times gets a rewrite proposal with the new
corrections as its lessons (`rewrites_due`, made by the learn pass), and a
rule that no session has been in scope of for `RETIRE_UNSEEN_DAYS` is
offered for retirement (`retirements_due`, filed by `proposals.offer_retirements`).

Live since is the accept that brought the rule in (the first accepted
proposal that added its id), else its own `created_at` (a rule from before
proposals recorded it, or a person's hand edit).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime

from mecha.core.domain.record import Asked, Repeat, RuleRecord, ScopedRule, SessionStart
from mecha.core.domain.rules import Rule, one_line
from mecha.core.errors import InvalidInput, InvalidStore
from mecha.core.learning.asks import RAN, REFUSED, LiveAsk
from mecha.core.learning.scope import project_of_cwd
from mecha.core.sessions.evidence import cut_at_word
from mecha.core.store.layout import GLOBAL_SCOPE, fnv1a_64
from mecha.core.store.learning_store import LearningStore, Proposal, ProposalStatus

#: How many corrections after its accept make a rule due a rewrite: one can
#: be a slip; two say the rule as written does not do its work. Read by
#: `rewrites_due` (the learn pass) and by the record's line.
REWRITE_AFTER_REPEATS = 2
#: How long no session in a rule's scope makes it due an offer to retire:
#: a project left for two months is likely done, and its rules spend
#: nothing but a reviewer's attention; a rule that rides is not offered.
RETIRE_UNSEEN_DAYS = 60
#: How many of the sessions a rule reached a record names (all are counted).
NAMED_SESSIONS = 20


def rule_line_hash(rule: Rule) -> str:
    """The hash `agents.started.rule_line_hash` gives the line this rule
    renders to in a rules block (`- <text on one line>`)."""
    return fnv1a_64(f"- {one_line(rule.text)}".strip().encode("utf-8"))


def live_rules(store: LearningStore, domain: str, project: str | None) -> list[Rule]:
    """The learned rules of `domain` live in a session of `project`: the
    global ones, then the project's — what a run there is told — each with
    an id (a record is kept by id). A rules file that does not parse gives
    none of its rules here: the reflector is then shown fewer, and the
    person hears of the file from every reader that needs it whole."""
    out: list[Rule] = []
    for scope in (None, project) if project is not None else (None,):
        try:
            rules = store.learned_rules(domain, scope)
        except InvalidStore:
            continue
        out.extend(r for r in rules if r.active() and r.id is not None)
    return out


#: `SessionStart.agent` of a run a harness handed over.
HARNESS_AGENT = "harness"
#: The most rule ids one hand-over may name: a block holds at most the cap
#: of learned rules per domain and scope.
MAX_SERVED_RULES = 1000


def harness_start(
    store: LearningStore, session_id: str, project: str | None, rule_ids: Sequence[str], at: str
) -> SessionStart:
    """The start a harness's run is recorded with when it hands its
    transcript over: which of the live learned rules its prompt carried
    (`rule_ids`, from its `rulesPromptBlock` answers), each as the line it
    renders to, so the record counts it as the hook's starts are counted.
    Ids of no live rule in the run's scope are left out; `at` is the
    hand-over's time, the only one a handed-over transcript has."""
    if len(rule_ids) > MAX_SERVED_RULES:
        raise InvalidInput(f"rule_ids: {len(rule_ids)} ids; a run's prompt carries at most {MAX_SERVED_RULES}")
    wanted = set(rule_ids)
    hashes: list[str] = []
    for scope in (None, project) if project is not None else (None,):
        for domain in sorted(store.domains() if scope is None else store.project_domains(scope)):
            try:
                rules = store.learned_rules(domain, scope)
            except InvalidStore:
                continue
            hashes += [rule_line_hash(r) for r in rules if r.active() and r.id in wanted]
    return SessionStart(
        session_id=session_id, agent=HARNESS_AGENT, cwd=project, at=at, rules=list(dict.fromkeys(hashes))
    )


def new_repeats(on_file: Iterable[Repeat], fresh: Iterable[Repeat]) -> list[Repeat]:
    """The repeats in `fresh` not on file yet: one per rule and correction
    (session, message, words), so a session reflected again, or a grown one
    asked again about an old correction, adds none."""
    def key(r: Repeat) -> tuple[str, str, int | None, str]:
        return (r.rule_id, r.session_id, r.at, r.text)

    seen = {key(r) for r in on_file}
    out = []
    for r in fresh:
        if key(r) not in seen:
            seen.add(key(r))
            out.append(r)
    return out


def accepted_at(proposals: Iterable[Proposal]) -> dict[str, str]:
    """Each rule id → when the accept that added it was resolved (the first
    such accept: a rewrite gives the rule a new id)."""
    out: dict[str, str] = {}
    for p in sorted(proposals, key=lambda p: p.resolved_at or ""):
        if p.status is not ProposalStatus.ACCEPTED or p.resolved_at is None:
            continue
        before = {r.id for r in p.rules_before}
        for r in p.rules:
            if r.id is not None and r.id not in before and r.active():
                out.setdefault(r.id, p.resolved_at)
    return out


def _parse(stamp: str | None) -> datetime | None:
    if not stamp:
        return None
    try:
        return datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC)
    except ValueError:
        try:
            return datetime.fromisoformat(stamp.replace("Z", "+00:00"))
        except ValueError:
            return None


def days_between(earlier: str | None, later: str | None) -> int | None:
    a, b = _parse(earlier), _parse(later)
    if a is None or b is None:
        return None
    return max(0, (b - a).days)


def _ago(days: int | None) -> str:
    if days is None:
        return "at a time not recorded"
    if days == 0:
        return "today"
    return "1 day ago" if days == 1 else f"{days} days ago"


def _words(text: str, budget: int = 60) -> str:
    return cut_at_word(" ".join(text.split()), budget)


def record_line(rec: RuleRecord, now: str) -> str:
    """The record in one line: "live 12 days · in 31 sessions · corrected
    again 2× (last: 3 days ago, 'you pushed to main again') · learned from
    3 corrections in 9 sessions before"."""
    days = rec.days_live
    live = "live since a time not recorded" if days is None else ("live today" if days == 0 else f"live {days} day{'s' if days != 1 else ''}")
    parts = [live, f"in {rec.sessions} session{'s' if rec.sessions != 1 else ''}"]
    if rec.corrected_again:
        last = rec.corrected_again[-1]
        parts.append(
            f"corrected again {len(rec.corrected_again)}× (last: {_ago(days_between(last.corrected_at(), now))}, "
            f"'{_words(last.text)}')"
        )
    else:
        parts.append("not corrected again")
    if rec.learned_from:
        parts.append(
            f"learned from {rec.learned_from} correction{'s' if rec.learned_from != 1 else ''} in "
            f"{rec.sessions_before} session{'s' if rec.sessions_before != 1 else ''} before"
        )
    else:
        parts.append("learned from no recorded correction")
    if rec.asked:
        what = [f"ran {rec.asked_ran}"] if rec.asked_ran else []
        what += [f"refused {rec.asked_refused}"] if rec.asked_refused else []
        unanswered = rec.asked - rec.asked_ran - rec.asked_refused
        what += [f"not answered {unanswered}"] if unanswered else []
        parts.append(f"its permission asked {rec.asked}× ({', '.join(what)})")
    return " · ".join(parts)


class _Starts:
    """The hook's session starts, each once (a resumed session starts
    again), with each start's project resolved once per directory."""

    def __init__(self, starts: Iterable[SessionStart]):
        self.first: dict[str, SessionStart] = {}
        self.reached: dict[str, set[str]] = {}
        for s in starts:
            self.first.setdefault(s.session_id, s)
            self.reached.setdefault(s.session_id, set()).update(s.rules)
        self._projects: dict[str | None, str | None] = {}

    def project(self, s: SessionStart) -> str | None:
        if s.cwd not in self._projects:
            self._projects[s.cwd] = project_of_cwd(s.cwd)
        return self._projects[s.cwd]

    def in_scope(self, scope: str | None) -> list[SessionStart]:
        """Starts in `scope` (`None`: global, which every session is in)."""
        return [s for s in self.first.values() if scope is None or self.project(s) == scope]

    def earliest(self) -> str | None:
        return min((s.at for s in self.first.values()), default=None)


def rule_record(
    rule: Rule,
    domain: str,
    project: str | None,
    *,
    live_since: str | None,
    starts: _Starts,
    repeats: Sequence[Repeat],
    source_sessions: Mapping[str, str],
    pending: Sequence[Proposal],
    now: str,
    asked: Sequence[Asked] = (),
) -> RuleRecord:
    """One rule's record. `source_sessions` maps each reflection id on
    record to its session; `pending` are the pending proposals of the
    rule's domain and scope; `asked` the calls asks asked about."""
    assert rule.id is not None
    since = live_since or rule.created_at
    mark = rule_line_hash(rule)
    in_scope = starts.in_scope(project)
    after = sorted(
        (s for s in in_scope if since is None or s.at >= since), key=lambda s: s.at, reverse=True
    )
    reached = [s for s in after if mark in starts.reached.get(s.session_id, ())]
    mine = [r for r in repeats if r.rule_id == rule.id]
    again = sorted((r for r in mine if since is None or r.corrected_at() >= since), key=Repeat.corrected_at)
    before = {s.session_id for s in in_scope if since is not None and s.at < since}
    before |= {source_sessions[i] for i in rule.sources if source_sessions.get(i)}
    before |= {r.session_id for r in mine if since is not None and r.corrected_at() < since}
    asks = [a.outcome for a in asked if a.rule_id == rule.id and (since is None or (a.at or "") >= since)]
    rec = RuleRecord(
        rule_id=rule.id,
        domain=domain,
        scope=GLOBAL_SCOPE if project is None else project,
        live_since=since,
        days_live=days_between(since, now),
        sessions=len(reached),
        session_ids=[s.session_id for s in reached[:NAMED_SESSIONS]],
        corrected_again=again,
        learned_from=len(rule.sources),
        sessions_before=len(before),
        last_in_scope=max((s.at for s in in_scope), default=None),
        rewrite_proposal=next((p.id for p in pending if rule.id in p.rewrite_of), None),
        retire_proposal=next(
            (p.id for p in pending for r in p.rules if r.id == rule.id and r.retired_at is not None), None
        ),
        asked=len(asks), asked_ran=asks.count(RAN), asked_refused=asks.count(REFUSED),
    )
    rec.line = record_line(rec, now)
    return rec


class StoreView:
    """What every record reads, read once: the store's starts, repeats,
    accepts, reflections' sessions and pending proposals."""

    def __init__(self, store: LearningStore, now: str):
        self.store = store
        self.now = now
        self.starts = _Starts(store.session_starts())
        self.repeats = store.repeats()
        proposals = store.proposals()
        self.accepted = accepted_at(proposals)
        self.pending = [p for p in proposals if p.status is ProposalStatus.PENDING]
        self.sessions = {r.id: r.session_id for r in store.reflexions()}
        self.asked = store.asked()

    def record(self, rule: Rule, domain: str, project: str | None) -> RuleRecord:
        pending = [p for p in self.pending if p.domain == domain and p.project == project]
        return rule_record(
            rule, domain, project, live_since=self.accepted.get(rule.id or ""), starts=self.starts,
            repeats=self.repeats, source_sessions=self.sessions, pending=pending, now=self.now, asked=self.asked,
        )


def scopes_of(store: LearningStore) -> list[str | None]:
    """Every scope with rules files: global first, then each project."""
    return [None, *sorted(root for root in store.projects().values() if root is not None)]


def live_records(
    store: LearningStore, *, domain: str | None = None, scopes: Sequence[str | None] | None = None, now: str
) -> list[ScopedRule]:
    """Every live learned rule with its record, global first then each
    project's, each domain in name order; only `domain`'s, or only those of
    `scopes` (`None` in it: the global rules), when named."""
    view = StoreView(store, now)
    out: list[ScopedRule] = []
    for scope in scopes_of(store) if scopes is None else scopes:
        domains = store.domains() if scope is None else store.project_domains(scope)
        for d in sorted(domains):
            if domain is not None and d != domain:
                continue
            for rule in store.learned_rules(d, scope):
                if rule.active() and rule.id is not None:
                    out.append(ScopedRule(
                        rule=rule, domain=d, scope=GLOBAL_SCOPE if scope is None else scope,
                        record=view.record(rule, d, scope),
                    ))
    return out


def rewrites_due(store: LearningStore, domain: str, project: str | None, pool_ids: Iterable[str]) -> dict[str, list[str]]:
    """The live learned rules of `domain` in exactly `project`'s scope that
    are due a rewrite: corrected again `REWRITE_AFTER_REPEATS` times or
    more since they went live, with no rewrite of them pending — each rule
    id → the reflections of those corrections still in the learnable pool
    (`pool_ids`), the rewrite's lessons. A rule whose new corrections were
    all consumed (a rewrite accepted or rejected) is not due again until
    more come."""
    pool = set(pool_ids)
    accepted = accepted_at(store.proposals())
    pending = [p for p in store.proposals() if p.status is ProposalStatus.PENDING and p.domain == domain and p.project == project]
    by_rule: dict[str, list[Repeat]] = {}
    for r in store.repeats():
        by_rule.setdefault(r.rule_id, []).append(r)
    out: dict[str, list[str]] = {}
    try:
        rules = store.learned_rules(domain, project)
    except InvalidStore:
        return out
    for rule in rules:
        if not rule.active() or rule.id is None or any(rule.id in p.rewrite_of for p in pending):
            continue
        since = accepted.get(rule.id) or rule.created_at or ""
        again = [r for r in by_rule.get(rule.id, []) if r.corrected_at() >= since]
        lessons = [r.reflexion_id for r in again if r.reflexion_id in pool]
        if len(again) >= REWRITE_AFTER_REPEATS and lessons:
            out[rule.id] = list(dict.fromkeys(x for x in lessons if x is not None))
    return out


def retirements_due(records: Sequence[ScopedRule], earliest_start: str | None, now: str) -> list[ScopedRule]:
    """The rules to offer for retirement: live `RETIRE_UNSEEN_DAYS` days or
    more, with no session in their scope for as long, and no retirement of
    them pending. Only where the hook has been recording that long
    (`earliest_start`): a store without session starts knows nothing of
    what ran, and would offer every old rule."""
    if days_between(earliest_start, now) is None or (days_between(earliest_start, now) or 0) < RETIRE_UNSEEN_DAYS:
        return []
    out = []
    for s in records:
        rec = s.record
        if rec.retire_proposal is not None or (rec.days_live or 0) < RETIRE_UNSEEN_DAYS:
            continue
        quiet = days_between(rec.last_in_scope, now) if rec.last_in_scope else None
        if rec.last_in_scope is None or (quiet is not None and quiet >= RETIRE_UNSEEN_DAYS):
            out.append(s)
    return out


def retirement_reason(s: ScopedRule) -> str:
    """The reason a retirement offer gives, for the person to check."""
    where = "any project" if s.scope == GLOBAL_SCOPE else s.scope
    last = s.record.last_in_scope
    return (
        f"no session has run in {where} for {RETIRE_UNSEEN_DAYS} days or more"
        + (f" (the last began {last[:10]})" if last else " since it went live")
        + "; offered, not applied: reject this to keep it"
    )


def earliest_start(store: LearningStore) -> str | None:
    """When the session-start hook first recorded a session in this store."""
    return _Starts(store.session_starts()).earliest()


def live_asks(store: LearningStore) -> list[LiveAsk]:
    """Every ask permission a live learned rule carries, with its scope and
    when the rule went live: what `asks.asked_in` counts a session's calls
    against. A rules file that does not parse gives none."""
    accepted = accepted_at(store.proposals())
    out = []
    for scope in scopes_of(store):
        for d in sorted(store.domains() if scope is None else store.project_domains(scope)):
            try:
                rules = store.learned_rules(d, scope)
            except InvalidStore:
                continue
            out += [LiveAsk(rule_id=r.id, pattern=a, project=scope, since=accepted.get(r.id) or r.created_at)
                    for r in rules if r.active() and r.id is not None for a in r.ask]
    return out
