"""A reflection as the store keeps it: one lesson, tied to the intervention
that produced it, with where its evidence came from.

The floor under the store: the reflections ledger persists these types and
every pass, the gate and the editor read them, so they live where the store
can import them without reaching up into the passes that write them. How a
reflection is made (the reflector, its prompts, its reply contracts) stays
with the reflect pass (`learning.reflection`); only the shape and its
provenance enums are here. `Origin` is decided by code from the recorded
taint, and only a `clean` reflection is learnable (`Reflexion.learnable`).
"""

from __future__ import annotations

from enum import Enum

import msgspec


class Origin(str, Enum):
    """Where a reflection's evidence came from, provenance-wise."""

    #: No third-party content had entered the conversation at that moment.
    CLEAN = "clean"
    #: Third-party content was in context (or coverage is unknown). Kept as
    #: readable evidence; never consolidated into rules.
    UNTRUSTED = "untrusted"
    #: Not an interactive session — a subagent, eval case or batch item: the
    #: harness correcting itself, a feedback loop rather than a lesson.
    DERIVED = "derived"


class Evidence(str, Enum):
    """What the reflector was shown when a reflection was mined."""

    #: Context, the intervention, and the aftermath.
    FULL = "full"
    #: Only the person's own words.
    INTERVENTION_ONLY = "intervention_only"


class FoundAt(msgspec.Struct, kw_only=True, omit_defaults=True):
    """Where an intervention was found: the index of the message it rides
    in, and for an imported session the file and the line of that message."""

    at: int | None = None
    file: str | None = None
    line: int | None = None


class Reflexion(msgspec.Struct, kw_only=True):
    """One lesson, tied to the intervention that produced it."""

    id: str
    #: Which rules file the lesson feeds: `behavior`, `writing`, …
    domain: str
    session_id: str
    #: `steer`, `denial`, `followup` or `edit`.
    trigger: str
    #: What the assistant was doing, as the reflector was shown it (empty when
    #: the evidence was withheld).
    context: str
    #: What the person said or did.
    intervention: str
    #: The inferred lesson, phrased as a reusable directive.
    reflexion_text: str
    error_type: str | None = None
    confidence: float | None = None
    #: Set once a resolved proposal has consumed it.
    is_processed: bool = False
    leap_run_id: str | None = None
    created_at: str
    #: Absent on reflections recorded before provenance existed; those load
    #: as `untrusted`, because unknown is never clean.
    origin: Origin = Origin.UNTRUSTED
    #: Absent on older reflections; read as the more conservative answer.
    evidence: Evidence = Evidence.INTERVENTION_ONLY
    #: The project the session ran in (its root, `layout.project_root`), or
    #: `None`: a lesson about no project in particular. A reflection
    #: recorded before scopes has none, and so reads as global, as every
    #: lesson then was.
    project: str | None = None
    #: Where the intervention was found (absent on older reflections).
    found: FoundAt | None = None
    #: For an untrusted reflection of an imported session: the first call
    #: that made its moment untrusted, as a person is told it
    #: (`reader.Blame.describe`). Absent where nothing names one.
    untrusted_by: str | None = None
    #: Set, with the person's reason, when a person said the lesson is
    #: wrong: a rule resting on it was left out of an accepted proposal, or
    #: a rejected proposal's rule was named as wrong. Such a lesson is also
    #: processed, so no pass argues from it again.
    rejected: str | None = None

    def learnable(self) -> bool:
        """Whether a learning pass may consume this reflection. Structural,
        not a score."""
        return self.origin is Origin.CLEAN
