"""`mecha-sidecar demo`: what the harness gets, shown with a real sidecar.

Starts a real `mecha-sidecar` process over stdio — exactly as the harness
does — against a throwaway store seeded with sample rules, and walks the
bundled sample session through it: the rules block a run starts with,
the interventions mined from the transcript, the live affect and the
appraisal, and the hand-over at the end of the run. With a model configured
(see `mecha-sidecar doctor`) it goes on through the background passes: the
reflections, a learn pass, the proposal and its diff, an accept, and the new
block. Without one it shows the pass failing cleanly with `NoModel`.

It never touches the person's own store.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import textwrap
from pathlib import Path
from typing import Any

from mecha.core.sessions import load_transcript, sample_session_path, samples_dir

from .client import ServerError, SidecarClient


def _say(text: str = "") -> None:
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


def _step(method: str, note: str) -> None:
    _say()
    _say(f"→ {method}  ({note})")


def _indent(text: str, prefix: str = "    ") -> str:
    return textwrap.indent(text, prefix)


def _model_configured() -> bool:
    from mecha.core.providers import default_config_path, resolve_model_config

    try:
        return resolve_model_config(None, os.environ, default_config_path()) is not None
    except ValueError:
        return False


def run_demo(*, keep: bool = False) -> int:
    root = Path(tempfile.mkdtemp(prefix="mecha-demo-"))
    try:
        return _demo(root)
    finally:
        if keep:
            _say(f"\n(the demo store is kept at {root})")
        else:
            shutil.rmtree(root, ignore_errors=True)


def _demo(root: Path) -> int:
    (root / "rules").mkdir(parents=True)
    for path in sorted((samples_dir() / "rules").glob("*.toml")):
        shutil.copyfile(path, root / "rules" / path.name)
    session = load_transcript(sample_session_path())
    import msgspec

    messages = msgspec.to_builtins(session.messages)
    timeline = msgspec.to_builtins(session.taint_timeline)
    with_model = _model_configured()

    _say("mecha-sidecar demo: a real sidecar process, driven over stdio the way the harness drives it.")
    _say(f"Sample session: {len(messages)} messages; a throwaway store seeded with sample rules.")

    env = dict(os.environ)
    with SidecarClient(env=env, timeout=120) as c:
        _step("initialize", "the harness starts a run")
        init = c.request("initialize", {"processId": os.getpid(), "initializationOptions": {"learningDir": str(root)}})
        _say(f"← {init['serverInfo']['name']} {init['serverInfo']['version']}, "
             f"{len(init['capabilities']['experimental']['mecha']['methods'])} mecha/* methods")

        _step("mecha/rulesPromptBlock", "before the run's first model call")
        block = c.request("mecha/rulesPromptBlock", {})
        _say(_indent(block["block"] or "(no block)"))
        _say(f"← rules_hash {block['rules_hash']}, learned rule ids {block['rule_ids']}")

        _step("mecha/extractInterventions", "where did the person step in?")
        found = c.request("mecha/extractInterventions", {"messages": messages})["interventions"]
        for i in found:
            _say(f"    [{i['trigger']}] message {i['at']}: {i['text']}")
        _say("    (the hook's refusal, the tool error and the /exit command are not a person: not mined)")

        followup = next((i for i in found if i["trigger"] == "followup"), None)
        if followup:
            _step("mecha/locateFollowup", "where a counterfactual probe would cut the conversation")
            idx = c.request("mecha/locateFollowup", {"messages": messages, "text": followup["text"]})["index"]
            _say(f"← index {idx}")

        _step("mecha/liveAffect", "the run's derived affect, for a status strip")
        stats = {"turns": 6, "tool_calls": 4, "tool_errors": 1, "tool_denied": 1, "stop_cause": "completed"}
        affect = c.request("mecha/liveAffect", {"session_id": session.session_id, "stats": stats,
                                                "messages": messages, "run_started_at": 0})
        _say(f"← {affect['affect']}")

        _step("mecha/appraiseSession", "how the session went, derived from the record, never asked of a model")
        appraisal = c.request("mecha/appraiseSession", {"session_id": session.session_id, "stats": stats,
                                                        "messages": messages, "taint_timeline": timeline})
        for e in appraisal["errors"]:
            _say(f"    {e['channel']:<12} sign {e['sign']:+.1f}  agency {e['agency']:<6} cite {e['cite']}")
        _say(f"← label {appraisal['label']}, origin {appraisal['origin']}")

        _step("mecha/sessionEnded", "the run is over; the harness hands over the transcript and may exit")
        ended = c.request("mecha/sessionEnded", {"session_id": session.session_id, "messages": messages,
                                                 "taint_timeline": timeline})
        _say(f"← {ended['interventions']} interventions, {ended['learnable']} learnable; "
             f"background job {ended['job']['id'] if ended['job'] else None}")
        if ended["job"]:
            finished = c.wait_for("mecha/jobFinished")["job"]
            _say(f"← mecha/jobFinished: {finished['state']}: {_first_line(finished.get('outcome'))}")
            if finished["state"] != "done":
                if not with_model:
                    _say()
                    _say("No model is configured, so the reflect pass failed cleanly and left the session in the")
                    _say("store's inbox for a later pass. Configure one (`mecha-sidecar doctor` says how) and run")
                    _say("the demo again to see reflections, a learn pass, a proposal and an accept.")
                return _finish(c)

        _step("mecha/learn", "consolidate the reflections into a proposal (never applied by itself)")
        learned = c.request("mecha/learn", {"domain": "behavior", "min": 1})
        if learned.get("job") is None:
            _say(f"← nothing started: {learned.get('reason')}")
            return _finish(c)
        finished = c.wait_for("mecha/jobFinished")["job"]
        _say(f"← mecha/jobFinished: {finished['state']}: {_first_line(finished.get('outcome'))}")
        proposal_id = finished.get("proposal_id")
        if not proposal_id:
            return _finish(c)

        _step("mecha/proposal", "the diff a person reviews")
        shown = c.request("mecha/proposal", {"id": proposal_id})
        _say(_indent(shown["diff"] or "(no change)"))

        _step("mecha/renderCandidate", "what a run would see if it were accepted — nothing written")
        candidate = c.request("mecha/renderCandidate", {"proposal_id": proposal_id})
        _say(f"← rules_hash {candidate['rules_hash']}, {len(candidate['rule_ids'])} learned rule ids")

        _step("mecha/acceptProposal", "a person accepts (in this throwaway store)")
        try:
            accepted = c.request("mecha/acceptProposal", {"id": proposal_id})["proposal"]
            _say(f"← {accepted['id']} {accepted['status']}")
        except ServerError as exc:
            _say(f"← refused: {exc}")

        _step("mecha/rulesPromptBlock", "the next run starts with the new rules")
        block = c.request("mecha/rulesPromptBlock", {})
        _say(_indent(block["block"] or "(no block)"))
        _say(f"← rules_hash {block['rules_hash']}")
        return _finish(c)


def _first_line(text: Any) -> str:
    return str(text or "").splitlines()[0] if text else ""


def _finish(c: SidecarClient) -> int:
    _step("shutdown / exit", "the run ends")
    code = c.close()
    _say(f"← the sidecar exited with {code}")
    return 0 if code == 0 else 1
