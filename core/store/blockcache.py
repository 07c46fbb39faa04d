"""The rules block, kept on disk for the next run to be served without
reading (or parsing) a rules file.

A harness starts the sidecar once per agent run and waits on the rules block
before the run's first model call; the rules change only when a person
accepts a proposal or edits a file. So the answer the last full read gave is
kept in `cache/rules-block`, keyed by

- the *code* that produced it: an opaque identity the caller supplies (the
  server's own files), so an upgrade never serves a reply an older version
  rendered; and
- the store's rules fingerprint (`layout.rules_fingerprint`): nothing is
  served from a file that changed since it was read.

What is kept is opaque bytes (the caller's encoded answers, one per `domain`
asked for, and the `initialize` answer that goes with them); this module only
files them. An answer is kept per `domain` *and* project (the resolved
root, `layout.project_root`, or `None` for the global rules alone): two
repositories' runs get two blocks. The file is derived and disposable: git-ignored, owner-only like
the rest of the store, replaced whole and durably (temp file, fsync, rename:
a crash leaves the old file or the new one), never written through a link,
and never written into a store that does not exist yet or whose git would
sweep it into history (a store made by an older version, before its
`.gitignore` named `cache/`: the next writer adds that line).

It is the one rules-block cache. What writes the rules refreshes it: an
accept, from whichever endpoint, renders again every answer kept here under
the new rules (`write_answers`, from the sidecar's `refresh_blocks`), so
the first run after an accept is served from here too; the harness
server's in-process answers are this file's decoded view, filled and
refreshed with it.

The file is lines, so that reading it takes no parser at all — the first
stage compares its key lines with the `repr` of its own key and copies an
answer line to the wire:

```text
mecha-sidecar rules block cache 1
repr(code)
repr(rules fingerprint)
the initialize answer (JSON, one line)
repr([domain, project])  ┐ once per domain and project asked for
its answer (JSON)        ┘
```

`repr` of lists of ints, strings and `None` is exact and one line; encoded
JSON has no raw newline. Any other shape, or a file that does not end where
its last answer does, reads as a miss.
"""

from __future__ import annotations

import os

from mecha.core.store.layout import CACHE_DIR, GIT_DIR, GITIGNORE_FILE, is_racy

#: `typing` is not imported: it costs the first stage more than this module.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any

#: The cache file, under `CACHE_DIR`.
CACHE_FILE = "rules-block"
#: The first line; bumped when the file's shape changes (an older one is a miss).
HEADER = b"mecha-sidecar rules block cache 2"
#: The `.gitignore` line that keeps the cache out of the store's history.
GITIGNORE_ENTRY = CACHE_DIR + "/"


class Kept:
    """A cache file as read: its key lines and its answers by domain."""

    __slots__ = ("rules", "initialize", "answers")

    def __init__(self, rules: bytes, initialize: bytes, answers: dict[bytes, bytes]):
        self.rules = rules
        self.initialize = initialize
        #: `repr([domain, project])` → answer.
        self.answers = answers


def cache_path(root: str | os.PathLike[str]) -> str:
    return os.path.join(root, CACHE_DIR, CACHE_FILE)


def _key(value: object) -> bytes:
    return repr(value).encode("utf-8", "backslashreplace")


def read(root: str | os.PathLike[str], code: Sequence[object]) -> Kept | None:
    """The cache under `root` if it was written by this `code`, else `None`
    (absent, unreadable, a link, another shape, another version)."""
    try:
        fd = os.open(cache_path(root), os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        with os.fdopen(fd, "rb") as f:
            data = f.read()
    except OSError:
        return None
    lines = data.split(b"\n")
    # Header, code, rules, initialize, pairs of domain and answer, and the
    # empty string after the last newline.
    if len(lines) < 5 or len(lines) % 2 == 0 or lines[-1] != b"" or lines[0] != HEADER:
        return None
    if lines[1] != _key(list(code)) or not lines[3]:
        return None
    answers = dict(zip(lines[4:-1:2], lines[5:-1:2]))
    if not all(answers.values()):
        return None
    return Kept(lines[2], lines[3], answers)


def answer_key(domain: str | None, project: str | None) -> bytes:
    """The key line an answer is kept under."""
    return _key([domain, project])


def lookup(kept: Kept, fingerprint: list[Any] | None, domain: str | None, project: str | None = None) -> bytes | None:
    """The answer kept for `domain` in `project` (a resolved root, or `None`)
    under exactly this rules fingerprint."""
    if fingerprint is None or kept.rules != _key(fingerprint):
        return None
    return kept.answers.get(answer_key(domain, project))


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
    fingerprint: list[Any] | None,
    domain: str | None,
    answer: bytes,
    initialize: bytes,
    now_ns: int,
    *,
    project: str | None = None,
) -> bool:
    """Keep `answer` for `domain` in `project` under `fingerprint` (beside
    the answers kept for others under the same one); `True` if written.

    Refuses a fingerprint that `is_racy` at `now_ns`, a store `may_write`
    refuses, an answer that is not one line, and any link in the way
    (`_files.refuse_links`); an I/O failure is not an error — a cache that
    cannot be written is a cache miss later.
    """
    return write_answers(root, code, fingerprint, {(domain, project): answer}, initialize, now_ns, merge=True)


def write_answers(
    root: str | os.PathLike[str],
    code: Sequence[object],
    fingerprint: list[Any] | None,
    answers: dict[tuple[str | None, str | None], bytes],
    initialize: bytes,
    now_ns: int,
    *,
    merge: bool,
) -> bool:
    """Keep `answers` — `(domain, project)` → answer — under `fingerprint`
    in one write; with `merge`, beside the answers already kept under the
    same one, else in their place. Refuses as `write` does."""
    from pathlib import Path

    from mecha.core.errors import InvalidStore
    from mecha.core.store import files as _files

    if fingerprint is None or is_racy(fingerprint, now_ns) or not answers:
        return False
    if not initialize or b"\n" in initialize or any(not a or b"\n" in a for a in answers.values()):
        return False
    base = Path(root)
    try:
        gitignore = _files.read_bytes(base / GITIGNORE_FILE)
        if not may_write(base, gitignore, (base / GIT_DIR).exists()):
            return False
        folder = base / CACHE_DIR
        _files.ensure_private_dir(folder, root=base)
        path = _files.refuse_links(base, folder / CACHE_FILE)
        rules = _key(fingerprint)
        lines_by_key: dict[bytes, bytes] = {}
        kept = read(base, code) if merge else None
        if kept is not None and kept.rules == rules and kept.initialize == initialize:
            lines_by_key.update(kept.answers)
        for (domain, project), answer in answers.items():
            lines_by_key[answer_key(domain, project)] = answer
        lines = [HEADER, _key(list(code)), rules, initialize]
        for key, value in lines_by_key.items():
            lines += [key, value]
        _files.write_atomic(path, b"\n".join(lines) + b"\n")
    except (OSError, InvalidStore):
        return False
    return True


def kept_keys(kept: Kept) -> list[tuple[str | None, str | None]]:
    """The `(domain, project)` of every answer `kept` holds (whatever the
    fingerprint it was kept under): what a writer of the rules renders
    again. A key line that is not one is left out."""
    import ast

    out: list[tuple[str | None, str | None]] = []
    for line in kept.answers:
        try:
            value = ast.literal_eval(line.decode("utf-8"))
        except (ValueError, SyntaxError, UnicodeDecodeError):
            continue
        if isinstance(value, list) and len(value) == 2 and all(v is None or isinstance(v, str) for v in value):
            out.append((value[0], value[1]))
    return out
