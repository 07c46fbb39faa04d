"""Containment: no request, command-line argument or store content makes the
sidecar write outside its learning dir, or read outside it on a name a
client chose.

- Names a client sends (domains, proposal ids, rule ids, job ids) never
  become a path outside the store: they are refused by name or match
  nothing, and nothing is written anywhere.
- Symbolic links planted inside the store (a rules file, `proposals/`,
  `reflections.jsonl`, `inbox`, `.lock`, …) are never written through: the
  write is refused with `InvalidStore` naming the link, and the target
  outside is left exactly as it was. Hard links likewise: a file of the
  store with a second name elsewhere is not appended to, rewritten or
  chmod-ed. Reads follow a link the person made
  (the store is their files; see docs/trust-model.md).
- Every directory of the store is 0700 and every file 0600 whatever the
  umask, through the CLI and a real background pass.
- The model API key appears nowhere: not in the store, its git history,
  its logs or job records, nor in any error a client is shown.
"""

from __future__ import annotations

import asyncio
import json
import os
import secrets
import shutil
import stat
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest

from mecha.core.domain.reflexion import Reflexion
from mecha.core.errors import InvalidInput, InvalidStore, LearningError
from mecha.core.learning.reflect import reflect_inbox
from mecha.core.learning.reflection import Reflector
from mecha.core.store import jobs as jobs_mod
from mecha.core.store.learning_store import LearningStore
from mecha.core.store.ledger import LeapRun
from mecha.protocol import errors as codes
from mecha.protocol.errors import RpcError, rpc_error_from
from mecha.sidecar.context import Context
from mecha.sidecar.handlers import make_dispatch
from mecha.sidecar.rpc import Cancel
from tests import builders
from tests.fakes import ScriptedProvider
from tests.model_server import ModelServer, echo_auth, lessons_responder
from tests.protocol.wire_examples import MESSAGES, TIMELINE
from tests.reliability.fuzz import ACCEPTED_ID, PENDING_ID, build_template, snapshot
from tests.wire.client import SIDECAR_ARGV, SpawnSidecar, clean_env
from tests.wire.conftest import spawn_sidecar  # noqa: F401 - the fixture

WHEN = "2026-01-01T00:00:00.000000Z"

# ─── fixtures ───────────────────────────────────────────────────────────────


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("template") / "store"
    build_template(root)
    return root


class World:
    """A store in `base/learning` beside an `outside/` directory holding a
    file a link may point at. `untouched()` says whether anything outside
    the store changed: the outside dir, the target file, the base dir."""

    def __init__(self, base: Path, template: Path):
        self.base = base
        self.root = base / "learning"
        shutil.copytree(template, self.root, symlinks=True)
        self.outside = base / "outside"
        self.outside.mkdir()
        self.target = self.outside / "precious.txt"
        self.target.write_bytes(b"outside the store\n")
        self.target.chmod(0o644)
        self.outside.chmod(0o755)
        self.ctx = Context(root=self.root)
        self.dispatch = make_dispatch(self.ctx)
        self._before = self._outside_state()

    def _outside_state(self) -> dict[str, Any]:
        state: dict[str, Any] = {"base": sorted(os.listdir(self.base))}
        for path in sorted(self.outside.rglob("*")) + [self.outside]:
            st = path.lstat()
            data = path.read_bytes() if path.is_file() and not path.is_symlink() else None
            state[str(path)] = (stat.S_IMODE(st.st_mode), st.st_mtime_ns, st.st_ino, data)
        return state

    def untouched(self) -> bool:
        return self._outside_state() == self._before

    def call(self, method: str, params: dict[str, Any]) -> Any:
        return self.dispatch(method, msgspec.json.encode(params), Cancel())

    def error(self, method: str, params: dict[str, Any]) -> RpcError:
        with pytest.raises((RpcError, LearningError)) as caught:
            self.call(method, params)
        return rpc_error_from(caught.value)

    def link(self, name: str, to: Path) -> Path:
        """Replace store entry `name` with a symlink to `to`."""
        path = self.root / name
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        elif path.exists() or path.is_symlink():
            path.unlink()
        path.symlink_to(to)
        return path


@pytest.fixture
def world(tmp_path: Path, template: Path) -> World:
    base = tmp_path / "world"
    base.mkdir()
    return World(base, template)


def _refused(err: RpcError, link: Path) -> None:
    assert err.code == codes.INVALID_STORE, err.message
    assert str(link) in err.message and "symbolic link" in err.message, err.message
    assert err.data and err.data.get("path") == str(link)


# ─── names a client sends ───────────────────────────────────────────────────

BAD_NAMES = [
    "../x",
    "../../outside/precious.txt",
    "a/b",
    "/tmp/x",
    "/etc/passwd",
    "a\x00b",
    "behavior\x00",
    "",
    ".",
    "..",
    "~",
    "behavior\n",
    "BEHAVIOR",
    "ｂｅｈａｖｉｏｒ",  # fullwidth letters
    "behavior\u200b",  # a zero-width space
    "behavio\u0307r",  # a combining dot
    "\u202ebehavior",  # right-to-left override
    "beh\u0430vior",  # a Cyrillic a
    "b" * 65,
]


def _domain_requests(domain: str) -> list[tuple[str, dict[str, Any]]]:
    record = {
        "reflexion_id": "refl-1",
        "trigger": "steer",
        "domain": domain,
        "rules_hash": "0",
        "rule_ids": [],
        "outcome": "improved",
        "model": "m",
        "created_at": WHEN,
    }
    return [
        ("mecha/rulesPromptBlock", {"domain": domain}),
        ("mecha/learn", {"domain": domain}),
        ("mecha/proposals", {"domain": domain}),
        ("mecha/proposeRetirement", {"domain": domain, "rule_id": "r-1", "reason": "harmful"}),
        ("mecha/recordValidation", record),
        ("mecha/ruleTallies", {"domain": domain}),
    ]


def test_no_domain_name_becomes_a_path(world: World) -> None:
    before = snapshot(world.root)
    for bad in BAD_NAMES:
        for method, params in _domain_requests(bad):
            err = world.error(method, params)
            assert err.code == codes.INVALID_DOMAIN, (method, bad, err.message)
            assert repr(bad) in err.message
    assert snapshot(world.root) == before, "a refused domain changed the store"
    assert world.untouched()


@pytest.mark.parametrize(
    ("method", "key"),
    [("mecha/proposal", "id"), ("mecha/acceptProposal", "id"), ("mecha/rejectProposal", "id"), ("mecha/renderCandidate", "proposal_id")],
)
def test_no_proposal_id_becomes_a_path(world: World, method: str, key: str) -> None:
    # An id is looked up among the proposals the store lists, never joined
    # to a directory: whatever it spells, it matches nothing.
    before = snapshot(world.root)
    for bad in [*BAD_NAMES, "proposals/../../outside/precious", f"../proposals/{PENDING_ID}", f"{PENDING_ID}/..", "*"]:
        if bad == "":
            continue
        err = world.error(method, {key: bad})
        assert err.code == codes.NOT_FOUND, (bad, err.message)
    assert snapshot(world.root) == before
    assert world.untouched()


def test_a_planted_proposal_whose_id_is_a_path_is_never_resolved(world: World) -> None:
    # Store content: a proposal file whose *recorded* id climbs out. Its id
    # would name its file when it is resolved, so it is not offered at all —
    # before, an accept wrote its rules and only then failed to record it.
    planted = json.loads((world.root / "proposals" / f"{PENDING_ID}.json").read_text())
    planted["id"] = "../../outside/owned"
    (world.root / "proposals" / "planted.json").write_text(json.dumps(planted))
    (world.root / f"proposals/{PENDING_ID}.json").unlink()
    learned = (world.root / "rules" / "behavior.learned.toml").read_bytes()
    for method in ("mecha/acceptProposal", "mecha/rejectProposal", "mecha/proposal"):
        err = world.error(method, {"id": "../../outside/owned"})
        assert err.code == codes.NOT_FOUND, err.message
    assert world.call("mecha/proposals", {}).proposals == [world.call("mecha/proposal", {"id": ACCEPTED_ID}).proposal]
    assert (world.root / "rules" / "behavior.learned.toml").read_bytes() == learned
    assert world.untouched()
    assert not (world.base / "outside" / "owned.json").exists()


def test_no_rule_id_becomes_a_path(world: World) -> None:
    before = snapshot(world.root)
    for bad in BAD_NAMES:
        err = world.error("mecha/proposeRetirement", {"domain": "behavior", "rule_id": bad, "reason": "harmful"})
        assert err.code == codes.NOT_FOUND, (bad, err.message)
    assert snapshot(world.root) == before
    assert world.untouched()


def test_no_job_id_becomes_a_path(world: World) -> None:
    # (Job ids may be upper case and longer than a domain: only the names
    # that could leave `jobs/` matter here.)
    for bad in [n for n in BAD_NAMES if n not in ("BEHAVIOR", "b" * 65)] + ["../jobs/x", "x/../../y"]:
        with pytest.raises(InvalidInput):
            jobs_mod.job_path(world.root, bad)
        with pytest.raises(InvalidInput):
            jobs_mod.read_job(world.root, bad)
    assert world.untouched()


# ─── the command line ───────────────────────────────────────────────────────


def _cli(args: list[str], env: dict[str, str], *, umask: int | None = None, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*SIDECAR_ARGV, *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        preexec_fn=(lambda: os.umask(umask)) if umask is not None else None,
    )


def test_no_command_line_argument_writes_outside(world: World, tmp_path: Path) -> None:
    env = clean_env(tmp_path / "env", {"MECHA_LEARNING_DIR": str(world.root)})
    root = ["--learning-dir", str(world.root)]
    before = snapshot(world.root)
    for args, said in (
        ([*root, "block", "--domain", "../../outside"], "InvalidDomain"),
        ([*root, "learn", "../outside"], "InvalidDomain"),
        ([*root, "retire", "/tmp/x", "r-1", "harmful"], "InvalidDomain"),
        ([*root, "retire", "behavior", "../../outside/precious.txt", "harmful"], "NotFound"),
        ([*root, "tallies", "--domain", "a/b"], "InvalidDomain"),
        ([*root, "proposals", "list", "--domain", "../x"], "InvalidDomain"),
        ([*root, "proposals", "accept", "../../outside/precious.txt"], "NotFound"),
        ([*root, "proposals", "reject", "/etc/passwd"], "NotFound"),
        ([*root, "proposals", "show", "../" + PENDING_ID], "NotFound"),
    ):
        done = _cli(args, env)
        assert done.returncode == 1, (args, done.stdout, done.stderr)
        assert said in done.stderr, (args, done.stderr)
    # A background pass started by hand with a job id that climbs out.
    done = _cli([*root, "pass", "reflect", "--job", "../../outside/owned"], env)
    assert done.returncode != 0 and "invalid job id" in done.stderr, done.stderr[-2000:]
    assert snapshot(world.root) == before
    assert world.untouched()
    assert not (world.base / "outside" / "owned.json").exists()


# ─── symlinks planted inside the store ──────────────────────────────────────


def test_a_learned_rules_file_that_is_a_link_is_not_written_through(world: World) -> None:
    # The target holds the very rules the proposal was made against, so the
    # accept gets as far as writing; it must not write there.
    world.target.write_bytes((world.root / "rules" / "behavior.learned.toml").read_bytes())
    world._before = world._outside_state()
    link = world.link("rules/behavior.learned.toml", world.target)
    reflections = (world.root / "reflections.jsonl").read_bytes()
    _refused(world.error("mecha/acceptProposal", {"id": PENDING_ID}), link)
    assert link.is_symlink() and world.untouched()
    assert (world.root / "reflections.jsonl").read_bytes() == reflections, "refused, yet it marked reflections"
    assert world.call("mecha/proposal", {"id": PENDING_ID}).proposal.status == "pending"
    # Retiring a rule reads the live rules through the person's link and
    # writes only a proposal, inside the store.
    retired = world.call("mecha/proposeRetirement", {"domain": "behavior", "rule_id": "r-1", "reason": "regressed"})
    assert (world.root / "proposals" / f"{retired.proposal.id}.json").is_file()
    assert world.untouched()


def test_a_proposals_dir_that_is_a_link_is_not_written_through(world: World) -> None:
    shutil.copytree(world.root / "proposals", world.outside / "proposals")
    for path in (world.outside / "proposals").iterdir():
        path.chmod(0o644)
    world._before = world._outside_state()
    link = world.link("proposals", world.outside / "proposals")
    _refused(world.error("mecha/acceptProposal", {"id": PENDING_ID}), link)
    _refused(world.error("mecha/rejectProposal", {"id": PENDING_ID}), link)
    _refused(world.error("mecha/proposeRetirement", {"domain": "behavior", "rule_id": "r-1", "reason": "x"}), link)
    assert world.untouched()


@pytest.mark.parametrize("name", ["reflections.jsonl", "validations.jsonl", "mined.jsonl", "runs.jsonl"])
def test_a_ledger_that_is_a_link_is_never_appended_through(world: World, name: str) -> None:
    link = world.link(name, world.target)
    store = LearningStore(world.root)
    appends = {
        "reflections.jsonl": lambda: store.append_reflexions([_reflexion("refl-x")]),
        "mined.jsonl": lambda: store.mark_mined("run-x"),
        "validations.jsonl": lambda: world.call(
            "mecha/recordValidation",
            {
                "reflexion_id": "refl-1",
                "trigger": "steer",
                "domain": "behavior",
                "rules_hash": "0",
                "rule_ids": [],
                "outcome": "improved",
                "model": "m",
                "created_at": WHEN,
            },
        ),
        "runs.jsonl": lambda: store.append_run(
            LeapRun(id="run-1", domain="behavior", reflexions_processed=0, rules_before=0, rules_after=0, created_at=WHEN)
        ),
    }
    with pytest.raises((InvalidStore, RpcError, LearningError)) as caught:
        appends[name]()
    _refused(rpc_error_from(caught.value), link)
    assert world.untouched()


def test_a_reflections_link_is_not_rewritten_by_an_accept(world: World) -> None:
    # Accepting marks the proposal's reflections processed: a rewrite of the
    # ledger, which must not read the link's target into the store nor
    # replace it.
    world.target.write_bytes((world.root / "reflections.jsonl").read_bytes())
    world._before = world._outside_state()
    link = world.link("reflections.jsonl", world.target)
    _refused(world.error("mecha/acceptProposal", {"id": PENDING_ID}), link)
    assert link.is_symlink() and world.untouched()


def test_an_inbox_that_is_a_link_is_neither_filled_nor_claimed(world: World) -> None:
    (world.outside / "20260101T000000-a-session.json").write_bytes(b'{"kind":"session","session_id":"s","messages":[]}')
    world._before = world._outside_state()
    link = world.link("inbox", world.outside)
    params = {"session_id": "run-new", "messages": MESSAGES, "taint_timeline": TIMELINE}
    _refused(world.error("mecha/sessionEnded", params), link)
    # A pass claims by renaming the inbox's entries, and deletes them when
    # done: through a link that would rename and delete the outside files.
    store = LearningStore(world.root)
    reflector = Reflector(ScriptedProvider())
    with pytest.raises(InvalidStore) as caught:
        asyncio.run(reflect_inbox(store, reflector))
    _refused(rpc_error_from(caught.value), link)
    assert world.untouched()
    assert store.try_lock() is not None, "the refused pass left the writer lock held"


def test_a_lock_file_that_is_a_link_is_refused(world: World) -> None:
    # `.lock` is opened for writing and chmod-ed: through a link, that would
    # create or change a file outside.
    for target in (world.target, world.outside / "not-there-yet"):
        link = world.link(".lock", target)
        _refused(world.error("mecha/acceptProposal", {"id": PENDING_ID}), link)
        assert world.untouched()


def test_jobs_and_logs_dirs_that_are_links_are_not_written_through(world: World) -> None:
    store = LearningStore(world.root)
    link = world.link("jobs", world.outside)
    with pytest.raises(InvalidStore) as caught:
        jobs_mod.write_job(world.root, jobs_mod.Job(id="j-1", kind="learn", state="running", started_at=WHEN))
    _refused(rpc_error_from(caught.value), link)
    (world.root / "jobs").unlink()
    (world.root / "jobs").mkdir(mode=0o700)
    link = world.link("logs", world.outside)
    store.append_reflexions([_reflexion(f"refl-l{i}") for i in range(3)])
    _refused(world.error("mecha/learn", {"domain": "writing", "min": 1}), link)
    assert world.untouched()


# ─── hard links planted inside the store ────────────────────────────────────


def _hard_link(world: World, name: str) -> Path:
    """Replace store file `name` with a hard link to the outside target,
    which first takes the file's content (so the store still reads well)."""
    path = world.root / name
    world.target.write_bytes(path.read_bytes() if path.exists() else b"")
    world.target.chmod(0o644)
    world._before = world._outside_state()
    path.unlink(missing_ok=True)
    os.link(world.target, path)
    return path


def _validation() -> dict[str, Any]:
    return {
        "reflexion_id": "refl-1", "trigger": "steer", "domain": "behavior", "rules_hash": "0",
        "rule_ids": [], "outcome": "improved", "model": "m", "created_at": WHEN,
    }


#: A store file, and a write that touches it.
HARD_LINKED: dict[str, Any] = {
    "reflections.jsonl": lambda w: LearningStore(w.root).append_reflexions([_reflexion("refl-x")]),
    "mined.jsonl": lambda w: LearningStore(w.root).mark_mined("run-x"),
    "runs.jsonl": lambda w: LearningStore(w.root).append_run(
        LeapRun(id="run-1", domain="behavior", reflexions_processed=0, rules_before=0, rules_after=0, created_at=WHEN)
    ),
    "validations.jsonl": lambda w: w.call("mecha/recordValidation", _validation()),
    ".lock": lambda w: w.call("mecha/acceptProposal", {"id": PENDING_ID}),
    "rules/behavior.learned.toml": lambda w: w.call("mecha/acceptProposal", {"id": PENDING_ID}),
    f"proposals/{PENDING_ID}.json": lambda w: w.call("mecha/rejectProposal", {"id": PENDING_ID, "reason": "no"}),
    ".gitignore": lambda w: LearningStore.open(w.root),
}


@pytest.mark.parametrize("name", sorted(HARD_LINKED))
def test_a_file_that_is_a_hard_link_is_never_written_through(world: World, name: str) -> None:
    # Pins: ledgers and `.lock` hard-linked to files elsewhere getting lines
    # appended and their mode changed to 0600, as a symbolic link once did.
    if name == ".gitignore":
        (world.root / ".gitignore").write_text(".lock\n")  # an entry missing: opening appends
    path = _hard_link(world, name)
    with pytest.raises((InvalidStore, RpcError, LearningError)) as caught:
        HARD_LINKED[name](world)
    err = rpc_error_from(caught.value)
    assert err.code == codes.INVALID_STORE, err.message
    assert str(path) in err.message and "hard link" in err.message, err.message
    assert err.data and err.data.get("path") == str(path)
    assert world.untouched(), "the file outside changed"
    assert os.stat(path).st_nlink == 2
    assert LearningStore(world.root).proposal(PENDING_ID).status == "pending"


def test_a_git_dir_that_is_a_link_is_not_committed_into(world: World) -> None:
    shutil.copytree(world.root / ".git", world.outside / "repo")
    world._before = world._outside_state()
    world.link(".git", world.outside / "repo")
    store = LearningStore(world.root)
    (world.root / "rules" / "writing.user.toml").write_text('[[rules]]\ntext = "x"\n')
    assert store.commit("must not land outside") is False
    assert world.untouched()


def test_reads_follow_a_link_the_person_made(world: World) -> None:
    # The other half of the rule: a person may keep their own rules in a
    # dotfiles repository and link them in; the block reads them.
    (world.outside / "mine.toml").write_text('[[rules]]\ntext = "Linked from my dotfiles"\n')
    world._before = world._outside_state()
    world.link("rules/behavior.user.toml", world.outside / "mine.toml")
    block = world.call("mecha/rulesPromptBlock", {}).block
    assert "- Linked from my dotfiles" in block
    assert world.untouched()


def _reflexion(rid: str, domain: str = "writing") -> Reflexion:
    return builders.reflexion(rid, "Keep it short.", domain=domain, session_id="s", context="c", intervention="i",
                              created_at=WHEN)


# ─── owner-only, whatever the umask ─────────────────────────────────────────


def _modes(root: Path) -> Iterator[tuple[Path, int, bool]]:
    for path in [root, *root.rglob("*")]:
        st = path.lstat()
        if stat.S_ISLNK(st.st_mode):
            continue
        yield path, stat.S_IMODE(st.st_mode), stat.S_ISDIR(st.st_mode)


def _session_file(directory: Path, session_id: str) -> None:
    directory.mkdir(exist_ok=True)
    (directory / f"{session_id}.json").write_text(
        json.dumps({"session_id": session_id, "messages": MESSAGES, "taint_timeline": TIMELINE})
    )


def test_the_store_is_owner_only_under_umask_zero(tmp_path: Path) -> None:
    # Everything a person does at a terminal, and a real background pass it
    # starts, all under umask 0: the store's own directories are 0700 and
    # its files 0600; inside `.git`, nothing is open to group or others.
    root = tmp_path / "learning"
    with ModelServer(responder=lessons_responder) as model:
        env = clean_env(
            tmp_path,
            {"MECHA_MODEL_API": "openai", "MECHA_MODEL_BASE_URL": model.url, "MECHA_MODEL": "local"},
        )
        sessions = tmp_path / "sessions"
        _session_file(sessions, "run-umask")
        args = ["--learning-dir", str(root), "--json"]
        done = _cli([*args, "reflect", "--sessions", str(sessions)], env, umask=0, timeout=90)
        assert done.returncode == 0, done.stdout + done.stderr
        done = _cli([*args, "learn", "behavior", "--min", "1"], env, umask=0, timeout=90)
        assert done.returncode == 0, done.stdout + done.stderr
        proposal_id = json.loads(done.stdout)["job"]["proposal_id"]
        done = _cli([*args, "proposals", "accept", proposal_id], env, umask=0)
        assert done.returncode == 0, done.stdout + done.stderr
    assert (root / "rules" / "behavior.learned.toml").is_file()
    assert list((root / "logs").iterdir()) and list((root / "jobs").iterdir())
    checked = 0
    for path, mode, is_dir in _modes(root):
        rel = path.relative_to(root)
        if rel.parts[:1] == (".git",):
            assert mode & 0o077 == 0, f"{rel} is {oct(mode)}: open to group or others"
        else:
            assert mode == (0o700 if is_dir else 0o600), f"{rel} is {oct(mode)}"
        checked += 1
    assert checked > 20


# ─── the model API key ──────────────────────────────────────────────────────


def test_the_api_key_never_reaches_the_store_its_history_or_a_client(spawn_sidecar: SpawnSidecar, tmp_path: Path) -> None:  # noqa: F811
    key = "sk-mecha-" + secrets.token_hex(16)
    root = tmp_path / "learning"
    LearningStore.open(root).append_reflexions([_reflexion(f"refl-k{i}", "behavior") for i in range(3)])
    with ModelServer(responder=lambda request, dialect: echo_auth(401)) as model:
        options = {"model": {"api": "openai", "baseUrl": model.url, "model": "local", "apiKeyEnv": "RELIABILITY_TEST_API_KEY"}}
        s = spawn_sidecar(options=options, env={"RELIABILITY_TEST_API_KEY": key})
        seen: list[Any] = []
        ended = s.call("mecha/sessionEnded", {"session_id": "run-key", "messages": MESSAGES, "taint_timeline": TIMELINE})
        learned = s.call("mecha/learn", {"domain": "behavior"})
        seen += [ended, learned]
        for job in (ended["job"], learned["job"]):
            final = s.notification("mecha/jobFinished", lambda p, j=job: p["job"]["id"] == j["id"], timeout=60)["job"]
            assert final["state"] == "failed", final
            assert "401" in final["outcome"] and "[redacted]" in final["outcome"], final["outcome"]
            seen.append(final)
        seen += [s.call("mecha/jobs", {}), s.call("mecha/doctor", {})]
        assert any(r.headers.get("authorization") == f"Bearer {key}" for r in model.requests), "the key was never sent"
        assert s.shutdown_and_exit() == 0
    # Whatever the failed passes left that git does not ignore goes into the
    # history now, to be searched with the rest.
    assert LearningStore(root).commit("after the failed passes")
    # Everything a client was shown, the sidecar's stderr, every file in the
    # store (logs, jobs, inbox included), and the whole git history.
    assert key not in json.dumps(seen)
    assert key not in s.stderr
    leaked = [p for p in root.rglob("*") if p.is_file() and key.encode() in p.read_bytes()]
    assert leaked == []
    history = subprocess.run(
        ["git", "log", "-p", "--all", "--format=%H%n%B"], cwd=root, capture_output=True, text=True, check=True
    ).stdout
    assert "after the failed passes" in history and "reflections.jsonl" in history
    assert key not in history
    assert key[:12] not in json.dumps(seen) + s.stderr + history
    assert (root / "logs").is_dir() and list((root / "logs").iterdir()), "the passes left no logs to search"



# ─── a relative learning dir ────────────────────────────────────────────────
#
# A detached pass runs with the store root as its working directory. A root
# given relative to the sidecar's directory must reach it as the same
# directory, not be resolved a second time from inside the store (a nested
# store, or with `../` a second store beside the first).

RELATIVE_ROOTS = ["store", "../elsewhere/store"]


def _stores_under(base: Path) -> list[Path]:
    """Every directory under `base` that a store was created in."""
    return sorted(p.parent for p in base.rglob("jobs") if p.is_dir() and (p.parent / "rules").is_dir())


def _relative_setup(tmp_path: Path, relative: str) -> tuple[Path, Path]:
    """(the directory the sidecar runs in, the store it must use)."""
    cwd = tmp_path / "work"
    cwd.mkdir()
    return cwd, (cwd / relative).resolve()


@pytest.mark.parametrize("source", ["initializationOptions", "environment"])
@pytest.mark.parametrize("relative", RELATIVE_ROOTS)
def test_a_relative_learning_dir_reaches_the_detached_pass_as_the_same_store(
    tmp_path: Path, source: str, relative: str
) -> None:
    # Pins: a pass started with cwd = store root resolving a relative
    # learningDir / $MECHA_LEARNING_DIR again — a nested or second store, a
    # session never reflected, jobFinished with state "running".
    from tests.wire.client import Sidecar
    from tests.wire.helpers import steered

    cwd, expected = _relative_setup(tmp_path, relative)
    with ModelServer(responder=lessons_responder) as server:
        model = {"api": "openai", "baseUrl": server.url, "model": "scripted-model"}
        extra = {"MECHA_LEARNING_DIR": relative} if source == "environment" else {}
        sc = Sidecar(SIDECAR_ARGV, env=clean_env(tmp_path / "env", extra), cwd=cwd)
        try:
            options: dict[str, Any] = {"model": model}
            if source == "initializationOptions":
                options["learningDir"] = relative
            sc.call("initialize", {"processId": os.getpid(), "initializationOptions": options})
            sc.notify("initialized", {})
            ended = sc.call("mecha/sessionEnded", {"session_id": "rel-1", "messages": steered(), "taint_timeline": TIMELINE_CLEAN})
            assert ended["job"] is not None, ended
            final = sc.notification("mecha/jobFinished", lambda p: p["job"]["id"] == ended["job"]["id"], timeout=60)["job"]
        finally:
            sc.close()
        assert final["state"] == "done", final
        assert final.get("outcome") and "1 reflection(s) written" in final["outcome"], final
        assert len(server.completions()) == 1
    assert _stores_under(tmp_path) == [expected]
    assert (expected / "mined.jsonl").read_text().split() == ["rel-1"]
    assert [json.loads(line)["session_id"] for line in (expected / "reflections.jsonl").read_text().splitlines()] == ["rel-1"]


@pytest.mark.parametrize("relative", RELATIVE_ROOTS)
def test_a_relative_learning_dir_flag_reaches_the_detached_learn_pass(tmp_path: Path, relative: str) -> None:
    # Pins: `--learning-dir ../x` handed to the detached pass unresolved, so
    # the CLI waits on a job record the pass never finishes.
    cwd, expected = _relative_setup(tmp_path, relative)
    store = LearningStore.open(expected)
    store.append_reflexions([_reflexion("20260101T000000-aaaa0001", "behavior")])
    with ModelServer(responder=lessons_responder) as server:
        env = clean_env(
            tmp_path / "env",
            {"MECHA_MODEL_API": "openai", "MECHA_MODEL_BASE_URL": server.url, "MECHA_MODEL": "scripted-model"},
        )
        done = subprocess.run(
            [*SIDECAR_ARGV, "--learning-dir", relative, "--json", "learn", "behavior", "--min", "1"],
            env=env, cwd=cwd, capture_output=True, text=True, timeout=90,
        )
        assert done.returncode == 0, (done.stdout, done.stderr[-2000:])
        job = json.loads(done.stdout)["job"]
        assert job["state"] == "done" and "pending review" in job["outcome"], job
        assert len(server.completions()) == 1
    assert _stores_under(tmp_path) == [expected]
    assert [p.status for p in LearningStore(expected).proposals()] == ["pending"]


TIMELINE_CLEAN = [{"at": 0, "taint": {"private": False, "untrusted": False}}]
