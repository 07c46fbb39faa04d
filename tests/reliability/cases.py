"""What the bad-input tests and the long fuzz feed the sidecar: one valid
request per method, and, generated from the method table's param Structs,
every field a request can carry paired with a JSON type it must refuse.

The wrong-type catalogue is derived, not written out: for each field of each
method's params (and, one level at a time, of the Structs nested in them —
`stats.turns`, `messages[0].role`), the JSON kinds the field's type accepts
are read from `msgspec.inspect`, and every other kind is a case. A field
added to a params Struct is covered the day it is added.
"""

from __future__ import annotations

import copy
import os
import select
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import msgspec
import msgspec.inspect as mi

from mecha.protocol.framing import FrameReader
from mecha.protocol.methods import METHODS
from tests.protocol.wire_examples import DRAFT, MESSAGES, STATS, TIMELINE

#: JSON's kinds of value, as msgspec names them in its messages.
KINDS = ("null", "bool", "int", "float", "str", "array", "object")

#: One value of each kind.
SAMPLE: dict[str, Any] = {
    "null": None,
    "bool": True,
    "int": 7,
    "float": 2.5,
    "str": "wrong",
    "array": [1],
    "object": {"k": 1},
}

#: Methods a client can request (the notification is sent, never served).
REQUEST_METHODS = sorted(name for name, spec in METHODS.items() if not spec.notification)

#: Methods that read or write the person's own files outside the store, by
#: design, wherever a request points them (another agent's sessions, its
#: instructions file, a repository's tracked instructions — the sidecar's
#: working directory when no project is named —, its hook settings, the
#: config file's trust decisions):
#: never run with fuzzed params, whose paths would be this machine's
#: (`/etc/passwd`, `~`). Their params are still decoded.
OUTSIDE_THE_STORE = frozenset(
    {"mecha/importSessions", "mecha/exportRules", "mecha/shareRules", "mecha/installHooks", "mecha/trust"}
)

#: What the running fuzz sends.
RUN_METHODS = [name for name in REQUEST_METHODS if name not in OUTSIDE_THE_STORE]

_PREDICTION = {"metric": "tool_error_rate", "rationale": "fewer failed calls"}
_ARM = {"turns": 5, "tool_calls": 6, "tool_errors": 1, "stop_cause": "completed"}

#: One valid request per method: what the mutating fuzz starts from.
VALID_PARAMS: dict[str, dict[str, Any]] = {
    "mecha/rulesPromptBlock": {"domain": "triage"},
    "mecha/extractInterventions": {"messages": MESSAGES},
    "mecha/liveAffect": {"session_id": "run-1", "stats": STATS, "messages": MESSAGES, "run_started_at": 0},
    "mecha/appraiseSession": {
        "session_id": "run-1",
        "stats": STATS,
        "messages": MESSAGES,
        "goal": "task:01J8ZK",
        "taint_timeline": TIMELINE,
        "probes": [{"at": 4, "verdict": "mattered"}],
        "drafts": [DRAFT],
    },
    "mecha/sessionEnded": {"session_id": "run-1", "messages": MESSAGES, "taint_timeline": TIMELINE},
    "mecha/draftResolved": {"item": DRAFT},
    "mecha/renderCandidate": {"proposal_id": "20260101T000000-0000aaaa"},
    "mecha/locateFollowup": {"messages": MESSAGES, "text": "Keep the old name as a deprecated alias too."},
    "mecha/learn": {"domain": "behavior", "min": 3},
    "mecha/jobs": {},
    "mecha/inbox": {},
    "mecha/inboxRetry": {"id": "20260101T000000"},
    "mecha/inboxDrop": {"id": "20260101T000000"},
    "mecha/importSessions": {
        "source": "claude",
        "dir": "sessions",
        "dry_run": True,
        "since": "2026-01-01",
        "project": "invoices",
        "voices": ["[ci]"],
        "trust_tools": ["Bash(make)"],
        "distrust_tools": ["WebFetch"],
    },
    "mecha/heldCorrections": {"limit": 5},
    # The template's held corrections (`fuzz.HELD_IDS`): one by its id's last part, one whole.
    "mecha/vouch": {"ids": ["held0001", "20260101T000000-held0002"], "by": "dana"},
    "mecha/exportRules": {"target": "agents", "path": "AGENTS.md", "check": True},
    "mecha/shareRules": {"rules": ["r-1"], "project": "/srv/app"},
    "mecha/hookStatus": {"agent": "claude", "scope": "user"},
    "mecha/trust": {"action": "add", "entries": ["Bash(bd)", "Bash(git fetch)", "mcp__notes__read"]},
    "mecha/installHooks": {"agent": "codex", "scope": "user", "uninstall": True, "pin_store": False},
    "mecha/proposals": {"status": "pending", "domain": "behavior"},
    "mecha/proposal": {"id": "20260101T000000"},
    "mecha/acceptProposal": {"id": "20260101T000000-0000aaaa"},
    "mecha/rejectProposal": {"id": "20260101T000000-0000bbbb", "reason": "not now"},
    "mecha/proposeRetirement": {"domain": "behavior", "rule_id": "r-1", "reason": "regressed"},
    "mecha/recordValidation": {
        "reflexion_id": "refl-1",
        "trigger": "denial",
        "domain": "behavior",
        "rules_hash": "0000000000000000",
        "rule_ids": ["r-1"],
        "outcome": "improved",
        "model": "local",
        "created_at": "2026-11-03T10:00:00.000000Z",
    },
    "mecha/ruleTallies": {"domain": "behavior"},
    "mecha/lessons": {"domain": "behavior", "scope": "global", "trigger": "steer", "origin": "clean", "pending": True, "limit": 5},
    "mecha/ruleSources": {"rule_id": "r-1"},
    "mecha/rules": {"domain": "behavior", "scope": "global"},
    "mecha/validate": {"domain": "behavior", "dry_run": True},
    "mecha/judge": {
        "class": "prose",
        "prediction": _PREDICTION,
        "baseline": {"e1": _ARM, "e2": _ARM},
        "candidate": {"e1": _ARM, "e2": {**_ARM, "tool_errors": 0}},
        "holdout_in": 4,
    },
    "mecha/judgeDrawn": {
        "class": "architecture",
        "prediction": _PREDICTION,
        "selection": [{"episode": "e1", "baseline": _ARM, "candidate": _ARM}],
        "holdout": [{"episode": "e9", "baseline": _ARM, "candidate": _ARM}],
    },
    "mecha/doctor": {},
}


def valid_params(method: str) -> dict[str, Any]:
    """A fresh copy of `method`'s valid params, safe to mutate."""
    return copy.deepcopy(VALID_PARAMS[method])


# ─── the JSON kinds a type accepts ──────────────────────────────────────────


def accepted_kinds(t: mi.Type) -> frozenset[str] | None:
    """The JSON kinds a value of type `t` may be, or `None` when any kind
    could be accepted (an `Any`, a custom type decoded by a hook)."""
    if isinstance(t, (mi.AnyType, mi.CustomType, mi.RawType)):
        return None
    if isinstance(t, (mi.StrType, mi.DateTimeType, mi.DateType, mi.TimeType, mi.UUIDType, mi.DecimalType)):
        return frozenset({"str"})
    if isinstance(t, mi.BoolType):
        return frozenset({"bool"})
    if isinstance(t, mi.IntType):
        return frozenset({"int"})
    if isinstance(t, mi.FloatType):
        return frozenset({"int", "float"})
    if isinstance(t, mi.NoneType):
        return frozenset({"null"})
    if isinstance(t, (mi.EnumType, mi.LiteralType)):
        values = [m.value for m in t.cls] if isinstance(t, mi.EnumType) else list(t.values)
        kinds = set()
        for v in values:
            if v is None:
                kinds.add("null")
            elif isinstance(v, str):
                kinds.add("str")
            elif isinstance(v, int):
                kinds.add("int")
            else:
                return None
        return frozenset(kinds)
    if isinstance(t, (mi.ListType, mi.SetType, mi.FrozenSetType, mi.VarTupleType, mi.TupleType)):
        return frozenset({"array"})
    if isinstance(t, mi.StructType):
        return frozenset({"array"}) if t.array_like else frozenset({"object"})
    if isinstance(t, (mi.DictType, mi.TypedDictType, mi.DataclassType)):
        return frozenset({"object"})
    if isinstance(t, mi.UnionType):
        kinds: set[str] = set()
        for member in t.types:
            got = accepted_kinds(member)
            if got is None:
                return None
            kinds |= got
        return frozenset(kinds)
    return None


def _walkable(t: mi.Type) -> tuple[str, mi.StructType] | None:
    """How to step into `t` to reach a nested Struct's fields: `("field",
    struct)` for a plain object Struct, `("item", struct)` for a list of
    them; an optional one counts. Tagged and array-like Structs are not
    entered (their error paths depend on the tag)."""
    if isinstance(t, mi.UnionType):
        rest = [m for m in t.types if not isinstance(m, mi.NoneType)]
        return _walkable(rest[0]) if len(rest) == 1 else None
    if isinstance(t, mi.StructType) and not t.array_like and t.tag is None:
        return ("field", t)
    if isinstance(t, mi.ListType):
        inner = _walkable(t.item_type)
        if inner is not None and inner[0] == "field":
            return ("item", inner[1])
    return None


# ─── the catalogue ──────────────────────────────────────────────────────────


@dataclass(frozen=True)
class WrongType:
    """One field of one method given a JSON kind its type refuses."""

    method: str
    path: tuple[str | int, ...]
    kind: str

    @property
    def json_path(self) -> str:
        """The path as msgspec prints it: `$.messages[0].role`."""
        out = "$"
        for step in self.path:
            out += f"[{step}]" if isinstance(step, int) else f".{step}"
        return out

    def params(self, value: Any = msgspec.UNSET) -> dict[str, Any]:
        """Params holding only the offending value, nested along the path
        (msgspec reports a wrong type as it meets it, before it would
        notice required fields missing around it)."""
        v: Any = SAMPLE[self.kind] if value is msgspec.UNSET else value
        for step in reversed(self.path):
            v = [v] if isinstance(step, int) else {step: v}
        return v

    @property
    def top_field(self) -> str:
        return str(self.path[0])


def wrong_types(max_depth: int = 3) -> list[WrongType]:
    """Every (method, field path, refused kind) of every request method."""
    out: list[WrongType] = []
    for method in REQUEST_METHODS:
        root = mi.type_info(METHODS[method].params)
        assert isinstance(root, mi.StructType), method
        out.extend(_fields(method, root, (), max_depth))
    return out


def _fields(method: str, struct: mi.StructType, prefix: tuple[str | int, ...], depth: int) -> Iterator[WrongType]:
    for f in struct.fields:
        path = (*prefix, f.encode_name)
        kinds = accepted_kinds(f.type)
        if kinds is not None:
            for kind in KINDS:
                if kind not in kinds:
                    yield WrongType(method, path, kind)
        if depth > 1:
            step = _walkable(f.type)
            if step is not None:
                how, inner = step
                yield from _fields(method, inner, path if how == "field" else (*path, 0), depth - 1)


def typed_fields(method: str) -> set[str]:
    """The top-level fields of `method` whose type refuses some JSON kind
    (every field but an `Any`): each must appear in the catalogue."""
    root = mi.type_info(METHODS[method].params)
    return {f.encode_name for f in root.fields if accepted_kinds(f.type) not in (None, frozenset(KINDS))}


def one_per_field(cases: list[WrongType]) -> list[WrongType]:
    """The first case for each (method, top-level field): a set small enough
    to send over a real pipe, that still names every field."""
    seen: set[tuple[str, str]] = set()
    out = []
    for c in cases:
        if len(c.path) == 1 and (c.method, c.top_field) not in seen:
            seen.add((c.method, c.top_field))
            out.append(c)
    return out


# ─── a reader whose peer pauses ─────────────────────────────────────────────


class StallingReader(FrameReader):
    """A reader whose input is `garbage`, then a stall, then `tail`.

    While the garbage lasts, a wait for more bytes with the pipe empty is
    the stall: a timed wait (mid-header, mid-body) times out at once, and an
    untimed one (between frames) is when the tail arrives, followed by the
    end of input. Deterministic: no clock is involved."""

    def __init__(self, fd: int, wfd: int, tail: bytes, **kw: Any):
        super().__init__(fd, **kw)
        self.wfd = wfd
        self.tail = tail
        self.sent = False

    def _fill(self, timeout: float | None = None) -> bool:
        if not self.sent and not select.select([self.fd], [], [], 0)[0]:
            if timeout is not None:
                return False
            os.write(self.wfd, self.tail)
            os.close(self.wfd)
            self.sent = True
        return super()._fill(timeout)
