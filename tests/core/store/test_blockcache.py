"""The rules fingerprint and the block cache keyed by it: nothing kept under
a fingerprint is ever found again once a rules file changed, and the cache
is written only where it is safe to (owner-only, whole, never through a
link, never into git's sight, never into a store that does not exist)."""

from __future__ import annotations

import os
import stat
import subprocess
import time
from pathlib import Path

import pytest

from mecha.core.store import blockcache
from mecha.core.store.layout import RACY_COARSE_NS, RACY_FINE_NS, is_racy, rules_fingerprint
from mecha.core.store.learning_store import LearningStore

CODE = ["0.1.0", ["mecha.core", "store.py", 1, 2, 3]]
LATER = 10**20  # a "now" long after any file here was written


def _store(tmp_path: Path) -> Path:
    root = tmp_path / "learning"
    LearningStore.open(root)
    (root / "rules" / "behavior.user.toml").write_text('[[rules]]\ntext = "Answer in English"\n')
    return root


def _write(root: Path, fp: list | None = None, domain: str | None = None, answer: bytes = b'{"block":"x"}') -> bool:
    fp = rules_fingerprint(root) if fp is None else fp
    return blockcache.write(root, CODE, fp, domain, answer, b'{"capabilities":{}}', LATER)


# ─── the fingerprint ────────────────────────────────────────────────────────


def test_the_store_and_the_layout_module_give_one_fingerprint(tmp_path: Path) -> None:
    # Pins: two recipes for the key, one in the store and one in the first stage.
    root = _store(tmp_path)
    assert LearningStore(root).rules_fingerprint() == rules_fingerprint(root)
    assert rules_fingerprint(tmp_path / "nowhere") is None


def test_every_kind_of_change_to_a_rules_file_changes_the_fingerprint(tmp_path: Path) -> None:
    # Pins: a change a block depends on that leaves its key as it was.
    root = _store(tmp_path)
    path = root / "rules" / "behavior.user.toml"
    seen = [rules_fingerprint(root)]

    def changed() -> None:
        now = rules_fingerprint(root)
        assert now != seen[-1]
        seen.append(now)

    time.sleep(0.01)
    path.write_text('[[rules]]\ntext = "Answer in Spanish"\n')  # in place, same size
    changed()
    replacement = path.with_name("x.tmp")
    replacement.write_text('[[rules]]\ntext = "Answer in French!"\n')
    os.replace(replacement, path)  # a rename: new inode
    changed()
    st = path.stat()
    time.sleep(0.01)
    path.write_text('[[rules]]\ntext = "Answer in Polish!"\n')
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))  # mtime put back: ctime moves
    changed()
    (root / "rules" / "writing.learned.toml").write_text("")  # a file appears
    changed()
    (root / "rules" / "writing.learned.toml").unlink()  # and goes
    changed()
    (root / "rules" / "notes.txt").write_text("not a rules file")
    assert rules_fingerprint(root) == seen[-1], "only rules files are part of it"


def test_a_linked_rules_file_is_fingerprinted_through_the_link(tmp_path: Path) -> None:
    # Pins: a person's rules kept elsewhere and linked in, edited where they live, unseen.
    root = _store(tmp_path)
    target = tmp_path / "dotfiles" / "writing.toml"
    target.parent.mkdir()
    target.write_text('[[rules]]\ntext = "Short sentences"\n')
    (root / "rules" / "writing.user.toml").symlink_to(target)
    before = rules_fingerprint(root)
    time.sleep(0.01)
    target.write_text('[[rules]]\ntext = "Plain sentences"\n')
    assert rules_fingerprint(root) != before


def test_a_fingerprint_is_racy_until_its_newest_change_is_older_than_a_clock_tick(tmp_path: Path) -> None:
    # Pins: a cache kept under a fingerprint a same-tick rewrite would not change.
    root = _store(tmp_path)
    fp = rules_fingerprint(root)
    newest = max(max(e[4], e[5]) for e in fp)
    assert is_racy(fp, newest + RACY_FINE_NS // 2)
    assert not is_racy(fp, newest + RACY_FINE_NS + 1)
    assert is_racy(fp, newest - 10**9), "a stamp in the future (a clock set back) is racy"
    coarse = [[*e[:4], 5 * 10**9, 5 * 10**9, None] for e in fp]
    assert is_racy(coarse, 5 * 10**9 + RACY_FINE_NS * 2), "whole-second stamps: the coarse window"
    assert not is_racy(coarse, 5 * 10**9 + RACY_COARSE_NS + 1)
    assert is_racy([["behavior.user.toml"]], LATER), "an entry that vanished mid-listing"
    assert not is_racy(None, 0) and not is_racy([], 0)


# ─── the cache ──────────────────────────────────────────────────────────────


def test_an_answer_is_found_only_under_its_code_fingerprint_and_domain(tmp_path: Path) -> None:
    # Pins: an answer served for another domain, version or rules state.
    root = _store(tmp_path)
    fp = rules_fingerprint(root)
    assert _write(root, fp, None, b'{"plain":1}')
    assert _write(root, fp, "triage", b'{"triage":1}')
    cache = blockcache.read(root, CODE)
    assert cache is not None
    assert blockcache.lookup(cache, fp, None) == b'{"plain":1}'
    assert blockcache.lookup(cache, fp, "triage") == b'{"triage":1}', "domains are merged, not replaced"
    assert blockcache.lookup(cache, fp, "writing") is None
    assert blockcache.read(root, ["0.2.0"]) is None, "other code"
    (root / "rules" / "triage.learned.toml").write_text("")
    assert blockcache.lookup(cache, rules_fingerprint(root), None) is None, "other rules"


def test_a_new_fingerprint_replaces_every_answer_kept_under_the_old_one(tmp_path: Path) -> None:
    # Pins: an old domain's answer surviving into a cache keyed by new rules.
    root = _store(tmp_path)
    old = rules_fingerprint(root)
    _write(root, old, "triage", b'{"old":1}')
    (root / "rules" / "writing.user.toml").write_text("")
    new = rules_fingerprint(root)
    _write(root, new, None, b'{"new":1}')
    cache = blockcache.read(root, CODE)
    assert cache is not None and cache.answers == {b"[None, None]": b'{"new":1}'}


def test_a_racy_fingerprint_is_not_written(tmp_path: Path) -> None:
    # Pins: the cache keyed by a fingerprint taken in the same tick as a change.
    root = _store(tmp_path)
    fp = rules_fingerprint(root)
    assert not blockcache.write(root, CODE, fp, None, b"{}", b"{}", time.time_ns())
    assert not os.path.exists(blockcache.cache_path(root))


def test_the_cache_is_owner_only_and_ignored_by_the_stores_git(tmp_path: Path) -> None:
    # Pins: derived answers readable by others, or committed into the audit trail.
    root = _store(tmp_path)
    os.umask(0o022)
    assert _write(root)
    path = Path(blockcache.cache_path(root))
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    LearningStore(root).commit("rules")
    tracked = subprocess.run(["git", "-C", str(root), "ls-files"], capture_output=True, text=True, check=True).stdout
    assert "cache/" not in tracked and "rules/behavior.user.toml" in tracked
    assert [p.name for p in path.parent.iterdir()] == ["rules-block"], "no temp file left"


def test_no_cache_is_written_where_git_would_commit_it_or_no_store_exists(tmp_path: Path) -> None:
    # Pins: a read path that creates a store, or an old store's git sweeping the cache into history.
    assert not _write(tmp_path / "absent", [])
    assert not (tmp_path / "absent").exists()
    root = _store(tmp_path)
    (root / ".gitignore").write_text(".lock\n*.tmp\n")  # written by a version before the cache
    assert not _write(root)
    LearningStore.open(root)  # the next writer adds the line
    assert _write(root)
    bare = tmp_path / "plain"
    (bare / "rules").mkdir(parents=True)
    assert _write(bare, []), "no git, nothing to sweep it in"


def test_the_cache_is_never_written_or_read_through_a_link(tmp_path: Path) -> None:
    # Pins: a planted link turning the cache write into one outside the store.
    root = _store(tmp_path)
    outside = tmp_path / "outside"
    outside.mkdir()
    (root / "cache").symlink_to(outside)
    assert not _write(root)
    assert list(outside.iterdir()) == []
    (root / "cache").unlink()
    (root / "cache").mkdir()
    (outside / "rules-block").write_text("{}")
    Path(blockcache.cache_path(root)).symlink_to(outside / "rules-block")
    assert blockcache.read(root, CODE) is None
    assert not _write(root)
    assert (outside / "rules-block").read_text() == "{}"


@pytest.mark.parametrize(
    "damage",
    [
        lambda data: b"",
        lambda data: data[: len(data) // 2],
        lambda data: data[:-1],
        lambda data: data + b"'extra'\n",
        lambda data: data.replace(blockcache.HEADER, b"mecha-sidecar rules block cache 0"),
        lambda data: b"\0" * len(data),
        lambda data: data.replace(b"\n", b"\n\n", 1),
    ],
    ids=["empty", "torn in half", "no final newline", "an odd line", "another format", "zeros", "a blank line"],
)
def test_a_damaged_cache_reads_as_a_miss(tmp_path: Path, damage) -> None:
    # Pins: a torn or hand-edited cache file failing the run, or serving a piece of itself.
    root = _store(tmp_path)
    _write(root)
    path = Path(blockcache.cache_path(root))
    assert blockcache.read(root, CODE) is not None
    path.write_bytes(damage(path.read_bytes()))
    kept = blockcache.read(root, CODE)
    assert kept is None or blockcache.lookup(kept, rules_fingerprint(root), None) is None


def test_an_answer_that_is_not_one_line_is_not_kept(tmp_path: Path) -> None:
    # Pins: an answer whose newline would shift every line after it into the wrong place.
    root = _store(tmp_path)
    assert not _write(root, answer=b'{"block":\n"x"}')
    assert not _write(root, answer=b"")


def test_the_code_identity_covers_every_subpackage_that_renders_an_answer() -> None:
    # Pins: an edited module of a subpackage (the store, the passes) left
    # out of the identity, so a cache rendered by the old code was served.
    from mecha.sidecar._version import code_identity

    names = {(entry[0], entry[1]) for entry in code_identity()[1:]}  # type: ignore[index]
    assert ("mecha.core", "store/learning_store.py") in names
    assert ("mecha.core", "store/blockcache.py") in names
    assert ("mecha.sidecar", "first_stage.py") in names
    assert not any("__pycache__" in name for _, name in names)
