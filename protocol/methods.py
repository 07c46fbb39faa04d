"""Every `mecha/*` method: its params, its result, and the one table both
endpoints dispatch through.

Params are msgspec Structs decoded straight from the request's raw bytes; a
type error comes back as -32602 naming the offending field by its JSON path
(`$.messages[3].role`). Results are Structs (or builtins) encoded with
`enc_hook`, which spells the few shapes a Struct cannot (serde's external
tagging for a `Disposition`, adjacent tagging for a `Cite`, `GoalRef` strings).

Types shared with the domain (`Intervention`, `Proposal`, `RunStats`, …) are
the core's own Structs: they already serialize to the harness's serde shapes,
and defining them twice would let the two drift.
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec

from mecha.core.domain.record import RulesResult
from mecha.core.environment.spellings import AgentName
from mecha.core.gate.candidate import ChangeClass, Judgement, Pair, Prediction
from mecha.core.gate.run import RunStats
from mecha.core.learning.sources import RuleChange, RuleSources
from mecha.core.sessions.mining import Intervention, Trigger
from mecha.core.sessions.outbox import OutboxItem
from mecha.core.sessions.transcript import Message, TaintCheckpoint
from mecha.core.sessions.trust import HeldBack, Reclassified, TrustAction, Unknown, Withheld
from mecha.core.store.jobs import Job
from mecha.core.store.learning_store import Proposal, ProposalStatus, SetAside
from mecha.core.store.ledger import ProposalVerdict, RuleTally, ValidationPlan, ValidationRecord

from .errors import INVALID_PARAMS, RpcError
from .instructions import ExportResult as ExportResult
from .instructions import ExportRulesParams as ExportRulesParams
from .instructions import ExportRulesResult as ExportRulesResult
from .instructions import SharedFile as SharedFile
from .instructions import SharedRuleInfo as SharedRuleInfo
from .instructions import ShareRulesParams as ShareRulesParams
from .instructions import ShareRulesResult as ShareRulesResult

# ─── params and results ─────────────────────────────────────────────────────


class Empty(msgspec.Struct):
    """`{}` — for methods that take or return nothing."""


class RulesPromptBlockParams(msgspec.Struct):
    domain: str | None = None
    #: The directory the run works in (absolute); its project's rules ride
    #: after the global ones. Absent: the global rules alone.
    project: str | None = None


class OverBudget(msgspec.Struct, omit_defaults=True):
    domain: str
    active: int
    #: The project whose learned file is over the cap; absent for a global one.
    project: str | None = None


class RulesPromptBlockResult(msgspec.Struct, omit_defaults=True):
    block: str | None
    rules_hash: str | None
    rule_ids: list[str]
    domains: list[str]
    over_budget: list[OverBudget]
    #: The project root the block was given for (`project` resolved to its
    #: git root); absent for the global rules alone.
    project: str | None = None


class ExtractInterventionsParams(msgspec.Struct):
    messages: list[Message]


class ExtractInterventionsResult(msgspec.Struct):
    interventions: list[Intervention]


class LiveAffectParams(msgspec.Struct):
    session_id: str
    messages: list[Message]
    stats: RunStats = msgspec.field(default_factory=RunStats)
    run_started_at: int = 0


class LiveAffectResult(msgspec.Struct):
    affect: str


class ProbeParam(msgspec.Struct):
    at: int
    verdict: Literal["mattered", "redundant", "inconclusive"]


class AppraiseSessionParams(msgspec.Struct):
    session_id: str
    messages: list[Message]
    stats: RunStats = msgspec.field(default_factory=RunStats)
    drafts: list[OutboxItem] = msgspec.field(default_factory=list)
    # A string "<kind>:<id>", parsed leniently: an unknown kind is no goal.
    goal: str | None = None
    taint_timeline: list[TaintCheckpoint] | None = None
    probes: list[ProbeParam] = msgspec.field(default_factory=list)


class SessionEndedParams(msgspec.Struct):
    session_id: str
    messages: list[Message]
    taint_timeline: list[TaintCheckpoint] | None = None
    interactive: bool = True
    #: The directory the session ran in (absolute): its lessons are learned
    #: for that project (its git root). Absent: global.
    project: str | None = None
    #: The learned rules the run's prompt carried: the `rule_ids` of the
    #: `mecha/rulesPromptBlock` answers it used. Given, each rule's record
    #: counts the session as one it reached; absent, none does.
    rule_ids: list[str] | None = None


class SessionEndedResult(msgspec.Struct):
    interventions: int
    learnable: int
    already_mined: bool
    job: Job | None
    #: The session was waiting in the inbox already (handed over before, not
    #: yet mined, or set aside): not queued again; `job` is a pass only when
    #: no live pass holds it.
    already_queued: bool = False


class DraftResolvedParams(msgspec.Struct):
    item: OutboxItem


class DraftResolvedResult(msgspec.Struct):
    intervention: Intervention | None
    already_mined: bool
    job: Job | None
    #: The draft was waiting in the inbox already: not queued again.
    already_queued: bool = False


class ProposalIdParams(msgspec.Struct):
    proposal_id: str


class RenderCandidateResult(msgspec.Struct):
    block: str | None
    rules_hash: str | None
    rule_ids: list[str]


class LocateFollowupParams(msgspec.Struct):
    messages: list[Message]
    text: str


class LocateFollowupResult(msgspec.Struct):
    index: int | None


class LearnParams(msgspec.Struct):
    domain: str
    min: int | None = None
    #: A directory (absolute) whose project alone is learned. Absent: every
    #: scope of the domain with enough learnable reflections — the global
    #: one and each project's — one proposal each.
    project: str | None = None
    #: Ask the model again in a scope whose last pass kept its rules as they
    #: were, though no lesson has arrived since (otherwise refused, so the
    #: same question is not put twice by accident).
    retry: bool = False


class LearnResult(msgspec.Struct, omit_defaults=True):
    # No default: `job` is always on the wire (`null` when nothing started);
    # only `reason` is left out when there is none.
    job: Job | None
    reason: str | None = None


class JobsResult(msgspec.Struct):
    jobs: list[Job]
    #: Entries waiting in the inbox for a reflect pass.
    waiting: int = 0
    #: Entries set aside until a person retries or drops them (`mecha/inbox`).
    set_aside: int = 0


class InboxResult(msgspec.Struct):
    waiting: int
    set_aside: list[SetAside]
    #: Interventions recorded without a model call because they read
    #: untrusted, not yet made clean by a change of trust.
    withheld: int = 0
    #: The newest of them, each with what held it back.
    withheld_recent: list[Withheld] = msgspec.field(default_factory=list)


class InboxRetryParams(msgspec.Struct):
    #: A set-aside entry's id (or a unique prefix). Absent: nothing is put
    #: back; a reflect pass is started over what already waits (answers
    #: that were unusable), if anything does.
    id: str | None = None


class InboxRetryResult(msgspec.Struct):
    #: The entry put back; `null` when no id was given.
    entry: SetAside | None
    #: The reflect pass started; `null` when nothing waits.
    job: Job | None


class InboxDropResult(msgspec.Struct):
    entry: SetAside


class ImportSessionsParams(msgspec.Struct):
    #: Whose sessions: `claude` (Claude Code) or `codex` (Codex CLI).
    source: AgentName
    #: The folder they are in; absent: the agent's own under the home
    #: (`~/.claude/projects`, `~/.codex/sessions`).
    dir: str | None = None
    #: Say what would be queued, per session; queue nothing, start nothing.
    dry_run: bool = False
    #: Only session files changed on or after this date (`YYYY-MM-DD`, or
    #: an ISO date-time).
    since: str | None = None
    #: Only sessions whose working directory (or project folder) contains this.
    project: str | None = None
    #: User turns starting with one of these are no person's (`claude` or
    #: `codex` names a built-in profile); added to the source's own profile
    #: and `$MECHA_HARNESS_VOICES`.
    voices: list[str] = msgspec.field(default_factory=list)
    #: Tools whose results read as the person's own (not untrusted);
    #: `Bash(PROGRAM)` or `Bash(PROGRAM SUBCOMMAND)` trusts one shell command.
    trust_tools: list[str] = msgspec.field(default_factory=list)
    #: Tools whose results read as untrusted; `Bash(PROGRAM)` takes a program
    #: off the shell allowlist.
    distrust_tools: list[str] = msgspec.field(default_factory=list)


class ImportedSession(msgspec.Struct):
    """One session file an import read."""

    path: str
    session_id: str
    project: str | None
    #: Interventions in the file, and how many were not imported before.
    found: int
    new: int
    #: The new ones per `trigger/origin`.
    counts: dict[str, int]
    #: A last refusal held back until the person gives their reason.
    held: int
    #: Lines of the file skipped as not records of its format.
    skipped_lines: int
    #: For its new untrusted interventions: the first call that made each
    #: so (tool, program, command, file line, why, the entry that would
    #: trust it), with how many it held back.
    held_back: list[HeldBack] = msgspec.field(default_factory=list)


class ImportSessionsResult(msgspec.Struct):
    source: str
    #: The folder read.
    root: str
    sessions: list[ImportedSession]
    #: Files whose size and mtime matched the last import: not read.
    unchanged: int
    #: Files left out by `since` or `project`.
    filtered: int
    #: Files skipped, each with why (not a session, unreadable).
    skipped: list[str]
    #: Lines skipped over every file read, as not records of their format.
    skipped_lines: int
    #: Session ids handed to the inbox.
    queued: list[str]
    dry_run: bool
    #: Lines skipped on the way, each naming the file and the line.
    warnings: list[str]
    #: The reflect pass started over the inbox (`null`: nothing waits, or a
    #: dry run) — or, with `in_flight`, the one already at work on what an
    #: earlier import queued, when this one queued nothing new.
    job: Job | None = None
    #: Whether `job` was already running rather than started by this call.
    in_flight: bool = False
    #: The programs and tools the reader did not know, most held back
    #: first: how many interventions and sessions each held back, and the
    #: command that trusts it.
    unknown: list[Unknown] = msgspec.field(default_factory=list)
    #: Scopes of linked worktrees since removed whose lessons this import
    #: moved to their repository's scope, each in words.
    merged: list[str] = msgspec.field(default_factory=list)


class HeldParams(msgspec.Struct):
    #: At most this many, newest first (`count` covers every one).
    limit: int | None = None


class VouchParams(msgspec.Struct):
    #: Held corrections by id (or a unique prefix), as `mecha/heldCorrections` lists them.
    ids: list[str]
    #: Who vouches, for the record (default: the login the sidecar runs as).
    by: str | None = None


class TrustParams(msgspec.Struct):
    #: `add` / `remove` change the config file's `[trust]` table; `list`
    #: reads it.
    action: TrustAction = TrustAction.LIST
    #: `Bash(bd)` (a program), `Bash(git fetch)` (a program and a
    #: subcommand), `mcp__notes__read` (a tool by name).
    entries: list[str] = msgspec.field(default_factory=list)


class TrustResult(msgspec.Struct):
    #: The config file the decisions are kept in.
    path: str
    #: The standing decisions after the change, as the file holds them.
    entries: list[str]
    #: Entries the file lists that no standing decision may say (a web tool,
    #: a subagent, a spelling that is not an entry), each `"<entry>: <why>"`:
    #: no reader honours them; `remove` takes them out.
    ignored: list[str] = msgspec.field(default_factory=list)
    #: After an `add`: the interventions held back as untrusted that now
    #: read clean, queued to be asked (`null` for `remove` and `list`).
    reclassified: Reclassified | None = None
    #: The reflect pass started over them (`null`: nothing to ask).
    job: Job | None = None


class HookSettings(msgspec.Struct):
    """What one agent's hook settings file holds of mecha's hooks."""

    path: str
    exists: bool
    #: Event → the command installed for it.
    events: dict[str, str]
    #: The events mecha hooks that have no entry of mecha's in the file.
    missing: list[str]
    #: Programs the hooks name that are not there to run any more.
    stale_programs: list[str]


class HookStatusParams(msgspec.Struct):
    #: `claude` or `codex`; absent: both.
    agent: AgentName | None = None
    #: `user` (under the home) or `project` (the project the sidecar runs
    #: in, its git root); absent: both.
    scope: Literal["user", "project"] | None = None


class HookFile(msgspec.Struct):
    agent: str
    scope: str
    path: str
    exists: bool
    events: dict[str, str]
    missing: list[str]
    stale_programs: list[str]


class ClaudePluginInstall(msgspec.Struct):
    """One installation of mecha's Claude Code plugin, as Claude Code
    recorded it (`~/.claude/plugins/installed_plugins.json`)."""

    #: `<plugin>@<marketplace>`, as `claude plugin uninstall` takes it.
    key: str
    #: `user`, `project` or `local`.
    scope: str
    #: The copy of the plugin Claude Code runs.
    path: str
    #: Switched on (`claude plugin enable`/`disable`).
    enabled: bool
    #: The project a `project` or `local` installation is for.
    project: str | None = None


class HookStatusResult(msgspec.Struct):
    files: list[HookFile]
    #: The store the sidecar uses.
    store: str
    #: The hooks' last runs, as their log has them, oldest first.
    log: list[str]
    #: mecha's Claude Code plugin wherever it is installed (it runs the same
    #: hooks); asked about codex only: empty.
    plugins: list[ClaudePluginInstall] = msgspec.field(default_factory=list)
    #: Set when Claude Code would read each session twice (an enabled
    #: plugin and hooks in a settings file): what to keep, in one message.
    double_reading: str | None = None


class InstallHooksParams(msgspec.Struct):
    #: Whose hooks: `claude` or `codex`.
    agent: AgentName
    #: `user` (`~/.claude`, `~/.codex`) or `project` (the `.claude` or
    #: `.codex` folder of the project the sidecar runs in, its git root).
    scope: Literal["user", "project"] = "user"
    #: Take mecha's hooks out of the file instead, leaving everything else.
    uninstall: bool = False
    #: Install: the hooks use this sidecar's store wherever the agent runs
    #: them; else theirs is resolved as every verb's is.
    pin_store: bool = False


class CodexSkills(msgspec.Struct):
    """What `mecha/installHooks` did to Codex's skills folder: mecha's review
    skills (`mecha-review`, `mecha-why`) installed there, or removed."""

    #: The folder Codex reads a person's (or the project's) skills from.
    folder: str
    #: The skills installed or updated (install), or removed (uninstall).
    changed: list[str]
    #: Already there as they would be written.
    unchanged: list[str]
    #: Skills left alone, each with why (a folder of that name that is not
    #: mecha's, or a person's own file in one of ours).
    left: list[str]


class InstallHooksResult(msgspec.Struct):
    #: `install` or `uninstall`.
    action: str
    agent: str
    #: The settings file.
    path: str
    changed: bool
    installed: HookSettings
    #: install: the model the hooks' passes will use, or what to do when
    #: none is configured, in one line.
    model: str | None = None
    #: install (claude): set when mecha's Claude Code plugin is installed and
    #: enabled too, so each session would be read twice: what to keep.
    double_reading: str | None = None
    #: codex: the review skills, installed with the hooks or removed with them.
    skills: CodexSkills | None = None


class ProposalsParams(msgspec.Struct):
    status: ProposalStatus | None = None
    domain: str | None = None


class ProposalsResult(msgspec.Struct):
    proposals: list[Proposal]


class IdParams(msgspec.Struct):
    id: str


class NextPass(msgspec.Struct, omit_defaults=True):
    """After a proposal is answered: the learnable lessons still waiting in
    its scope at the learn minimum, and the learn pass started for them.
    Nothing is applied: that pass files a proposal, like any other."""

    #: How many learnable lessons of the proposal's scope wait.
    lessons: int
    #: The line a client shows for it.
    message: str
    #: The learn pass started for them; absent when none started (no model
    #: is configured, one is running for the domain already, or it failed
    #: to start — `message` says which).
    job_id: str | None = None


class ProposalResult(msgspec.Struct):
    proposal: Proposal
    #: A rejection's: the lessons still waiting in its scope and the learn
    #: pass started for them; `null` when none wait, and for a retirement.
    next_pass: NextPass | None = None


class EditedRule(msgspec.Struct):
    """A person's own words for one rule of a proposal, as they accept it."""

    #: The change's `number` (`mecha/proposal`'s `changes`): an added or
    #: changed rule.
    number: int
    #: The rule as it should read: one line; checked for form (length, the
    #: domain's character budget, no repeat of another rule) and personal
    #: data, not for sense.
    text: str


class AcceptProposalParams(msgspec.Struct):
    id: str
    #: Accept a project's proposal into the global rules: the rules it adds
    #: go to the global file (the proposal records `accepted_as_global`).
    as_global: bool = False
    #: Changes to leave out, by their `number` (`mecha/proposal`'s
    #: `changes`, `proposals show`): the rest is accepted, and the lessons
    #: the left-out changes rest on go back to the pool.
    without: list[int] = msgspec.field(default_factory=list)
    #: Changes to leave out because the lessons they rest on are wrong:
    #: those lessons are marked rejected (with `reason`).
    wrong: list[int] = msgspec.field(default_factory=list)
    #: Rules to accept in the person's own words: what lands is their text,
    #: and the rule's sources name their edit first.
    edit: list[EditedRule] = msgspec.field(default_factory=list)
    #: Why changes were left out: kept with the left-out changes and any
    #: rejected lessons.
    reason: str | None = None


class AcceptOptions(msgspec.Struct):
    """`mecha.acceptProposal`'s optional second argument: what an editor's
    "leave out change N", "change N rests on a wrong lesson" and "edit
    change N" actions send (`AcceptProposalParams`' fields of the same
    names)."""

    without: list[int] = msgspec.field(default_factory=list)
    wrong: list[int] = msgspec.field(default_factory=list)
    edit: list[EditedRule] = msgspec.field(default_factory=list)
    reason: str | None = None


class AcceptProposalResult(msgspec.Struct):
    proposal: Proposal
    #: Every configured export target, in the order configured; empty when
    #: none is configured.
    exports: list[ExportResult] = msgspec.field(default_factory=list)
    #: Promotion proposals this accept filed: lessons now live in two or
    #: more projects, proposed for the global rules (pending, never applied).
    promotions: list[Proposal] = msgspec.field(default_factory=list)
    #: The lessons of the proposal's batch the accept used (marked
    #: processed): those its accepted rules cite. The others went back to
    #: the pool.
    used_lessons: list[str] = msgspec.field(default_factory=list)
    #: The learnable lessons still waiting in the proposal's scope at the
    #: learn minimum, and the learn pass started for them; `null` when none
    #: wait.
    next_pass: NextPass | None = None
    #: The agents' settings files the accept's ask permissions were written
    #: into or taken out of (Claude Code's user `settings.json`, Codex's
    #: `rules/mecha.rules`), each with whether it changed or why it could
    #: not be; empty when no rule's ask changed. The accept stands either way.
    permissions: list[ExportResult] = msgspec.field(default_factory=list)


class ProposalWithDiffResult(msgspec.Struct):
    proposal: Proposal
    diff: str
    #: Each rule the proposal adds, changes or removes, with its sources and
    #: the scope it lives in.
    changes: list[RuleChange] = msgspec.field(default_factory=list)
    #: The scope the proposal is for: `global`, or the project's root.
    scope: str = "global"
    #: What validate passes measured of the candidate against the live
    #: rules (`validate DOMAIN --proposal ID`); `probes: 0` when none did.
    verdict: ProposalVerdict = msgspec.field(default_factory=ProposalVerdict)


class RuleSourcesParams(msgspec.Struct):
    rule_id: str


class RulesParams(msgspec.Struct):
    domain: str | None = None
    #: `global`, or an absolute directory (its project's rules). Absent:
    #: every scope.
    scope: str | None = None


class RejectProposalParams(msgspec.Struct):
    id: str
    reason: str | None = None
    #: Changes whose lessons the person says are wrong, by their `number`:
    #: those lessons are marked rejected; every other lesson of the
    #: proposal goes back to the pool.
    wrong: list[int] = msgspec.field(default_factory=list)


class ProposeRetirementParams(msgspec.Struct):
    domain: str
    rule_id: str
    reason: str


class LessonsParams(msgspec.Struct):
    domain: str | None = None
    #: `global`, or an absolute directory (its project's lessons). Absent:
    #: every scope.
    scope: str | None = None
    trigger: Trigger | None = None
    #: A reflection's `Origin`, spelled inline (its Enum lives with the
    #: reflector, which the harness's cold path never imports).
    origin: Literal["clean", "untrusted", "derived"] | None = None
    #: Only lessons no resolved proposal has consumed yet.
    pending: bool = False
    #: At most this many, newest first (the counts cover every match).
    limit: int | None = None


class RuleTalliesParams(msgspec.Struct):
    domain: str | None = None


class RuleTalliesResult(msgspec.Struct):
    tallies: dict[str, RuleTally]
    #: The same rows kept apart per model the probes drove (rule id → model
    #: → tally): tallies compare only within one model.
    by_model: dict[str, dict[str, RuleTally]] = msgspec.field(default_factory=dict)
    #: Per rule id, `by_model` in a person's words (`sources.describe_tally`).
    measured: dict[str, str] = msgspec.field(default_factory=dict)


class ValidateParams(msgspec.Struct):
    domain: str
    #: How many probes, at most (default `validate.DEFAULT_BUDGET`).
    budget: int | None = None
    #: Measure this pending proposal's candidate block against the live one.
    proposal_id: str | None = None
    #: Plan only: say which reflections and how many calls, call nothing.
    dry_run: bool = False


class ValidateResult(msgspec.Struct):
    """The plan always (the cost is said first); the pass when one started."""

    plan: ValidationPlan
    job: Job | None
    #: Why no pass started (a dry run, or nothing to probe); `null` when one did.
    reason: str | None = None


class JudgeParams(msgspec.Struct):
    """Either `pairs`, or `baseline` and `candidate` keyed by episode (paired
    with `pair_arms`; an episode in one arm only is dropped)."""

    change_class: ChangeClass = msgspec.field(name="class")
    prediction: Prediction
    holdout_in: int
    pairs: list[Pair] | None = None
    baseline: dict[str, RunStats] | None = None
    candidate: dict[str, RunStats] | None = None


class JudgeDrawnParams(msgspec.Struct):
    change_class: ChangeClass = msgspec.field(name="class")
    prediction: Prediction
    selection: list[Pair]
    holdout: list[Pair]


class DoctorCheck(msgspec.Struct):
    name: str
    ok: bool
    detail: str


class DoctorResult(msgspec.Struct):
    checks: list[DoctorCheck]


class JobFinishedParams(msgspec.Struct):
    job: Job


class ProposalsChangedParams(msgspec.Struct):
    """`mecha/proposalsChanged`, sent by the editor endpoint when the set of
    pending proposals changes (see `editors/README.md`)."""

    pending: int
    by_domain: dict[str, int]


class ShowProposalDiffResult(msgspec.Struct):
    """The `mecha.showProposalDiff` command's result: the diff, and the URI
    clients show it under (the `mecha-proposal:` scheme is the client's)."""

    uri: str
    id: str
    diff: str


class ProposalSummary(msgspec.Struct):
    """One proposal as an editor lists it, in the server's words: a client
    shows these and counts nothing itself."""

    id: str
    #: `behavior · 3 → 4 active rules` (` · project <root>` for a project's).
    title: str
    active_before: int
    active_after: int
    #: `global`, or the project's root: what `scope` means in every other
    #: result (`mecha/proposal`, a change, a lesson).
    scope: str
    #: The rules file an accept writes, by name.
    writes: str
    #: The scope named to a person: `global`, or `project <root>`.
    scope_label: str = "global"


class ProposalListResult(msgspec.Struct):
    """The `mecha.listProposals` command's result: the `mecha/proposals`
    listing, and a summary of each proposal, in the same order."""

    proposals: list[Proposal]
    summaries: list[ProposalSummary]


class ReviewedProposalResult(msgspec.Struct):
    """The result of `mecha.acceptProposal`, `mecha.rejectProposal` and
    `mecha.proposeRetirement`: their method's result, and `message`, the
    line a client shows for it (spelled by the server, once)."""

    proposal: Proposal
    message: str
    #: An accept's export targets (`mecha/acceptProposal`); empty otherwise.
    exports: list[ExportResult] = msgspec.field(default_factory=list)


def proposal_diff_uri(proposal_id: str) -> str:
    return f"mecha-proposal:/{proposal_id}.diff"


# ─── the table ──────────────────────────────────────────────────────────────


class Method(msgspec.Struct, frozen=True):
    # A Struct, not a dataclass: a dataclass compiles its methods at import,
    # and this module is on the harness's cold path.
    name: str
    params: type
    result: Any
    summary: str
    notification: bool = False


def _m(name: str, params: type, result: Any, summary: str, notification: bool = False) -> Method:
    return Method(name, params, result, summary, notification)


#: Every `mecha/*` method either endpoint serves, and the notifications the
#: sidecar sends. A result named by a string (`"Appraisal"`) is a core type kept
#: out of this module's imports; `mecha.protocol.schema.RESULT_TYPES` resolves it.
#: Sent by either endpoint when a pass it started ends.
JOB_FINISHED = "mecha/jobFinished"

METHODS: dict[str, Method] = {
    m.name: m
    for m in (
        _m("mecha/rulesPromptBlock", RulesPromptBlockParams, RulesPromptBlockResult,
           "The rules block for a run's system prompt, with its hash and rule ids."),
        _m("mecha/extractInterventions", ExtractInterventionsParams, ExtractInterventionsResult,
           "Every moment in a transcript where a person stepped in."),
        _m("mecha/liveAffect", LiveAffectParams, LiveAffectResult,
           "The derived affect label of the run in progress."),
        _m("mecha/appraiseSession", AppraiseSessionParams, "Appraisal",
           "How a finished session went against its goal, derived from the record."),
        _m("mecha/sessionEnded", SessionEndedParams, SessionEndedResult,
           "Hand over a finished transcript; starts the background reflect pass."),
        _m("mecha/draftResolved", DraftResolvedParams, DraftResolvedResult,
           "Hand over a resolved outbox draft; a sent-and-edited message teaches `writing`."),
        _m("mecha/renderCandidate", ProposalIdParams, RenderCandidateResult,
           "The block a run would see if a proposal were accepted; writes nothing."),
        _m("mecha/locateFollowup", LocateFollowupParams, LocateFollowupResult,
           "Index of the user turn carrying a follow-up's text."),
        _m("mecha/learn", LearnParams, LearnResult,
           "Start a background consolidation pass that proposes, never applies."),
        _m("mecha/jobs", Empty, JobsResult, "Recent background jobs, newest first, and the inbox's counts."),
        _m("mecha/inbox", Empty, InboxResult,
           "What waits in the inbox, and every entry set aside with its reason."),
        _m("mecha/inboxRetry", InboxRetryParams, InboxRetryResult,
           "Put a set-aside entry back in the inbox (or, with no id, nothing) and start a reflect pass over "
           "what waits."),
        _m("mecha/inboxDrop", IdParams, InboxDropResult, "Delete a set-aside entry for good."),
        _m("mecha/importSessions", ImportSessionsParams, ImportSessionsResult,
           "Queue the new interventions in Claude Code or Codex CLI sessions and start a reflect pass."),
        _m("mecha/heldCorrections", HeldParams, "HeldResult",
           "The corrections held back as untrusted, each with what holds it back now and whether the person may vouch for it."),
        _m("mecha/vouch", VouchParams, "Vouched",
           "Vouch for held corrections the reader's doubt held back: each is queued for reflection once and the decision "
           "kept in the store's history; one a stranger's text held back is refused by name."),
        _m("mecha/trust", TrustParams, TrustResult,
           "List, add or remove the person's standing trust decisions; an add asks again what now reads clean."),
        _m("mecha/hookStatus", HookStatusParams, HookStatusResult,
           "Which of mecha's hooks each agent's settings file holds, and what the hooks last did."),
        _m("mecha/installHooks", InstallHooksParams, InstallHooksResult,
           "Install (or uninstall) the hooks that queue each Claude Code or Codex session when it ends."),
        _m("mecha/exportRules", ExportRulesParams, ExportRulesResult,
           "Write the rules block into an agent's instructions file (a managed section), or check it."),
        _m("mecha/shareRules", ShareRulesParams, ShareRulesResult,
           "Write chosen learned rules into the repository's tracked instructions, for the team; the person commits."),
        _m("mecha/proposals", ProposalsParams, ProposalsResult, "Proposals, oldest first."),
        _m("mecha/proposal", IdParams, ProposalWithDiffResult,
           "One proposal by id or unique prefix, with the diff of the rendered block."),
        _m("mecha/acceptProposal", AcceptProposalParams, AcceptProposalResult,
           "Accept a pending proposal: the only writer of a learned rules file."),
        _m("mecha/rejectProposal", RejectProposalParams, ProposalResult, "Reject a pending proposal."),
        _m("mecha/proposeRetirement", ProposeRetirementParams, ProposalResult,
           "A pending proposal that retires one learned rule."),
        _m("mecha/recordValidation", ValidationRecord, Empty, "Append one probe's measurement to the ledger."),
        _m("mecha/ruleTallies", RuleTalliesParams, RuleTalliesResult, "Per-rule tallies folded from the ledger."),
        _m("mecha/lessons", LessonsParams, "LessonsResult",
           "The stored lessons, newest first, by scope, trigger and origin, each with why it is not learnable."),
        _m("mecha/ruleSources", RuleSourcesParams, RuleSources,
           "Why one rule exists: the reflections it rests on, their interventions and sessions, and its measured record."),
        _m("mecha/rules", RulesParams, RulesResult,
           "Every live learned rule with its record: the sessions it reached, and the corrections before and after it."),
        _m("mecha/validate", ValidateParams, ValidateResult,
           "Plan, or start, a background pass of counterfactual probes that measures a rules block on held-out corrections."),
        _m("mecha/judge", JudgeParams, Judgement, "The paired A/B gate over measured arms."),
        _m("mecha/judgeDrawn", JudgeDrawnParams, Judgement, "The gate over already drawn slices."),
        _m("mecha/doctor", Empty, DoctorResult, "Health checks of the store, the loop and the model."),
        _m(JOB_FINISHED, JobFinishedParams, None,
           "Sent by the sidecar when a pass it started ends.", notification=True),
    )
}


def is_request_method(name: str) -> bool:
    """Whether the contract has `name` as a request (one sent without an id
    is dropped: there is nobody to answer)."""
    spec = METHODS.get(name)
    return spec is not None and not spec.notification


# ─── encoding and decoding ──────────────────────────────────────────────────

_decoders: dict[type, msgspec.json.Decoder[Any]] = {}


def _dec_hook(type_: type, obj: Any) -> Any:
    from mecha.core.gate import candidate

    return candidate.dec_hook(type_, obj)


def enc_hook(obj: Any) -> Any:
    """Spells the shapes a Struct cannot: every type that knows its own wire
    form has a `to_wire()`."""
    to_wire = getattr(obj, "to_wire", None)
    if to_wire is not None:
        return to_wire()
    raise NotImplementedError(f"cannot encode {type(obj).__name__}")


def decode_params(params_type: type, raw: msgspec.Raw | bytes | msgspec.UnsetType | None) -> Any:
    """Typed params from the request's raw bytes; absent params read as `{}`.

    Errors are -32602 naming the field: msgspec's message carries the JSON
    path (`… - at $.messages[0].role`).
    """
    if raw is None or raw is msgspec.UNSET:
        raw = b"{}"
    decoder = _decoders.get(params_type)
    if decoder is None:
        decoder = _decoders[params_type] = msgspec.json.Decoder(params_type, dec_hook=_dec_hook)
    try:
        return decoder.decode(raw)
    except msgspec.ValidationError as exc:
        text = str(exc)
        if "got `array`" in text and "- at `$" not in text:
            text = "params must be an object, not an array"
        raise RpcError(INVALID_PARAMS, f"invalid params: {text}") from None
    except msgspec.DecodeError as exc:
        raise RpcError(INVALID_PARAMS, f"invalid params: {exc}") from None
    except RecursionError:
        raise RpcError(INVALID_PARAMS, f"invalid params: {_TOO_DEEP}") from None


_TOO_DEEP = "nested too deeply (the limit is about 1000 levels of arrays and objects)"


def convert_params(params_type: type, obj: Any) -> Any:
    """Typed params from already-decoded JSON (the editor endpoint's path)."""
    if obj is None:
        obj = {}
    try:
        return msgspec.convert(obj, params_type, dec_hook=_dec_hook)
    except msgspec.ValidationError as exc:
        raise RpcError(INVALID_PARAMS, f"invalid params: {exc}") from None
    except RecursionError:
        raise RpcError(INVALID_PARAMS, f"invalid params: {_TOO_DEEP}") from None


def to_builtins(result: Any) -> Any:
    """A handler's result as plain JSON-ready builtins."""
    return msgspec.to_builtins(result, enc_hook=enc_hook)
