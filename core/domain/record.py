"""A rule's record as the store keeps it: the corrections that came back
after it went live (`Repeat`) and the sessions it reached (`SessionStart`).

The floor under the store, like `reflexion` and `rules`: the ledgers
persist these types, the reflect pass and the session-start hook write
them, and the rule record (`learning.record`) reads them. A repeat is kept
apart from the reflection of the same correction because a reflector may
find nothing new to learn in a correction that repeats a rule, and the
repeat still counts: the rule was not followed.
"""

from __future__ import annotations

import msgspec

from mecha.core.domain.rules import Rule


class Repeat(msgspec.Struct, kw_only=True, omit_defaults=True):
    """One correction that shows a live learned rule was not followed, as
    the reflector named it (its reply's `repeats`)."""

    rule_id: str
    domain: str
    #: The session the correction was made in.
    session_id: str
    #: The person's words, bounded like a source's (`sources.SOURCE_TEXT_BUDGET`).
    text: str
    #: `steer`, `denial`, `followup` or `edit`.
    trigger: str | None = None
    #: The project the session ran in (its root), or `None`.
    project: str | None = None
    #: The reflection recorded for the same correction, when there is one.
    reflexion_id: str | None = None
    #: Index of the message the correction rides in; for an imported
    #: session, its file and the line of that message.
    at: int | None = None
    file: str | None = None
    line: int | None = None
    #: When the reflect pass recorded it.
    created_at: str
    #: When the person made the correction, as the session file dates it
    #: (UTC, `identity.now`'s format). Absent for a session the harness
    #: handed over, whose messages carry no time: it is reflected once it
    #: ends, so `created_at` stands in (`corrected_at`).
    said_at: str | None = None

    def corrected_at(self) -> str:
        """When the correction was made, as near as the store knows: what
        decides whether it came after the rule went live."""
        return self.said_at or self.created_at


class Asked(msgspec.Struct, kw_only=True, omit_defaults=True):
    """One call an agent made, after a rule's accept, that matched the
    rule's ask permission — so the agent asked the person — and what the
    person then did, as the session file shows it (`learning.asks.asked_in`)."""

    rule_id: str
    #: The ask pattern it matched (`Bash(git push origin main:*)`).
    pattern: str
    #: The session it was made in, and the call's own id there.
    session_id: str
    call_id: str
    #: `ran` (the person let it run), `refused` (the person refused it) or
    #: `not_run` (nobody answered: a headless run reports it denied).
    outcome: str
    #: When the call was made, as the session file dates it.
    at: str | None = None
    project: str | None = None


class SessionStart(msgspec.Struct, kw_only=True, omit_defaults=True):
    """One agent session the session-start hook saw begin
    (`agents.started`)."""

    #: Spelled as the importers spell it: `claude:<id>`, `codex:<id>`.
    session_id: str
    #: `claude` or `codex`; `harness` for a run a harness handed over
    #: (`learning.record.harness_start`).
    agent: str
    #: The session's working directory, as the agent reported it.
    cwd: str | None = None
    #: When it started (UTC, `identity.now`'s format).
    at: str
    #: The learned-rule lines that reached the agent at its start, each as
    #: `rule_line_hash` of the line: what its instruction files held.
    rules: list[str] = msgspec.field(default_factory=list)


class RuleRecord(msgspec.Struct, kw_only=True, omit_defaults=True):
    """What the store saw of one live learned rule: when it went live, the
    sessions it reached, the corrections it was learned from and those that
    came after."""

    rule_id: str
    domain: str
    #: `global`, or the project's root.
    scope: str
    #: When it went live: the accept that added it, else its `created_at`.
    live_since: str | None = None
    days_live: int | None = None
    #: Sessions in its scope, while it was live, that it reached (counted
    #: from the session-start hook's records).
    sessions: int = 0
    #: The most recent of them, newest first, at most `NAMED_SESSIONS`.
    session_ids: list[str] = msgspec.field(default_factory=list)
    #: Corrections after it went live that show it was not followed.
    corrected_again: list[Repeat] = msgspec.field(default_factory=list)
    #: The corrections it was learned from (its sources), and the sessions
    #: in its scope before it went live (those with a source among them).
    learned_from: int = 0
    sessions_before: int = 0
    #: The last session in its scope, reached or not: what retirement reads.
    last_in_scope: str | None = None
    #: How many times its ask permission asked since the accept, and what
    #: the person then did: ran it, refused it, or nobody answered.
    asked: int = 0
    asked_ran: int = 0
    asked_refused: int = 0
    #: Pending proposals that answer this record (a rewrite or a retirement).
    rewrite_proposal: str | None = None
    retire_proposal: str | None = None
    #: The record in one line (`record_line`).
    line: str = ""


class ScopedRule(msgspec.Struct, kw_only=True, omit_defaults=True):
    """A live learned rule, where it lives, and its record."""

    rule: Rule
    domain: str
    #: `global`, or the project's root.
    scope: str
    record: RuleRecord


class RulesResult(msgspec.Struct, kw_only=True):
    """`mecha/rules`: every live learned rule with its record."""

    rules: list[ScopedRule] = msgspec.field(default_factory=list)
