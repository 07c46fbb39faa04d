"""Figure 14: what the learn gate keeps from a small local model's rule sets.

The real local model (the `local` extra's server and SmolLM2-135M) is asked
for a rule set over the same pools of reflections again and again, through
the real learner call. Each answer is then read twice, as a pass would have
filed it before the gate existed (every parsed rule set that changes the
live rules is filed whole) and as a pass files it now (`gate_learned_set`).
The same answers on both sides, so the difference is the gate alone.

Two numbers per side: the share of passes that file a proposal, and of the
rules filed, how many a person would keep. "Would keep" is judged on the
kept examples — the well-formed lessons and live rules the learner was
shown, which are the only rules a person has already vouched for: a filed
rule counts as kept when it is one of them (`rules.rule_key`), or a
sentence that reads as an instruction and cites a reflection whose lesson
shares a content word with it. The filed texts are printed, so a reader can
judge them too.

Needs the local model (`python -m tests.realparts llama`); the other figures
do not, so this one runs only when asked: `python -m tests.bench --only 14`.
"""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

from .common import Figure

#: Pools of reflections as a person's corrections leave them, and the live
#: rules each pass rewrites.
POOLS: list[tuple[list[str], list[str]]] = [
    (
        ["Ask before deleting any file.", "Keep edits inside the folder the person names.",
         "Run the test suite before saying a change is done."],
        ["Confirm destructive shell commands first."],
    ),
    (
        ["Answer in British English.", "Quote the error message in full before explaining it.",
         "Do not rename public functions unless asked."],
        ["Ask before changing more than one file when the task names a single file."],
    ),
]

_STOP = {"the", "a", "an", "to", "of", "in", "and", "or", "before", "any", "when", "it", "is", "be", "for", "on", "first"}


def _content_words(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z']+", text.lower()) if w not in _STOP and len(w) > 2}


def _kept(rule_text: str, cited: list[str], examples: list[str]) -> bool:
    from mecha.core.domain.rules import rule_key
    from mecha.core.learning.replies import not_an_instruction_reason

    if rule_key(rule_text) in {rule_key(e) for e in examples}:
        return True
    if not_an_instruction_reason(rule_text) is not None:
        return False
    return any(_content_words(rule_text) & _content_words(c) for c in cited)


async def _ask(learner, pool: list[str], live_texts: list[str]):
    from mecha.core.domain.reflexion import Origin, Reflexion
    from mecha.core.domain.rules import Rule
    from mecha.core.identity import now

    batch = [
        Reflexion(id=f"bench-{i}", domain="behavior", session_id="bench", trigger="steer", context="editing",
                  intervention=t, reflexion_text=t, created_at=now(), origin=Origin.CLEAN)
        for i, t in enumerate(pool)
    ]
    live = [Rule(text=t, id=f"r-{i}") for i, t in enumerate(live_texts)]
    answer = await learner.learn("behavior", [], live, batch)
    return answer, batch, live


def _judge(answer, batch, live, examples: list[str], side: dict) -> None:
    from mecha.core.learning.consolidation import gate_learned_set

    side_before, side_after = side["before"], side["after"]
    for s in (side_before, side_after):
        s["passes"] += 1
    if answer is None:
        return
    live_texts = {r.text for r in live}
    by_id = {r.id: r.reflexion_text for r in batch}
    # Before the gate: the parsed set filed whole when it changes the rules.
    before = [r.text for r in answer.rules]
    if set(before) != live_texts:
        side_before["filed"] += 1
        for text in before:
            if text in live_texts:
                continue
            side_before["rules"].append(text)
            side_before["kept"] += _kept(text, list(by_id.values()), examples)
    gated = gate_learned_set(answer, batch, live)
    after = [r for r in gated.rules if r.text not in live_texts]
    if after or gated.drops:
        side_after["filed"] += 1
        for r in after:
            side_after["rules"].append(r.text)
            side_after["kept"] += _kept(r.text, [by_id[i] for i in r.sources if i in by_id], examples)


def run(rounds: int) -> list[Figure]:
    from mecha.core.learning.consolidation import Learner
    from mecha.core.providers import OpenAIProvider
    from mecha.core.providers.config import ModelConfig
    from mecha.sidecar.localmodel import MODEL_ID, LocalServer, ensure_local_model

    side = {k: {"passes": 0, "filed": 0, "rules": [], "kept": 0} for k in ("before", "after")}
    with LocalServer(ensure_local_model(), log=Path("/dev/null")) as server:
        config = ModelConfig(api="openai", base_url=server.base_url, model=MODEL_ID, timeout_s=600.0, source="bench")
        learner = Learner(OpenAIProvider(config), MODEL_ID)
        for _ in range(rounds):
            for pool, live_texts in POOLS:
                answer, batch, live = asyncio.run(_ask(learner, pool, live_texts))
                _judge(answer, batch, live, pool + live_texts, side)
    b, a = side["before"], side["after"]
    filed = Figure(
        key="learn_gate_filed", title="learn passes that file a proposal (SmolLM2-135M, the same answers gated and not)",
        subject=100 * a["filed"] / max(1, a["passes"]), baseline=100 * b["filed"] / max(1, b["passes"]), unit="%",
        subject_label="with the gate", baseline_label="without", ratio=a["filed"] / b["filed"] if b["filed"] else float("nan"),
        goal="reported", met=None, notes=[f"{b['passes']} passes over {len(POOLS)} pools of reflections"],
        extra={"without": b["rules"], "with": a["rules"]},
    )
    junk_after, junk_before = len(a["rules"]) - a["kept"], len(b["rules"]) - b["kept"]
    junk = Figure(
        key="learn_gate_kept", title="filed rules a person would not keep (judged on the kept examples)",
        subject=junk_after, baseline=junk_before, unit="rules", subject_label="with the gate", baseline_label="without",
        ratio=junk_after / junk_before if junk_before else float("nan"), goal="fewer, none if possible",
        met=junk_after <= junk_before,
        notes=[f"kept: {a['kept']} of {len(a['rules'])} filed with the gate, {b['kept']} of {len(b['rules'])} without"],
        extra={"without": b["rules"], "with": a["rules"]},
    )
    figures = [filed, junk]
    return figures
