"""Scopes: where a lesson applies — globally, or in the one project it was
learned in. A real store (real git, real files) and real git repositories in
a temp dir for the projects."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from mecha.core.domain.reflexion import Reflexion
from mecha.core.domain.rules import MAX_ACTIVE_RULES_PER_DOMAIN, RULES_BLOCK_HEADING, Rule
from mecha.core.errors import InvalidInput
from mecha.core.learning.reflect import reflect_inbox
from mecha.core.learning.reflection import Reflector
from mecha.core.learning.scope import project_of_cwd, resolve_project
from mecha.core.sessions.transcript import Block, Message, Taint, TaintCheckpoint
from mecha.core.store.inbox import enqueue, session_entry
from mecha.core.store.layout import (
    REFLECTIONS_FILE,
    fnv1a_64,
    is_project_id,
    project_id,
    project_root,
    scoped_rules_name,
    split_rules_name,
)
from mecha.core.store.learning_store import LearningStore, parse_rules_name
from tests.builders import write_learned_rules
from tests.fakes import ScriptedProvider


def git_repo(path: Path) -> Path:
    """A real repository, as `git init` makes one."""
    path.mkdir(parents=True, exist_ok=True)
    subprocess.run(["git", "init", "-q", str(path)], check=True)
    return path.resolve()


@pytest.fixture
def store(tmp_path: Path) -> LearningStore:
    return LearningStore.open(tmp_path / "learning")


# ─── which project a directory is ───────────────────────────────────────────


def test_a_directory_inside_a_git_repository_is_that_repositorys_project(tmp_path: Path) -> None:
    # Pins: two sessions run from different sub-folders of one repository
    # learning into two projects.
    repo = git_repo(tmp_path / "app")
    deep = repo / "src" / "pkg"
    deep.mkdir(parents=True)
    assert project_root(deep) == str(repo)
    assert project_root(repo) == str(repo)
    assert project_of_cwd(str(deep)) == str(repo)


def test_a_directory_outside_any_repository_is_its_own_project(tmp_path: Path) -> None:
    # Pins: a folder with no repository above it borrowing some other one's scope.
    plain = tmp_path / "notes" / "drafts"
    plain.mkdir(parents=True)
    assert project_root(plain) == str(plain.resolve())


def test_a_linked_directory_is_the_project_it_links_into(tmp_path: Path) -> None:
    repo = git_repo(tmp_path / "app")
    (repo / "lib").mkdir()
    link = tmp_path / "shortcut"
    link.symlink_to(repo / "lib")
    assert project_root(link) == str(repo)


def test_a_session_with_no_usable_working_directory_stays_global() -> None:
    # Pins: a relative or missing cwd guessed against the importer's own directory.
    assert project_of_cwd(None) is None
    assert project_of_cwd("") is None
    assert project_of_cwd("src/app") is None


def test_a_client_named_project_must_be_an_absolute_path(tmp_path: Path) -> None:
    repo = git_repo(tmp_path / "app")
    assert resolve_project(str(repo / "sub")) == str(repo)
    for bad in ("", "app", "./app", 5, None, "/a\x00b", "/" + "x" * 5000):
        with pytest.raises(InvalidInput, match="project"):
            resolve_project(bad)


# ─── how a project is named on disk ─────────────────────────────────────────


def test_a_project_id_is_stable_readable_and_tells_same_named_checkouts_apart(tmp_path: Path) -> None:
    a, b = "/home/ann/src/My App", "/home/ann/old/My App"
    assert project_id(a) == project_id(a)
    assert project_id(a).startswith("my-app-") and project_id(b).startswith("my-app-")
    assert project_id(a) != project_id(b)
    assert project_id(a) == f"my-app-{fnv1a_64(a.encode())}"
    assert is_project_id(project_id(a))
    assert project_id("/") == f"project-{fnv1a_64(b'/')}"
    assert fnv1a_64(b"abc") == "e71fa2190541574b", "the same hash the rules block has always been keyed by"


def test_rules_file_names_round_trip_and_anything_else_is_no_rules_file() -> None:
    pid = project_id("/src/app")
    assert scoped_rules_name("behavior", "learned") == "behavior.learned.toml"
    assert scoped_rules_name("behavior", "learned", pid) == f"behavior@{pid}.learned.toml"
    assert parse_rules_name(f"behavior@{pid}.learned.toml") == ("behavior", "learned", pid)
    assert parse_rules_name("writing.user.toml") == ("writing", "user", None)
    for name in ("behavior@nothex.learned.toml", "behavior@.learned.toml", "../x@app-0123456789abcdef.user.toml",
                 "Behavior.learned.toml", "notes.toml"):
        assert parse_rules_name(name) is None, name
    assert split_rules_name("behavior@app-0123456789abcdef.learned.toml", ("learned",)) == (
        "behavior", "learned", "app-0123456789abcdef")


def test_a_projects_learned_file_names_its_project_path_readably(store: LearningStore, tmp_path: Path) -> None:
    # Pins: a file whose id nobody can turn back into the repository it is for.
    repo = str(git_repo(tmp_path / "app"))
    write_learned_rules(store, "behavior", [Rule(text="Indent with two spaces.", id="r-1")], repo)
    path = store.root / "rules" / f"behavior@{project_id(repo)}.learned.toml"
    text = path.read_text()
    assert f"project = {json.dumps(repo)}" in text
    assert f"in the project at {repo}" in text
    assert store.projects() == {project_id(repo): repo}
    assert [r.text for r in store.learned_rules("behavior", repo)] == ["Indent with two spaces."]
    assert store.learned_rules("behavior") == [], "a project's rule is not a global one"
    assert store.domains() == ["behavior"]


# ─── a store from before scopes ─────────────────────────────────────────────

OLD_REFLECTION = (
    '{"id":"rx-old","domain":"behavior","session_id":"s-old","trigger":"steer","context":"c",'
    '"intervention":"stop","reflexion_text":"Stop when asked.","error_type":null,"confidence":0.9,'
    '"is_processed":false,"leap_run_id":null,"created_at":"2026-01-01T00:00:00.000000Z",'
    '"origin":"clean","evidence":"full"}\n'
)
OLD_PROPOSAL = {
    "id": "p-old", "domain": "behavior", "status": "pending", "reflexion_ids": ["rx-old"],
    "rules_before": [], "rules": [{"text": "Stop when asked."}], "evidence": "",
    "created_at": "2026-01-01T00:00:00.000000Z", "resolved_at": None, "reason": None,
}


def test_a_store_written_before_scopes_reads_as_global(tmp_path: Path) -> None:
    # Pins: an upgrade that loses a person's rules, or files their old
    # lessons under some project.
    root = tmp_path / "learning"
    (root / "rules").mkdir(parents=True)
    (root / "proposals").mkdir()
    (root / "rules" / "behavior.learned.toml").write_text('[[rules]]\nid = "r-old"\ntext = "Ask before deleting."\n')
    (root / REFLECTIONS_FILE).write_text(OLD_REFLECTION)
    (root / "proposals" / "p-old.json").write_text(json.dumps(OLD_PROPOSAL))
    store = LearningStore.open(root)
    repo = str(git_repo(tmp_path / "app"))

    [r] = store.reflexions()
    assert r.project is None
    assert [x.id for x in store.learnable_unprocessed("behavior")] == ["rx-old"]
    [p] = store.proposals()
    assert p.project is None and p.promoted_from == [] and not p.accepted_as_global
    assert store.projects() == {}
    # The old global rule rides for a run in any project, and in none.
    for where in (None, repo):
        rendered = store.render_block(None, where)
        assert rendered.rule_ids == ["r-old"]
        assert rendered.block is not None and "(this project)" not in rendered.block


# ─── the block: global first, then the project, each scope its own cap ──────


def _rules(prefix: str, n: int) -> list[Rule]:
    return [Rule(text=f"{prefix} rule {i}.", id=f"r-{prefix}-{i}") for i in range(n)]


def test_a_run_in_a_project_gets_the_global_rules_then_its_projects(store: LearningStore, tmp_path: Path) -> None:
    # Pins: one repository's convention told to every repository, or the
    # project's rules read before the person's standing ones.
    app, other = str(git_repo(tmp_path / "app")), str(git_repo(tmp_path / "other"))
    write_learned_rules(store, "behavior", [Rule(text="Ask before deleting.", id="r-g")])
    write_learned_rules(store, "behavior", [Rule(text="Indent with two spaces.", id="r-app")], app)
    write_learned_rules(store, "writing", [Rule(text="Use the changelog's tone.", id="r-appw")], app)
    write_learned_rules(store, "behavior", [Rule(text="Tabs, never spaces.", id="r-other")], other)

    mine = store.render_block(None, app)
    assert mine.block == (
        f"{RULES_BLOCK_HEADING}\n\n"
        "These rules were distilled from how this person has corrected you before. "
        "Follow them unless the person says otherwise in this conversation.\n\n"
        "### behavior\n- Ask before deleting.\n\n"
        "### behavior (this project)\n- Indent with two spaces.\n\n"
        "### writing (this project)\n- Use the changelog's tone."
    )
    assert mine.rule_ids == ["r-g", "r-app", "r-appw"]
    assert mine.domains == ["behavior", "writing"]
    assert "Tabs" not in (mine.block or "")
    assert store.render_block(None, other).rule_ids == ["r-g", "r-other"]
    assert store.render_block().rule_ids == ["r-g"], "no project: the global rules alone"


def test_each_scope_keeps_its_own_cap_so_a_domain_carries_at_most_both(store: LearningStore, tmp_path: Path) -> None:
    # Pins: a project's rules crowding out the global ones (or the other way
    # round) under one shared cap, and an over-cap project reported as global.
    app = str(git_repo(tmp_path / "app"))
    write_learned_rules(store, "behavior", _rules("global", MAX_ACTIVE_RULES_PER_DOMAIN))
    write_learned_rules(store, "behavior", _rules("app", MAX_ACTIVE_RULES_PER_DOMAIN + 1), app)
    rendered = store.render_block(None, app)
    assert len(rendered.rule_ids) == 2 * MAX_ACTIVE_RULES_PER_DOMAIN + 1
    assert rendered.rule_ids[:MAX_ACTIVE_RULES_PER_DOMAIN] == [f"r-global-{i}" for i in range(MAX_ACTIVE_RULES_PER_DOMAIN)]
    assert store.over_budget_scopes(app) == [("behavior", app, MAX_ACTIVE_RULES_PER_DOMAIN + 1)]
    assert store.over_budget_scopes(None) == []
    assert store.over_budget_domains() == []


def test_a_candidate_renders_one_scopes_rules_replaced(store: LearningStore, tmp_path: Path) -> None:
    app = str(git_repo(tmp_path / "app"))
    write_learned_rules(store, "behavior", [Rule(text="Global.", id="r-g")])
    write_learned_rules(store, "behavior", [Rule(text="Old app rule.", id="r-a")], app)
    candidate = store.render_candidate("behavior", [Rule(text="New app rule.", id="r-n")], app, scope=app)
    assert candidate.rule_ids == ["r-g", "r-n"]
    assert store.render_candidate("behavior", None, app) == store.render_block("behavior", app)


# ─── reflections keep their project ─────────────────────────────────────────


def steered() -> list[Message]:
    return [
        Message.user("tidy the docs"),
        Message.assistant([Block.text_block("reading"), Block.tool_use("t1", "fs_read", {"path": "a.md"})]),
        Message.tool_results([Block.tool_result("t1", "contents"), Block.text_block("use two spaces here")]),
        Message.assistant("Done."),
    ]


async def test_a_reflection_carries_the_project_its_session_ran_in(store: LearningStore, tmp_path: Path) -> None:
    # Pins: the project lost between the inbox and the reflection, so the
    # lesson is learned for every repository.
    app = str(git_repo(tmp_path / "app"))
    clean = [TaintCheckpoint(at=0, taint=Taint())]
    enqueue(store, session_entry("s-app", steered(), clean, project=app))
    enqueue(store, session_entry("s-none", steered(), clean))
    reply = json.dumps({"skip": False, "reflexion": "Indent with two spaces.", "error_type": "style", "confidence": 0.8})
    await reflect_inbox(store, Reflector(ScriptedProvider(reply, reply)))
    by_session = {r.session_id: r for r in store.reflexions()}
    assert by_session["s-app"].project == app
    assert by_session["s-none"].project is None
    raw = [json.loads(line) for line in (store.root / REFLECTIONS_FILE).read_text().splitlines()]
    assert {r["session_id"]: r["project"] for r in raw} == {"s-app": app, "s-none": None}


def test_an_old_reflection_line_decodes_and_a_new_one_round_trips() -> None:
    import msgspec

    old = msgspec.json.decode(OLD_REFLECTION.encode(), type=Reflexion)
    assert old.project is None
    new = msgspec.structs.replace(old, project="/src/app")
    assert msgspec.json.decode(msgspec.json.encode(new), type=Reflexion).project == "/src/app"


def test_the_project_path_hash_is_of_the_path_bytes(tmp_path: Path) -> None:
    # A path that is not UTF-8 on disk still names one project, stably.
    weird = os.fsdecode(b"/src/caf\xe9")
    assert project_id(weird) == project_id(weird)
    assert is_project_id(project_id(weird))
