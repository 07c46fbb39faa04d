"""Resolving proposals: the only road into a learned rules file.

Nothing learned applies itself. A pass writes a *proposal* — the candidate
rule set beside the set it was made against — and a person accepts or rejects
it, through the CLI, an editor code action or the harness, all of which call
the functions here. Accepting is the only writer of `learned.toml`.

Every function takes the store's writer lock before reading the state it acts
on, so an accept racing a learn pass (or another accept) is serialised, and
the later one sees the earlier one's result: a proposal made against rules
that have since moved is refused as `Stale` rather than silently reverting
what landed in between.
"""

from __future__ import annotations

import difflib
import logging
from collections.abc import Collection, Mapping, Sequence

import msgspec

from mecha.core.domain.rules import (
    RULES_CHAR_BUDGET,
    LeftOut,
    Rule,
    RuleEdit,
    active_count,
    domain_rules_section,
    rule_key,
    validate_domain,
)
from mecha.core.errors import InvalidInput, InvalidStore, NotFound, NotPending
from mecha.core.identity import mint_proposal_id, mint_run_id, now
from mecha.core.learning import promotion
from mecha.core.learning.asks import asks_kept_by
from mecha.core.learning.personal import describe_findings, find_personal_data
from mecha.core.learning.record import StoreView, earliest_start, live_records, retirement_reason, retirements_due
from mecha.core.learning.scope import scope_label
from mecha.core.learning.sources import (
    ADDED,
    CHANGED,
    REMOVED,
    RETIRED,
    RuleChange,
    RuleSources,
    find_rule_sources,
    proposal_changes,
)
from mecha.core.sessions.evidence import cut_at_word
from mecha.core.store.layout import GLOBAL_SCOPE, LEARNED_KIND
from mecha.core.store.learning_store import LearningStore, Proposal, ProposalStatus
from mecha.core.store.ledger import rule_tallies_by_model

log = logging.getLogger(__name__)

#: The longest reason a person may give for a reject or a retirement, in
#: characters. A reason is a sentence or a paragraph: it is kept in the
#: proposal, in the learned rules file (a retirement's) and in the commit
#: message, and the learner is shown retired rules' reasons. Far longer is
#: a paste, not a reason, and is refused by name rather than stored.
MAX_REASON_CHARS = 4096


def validate_reason(reason: str | None) -> str | None:
    """`reason` when it is within `MAX_REASON_CHARS`, else `InvalidInput`
    naming the field and the bound."""
    if reason is not None and len(reason) > MAX_REASON_CHARS:
        raise InvalidInput(
            f"reason: {len(reason)} characters; a reason is at most {MAX_REASON_CHARS} "
            "(say why in a sentence or two; the evidence is in the proposal already)"
        )
    return reason


def is_pending(p: Proposal) -> bool:
    """Whether `p` still waits for a person's accept or reject."""
    return p.status == ProposalStatus.PENDING


def _require_pending(p: Proposal) -> None:
    if not is_pending(p):
        raise NotPending(
            f"proposal {p.id} is already {p.status.value}" + (f" (resolved {p.resolved_at})" if p.resolved_at else "")
        )


class Accepted(msgspec.Struct, frozen=True):
    """What an accept did: the proposal as accepted, and the promotion
    proposals it filed (`promotion.file_promotions`)."""

    proposal: Proposal
    promotions: list[Proposal] = msgspec.field(default_factory=list)


def accept_proposal(
    store: LearningStore,
    proposal_id: str,
    *,
    as_global: bool = False,
    without: Collection[int] = (),
    wrong: Collection[int] = (),
    edits: Mapping[int, str] | None = None,
    reason: str | None = None,
) -> Proposal:
    """`accept`, for a caller that needs only the accepted proposal."""
    return accept(
        store, proposal_id, as_global=as_global, without=without, wrong=wrong, edits=edits, reason=reason
    ).proposal


def accept(
    store: LearningStore,
    proposal_id: str,
    *,
    as_global: bool = False,
    without: Collection[int] = (),
    wrong: Collection[int] = (),
    edits: Mapping[int, str] | None = None,
    reason: str | None = None,
) -> Accepted:
    """Write the proposal's rules as the learned rules of its domain in its
    scope (the global file, or its project's), mark processed the
    reflections what it writes uses (`used_lessons`), record it accepted,
    and commit; then file a promotion proposal for every lesson now live in
    two or more projects. The reflections of its batch that no accepted
    rule cites go back to the pool with their weight: a lesson the learner
    did not use this time may yet support a later rule.

    With `as_global`, a project's proposal sends the rules it adds to the
    global file instead and the rest of it (rewrites, retirements) to the
    project's (`promotion.apply_as_global`); a promotion proposal moves its
    lesson from its projects' files into the global one
    (`promotion.apply_promotion`).

    Refuses with `Stale` when the live learned rules no longer equal the set
    the proposal was made against, with `NotPending` when it was already
    resolved, and with `InvalidInput` for `as_global` on a project's
    proposal that adds no rule. `as_global` on a global proposal (or a
    promotion) is a plain accept: it is for every repository already.

    `without` names changes to leave out, by the numbers `proposals show`
    gives them (`left_out_rules`): their lessons go back to the pool, for
    leaving a rule out says nothing against the lesson (the learner may
    have cited the wrong one). `wrong` names changes to leave out *because
    their lessons are wrong*: only those lessons are marked rejected, with
    `reason`. `edits` maps a change's number to the person's own words for
    that rule (`with_edits`): what lands is their text.
    """
    validate_reason(reason)
    with store.lock():
        p = store.proposal(proposal_id)
        _require_pending(p)
        rejected: dict[str, str] = {}
        left = sorted({*without, *wrong})
        if edits:
            # Before leaving out, so both name changes as `proposals show` numbered them.
            p = with_edits(p, edits, store.user_rules(p.domain, p.project), now(), left_out=left)
        if left:
            p, rejected = _leave_out(p, left, reason, wrong=wrong)
        # A global proposal (a promotion too) is for every repository already.
        as_global = as_global and p.project is not None
        p, writes = _accepted_writes(store, p, as_global)
        p = msgspec.structs.replace(p, status=ProposalStatus.ACCEPTED, resolved_at=now(), accepted_as_global=as_global)
        used = [*used_lessons(p), *(i for i in rejected if i not in used_lessons(p))]
        # One change: the rules, the marks and the status land together.
        store.resolve_proposal(p, learned=writes, processed=used, rejected=rejected, run_id=mint_run_id(),
                               message=_accept_message(p, as_global, used, rejected))
        return Accepted(p, _promotions_after(store, p))


def _accepted_writes(store: LearningStore, p: Proposal, as_global: bool) -> tuple[Proposal, list[promotion.Write]]:
    """What accepting `p` writes: its new rules into the global file
    (`as_global`), a promotion's lesson moved up, or its rules in its scope."""
    if as_global:
        return p, promotion.apply_as_global(store, p)
    if p.promoted_from:
        return promotion.apply_promotion(store, p)
    return p, _apply_in_scope(store, p)


def _accept_message(p: Proposal, as_global: bool, used: Sequence[str], rejected: Mapping[str, str]) -> str:
    """The store's commit message for an accept: the rules' count before and
    after, what was left out or edited, the lessons used, rejected and
    back in the pool, and the evidence."""
    before, after = active_count(p.rules_before), active_count(p.rules)
    back = len(p.reflexion_ids) - len(set(used))
    # A global proposal's subject reads as it did before scopes.
    where = " (global, as a person chose)" if as_global else ("" if p.project is None else f" ({scope_label(p.project)})")
    left_lines = "".join(
        f"Left out {x.number} ({x.change}): {cut_at_word(x.text, 200)}" + (f" — {x.reason}" if x.reason else "") + "\n"
        for x in p.left_out
    )
    edited = "".join(
        f"Edited by the person: {cut_at_word(r.text, 200)} (was: {cut_at_word(r.edited.was, 200)})\n"
        for r in p.rules if r.edited is not None and r.edited.proposal_id == p.id
    )
    return (
        f"accept proposal {p.id}: {p.domain} learned rules{where} {before} -> {after} active\n\n"
        f"Accepted by a person{' into the global rules' if as_global else ''}"
        f"{f', without {len(p.left_out)} of its changes' if p.left_out else ''}. "
        f"{len(set(used))} reflection(s) used and marked processed"
        f"{f', {len(rejected)} of them rejected' if rejected else ''}"
        f"{f'; {back} back in the pool' if back else ''}.\n{left_lines}{edited}"
        f"Evidence: {p.evidence or '(none recorded)'}"
    )


def used_lessons(p: Proposal) -> list[str]:
    """The reflections of `p`'s batch that what `p` writes uses: the sources
    of its rules and the reflection that contradicts each rule it drops.
    What an accept consumes, and nothing more: a lesson of the batch the
    learner did not cite was not used, and marking it processed once lost
    three lessons of four to a one-rule accept."""
    batch = set(p.reflexion_ids)
    texts = {r.text for r in p.rules}
    cited = [s for r in p.rules for s in r.sources]
    cited += [d.contradicted_by for d in p.drops if d.contradicted_by and d.text not in texts]
    return [i for i in dict.fromkeys(cited) if i in batch]


#: The longest rule a person may write in an edit, in characters: a rule is
#: a sentence or two, and the whole section has `RULES_CHAR_BUDGET`.
MAX_EDIT_CHARS = 400


def edit_refusal(text: str) -> str | None:
    """Why a person's edit of a rule cannot land as it is, or `None`. The
    checks are of form and of personal data only — the person's words are
    not second-guessed for sense: a line of its own (no line break), not
    empty, within `MAX_EDIT_CHARS`, and no email, host, token, handle or
    home directory (a rule rides in every run's prompt)."""
    if not text.strip():
        return "the edited rule is empty"
    if len(text.splitlines()) > 1:
        return "a rule is one line of the rules block; the edit holds a line break"
    if len(text) > MAX_EDIT_CHARS:
        return f"the edited rule is {len(text)} characters; a rule is at most {MAX_EDIT_CHARS}"
    found = find_personal_data(text)
    if found:
        return f"the edited rule carries personal data ({describe_findings(found)}); a rule rides in every run's prompt"
    return None


def with_edits(
    p: Proposal, edits: Mapping[int, str], user_rules: Sequence[Rule], stamp: str, *, left_out: Collection[int] = ()
) -> Proposal:
    """`p` with the rules named in `edits` (by change number) in the
    person's words, each recording what the learner proposed
    (`Rule.edited`). Only a rule the proposal adds or changes can be
    edited, and not one left out. Refuses (`InvalidInput` naming the field)
    an edit that fails `edit_refusal`, that would make two rules one, or
    that takes the domain's section past `RULES_CHAR_BUDGET` when the
    proposal as made was within it. A rule's ask permission stays only
    while the person's words still name its program or tool
    (`asks.asks_kept_by`); one dropped is recorded on the edit
    (`RuleEdit.ask_dropped`), and the accept says so."""
    changes = {c.number: c for c in numbered_changes(p)}
    left = set(left_out)
    rules = list(p.rules)
    for number, text in sorted(edits.items()):
        change = changes.get(number)
        if change is None or isinstance(number, bool):
            have = f"1 to {len(changes)}" if changes else "none"
            raise InvalidInput(f"edit: {number} is not a change of proposal {p.id} (its changes are numbered {have})")
        if change.change not in (ADDED, CHANGED):
            raise InvalidInput(f"edit: change {number} of proposal {p.id} {change.change} a rule; only a new or changed rule has words to edit")
        if number in left:
            raise InvalidInput(f"edit: change {number} of proposal {p.id} is left out; it cannot also be edited")
        text = text.strip()
        if text == change.text:
            continue  # the words as proposed: no edit (a client that did not ask sends them)
        why = edit_refusal(text)
        if why is not None:
            raise InvalidInput(f"edit: change {number}: {why}")
        at = next(i for i, r in enumerate(rules) if r.text == change.text and r.retired_at is None)
        others = {rule_key(r.text) for j, r in enumerate(rules) if j != at}
        if rule_key(text) in others | {rule_key(r.text) for r in (*user_rules, *p.rules_before)}:
            raise InvalidInput(f"edit: change {number}: another rule already says {text!r}")
        # An ask stands only while the words name what it asks before.
        ask, dropped = asks_kept_by(text, rules[at].ask)
        rules[at] = msgspec.structs.replace(
            rules[at], text=text, ask=ask,
            edited=RuleEdit(was=change.text, proposal_id=p.id, at=stamp, ask_dropped=dropped),
        )
    budget_before = section_chars(p.domain, user_rules, p.rules, project=p.project is not None)
    budget_after = section_chars(p.domain, user_rules, rules, project=p.project is not None)
    if budget_after > RULES_CHAR_BUDGET and budget_after > budget_before:
        raise InvalidInput(
            f"edit: the {p.domain} rules would render to {budget_after} characters, over the budget of "
            f"{RULES_CHAR_BUDGET} every run carries; say it in fewer words"
        )
    return msgspec.structs.replace(p, rules=rules)


def section_chars(domain: str, user: Sequence[Rule], learned: Sequence[Rule], *, project: bool) -> int:
    """How many characters one domain's section renders to (0: nothing)."""
    section = domain_rules_section(domain, user, learned, project=project)
    return 0 if section is None else len(section)


def _promotions_after(store: LearningStore, p: Proposal) -> list[Proposal]:
    """The promotions an accept files once it has landed. A store that
    cannot take them (a full disk) must not turn the landed accept into an
    error: they are looked for again after the next accept."""
    try:
        return promotion.file_promotions(store, p.domain)
    except InvalidStore as exc:
        log.warning("accept %s landed; its promotions were not filed: %s", p.id, exc)
        return []


def _apply_in_scope(store: LearningStore, p: Proposal) -> list[promotion.Write]:
    """`p`'s rules as its scope's learned rules, after the checks: what
    the accept writes."""
    # Every file this accept writes is checked before any is: a link
    # planted where one stands is refused with nothing changed.
    store.refuse_links(
        store.rules_path(p.domain, LEARNED_KIND, p.project), store.reflections_path, store.proposal_path(p.id)
    )
    live = store.learned_rules(p.domain, p.project)
    # Live rules equal to the proposal's own are an accept that a crash
    # cut short after writing them: finish it rather than call it stale.
    if live != p.rules_before and live != p.rules:
        raise promotion.stale(p)
    return [(p.domain, p.project, p.rules)] if live != p.rules else []


def reject_proposal(
    store: LearningStore, proposal_id: str, reason: str | None = None, *, wrong: Collection[int] = ()
) -> Proposal:
    """Record a person's rejection. Its reflections go back to the pool: a
    proposal is one argument from them, and a person refusing it (often
    over one doubtful rule) has not said the lessons are wrong — marking
    them all processed once lost 21 lessons to one rejection. The changes
    numbered in `wrong` (as `proposals show` numbers them) are the ones
    the person says rest on wrong lessons: those lessons are marked
    processed and rejected with `reason`. The learn pass does not file the
    same proposal again (`rejected_alike`)."""
    validate_reason(reason)
    with store.lock():
        p = store.proposal(proposal_id)
        _require_pending(p)
        store.refuse_links(store.reflections_path, store.proposal_path(p.id))
        left_out, rejected = left_out_rules(p, wrong, reason, kept=[], verb="rejected")
        p = msgspec.structs.replace(p, status=ProposalStatus.REJECTED, resolved_at=now(), reason=reason, left_out=left_out)
        back = len([i for i in p.reflexion_ids if i not in rejected])
        store.resolve_proposal(
            p,
            processed=list(rejected),
            rejected=rejected,
            run_id=mint_run_id(),
            message=f"reject proposal {p.id} ({p.domain})\n\n"
            f"Rejected by a person{': ' + reason if reason else ''}. "
            f"{back} reflection(s) back in the pool"
            + (f"; {len(rejected)} marked rejected as wrong lessons" if rejected else "")
            + ".",
        )
        return p


# ─── Review rule by rule ────────────────────────────────────────────────────


def numbered_changes(p: Proposal) -> list[RuleChange]:
    """`p`'s changes as `proposals show` numbers them (from 1), without
    their sources: what `accept --without N` and `reject --wrong N` name."""
    return proposal_changes(p.rules_before, p.rules, p.drops, {})


def _numbers(p: Proposal, numbers: Collection[int], field: str) -> list[RuleChange]:
    """The changes of `p` numbered `numbers`, or `InvalidInput` naming the
    field and the numbers `p` has."""
    changes = numbered_changes(p)
    bad = sorted({n for n in numbers if not isinstance(n, int) or isinstance(n, bool) or not 1 <= n <= len(changes)})
    if bad:
        have = f"1 to {len(changes)}" if changes else "none"
        raise InvalidInput(
            f"{field}: {', '.join(map(str, bad))} is not a change of proposal {p.id} (its changes are numbered "
            f"{have}; `mecha-sidecar proposals show {p.id}` lists them)"
        )
    return [c for c in changes if c.number in set(numbers)]


def rules_without(p: Proposal, left: Sequence[RuleChange]) -> list[Rule]:
    """The learned rules `p` writes with the changes `left` left out: an
    added rule is not added; a changed rule is not added, and the live
    rules it replaces stay unless a rule kept from the proposal replaces
    them too; a live rule the proposal removes stays; a rule it retires
    stays live. Order is the proposal's, a restored rule where the rule
    that would have replaced it stood."""
    before_by_text = {r.text: r for r in p.rules_before}
    before_by_id = {r.id: r for r in p.rules_before if r.id is not None}
    out = list(p.rules)
    for c in left:
        if c.change in (ADDED, CHANGED):
            at = next(i for i, r in enumerate(out) if r.text == c.text and r.retired_at is None)
            del out[at]
            if c.change == CHANGED:
                superseded = {i for r in out for i in r.supersedes}
                texts = {r.text for r in out}
                back = [before_by_text[t] for t in c.replaces if t in before_by_text and t not in texts]
                out[at:at] = [r for r in back if r.id not in superseded]
        elif c.change == REMOVED:
            if c.text in before_by_text and all(r.text != c.text for r in out):
                out.append(before_by_text[c.text])
        elif c.change == RETIRED and c.rule_id in before_by_id:
            out = [before_by_id[c.rule_id] if r.id == c.rule_id else r for r in out]
    return out


def rejected_lessons(p: Proposal, left: Sequence[RuleChange], kept: Sequence[Rule]) -> dict[str, RuleChange]:
    """The reflections of `p`'s batch that only the changes `left` rest on,
    each with the change it is rejected for: a left-out rule's own sources
    and a left-out removal's contradicting reflection, but never one that a
    rule in `kept` also rests on, nor one from before this proposal (a
    rewrite carries its predecessors' sources, which were judged then)."""
    batch = set(p.reflexion_ids)
    by_text = {r.text: r for r in p.rules}
    keep = {s for r in kept for s in r.sources}
    drops = {d.text: d for d in p.drops}
    out: dict[str, RuleChange] = {}
    for c in left:
        if c.change in (ADDED, CHANGED) and c.text in by_text:
            ids = list(by_text[c.text].sources)
        elif c.change == REMOVED and c.text in drops and drops[c.text].contradicted_by:
            ids = [drops[c.text].contradicted_by or ""]
        else:
            ids = []
        for i in ids:
            if i in batch and i not in keep:
                out.setdefault(i, c)
    return out


def left_out_rules(
    p: Proposal, numbers: Collection[int], reason: str | None, *, kept: Sequence[Rule], verb: str,
    wrong: Collection[int] | None = None,
) -> tuple[list[LeftOut], dict[str, str]]:
    """What leaving out (or, rejecting, naming as wrong) the changes
    `numbers` of `p` records: one `LeftOut` per change, and the reflections
    to mark rejected with the reason each is marked with (the person's, or
    one saying which change of which proposal a person {verb}). Only the
    lessons of the changes in `wrong` are rejected (every change named,
    when `wrong` is `None`: a rejection names only wrong ones); the lessons
    of a change merely left out go back to the pool."""
    field = "without" if verb == "left out" else "wrong"
    left = _numbers(p, numbers, field)
    bad = set(numbers) if wrong is None else set(wrong)
    lessons = rejected_lessons(p, [c for c in left if c.number in bad], kept)
    reasons = {
        i: reason or f"{'named wrong' if verb == 'left out' else verb} by a person: change {c.number} of proposal {p.id} ({cut_at_word(c.text, 80)!r})"
        for i, c in lessons.items()
    }
    records = [
        LeftOut(
            number=c.number, change=c.change, text=c.text, rule_id=c.rule_id, reason=reason,
            rejected=[i for i, x in lessons.items() if x.number == c.number],
        )
        for c in left
    ]
    return records, reasons


def _leave_out(
    p: Proposal, without: Collection[int], reason: str | None, *, wrong: Collection[int] = ()
) -> tuple[Proposal, dict[str, str]]:
    """`p` as accepted without the changes `without`: its rules those it
    writes, its `left_out` what was left out; and the lessons to mark
    rejected — only those of the changes in `wrong`. Refuses a promotion
    (one lesson: reject it instead) and leaving out every change (that is
    a rejection)."""
    if p.promoted_from:
        raise InvalidInput(f"without: proposal {p.id} is a promotion of one lesson; reject it instead")
    left = _numbers(p, without, "without")
    if len(left) == len(numbered_changes(p)):
        raise InvalidInput(
            f"without: that leaves out every change of proposal {p.id}; reject it instead "
            f"(`mecha-sidecar proposals reject {p.id}`)"
        )
    rules = rules_without(p, left)
    records, rejected = left_out_rules(p, without, reason, kept=rules, verb="left out", wrong=wrong)
    return msgspec.structs.replace(p, rules=rules, left_out=records), rejected


def rejected_alike(store: LearningStore, domain: str, project: str | None, before: Sequence[Rule], rules: Sequence[Rule]) -> Proposal | None:
    """A proposal a person rejected that said what a new result says —
    made against the same live rules, proposing the same rules — or
    `None`. A pass does not file it again: the person has answered it."""

    def said(rs: Sequence[Rule]) -> list[tuple[str, bool, bool]]:
        return sorted((r.text, r.enabled, r.retired_at is not None) for r in rs)

    for p in store.proposals():
        if (
            p.status == ProposalStatus.REJECTED and p.domain == domain and p.project == project
            and said(p.rules_before) == said(before) and said(p.rules) == said(rules)
        ):
            return p
    return None


def _scope_holding(store: LearningStore, domain: str, rule_id: str) -> tuple[str | None, list[Rule]] | None:
    """The scope whose learned `domain` rules hold `rule_id` — global
    first, then each project by path — and those rules."""
    roots = sorted(root for root in store.projects().values() if root is not None)
    for where in (None, *roots):
        rules = store.learned_rules(domain, where)
        if any(r.id == rule_id for r in rules):
            return where, rules
    return None


def propose_retirement(
    store: LearningStore, domain: str, rule_id: str, reason: str, *, project: str | None = None
) -> Proposal:
    """A pending proposal whose only change is retiring one learned rule, in
    the scope that holds it (`project`'s rules when one is named).

    Retired rules stay in the file as evidence, never render, and are shown to
    the learner as never-to-re-derive.
    """
    validate_domain(domain)
    validate_reason(reason)
    if not reason.strip():
        raise InvalidInput("reason: a retirement needs a reason a person can check")
    with store.lock():
        if project is not None:
            found: tuple[str | None, list[Rule]] | None = (project, store.learned_rules(domain, project))
        else:
            found = _scope_holding(store, domain, rule_id)
        matches = [r for r in found[1] if r.id == rule_id] if found is not None else []
        if found is None or not matches:
            named = "" if project is None else f" in {scope_label(project)}"
            raise NotFound(f"no learned rule {rule_id!r} in domain {domain!r}{named}")
        where, before = found
        if matches[0].retired_at is not None:
            raise InvalidInput(f"rule_id: {rule_id} is already retired ({matches[0].retired_reason or 'no reason'})")
        stamp = now()
        after = [
            retired(r, stamp, reason.strip()) if r.id == rule_id else r
            for r in before
        ]
        p = Proposal(
            id=mint_proposal_id(), domain=domain, status=ProposalStatus.PENDING, reflexion_ids=[],
            rules_before=before, rules=after, evidence=f"retire {rule_id}: {reason.strip()}",
            created_at=stamp, project=where,
        )
        store.write_proposal(p)
        label = "" if where is None else f" ({scope_label(where)})"
        store.commit(f"propose retiring {rule_id} from {domain}{label} ({p.id})\n\n{reason.strip()}")
        return p


def retired(rule: Rule, stamp: str, reason: str) -> Rule:
    """`rule` as a retirement leaves it: the time, the reason, and `enabled =
    false` — the value a retired rule behaves as whatever the file says, so
    the file an accept writes is one its own checks pass (a retired rule
    left enabled is flagged `retired-enabled`)."""
    return msgspec.structs.replace(rule, retired_at=stamp, retired_reason=reason, enabled=False)


def rendered_pair(store: LearningStore, p: Proposal) -> tuple[str, str]:
    """The rules block before and after the proposal, as a run would see it
    (an empty string where no block would be sent)."""
    before = store.render_candidate(p.domain, p.rules_before, p.project, scope=p.project).block or ""
    after = store.render_candidate(p.domain, p.rules, p.project, scope=p.project).block or ""
    return before, after


def _diff_scope(p: Proposal) -> str:
    return "" if p.project is None else f" in {scope_label(p.project)}"


def proposal_diff(store: LearningStore, p: Proposal) -> str:
    """Unified diff of the whole rendered rules block, before → after."""
    before, after = rendered_pair(store, p)
    lines = difflib.unified_diff(
        before.splitlines(keepends=False),
        after.splitlines(keepends=False),
        fromfile=f"{p.domain} rules block{_diff_scope(p)} (live when proposed)",
        tofile=f"{p.domain} rules block{_diff_scope(p)} (if {p.id} is accepted)",
        lineterm="",
    )
    return "".join(line + "\n" for line in lines)


def list_proposals(
    store: LearningStore, status: ProposalStatus | None = None, domain: str | None = None
) -> list[Proposal]:
    if domain is not None:
        validate_domain(domain)
    return [
        p
        for p in store.proposals()
        if (status is None or p.status == status) and (domain is None or p.domain == domain)
    ]


def pending_in(store: LearningStore, domain: str, project: str | None) -> list[Proposal]:
    """The proposals for `domain` in one scope (`project`'s root; `None`:
    global) still waiting for a person: what keeps a learn pass for that
    scope from filing a second one."""
    return [p for p in pending_for(store, domain) if p.project == project]


def pending_for(store: LearningStore, domain: str | None = None) -> list[Proposal]:
    """The proposals still waiting for a person — for `domain`, or for every
    domain. The one answer to "is anything pending?": a learn pass refuses
    while one waits, doctor counts them and the editor shows them."""
    return [p for p in list_proposals(store, None, domain) if is_pending(p)]


class PendingSummary(msgspec.Struct, frozen=True):
    """What a client is told of the pending proposals as a whole: their ids
    (sorted, so two summaries of the same proposals are equal) and how many
    wait in each domain."""

    ids: tuple[str, ...] = ()
    by_domain: dict[str, int] = msgspec.field(default_factory=dict)

    @property
    def count(self) -> int:
        return len(self.ids)


def pending_summary(store: LearningStore | None) -> PendingSummary:
    """The pending proposals of `store` summed up (`pending_for`); nothing is
    pending in a store that does not exist yet."""
    waiting = pending_for(store) if store is not None else []
    by_domain: dict[str, int] = {}
    for p in waiting:
        by_domain[p.domain] = by_domain.get(p.domain, 0) + 1
    return PendingSummary(tuple(sorted(p.id for p in waiting)), by_domain)


def should_announce(previous: PendingSummary | None, now: PendingSummary, *, after_command: bool) -> bool:
    """Whether a client must be told the pending proposals now.

    When the set of pending ids moved since it was last told (`previous`,
    `None` before the first telling), and always after a command that could
    resolve one: a proposal can be written and resolved between two looks
    at the store, so the set seen before and after the command is the same,
    yet the client saw it appear (in its diagnostics, by its own request)
    and must hear the new count. Comparing ids, not counts: one proposal
    accepted while another arrives leaves the count as it was and changes
    what is pending."""
    return after_command or previous is None or previous.ids != now.ids


def proposal_scope(p: Proposal) -> str:
    """The scope a proposal is for, as the wire names it: `global`, or the
    project's root."""
    return GLOBAL_SCOPE if p.project is None else p.project


def change_scope(p: Proposal, change: RuleChange) -> str:
    """Where one rule a proposal changes lives: the proposal's scope, except
    a rule a project's proposal adds once a person accepted it as global."""
    if change.change == ADDED and p.accepted_as_global:
        return GLOBAL_SCOPE
    return proposal_scope(p)


def proposal_changes_in(store: LearningStore, p: Proposal) -> list[RuleChange]:
    """What `p` adds, changes and removes, each rule with its sources as the
    store records them and the scope it lives in."""
    changes = proposal_changes(p.rules_before, p.rules, p.drops, {r.id: r for r in store.reflexions()})
    return [msgspec.structs.replace(c, scope=change_scope(p, c)) for c in changes]


def rule_sources(store: LearningStore, rule_id: str) -> RuleSources:
    """Why the rule `rule_id` exists, from any domain's user or learned
    rules in any scope (global first, then each project); `NotFound` when
    no rules file holds it."""
    sets: list[tuple[str, str, list[Rule], str | None]] = []
    for domain in store.domains():
        sets.append((domain, "learned", store.learned_rules(domain), None))
        sets.append((domain, "user", store.user_rules(domain), None))
    # A project's rules too: a lesson from a session in a project is learned
    # for that project, and its rule is as much in need of a why.
    for root in store.projects().values():
        for domain in store.project_domains(root) if root is not None else ():
            sets.append((domain, "learned", store.learned_rules(domain, root), root))
            sets.append((domain, "user", store.user_rules(domain, root), root))
    found = find_rule_sources(
        rule_id, [(d, k, rules) for d, k, rules, _ in sets], {r.id: r for r in store.reflexions()},
        rule_tallies_by_model(store.validations()),
    )
    if found is None:
        raise NotFound(f"no rule {rule_id!r} in any rules file")
    if found.kind == "learned" and found.rule.active():
        project = next(p for d, k, rules, p in sets if k == "learned" and any(r.id == rule_id for r in rules))
        found.record = StoreView(store, now()).record(found.rule, found.domain, project)
    return found


def offer_retirements(store: LearningStore, now: str) -> list[Proposal]:
    """A retirement proposal for each rule `record.retirements_due` names,
    once: a person who rejected the offer has said to keep the rule."""
    records = live_records(store, now=now)
    earliest = earliest_start(store)
    offered = {r.id for p in store.proposals() for r in p.rules if r.retired_at is not None and p.rules_before
               and any(b.id == r.id and b.retired_at is None for b in p.rules_before)}
    out = []
    for s in retirements_due(records, earliest, now):
        if s.record.rule_id in offered:
            continue
        project = None if s.scope == GLOBAL_SCOPE else s.scope
        out.append(propose_retirement(store, s.domain, s.record.rule_id, retirement_reason(s), project=project))
    return out
