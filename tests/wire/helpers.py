"""Transcripts and store fixtures shared by the wire tests.

Transcripts are plain JSON, as the harness writes them. Store contents are
written with the core's own store API (as a pass or an earlier accept
would), because the server must read what the core writes.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mecha.core.domain.reflexion import Origin, Reflexion
from mecha.core.domain.rules import Rule
from mecha.core.store.learning_store import LearningStore, Proposal, ProposalStatus
from tests import builders
from tests.builders import rule

from .client import Sidecar

WHEN = "2026-08-27T00:00:00Z"


# ─── transcripts ────────────────────────────────────────────────────────────


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": [{"type": "text", "text": text}]}


def assistant_text(text: str) -> dict[str, Any]:
    return {"role": "assistant", "content": [{"type": "text", "text": text}]}


def assistant_tool(tool_id: str, name: str, input: Any = None) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": [{"type": "tool_use", "id": tool_id, "name": name, "input": input or {}}],
    }


def results(*blocks: dict[str, Any]) -> dict[str, Any]:
    return {"role": "user", "content": list(blocks)}


def result(tool_id: str, content: str, is_error: bool = False) -> dict[str, Any]:
    return {"type": "tool_result", "tool_use_id": tool_id, "content": content, "is_error": is_error}


def text(t: str) -> dict[str, Any]:
    return {"type": "text", "text": t}


def steered() -> list[dict[str, Any]]:
    """The seed's fixture: steering text riding beside a tool result is a
    steer, at message 2."""
    return [
        user("do the thing"),
        assistant_tool("t1", "shell"),
        results(result("t1", "ok"), text("change of plan: skip the rest")),
    ]


def big_transcript(pairs: int) -> list[dict[str, Any]]:
    """A long run with no intervention in it: enough work to keep the
    server's dispatcher busy for a while."""
    messages: list[dict[str, Any]] = [user("start")]
    for i in range(pairs):
        messages.append(
            {
                "role": "assistant",
                "content": [
                    text(f"working on step {i} " * 5),
                    {"type": "tool_use", "id": f"t{i}", "name": "shell", "input": {"cmd": f"ls -la /tmp/{i}"}},
                ],
            }
        )
        messages.append(results(result(f"t{i}", "ok")))
    return messages


# ─── the store ──────────────────────────────────────────────────────────────


def open_store(root: Path) -> LearningStore:
    return LearningStore.open(root)


def write_user_rules(root: Path, domain: str, *texts: str) -> Path:
    """A person's own rules file, written by hand as a person would."""
    path = root / "rules" / f"{domain}.user.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    body = "".join(f'[[rules]]\ntext = "{t}"\n\n' for t in texts)
    path.write_text("# my own rules\n\n" + body)
    return path


def proposal(
    pid: str,
    *,
    domain: str = "behavior",
    status: ProposalStatus = ProposalStatus.PENDING,
    rules_before: list[Rule] | None = None,
    rules: list[Rule] | None = None,
    reflexion_ids: list[str] | None = None,
) -> Proposal:
    return builders.proposal(
        pid, rules if rules is not None else [rule("Ask before deleting files", "r-new")], domain=domain,
        status=status, rules_before=rules_before or [], reflexion_ids=reflexion_ids or [], created_at=WHEN,
    )


def reflexion(rid: str, domain: str = "behavior", origin: Origin = Origin.CLEAN) -> Reflexion:
    return builders.reflexion(rid, domain=domain, origin=origin, created_at=WHEN)


# ─── the wire ───────────────────────────────────────────────────────────────


def assert_served(s: Sidecar) -> None:
    """The sidecar still answers a valid request with a correct result."""
    got = s.call("mecha/locateFollowup", {"messages": [user("task"), assistant_text("ok"), user("and more")], "text": "and more"})
    assert got == {"index": 2}
