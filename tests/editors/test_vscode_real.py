"""The VS Code extension in a real VS Code: code-server (VS Code 1.139 in a
browser), driven headless through chromium by playwright-core.

Everything a person would have is real: the packaged `.vsix`, installed with
`code-server --install-extension`; this checkout's `mecha-sidecar` as
`mecha.serverPath`; a git-backed learning store on disk as
`mecha.learningDir`, holding a learned file with a duplicate rule and a
pending proposal; and, for the learn pass, the scripted model server over
real HTTP, stalling so the pass is seen running. The driver
(`vscode_ui.mjs`) works the UI with the keyboard and mouse the way a person
does and records what it saw; this side then checks the store on disk.

The real parts come from `python -m tests.realparts vscode`; without them the
test fails naming that command. On failure the screenshots, the driver's
record and every log are kept, and the assertion message names their folder.
Every process is in its own process group and killed at teardown.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mecha.core.domain.rules import Rule
from mecha.core.identity import mint_proposal_id, now
from mecha.core.store.learning_store import LearningStore, Proposal, ProposalStatus
from tests.model_server import ModelServer, lessons_responder
from tests.realparts import manifest

from .vscode_build import REPO, package_vsix, sidecar_executable

DRIVER = Path(__file__).with_name("vscode_ui.mjs")
#: The screenshot the extension's README shows (refreshed by every passing run).
README_SHOT = REPO / "editors" / "vscode" / "images" / "quick-fix.png"

#: The whole driver run; each of its waits has its own, shorter bound.
DRIVER_TIMEOUT_S = 240
#: How long the scripted model holds the learn pass's request, so its
#: progress is on screen long enough to be seen.
LEARN_STALL_S = 6.0

LEARNED = """\
# Learned rules for behavior; change them by reviewing proposals.
[[rules]]
id = "r-tests"
text = "Run the tests before saying a change works."
created_at = "2026-01-01T00:00:00.000000Z"

# a copy an earlier edit left behind
[[rules]]
id = "r-tests-again"
text = "run the tests before saying a change works"
created_at = "2026-01-02T00:00:00.000000Z"
"""

DUPLICATE = "run the tests before saying a change works"
NEW_RULE = "Quote the exact error message when reporting a failure."

#: The lessons the pending proposal was drawn from: its new rule cites all
#: three, so its accept uses them up and leaves no `behavior` lesson for a
#: next pass (an accept starts one for any that still wait, whose proposal
#: would land in Problems while the test waits for it to empty).
LESSONS = [
    "Ask before deleting anything outside the working directory.",
    "Keep status updates to one line while a task runs.",
    "Stop and wait when the person narrows the task mid-run.",
]
#: The domain "mecha: Learn Now" is run for, and its own lessons: none of
#: them is the accepted proposal's business.
LEARN_DOMAIN = "writing"
LEARN_LESSONS = [
    "Open an email with the answer, then the reasons.",
    "Sign off with the person's first name only.",
    "Keep a status email under five sentences.",
]


# ─── the store ──────────────────────────────────────────────────────────────


def build_store(root: Path) -> tuple[LearningStore, Proposal]:
    """A store whose learned `behavior` file holds a duplicate rule, with a
    pending proposal (the live rules plus one, citing every lesson it was
    drawn from) and, in another domain, reflections a learn pass can learn
    from."""
    from mecha.core.domain.reflexion import Origin, Reflexion

    store = LearningStore.open(root)
    (root / "rules" / "behavior.learned.toml").write_text(LEARNED, encoding="utf-8")
    store.commit("seed the VS Code test's store")
    before = store.learned_rules("behavior")
    assert len(before) == 2, before
    batch = [f"refl-{i}" for i in range(len(LESSONS))]
    proposal = Proposal(
        id=mint_proposal_id(),
        domain="behavior",
        status=ProposalStatus.PENDING,
        reflexion_ids=batch,
        rules_before=before,
        rules=[*before, Rule(text=NEW_RULE, id="r-quote-errors", created_at=now(), sources=batch)],
        evidence="seeded by the VS Code test",
        created_at=now(),
    )
    store.write_proposal(proposal)
    lessons = [("behavior", f"refl-{i}", lesson) for i, lesson in enumerate(LESSONS)]
    lessons += [(LEARN_DOMAIN, f"refl-{LEARN_DOMAIN}-{i}", lesson) for i, lesson in enumerate(LEARN_LESSONS)]
    for n, (domain, rid, lesson) in enumerate(lessons):
        store.append_reflexion(
            Reflexion(
                id=rid,
                domain=domain,
                session_id=f"s-{n}",
                trigger=("steer", "denial", "followup")[n % 3],
                context="editing files",
                intervention=f"lesson {n}: {lesson}",
                reflexion_text=lesson,
                confidence=0.8,
                created_at=now(),
                origin=Origin.CLEAN,
            )
        )
    return store, proposal


class SlowOnce:
    """The scripted learner, holding its first answer long enough that the
    pass's progress is on screen; every later request is answered at once."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.lock = threading.Lock()
        self.stalled = False

    def __call__(self, request: Any, dialect: Any) -> Any:
        with self.lock:
            first, self.stalled = not self.stalled, True
        if first:
            time.sleep(self.seconds)
        return lessons_responder(request, dialect)


# ─── processes ──────────────────────────────────────────────────────────────


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Group:
    """Processes started in their own process groups, killed together."""

    def __init__(self) -> None:
        self.procs: list[subprocess.Popen[bytes]] = []

    def start(self, argv: list[str], *, env: dict[str, str], log: Path, cwd: Path | None = None) -> subprocess.Popen[bytes]:
        out = log.open("ab")
        proc = subprocess.Popen(
            argv, env=env, cwd=cwd, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
        out.close()
        self.procs.append(proc)
        return proc

    def kill(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                try:
                    os.killpg(proc.pid, signal.SIGTERM)
                except ProcessLookupError:
                    pass
        deadline = time.monotonic() + 5
        for proc in self.procs:
            try:
                proc.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                pass
            try:
                os.killpg(proc.pid, signal.SIGKILL)  # whatever of the group is left
            except (ProcessLookupError, PermissionError):
                pass
            proc.wait()


@pytest.fixture
def group() -> Iterator[Group]:
    g = Group()
    try:
        yield g
    finally:
        g.kill()


def wait_http(url: str, proc: subprocess.Popen[bytes], log: Path, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"code-server exited {proc.returncode} before serving; log:\n{log.read_text(errors='replace')[-4000:]}")
        try:
            with urllib.request.urlopen(url, timeout=2) as r:
                if r.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.2)
    pytest.fail(f"code-server did not answer {url} within {timeout:.0f} s; log:\n{log.read_text(errors='replace')[-4000:]}")


def vscode_env(base: Path, parts: dict[str, Any], model: ModelServer) -> dict[str, str]:
    """code-server's environment (and so the extension host's and the
    server's): a home and XDG folders of the test's own, the scripted model,
    no `MECHA_*` of the machine's."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MECHA_", "XDG_", "VSCODE_", "NODE_OPTIONS"))}
    home = base / "home"
    env.update(
        HOME=str(home),
        XDG_CONFIG_HOME=str(home / ".config"),
        XDG_DATA_HOME=str(home / ".local" / "share"),
        XDG_STATE_HOME=str(home / ".local" / "state"),
        XDG_CACHE_HOME=str(home / ".cache"),
        XDG_RUNTIME_DIR=str(base / "run"),
        PATH=f"{Path(parts['node']).parent}{os.pathsep}{env.get('PATH', '')}",
        MECHA_SIDECAR_CONFIG=str(base / "no-such-sidecar.toml"),
        MECHA_MODEL_API="openai",
        MECHA_MODEL_BASE_URL=model.url,
        MECHA_MODEL="scripted-model",
        MECHA_LSP_POLL_S="0.2",
    )
    for key in ("HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME", "XDG_RUNTIME_DIR"):
        Path(env[key]).mkdir(parents=True, exist_ok=True)
    os.chmod(env["XDG_RUNTIME_DIR"], 0o700)
    return env


def write_settings(user_data: Path, server_path: str, learning_dir: Path) -> Path:
    """VS Code's settings; returns the file the extension's own settings
    live in. code-server is a remote window, where `machine-overridable`
    settings come from the machine's settings file, not the user's."""
    machine = user_data / "Machine" / "settings.json"
    machine.parent.mkdir(parents=True, exist_ok=True)
    machine.write_text(
        json.dumps({"mecha.serverPath": server_path, "mecha.learningDir": str(learning_dir)}, indent=2),
        encoding="utf-8",
    )
    settings = user_data / "User" / "settings.json"
    settings.parent.mkdir(parents=True, exist_ok=True)
    settings.write_text(
        json.dumps(
            {
                "workbench.startupEditor": "none",
                "workbench.tips.enabled": False,
                "workbench.enableExperiments": False,
                "security.workspace.trust.enabled": False,
                "telemetry.telemetryLevel": "off",
                "update.mode": "none",
                "extensions.autoCheckUpdates": False,
                "extensions.autoUpdate": False,
                "editor.codeLens": True,
                "editor.minimap.enabled": False,
                "files.autoSave": "off",
                "window.restoreWindows": "none",
                "chat.disableAIFeatures": True,
            },
            indent=2,
        ),
        encoding="utf-8",
    )
    return machine


def artifacts_dir() -> Path:
    """Where screenshots and logs go: `$MECHA_TEST_ARTIFACTS` (CI points it
    somewhere it keeps), else a fresh temporary folder outside pytest's own
    (which later runs prune). Removed after a passing run."""
    base = os.environ.get("MECHA_TEST_ARTIFACTS", "").strip()
    if base:
        path = Path(base) / f"vscode-real-{time.strftime('%Y%m%dT%H%M%S')}-{os.getpid()}"
        path.mkdir(parents=True)
        return path
    return Path(tempfile.mkdtemp(prefix="mecha-vscode-real-"))


# ─── the test ───────────────────────────────────────────────────────────────


def test_the_extension_in_a_real_vscode_reviews_a_proposal_from_the_lightbulb(tmp_path: Path, group: Group) -> None:
    """Pins what only a real VS Code shows: the extension activating from the
    .vsix, the squiggles, Problems entries, code lens and status bar; Ctrl+.
    on the pending-proposal diagnostic listing accept, reject and show diff
    (it listed only "Disable rule" when they were source actions); show diff
    opening the `mecha-proposal:` document; accept rewriting the file on disk
    and clearing its Problems entry (its new rule cites every lesson it was
    drawn from, so no next pass follows it); a learn pass's progress; and a
    `mecha.serverPath` that names no program failing with a message, not a hang."""
    parts = manifest("vscode")
    vsix = package_vsix()

    root = tmp_path / "learning"
    store, proposal = build_store(root)
    base = tmp_path / "vscode"
    artifacts = artifacts_dir()
    user_data, extensions = base / "user-data", base / "extensions"
    node, code_server = parts["node"], parts["code_server"]

    with ModelServer(responder=SlowOnce(LEARN_STALL_S)) as model:
        env = vscode_env(base, parts, model)
        install_log = artifacts / "install-extension.log"
        started = time.monotonic()
        done = subprocess.run(
            [node, code_server, "--install-extension", str(vsix), "--user-data-dir", str(user_data),
             "--extensions-dir", str(extensions), "--force"],
            env=env, capture_output=True, text=True, timeout=180, start_new_session=True,
        )
        install_log.write_text(done.stdout + done.stderr)
        assert done.returncode == 0, f"code-server --install-extension exited {done.returncode}:\n{done.stdout}{done.stderr}"
        settings = write_settings(user_data, str(sidecar_executable()), root)

        port = free_port()
        server_log = artifacts / "code-server.log"
        cs = group.start(
            [node, code_server, "--auth", "none", "--bind-addr", f"127.0.0.1:{port}", "--user-data-dir", str(user_data),
             "--extensions-dir", str(extensions), "--disable-workspace-trust", "--disable-telemetry",
             "--disable-update-check", "--disable-getting-started-override", str(root)],
            env=env, log=server_log,
        )
        wait_http(f"http://127.0.0.1:{port}/healthz", cs, server_log)

        params = {
            "url": f"http://127.0.0.1:{port}/?folder={root}",
            "chromium": parts["chromium"],
            "artifacts": str(artifacts),
            "results": str(artifacts / "results.json"),
            "learned": str(root / "rules" / "behavior.learned.toml"),
            "proposal_id": proposal.id,
            "new_rule": NEW_RULE,
            "duplicate_text": DUPLICATE,
            "learn_domain": LEARN_DOMAIN,
            "settings": str(settings),
            "missing_server": str(tmp_path / "no-such-dir" / "mecha-sidecar"),
            "readme_shot": str(artifacts / "quick-fix.png"),
        }
        params_file = artifacts / "params.json"
        params_file.write_text(json.dumps(params, indent=2))
        driver_env = dict(env, NODE_PATH=parts["node_modules"])
        driver_log = artifacts / "driver.log"
        driver = group.start([node, str(DRIVER), str(params_file)], env=driver_env, log=driver_log, cwd=artifacts)
        try:
            code = driver.wait(timeout=DRIVER_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            code = None
        elapsed = time.monotonic() - started
        group.kill()

    results_file = Path(params["results"])
    seen = json.loads(results_file.read_text()) if results_file.exists() else {}
    logs = _collect_logs(base, artifacts)
    where = (
        f"\nscreenshots, the driver's record and the logs: {artifacts}\n"
        f"driver log tail:\n{driver_log.read_text(errors='replace')[-3000:]}\n{logs}"
    )
    print(f"\nreal VS Code run: {elapsed:.1f} s (install, start, drive); artifacts in {artifacts}", flush=True)
    assert code is not None, f"the driver did not finish within {DRIVER_TIMEOUT_S} s{where}"
    assert code == 0 and seen.get("errors") == [], f"the driver exited {code}: {seen.get('errors')}{where}"

    # What the UI showed.
    assert "2/15 active rules" in seen["codelens"] and "1 pending proposal" in seen["codelens"], where
    assert seen["squiggles"]["warning"] >= 1 and seen["squiggles"]["info"] >= 1, where
    problems = seen["problems_before"]
    assert any("the same rule as rule 1" in p for p in problems), where
    assert any(f"proposal {proposal.id} for behavior is pending" in p for p in problems), where
    assert seen["status_before"] == {"text": "mecha: 1 proposal", "icon": "git-pull-request"}, where
    quick = seen["quick_fixes"]
    for title in (f"Accept proposal {proposal.id} (2 → 3 active behavior rules)", f"Reject proposal {proposal.id}",
                  f"Show diff of proposal {proposal.id}"):
        assert title in quick, where
    assert seen["diff_tab"].startswith(f"{proposal.id}.diff"), where
    assert any(line.startswith("+") and NEW_RULE in line for line in seen["diff_text"]), where
    # The accept used every lesson its rule cites: it says nothing waits, so no pass started behind it.
    assert f"accepted proposal {proposal.id}; behavior now has 3 active learned rules" in seen["accept_said"], where
    assert "more lesson(s) wait" not in seen["accept_said"], where
    assert not any(f"proposal {proposal.id}" in p for p in seen["problems_after"]), where
    assert any("the same rule as rule 1" in p for p in seen["problems_after"]), where
    assert seen["status_after"] == {"text": "mecha", "icon": "check"}, where
    assert NEW_RULE in seen["learned_after_accept"], where
    assert "Remove duplicate rule r-tests-again" in seen["duplicate_fixes"], where
    assert DUPLICATE not in seen["learned_after_remove"] and NEW_RULE in seen["learned_after_remove"], where
    assert seen["problems_after_remove"] == [], where
    assert seen["progress"].startswith(f"mecha learn {LEARN_DOMAIN}"), where
    assert f"pass for {LEARN_DOMAIN} proposed" in seen["learn_finished"], where
    assert params["missing_server"] in seen["missing_server_error"], where
    assert seen["status_missing_server"]["icon"] == "warning", where

    # What the accept had to change: the store on disk. Its lessons are used
    # up, and the only other proposal is the one "Learn Now" asked for.
    assert store.proposal(proposal.id).status == ProposalStatus.ACCEPTED, where
    assert {r.id: r.is_processed for r in store.reflexions() if r.domain == "behavior"} == dict.fromkeys(
        proposal.reflexion_ids, True), where
    others = [(p.domain, p.status) for p in store.proposals() if p.id != proposal.id]
    assert others == [(LEARN_DOMAIN, ProposalStatus.PENDING)], f"{others}{where}"
    # ... then the duplicate's removal: the other two rules, as accepted.
    kept = [r.text for r in proposal.rules if r.id != "r-tests-again"]
    assert [r.text for r in store.learned_rules("behavior")] == kept, where

    # The README's screenshot is the one this run took.
    shot = Path(params["readme_shot"])
    assert shot.is_file() and shot.stat().st_size > 0, where
    if os.environ.get("MECHA_UPDATE_SCREENSHOT"):
        README_SHOT.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(shot, README_SHOT)
    if not os.environ.get("MECHA_TEST_ARTIFACTS"):
        shutil.rmtree(artifacts, ignore_errors=True)


def _collect_logs(base: Path, artifacts: Path) -> str:
    """Copy VS Code's logs (the extension host's, the "mecha" output channel's)
    next to the screenshots; return the tail of the mecha channel."""
    logs = base / "user-data" / "logs"
    if logs.is_dir():
        shutil.copytree(logs, artifacts / "vscode-logs", dirs_exist_ok=True)
    tails = []
    for path in sorted((artifacts / "vscode-logs").rglob("*mecha*.log")) if (artifacts / "vscode-logs").is_dir() else []:
        tails.append(f"--- {path.relative_to(artifacts)} (tail) ---\n{path.read_text(errors='replace')[-2000:]}")
    return "\n".join(tails)


if __name__ == "__main__":  # pragma: no cover - `python -m` for a manual run
    sys.exit(pytest.main([__file__, "-q", "-s"]))
