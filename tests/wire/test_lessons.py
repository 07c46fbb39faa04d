"""`mecha/lessons` and `mecha-sidecar lessons`: the stored lessons a person
can read before any proposal, over a real sidecar and a real command line,
from reflections written with the core's own store API."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from mecha.core.domain.reflexion import Evidence, FoundAt, Origin, Reflexion
from mecha.core.store.learning_store import LearningStore
from tests import builders

from .client import Sidecar, clean_env

PROJECT = "/srv/projects/cuda-bench"


def lesson(rid: str, text: str, *, origin: Origin = Origin.CLEAN, trigger: str = "steer", project: str | None = None,
           domain: str = "behavior", when: str = "2026-12-01T10:00:00Z") -> Reflexion:
    return builders.reflexion(
        rid, text, domain=domain, session_id=f"claude:{rid}", trigger=trigger, context="Its last call: Bash: make",
        intervention="use ninja, not make", created_at=when, origin=origin,
        evidence=Evidence.FULL if origin is Origin.CLEAN else Evidence.INTERVENTION_ONLY, project=project,
        found=FoundAt(at=4, file="/srv/sessions/a.jsonl", line=12) if rid == "r1" else None,
    )


def seed(root: Path) -> None:
    store = LearningStore.open(root)
    store.append_reflexions([
        lesson("r1", "Build with ninja in this project.", project=PROJECT, when="2026-12-01T10:00:00Z"),
        lesson("r2", "The user told it to stop.", when="2026-12-01T11:00:00Z"),
        lesson("r3", "Ask before fetching pages.", origin=Origin.UNTRUSTED, trigger="followup", when="2026-12-01T12:00:00Z"),
        lesson("r4", "Keep subagent output short.", origin=Origin.DERIVED, when="2026-12-01T13:00:00Z"),
        lesson("r5", "Open with a greeting.", domain="writing", trigger="edit", when="2026-12-01T14:00:00Z"),
    ])
    with store.lock():
        store.mark_reflexions_processed(["r5"], "run-1")


def test_lessons_are_listed_newest_first_with_scope_origin_and_why_not_learnable(spawn_sidecar) -> None:
    sidecar: Sidecar = spawn_sidecar()
    assert sidecar.call("mecha/lessons", {}) == {
        "lessons": [], "counts": {"total": 0, "learnable": 0, "untrusted": 0, "derived": 0, "unusable": 0, "processed": 0, "set_aside": 0},
    }
    seed(sidecar.learning_dir)
    got = sidecar.call("mecha/lessons", {})
    assert [x["id"] for x in got["lessons"]] == ["r5", "r4", "r3", "r2", "r1"]
    assert got["counts"] == {"total": 5, "learnable": 3, "untrusted": 1, "derived": 1, "unusable": 1, "processed": 1, "set_aside": 0}
    by_id = {x["id"]: x for x in got["lessons"]}
    assert by_id["r1"]["scope"] == PROJECT and by_id["r2"]["scope"] == "global"
    assert by_id["r1"]["found"] == {"at": 4, "file": "/srv/sessions/a.jsonl", "line": 12}
    assert by_id["r3"]["learnable"] is False and "third-party content" in by_id["r3"]["not_learnable_because"]
    assert "not from an interactive session" in by_id["r4"]["not_learnable_because"]
    # Stored before the check existed: shown, named, never hidden.
    assert "echoes the prompt's own example" in by_id["r2"]["unusable_because"]
    assert by_id["r1"]["not_learnable_because"] is None and by_id["r1"]["unusable_because"] is None
    assert by_id["r5"]["processed"] is True
    assert all(x["set_aside"] is None for x in got["lessons"]), "no learn pass has seen any of them yet"

    def ids(params: dict) -> list[str]:
        return [x["id"] for x in sidecar.call("mecha/lessons", params)["lessons"]]

    assert ids({"scope": "global", "domain": "behavior"}) == ["r4", "r3", "r2"]
    assert ids({"scope": PROJECT}) == ["r1"]
    assert ids({"scope": PROJECT + "/src"}) == [], "a directory inside no repository is its own project"
    assert ids({"origin": "untrusted"}) == ["r3"] and ids({"trigger": "edit"}) == ["r5"]
    assert ids({"pending": True}) == ["r4", "r3", "r2", "r1"]
    limited = sidecar.call("mecha/lessons", {"limit": 2})
    assert [x["id"] for x in limited["lessons"]] == ["r5", "r4"] and limited["counts"]["total"] == 5


def test_bad_lessons_params_are_refused_naming_the_field(spawn_sidecar) -> None:
    sidecar: Sidecar = spawn_sidecar()
    for params, field in (({"origin": "dirty"}, "origin"), ({"scope": "relative/dir"}, "scope"), ({"limit": 0}, "limit"),
                          ({"trigger": "poke"}, "trigger")):
        error = sidecar.response(sidecar.request("mecha/lessons", params))["error"]
        assert error["code"] == -32602 and field in error["message"], error
    assert sidecar.response(sidecar.request("mecha/lessons", {"domain": "Bad Name"}))["error"]["code"] == -31006


def test_the_lessons_verb_is_the_same_handler_in_a_persons_words(tmp_path: Path) -> None:
    root = tmp_path / "learning"
    seed(root)

    def run(*argv: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "mecha.sidecar", "--learning-dir", str(root), "lessons", *argv],
                              capture_output=True, text=True, env=clean_env(tmp_path), timeout=60, check=True)

    human = run("--global", "--domain", "behavior").stdout
    assert human.startswith("3 lesson(s): 1 learnable, 1 untrusted, 1 derived; 0 already used by a proposal; 1 whose text is no lesson")
    assert "r2  behavior  global  steer  clean  learnable" in human
    assert "no lesson: the lesson echoes the prompt's own example" in human
    assert "mecha-sidecar learn DOMAIN" in human
    as_json = json.loads(run("--project", PROJECT, "--json").stdout)
    assert [x["id"] for x in as_json["lessons"]] == ["r1"]
    assert "from /srv/sessions/a.jsonl:12" in run("--project", PROJECT).stdout
    assert run("--origin", "untrusted", "--trigger", "steer").stdout.startswith("no lessons match")
