"""The harness endpoint's first stage, in real processes over stdio: what it
answers from the block cache is byte for byte what the full server answers,
and whatever it does not answer reaches the full server in order, with the
same ids and the same lifecycle state.

Each exchange is written in one go, before the process has read a byte —
the pipelined case, where the first stage has read requests it must then
hand over. A process that was served by the first stage alone never imports
msgspec, and that is how a test tells a hit from a hand-over.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from mecha.core.domain.rules import MAX_ACTIVE_RULES_PER_DOMAIN
from mecha.core.sessions.files import samples_dir
from mecha.core.store import blockcache
from mecha.core.store.layout import is_racy, rules_fingerprint
from tests import builders
from tests.builders import write_learned_rules
from tests.processes import recording_modules

from .client import clean_env, encode, frame
from .helpers import open_store, rule, write_user_rules

#: The harness endpoint as the console script reaches it, recording at exit
#: what it imported.
PROBE = recording_modules([], "FIRST_STAGE_PROBE_OUT")
#: The full server alone, as it was before there was a first stage.
FULL = "from mecha.sidecar.serve import serve_stdio\nraise SystemExit(serve_stdio())\n"

_HEADER = re.compile(rb"Content-Length: (\d+)\r\n\r\n")


@dataclass
class Run:
    replies: list[bytes]
    code: int
    first_stage_only: bool
    stderr: str

    def by_id(self) -> dict[Any, bytes]:
        return {json.loads(r).get("id"): r for r in self.replies}

    def result(self, id: Any) -> Any:
        reply = json.loads(self.by_id()[id])
        assert "result" in reply, reply
        return reply["result"]

    def error(self, id: Any) -> dict[str, Any]:
        reply = json.loads(self.by_id()[id])
        assert "error" in reply, reply
        return reply["error"]


def exchange(tmp_path: Path, data: bytes, *, full: bool = False, env: dict[str, str] | None = None) -> Run:
    record = tmp_path / "modules.txt"
    record.unlink(missing_ok=True)
    environment = clean_env(tmp_path, {"FIRST_STAGE_PROBE_OUT": str(record), **(env or {})})
    proc = subprocess.run(
        [sys.executable, "-c", FULL if full else PROBE],
        input=data,
        capture_output=True,
        env=environment,
        cwd=tmp_path,
        timeout=60,
    )
    replies, pos = [], 0
    while (m := _HEADER.match(proc.stdout, pos)) is not None:
        replies.append(proc.stdout[m.end() : m.end() + int(m.group(1))])
        pos = m.end() + int(m.group(1))
    assert pos == len(proc.stdout), proc.stdout[pos:]
    only = not full and "msgspec" not in record.read_text().split()
    return Run(replies, proc.returncode, only, proc.stderr.decode("utf-8", "replace"))


def msg(method: str, params: Any = None, id: Any = None) -> bytes:
    m: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if id is not None:
        m["id"] = id
    if params is not None:
        m["params"] = params
    return frame(encode(m))


def init(root: Path, id: Any = 1, **options: Any) -> bytes:
    return msg("initialize", {"processId": 4242, "initializationOptions": {"learningDir": str(root), **options}}, id)


def cold_path(root: Path, block_params: Any = None, *, block_id: Any = 2) -> bytes:
    return (
        init(root)
        + msg("initialized", {})
        + msg("mecha/rulesPromptBlock", {} if block_params is None else block_params, block_id)
        + msg("shutdown", id=3)
        + msg("exit")
    )


def settle(root: Path) -> None:
    """Wait until the rules files are old enough for their fingerprint to be
    kept beyond a process (`layout.is_racy`)."""
    while is_racy(rules_fingerprint(root), time.time_ns()):
        time.sleep(0.02)


def cached(tmp_path: Path, root: Path, block_params: Any = None) -> Run:
    """Settle, let the full server answer the cold path (which writes the
    cache), and return that run."""
    settle(root)
    run = exchange(tmp_path, cold_path(root, block_params))
    assert not run.first_stage_only, "the cache was already there"
    assert os.path.exists(blockcache.cache_path(root)), run.stderr
    return run


# ─── stores: every rules-block case of the wire suite ───────────────────────


def _empty(root: Path) -> None:
    open_store(root)


def _layout(root: Path) -> None:
    store = open_store(root)
    write_user_rules(root, "behavior", "Answer in English")
    write_learned_rules(
        store,
        "behavior",
        [
            rule("Ask before deleting files", "r-1"),
            rule("Disabled by hand", "r-2", enabled=False),
            rule("Measured harmful", "r-3", retired_at="2026-08-01T00:00:00Z", retired_reason="regressed"),
        ],
    )
    write_learned_rules(store, "writing", [rule("Sign off with the first name only", "r-w")])
    write_learned_rules(store, "triage", [rule("Archive newsletters", "r-t")])


def _over_budget(root: Path) -> None:
    store = open_store(root)
    many = [rule(f"rule number {i}", f"r-{i}") for i in range(MAX_ACTIVE_RULES_PER_DOMAIN + 1)]
    write_learned_rules(store, "zeta", many)
    write_learned_rules(store, "behavior", many[:MAX_ACTIVE_RULES_PER_DOMAIN])


def _broken_unloaded(root: Path) -> None:
    _over_budget(root)
    (root / "rules" / "triage.learned.toml").write_text('[[rules]\ntext = "x"\n')


def _samples(root: Path) -> None:
    open_store(root)
    for path in (samples_dir() / "rules").iterdir():
        (root / "rules" / path.name).write_bytes(path.read_bytes())


def _unicode(root: Path) -> None:
    store = open_store(root)
    write_user_rules(root, "writing", 'Écris « comme ça » — with "quotes", a \\ and a tab\tinside', "絵文字 🙂 are fine")
    write_learned_rules(store, "behavior", [rule("Keep\nline breaks\r\nand \u2028 separators", "r-ü")])


def _linked(root: Path) -> None:
    open_store(root)
    target = root.parent / "dotfiles" / "behavior.toml"
    target.parent.mkdir(exist_ok=True)
    target.write_text('[[rules]]\ntext = "Rules kept in a dotfiles repository"\n')
    (root / "rules" / "behavior.user.toml").symlink_to(target)


STORES = {
    "an empty store": _empty,
    "user rules first and only active learned ids": _layout,
    "a domain over budget": _over_budget,
    "a broken file in a domain the run does not load": _broken_unloaded,
    "the bundled sample rules": _samples,
    "rules in every script, with quotes and escapes": _unicode,
    "a linked rules file": _linked,
}

#: The params a harness sends, and the ones the wire suite tries.
PARAMS: dict[str, Any] = {
    "no params": None,
    "{}": {},
    "domain null": {"domain": None},
    "a run domain": {"domain": "writing"},
    "a pass domain": {"domain": "triage"},
    "a domain with no file": {"domain": "coding"},
    "an invalid domain": {"domain": "../etc"},
    "a domain that is not a string": {"domain": 5},
    "params as an array": [],
    "an unknown param": {"domain": "triage", "colour": "blue"},
}

#: Params the full server answers but the first stage leaves to it.
NOT_PLAIN = {"an unknown param"}


def _cold_path_frames(root: Path, params: Any) -> bytes:
    block = msg("mecha/rulesPromptBlock", params, 2) if params is not None else msg("mecha/rulesPromptBlock", id=2)
    return init(root) + msg("initialized", {}) + block + msg("shutdown", id=3) + msg("exit")


@pytest.mark.parametrize("store", list(STORES))
def test_every_answer_is_the_full_servers_byte_for_byte(tmp_path: Path, store: str) -> None:
    # Pins: a first-stage answer (or error) that differs by a byte from the full server's.
    root = tmp_path / "learning"
    STORES[store](root)
    settle(root)
    for name, params in PARAMS.items():
        data = _cold_path_frames(root, params)
        Path(blockcache.cache_path(root)).unlink(missing_ok=True)
        full = exchange(tmp_path, data, full=True)
        again = exchange(tmp_path, data)
        assert full.code == again.code == 0, (name, full.stderr, again.stderr)
        assert full.by_id() == again.by_id(), name
        answered = b'"result"' in full.by_id()[2]
        plain = name not in NOT_PLAIN
        assert again.first_stage_only == (answered and plain), f"{name}: a block is served from the cache, an error never"


def test_the_cache_is_read_at_all(tmp_path: Path) -> None:
    # Pins: a first stage that always hands over (and so is never measured as one).
    root = tmp_path / "learning"
    _layout(root)
    miss = cached(tmp_path, root)
    hit = exchange(tmp_path, cold_path(root))
    assert hit.first_stage_only and hit.code == 0
    assert hit.replies == miss.replies
    assert hit.result(2)["rule_ids"] == ["r-1", "r-w"]


# ─── hand-over ──────────────────────────────────────────────────────────────


def test_a_request_pipelined_behind_initialize_reaches_the_full_server_in_order(tmp_path: Path) -> None:
    # Pins: a request lost, answered twice or out of order when the first stage hands over.
    root = tmp_path / "learning"
    _layout(root)
    cached(tmp_path, root)
    data = (
        init(root, id="init-1")
        + msg("initialized", {})
        + msg("mecha/rulesPromptBlock", {}, 2)
        + msg("mecha/jobs", {}, 3)
        + msg("mecha/rulesPromptBlock", {"domain": "triage"}, 4)
        + msg("mecha/frobnicate", {}, 5)
        + msg("initialize", {}, 6)
        + msg("shutdown", id=7)
        + msg("mecha/rulesPromptBlock", {}, 8)
        + msg("exit")
    )
    run = exchange(tmp_path, data)
    assert not run.first_stage_only
    assert [json.loads(r)["id"] for r in run.replies] == ["init-1", 2, 3, 4, 5, 6, 7, 8]
    assert run.result(3)["jobs"] == []
    assert run.result(4)["domains"] == ["behavior", "writing", "triage"]
    assert run.error(5)["code"] == -32601
    assert run.error(6)["code"] == -32600 and "already" in run.error(6)["message"], "initialize was carried over"
    assert run.result(7) is None
    assert "shutting down" in run.error(8)["message"]
    assert run.code == 0
    full = exchange(tmp_path, data, full=True)
    assert full.by_id() == run.by_id()


def test_shutdown_answered_by_the_first_stage_is_carried_over(tmp_path: Path) -> None:
    # Pins: a full server that forgets the shutdown and serves (or exits 1) after it.
    root = tmp_path / "learning"
    _layout(root)
    cached(tmp_path, root)
    run = exchange(tmp_path, init(root) + msg("shutdown", id=2) + msg("mecha/jobs", {}, 3) + msg("exit"))
    assert not run.first_stage_only
    assert run.result(2) is None
    assert run.error(3)["code"] == -32600 and "shutting down" in run.error(3)["message"]
    assert run.code == 0


def test_a_rules_file_changed_after_the_cache_was_written_is_read_afresh(tmp_path: Path) -> None:
    # Pins: a block served from the cache after its rules changed.
    root = tmp_path / "learning"
    _layout(root)
    path = root / "rules" / "behavior.user.toml"

    def replace_by_rename() -> None:
        new = path.with_name("behavior.user.toml.new")
        new.write_text(path.read_text().replace("Answer", "Always answer"))
        os.replace(new, path)

    changes = {
        "rewritten in place, same size": lambda: path.write_text(path.read_text().replace("English", "Spanish")),
        "rewritten with its mtime put back": lambda: _keep_mtime(
            path, lambda: path.write_text(path.read_text().replace("Spanish", "Italian"))
        ),
        "replaced by a rename": replace_by_rename,
        "a file added": lambda: write_user_rules(root, "writing", "Short sentences"),
        "a file removed": lambda: (root / "rules" / "writing.user.toml").unlink(),
    }
    for name, change in changes.items():
        Path(blockcache.cache_path(root)).unlink(missing_ok=True)
        before = cached(tmp_path, root).by_id()[2]
        time.sleep(0.01)
        change()
        run = exchange(tmp_path, cold_path(root))
        full = exchange(tmp_path, cold_path(root), full=True)
        assert not run.first_stage_only, name
        assert run.by_id() == full.by_id(), name
        assert run.by_id()[2] != before, name


def _keep_mtime(path: Path, change: Any) -> None:
    st = path.stat()
    time.sleep(0.01)
    change()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))


def test_a_change_to_a_linked_rules_files_target_is_seen(tmp_path: Path) -> None:
    # Pins: a block served from the cache after the file a link points to was edited.
    root = tmp_path / "learning"
    _linked(root)
    cached(tmp_path, root)
    target = tmp_path / "dotfiles" / "behavior.toml"
    time.sleep(0.01)
    target.write_text(target.read_text().replace("dotfiles", "DOTFILES"))
    run = exchange(tmp_path, cold_path(root))
    assert not run.first_stage_only
    assert "DOTFILES" in run.result(2)["block"]


def test_a_domain_asked_for_the_first_time_is_read_and_then_kept_beside_the_others(tmp_path: Path) -> None:
    # Pins: one domain's block served for another, or each domain evicting the last.
    root = tmp_path / "learning"
    _layout(root)
    cached(tmp_path, root)
    triage = exchange(tmp_path, cold_path(root, {"domain": "triage"}))
    assert not triage.first_stage_only
    assert triage.result(2)["rule_ids"] == ["r-1", "r-w", "r-t"]
    for params, ids in (({}, ["r-1", "r-w"]), ({"domain": "triage"}, ["r-1", "r-w", "r-t"])):
        run = exchange(tmp_path, cold_path(root, params))
        assert run.first_stage_only, params
        assert run.result(2)["rule_ids"] == ids


def test_errors_keep_their_contract_on_the_cold_path(tmp_path: Path) -> None:
    # Pins: an error the first stage words differently from the full server, or answers at all.
    root = tmp_path / "learning"
    _broken_unloaded(root)
    cached(tmp_path, root)
    bad = exchange(tmp_path, cold_path(root, {"domain": 5}))
    assert bad.error(2)["code"] == -32602 and "domain" in bad.error(2)["message"]
    invalid = exchange(tmp_path, cold_path(root, {"domain": "../etc"}))
    assert invalid.error(2)["code"] == -31006
    broken = exchange(tmp_path, cold_path(root, {"domain": "triage"}))
    assert broken.error(2)["code"] == -31004 and "triage.learned.toml:1" in broken.error(2)["message"]
    before = exchange(tmp_path, msg("mecha/rulesPromptBlock", {}, 1) + init(root, id=2) + msg("exit"))
    assert before.error(1)["code"] == -32002
    assert not (bad.first_stage_only or invalid.first_stage_only or broken.first_stage_only or before.first_stage_only)


def test_initialize_params_the_full_server_refuses_are_left_to_it(tmp_path: Path) -> None:
    # Pins: the first stage answering an initialize with a result where the full server says -32602.
    root = tmp_path / "learning"
    _layout(root)
    cached(tmp_path, root)
    run = exchange(tmp_path, msg("initialize", {"processId": "me", "initializationOptions": {"learningDir": str(root)}}, 1))
    assert run.error(1)["code"] == -32602 and "processId" in run.error(1)["message"]
    other = exchange(tmp_path, init(root, model="local") + msg("exit"))
    assert other.error(1)["code"] == -32602 and "model" in other.error(1)["message"]


def test_another_stores_cache_is_not_served(tmp_path: Path) -> None:
    # Pins: a cache found for one learning dir answering for another (or for the default).
    root = tmp_path / "learning"
    _layout(root)
    cached(tmp_path, root)
    other = tmp_path / "other"
    _empty(other)
    run = exchange(tmp_path, cold_path(other))
    assert not run.first_stage_only and run.result(2)["block"] is None
    unnamed = msg("initialize", {"initializationOptions": {"learningDir": ""}}, 1)
    default = exchange(tmp_path, unnamed + msg("mecha/rulesPromptBlock", {}, 2) + msg("exit"))
    assert default.result(2)["block"] is None, "an empty learningDir is the default store (HOME is private here)"


@pytest.mark.parametrize(
    ("tail", "code"),
    [
        (msg("shutdown", id=3) + msg("exit"), 0),
        (msg("exit"), 1),
        (msg("shutdown", id=3), 0),
        (b"", 1),
    ],
)
def test_the_exit_code_is_the_full_servers_when_the_first_stage_serves_alone(tmp_path: Path, tail: bytes, code: int) -> None:
    # Pins: a first stage that exits 0 without shutdown, or 1 after it (or at the end of input).
    root = tmp_path / "learning"
    _layout(root)
    cached(tmp_path, root)
    data = init(root) + msg("initialized", {}) + msg("mecha/rulesPromptBlock", {}, 2) + tail
    run = exchange(tmp_path, data)
    full = exchange(tmp_path, data, full=True)
    assert run.first_stage_only
    assert run.code == full.code == code
    assert run.by_id() == full.by_id()


def test_a_broken_frame_after_the_first_stage_answered_is_the_full_servers_to_report(tmp_path: Path) -> None:
    # Pins: bytes the first stage read and dropped, or a framing error it answers its own way.
    root = tmp_path / "learning"
    _layout(root)
    cached(tmp_path, root)
    data = init(root) + b"Content-Length: nine\r\n\r\n{}" + msg("mecha/rulesPromptBlock", {}, 2) + msg("shutdown", id=3) + msg("exit")
    run = exchange(tmp_path, data)
    assert not run.first_stage_only
    assert run.error(None)["code"] == -32700 and "bad frame" in run.error(None)["message"]
    assert run.result(2)["rule_ids"] == ["r-1", "r-w"] and run.code == 0


def test_a_frame_whose_body_arrives_later_is_still_served(tmp_path: Path) -> None:
    # Pins: a client that writes header and body apart always costing a hand-over, or a stall wedging it.
    root = tmp_path / "learning"
    _layout(root)
    cached(tmp_path, root)
    environment = clean_env(tmp_path, {"FIRST_STAGE_PROBE_OUT": str(tmp_path / "m.txt"), "MECHA_SIDECAR_FRAME_STALL_S": "0.5"})
    proc = subprocess.Popen([sys.executable, "-c", PROBE], stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=environment)
    assert proc.stdin is not None and proc.stdout is not None
    try:
        block = msg("mecha/rulesPromptBlock", {}, 2)
        split = block.index(b"\r\n\r\n") + 4
        proc.stdin.write(init(root) + block[:split])
        proc.stdin.flush()
        time.sleep(0.01)
        proc.stdin.write(block[split:])
        proc.stdin.flush()
        stalled = msg("mecha/rulesPromptBlock", {}, 3)
        proc.stdin.write(stalled[:-5])  # a body that stops arriving: the full server's stall rule
        proc.stdin.flush()
        time.sleep(3.0)  # the full server starts, then waits out the stall
        proc.stdin.write(msg("mecha/rulesPromptBlock", {}, 4) + msg("shutdown", id=5) + msg("exit"))
        proc.stdin.close()
        out = proc.stdout.read()
        code = proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    ids = [json.loads(out[m.end() : m.end() + int(m.group(1))]).get("id") for m in _HEADER.finditer(out)]
    assert ids == [1, 2, None, 4, 5] and code == 0


def test_a_projects_block_is_kept_per_project_and_served_as_the_full_server_would(tmp_path: Path) -> None:
    # Pins: one repository's block served to a run in another from the
    # cache, or the first stage resolving a run's directory to another
    # project than the full server does.
    import subprocess

    root = tmp_path / "learning"
    _layout(root)
    app, other = tmp_path / "app", tmp_path / "other"
    for repo in (app, other):
        subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (app / "src").mkdir()
    store = open_store(root)
    write_learned_rules(store, "behavior", [rule("Indent with two spaces", "r-app")], str(app.resolve()))
    write_learned_rules(store, "behavior", [rule("Tabs only", "r-other")], str(other.resolve()))
    settle(root)
    in_app = {"project": str(app / "src")}

    miss = cached(tmp_path, root, in_app)
    assert miss.result(2)["rule_ids"] == ["r-1", "r-w", "r-app"]
    hit = exchange(tmp_path, cold_path(root, in_app))
    assert hit.first_stage_only and hit.by_id() == miss.by_id()
    # The repository's root and a sub-folder are one project: one answer.
    assert exchange(tmp_path, cold_path(root, {"project": str(app)})).first_stage_only

    elsewhere = exchange(tmp_path, cold_path(root, {"project": str(other)}))
    assert not elsewhere.first_stage_only, "another project's block is not in the cache yet"
    assert elsewhere.result(2)["rule_ids"] == ["r-1", "r-w", "r-other"]
    for params, ids in ((in_app, ["r-1", "r-w", "r-app"]), ({"project": str(other)}, ["r-1", "r-w", "r-other"]), ({}, ["r-1", "r-w"])):
        run = exchange(tmp_path, cold_path(root, params))
        full = exchange(tmp_path, cold_path(root, params), full=True)
        assert run.result(2)["rule_ids"] == ids, params
        assert run.by_id() == full.by_id(), params
    assert exchange(tmp_path, cold_path(root, {"project": "relative"})).error(2)["code"] == -32602


def test_a_run_in_a_linked_worktree_gets_its_repositorys_block_from_the_cache(tmp_path: Path) -> None:
    # Pins: a run in a `git worktree add` checkout served its own (empty)
    # project's block, or the first stage and the full server disagreeing
    # on which project a worktree is.
    import subprocess

    root = tmp_path / "learning"
    _layout(root)
    app, feature = tmp_path / "app", tmp_path / "app-feature"
    ident = ["-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run(["git", "init", "-q", str(app)], check=True)
    subprocess.run(["git", *ident, "-C", str(app), "commit", "-q", "--allow-empty", "-m", "x"], check=True)
    subprocess.run(["git", "-C", str(app), "worktree", "add", "-q", str(feature)], check=True, capture_output=True)
    (feature / "src").mkdir()
    store = open_store(root)
    write_learned_rules(store, "behavior", [rule("Indent with two spaces", "r-app")], str(app.resolve()))
    settle(root)

    miss = cached(tmp_path, root, {"project": str(app)})
    assert miss.result(2)["rule_ids"] == ["r-1", "r-w", "r-app"]
    in_worktree = {"project": str(feature / "src")}
    run = exchange(tmp_path, cold_path(root, in_worktree))
    assert run.first_stage_only, "the worktree's run is the repository's: the cached answer"
    full = exchange(tmp_path, cold_path(root, in_worktree), full=True)
    assert run.by_id() == full.by_id() and run.result(2)["rule_ids"] == ["r-1", "r-w", "r-app"]


def test_the_first_run_after_an_accept_is_answered_by_the_first_stage(tmp_path: Path) -> None:
    # Pins: an accept leaving the block cache keyed by the rules before it,
    # so the first run after every accept paid for the full server (its
    # imports and a render) instead of the cached answer.

    root = tmp_path / "learning"
    _layout(root)
    store = open_store(root)
    before = store.learned_rules("behavior")
    pid = "20261201T000000-cache001"
    store.write_proposal(
        builders.proposal(pid, [*before, rule("Run the tests before saying done", "r-new")], rules_before=before,
                          created_at="2026-12-01T00:00:00Z")
    )
    cached(tmp_path, root)
    cached_triage = exchange(tmp_path, cold_path(root, {"domain": "triage"}))
    assert not cached_triage.first_stage_only, "triage was not kept yet"

    accepted = subprocess.run(
        [sys.executable, "-m", "mecha.sidecar", "--learning-dir", str(root), "proposals", "accept", pid],
        capture_output=True, text=True, env=clean_env(tmp_path), cwd=tmp_path, timeout=60,
    )
    assert accepted.returncode == 0, accepted.stderr
    for params in (None, {"domain": "triage"}):
        run = exchange(tmp_path, cold_path(root, params))
        assert run.first_stage_only, f"{params}: the first run after the accept went to the full server"
        full = exchange(tmp_path, cold_path(root, params), full=True)
        assert run.by_id() == full.by_id(), params
        assert "Run the tests before saying done" in json.dumps(run.result(2)), params
