"""The rules block, kept on disk for the next run to be served without
reading (or parsing) a rules file.

A harness starts the sidecar once per agent run and waits on the rules block
before the run's first model call; the rules change only when a person
accepts a proposal or edits a file. So the answer the last full read gave is
kept in `cache/rules-block.json`, keyed by

- the *code* that produced it: an opaque identity the caller supplies (the
  server's own files), so an upgrade never serves a reply an older version
  rendered; and
- the store's rules fingerprint (`layout.rules_fingerprint`): nothing is
  served from a file that changed since it was read.

What is kept is opaque text (the caller's encoded answers, one per `domain`
asked for, and the `initialize` answer that goes with them); this module only
files it. The file is derived and disposable: git-ignored, owner-only like
the rest of the store, replaced whole (temp file and rename), never written
through a link, and never written into a store that does not exist yet or
whose git would sweep it into history (a store made by an older version,
before its `.gitignore` named `cache/`: the next writer adds that line).
It skips the fsync the store's data gets: a cache torn by a crash reads as a
miss, and a miss costs one full read.

Reading imports the standard library only (`json`, `os`); writing happens on
the full path, where `_files` is at hand.
"""

from __future__ import annotations

import json
import os

from .layout import CACHE_DIR, is_racy

#: `typing` is not imported: it costs the first stage more than this module.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence

#: The cache file, under `CACHE_DIR`.
CACHE_FILE = "rules-block.json"
#: Bumped when the file's shape changes: an older shape reads as a miss.
FORMAT = 1
#: The `.gitignore` line that keeps the cache out of the store's history.
GITIGNORE_ENTRY = CACHE_DIR + "/"


def cache_path(root: str | os.PathLike[str]) -> str:
    return os.path.join(root, CACHE_DIR, CACHE_FILE)


def read(root: str | os.PathLike[str], code: Sequence[object]) -> dict | None:
    """The cache under `root` if it was written by this `code`, else `None`
    (absent, unreadable, a link, another shape, another version)."""
    try:
        fd = os.open(cache_path(root), os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        with os.fdopen(fd, "rb") as f:
            data = f.read()
        cache = json.loads(data)
    except (OSError, ValueError, RecursionError):
        return None
    if not isinstance(cache, dict) or cache.get("format") != FORMAT or cache.get("code") != list(code):
        return None
    if not isinstance(cache.get("initialize"), str) or not isinstance(cache.get("blocks"), list):
        return None
    if not _is_json(cache["initialize"]):
        return None
    return cache


def _is_json(text: str) -> bool:
    """A kept answer goes on the wire as it is: one that is not JSON (a
    hand-edited cache) is a miss, not a broken reply."""
    try:
        json.loads(text)
    except (ValueError, RecursionError):
        return False
    return True


def lookup(cache: dict, fingerprint: list | None, domain: str | None) -> str | None:
    """The answer kept for `domain` under exactly this rules fingerprint."""
    if fingerprint is None or cache.get("rules") != fingerprint:
        return None
    for entry in cache["blocks"]:
        if isinstance(entry, list) and len(entry) == 2 and entry[0] == domain and isinstance(entry[1], str):
            return entry[1] if _is_json(entry[1]) else None
    return None


def may_write(root: str | os.PathLike[str], gitignore: bytes | None, has_git: bool) -> bool:
    """Whether the cache may be written into the store at `root`: only a
    store that exists (a read path creates none), and only where git will
    not commit it — no repository, or a `.gitignore` naming `cache/`."""
    if not os.path.isdir(root):
        return False
    if not has_git:
        return True
    if gitignore is None:
        return False
    return GITIGNORE_ENTRY in {line.strip() for line in gitignore.decode("utf-8", "replace").splitlines()}


def write(
    root: str | os.PathLike[str],
    code: Sequence[object],
    fingerprint: list | None,
    domain: str | None,
    answer: str,
    initialize: str,
    now_ns: int,
) -> bool:
    """Keep `answer` for `domain` under `fingerprint` (merged with the answers
    kept for other domains under the same one); `True` if written.

    Refuses a fingerprint that `is_racy` at `now_ns`, a store `may_write`
    refuses, and any link in the way (`_files.refuse_links`); an I/O failure
    is not an error — a cache that cannot be written is a cache miss later.
    """
    from pathlib import Path

    from . import _files
    from .errors import InvalidStore

    if fingerprint is None or is_racy(fingerprint, now_ns):
        return False
    base = Path(root)
    try:
        gitignore = _files.read_bytes(base / ".gitignore")
        if not may_write(base, gitignore, (base / ".git").exists()):
            return False
        folder = base / CACHE_DIR
        _files.ensure_private_dir(folder, root=base)
        path = _files.refuse_links(base, folder / CACHE_FILE)
        kept = read(base, code)
        blocks: list[list] = []
        if kept is not None and kept.get("rules") == fingerprint and kept.get("initialize") == initialize:
            blocks = [e for e in kept["blocks"] if isinstance(e, list) and len(e) == 2 and e[0] != domain]
        blocks.append([domain, answer])
        record = {
            "format": FORMAT,
            "code": list(code),
            "rules": fingerprint,
            "initialize": initialize,
            "blocks": blocks,
        }
        data = json.dumps(record, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
        _files.write_atomic(path, data, durable=False)
    except (OSError, InvalidStore, UnicodeEncodeError):
        return False
    return True
