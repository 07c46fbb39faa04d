"""Where the store is, and what its rules files are right now — with the
standard library alone.

Two readers need these answers: the store itself (`mecha.core.store.learning_store`), and the
harness endpoint's first stage, which answers a run's first requests before
anything heavier than the standard library is imported (msgspec alone costs
more than a bare interpreter's start). So the recipes live here, once, in a
module that imports nothing but `os`; `store.py` re-exports them.

**The rules fingerprint** is the identity of every file a rules block is
read from: each `rules/*.toml` entry's name, device, inode, size, mtime and
ctime, and for a symbolic link (a person's rules kept in a dotfiles
repository, say) the same of the file it points to, since the block is read
through the link. Any change a block could depend on changes it:

- a pass's accept renames a new file into place: a new inode;
- an editor that rewrites in place changes the size or the mtime;
- a tool that restores an mtime (`cp -p`, `touch -r`) still moves the
  ctime, which no user-space call can set;
- a file appearing or disappearing changes the list of names;
- editing a linked file changes its target's entry, not the link's.

What a fingerprint cannot see is a second same-size change within one tick
of the filesystem's clock (nanoseconds in name, a few milliseconds on Linux
in practice, a second or two on some filesystems). `is_racy` is the guard:
a fingerprint taken that soon after a change may not tell the change from
the next one, so nothing is kept under it for longer than the process that
read it (git's "racily clean" entries are the same idea).
"""

from __future__ import annotations

import os

#: `typing` stays unimported at run time: the first stage imports this
#: module with the standard library's cheapest modules alone (mypy reads a
#: module-level `TYPE_CHECKING` as true).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

#: Where the store lives when nothing says otherwise, under the home directory.
DEFAULT_HOME_SUBDIR = (".mecha", "learning")
#: The environment variable that overrides the default location.
LEARNING_DIR_ENV = "MECHA_LEARNING_DIR"

#: The rules files' directory, and the suffix every rules file has.
RULES_DIR = "rules"
RULES_SUFFIX = ".toml"

#: Derived answers kept to be served again, never data: git-ignored, safe to
#: delete at any time (the next full read writes them again).
CACHE_DIR = "cache"

#: Proposals waiting for a person (and resolved ones), one JSON file each.
#: Here rather than only in the store because the agents' session-start hook
#: counts the pending ones with the standard library alone
#: (`mecha.core.agents.notice`).
PROPOSALS_DIR = "proposals"
#: Background passes' logs, and the agents' hooks' log: process state,
#: git-ignored.
LOGS_DIR = "logs"
#: One line per run of an agent hook (Claude Code, Codex) — what it queued,
#: or why it could not — since a hook must never print to the agent.
HOOK_LOG_FILE = "hooks.log"


def hook_log_path(root: str | os.PathLike[str]) -> str:
    """`<root>/logs/hooks.log`: where an agent hook's runs are recorded."""
    return os.path.join(root, LOGS_DIR, HOOK_LOG_FILE)


#: The longest name of one file or directory, in bytes (`NAME_MAX` on every
#: filesystem Linux mounts for a home directory).
NAME_MAX_BYTES = 255
#: The longest store root, in bytes: the kernel's `PATH_MAX` (4096 with its
#: NUL) less room for the store's own deepest names beneath it (a temp of
#: a rules file in `rules/`, a claimed entry in `inbox/set-aside/`).
ROOT_MAX_BYTES = 4095 - 256


def root_problem(given: str) -> str | None:
    """Why `given` cannot be a store root on this system, or `None`: a NUL
    (no path can hold one), text the filesystem cannot spell (a lone
    surrogate), a name longer than `NAME_MAX_BYTES`, a path longer than
    `ROOT_MAX_BYTES`. Asked where a root enters from a client, so the
    client is told which option is wrong instead of every later request
    failing on the first file the store opens."""
    if "\x00" in given:
        return "contains a NUL character, which no path can hold"
    try:
        raw = os.fsencode(given)
    except UnicodeError:
        return "holds text no file name on this system can spell (a lone surrogate)"
    if len(raw) > ROOT_MAX_BYTES:
        return f"is {len(raw)} bytes long; a store root is at most {ROOT_MAX_BYTES}"
    for name in raw.split(b"/"):
        if len(name) > NAME_MAX_BYTES:
            shown = name[:16].decode("utf-8", "replace")
            return f"has a name of {len(name)} bytes ({shown}…); a file or directory name is at most {NAME_MAX_BYTES}"
    return None


def default_root() -> str:
    """`$MECHA_LEARNING_DIR`, else `~/.mecha/learning`, as an absolute path."""
    return resolve_root(None)


def resolve_root(given: str | os.PathLike[str] | None) -> str:
    """The store root a person named — `given` (a flag, an option), else
    `$MECHA_LEARNING_DIR`, else `~/.mecha/learning` — `~` expanded and made
    absolute against the current directory, once, where it enters.

    Why absolute at once: a background pass runs in another process whose
    working directory is the store itself, so a relative root resolved
    again there names a different directory (`store` becomes `store/store`;
    `../x/store` a second store beside the first). A relative root is
    resolved physically (as the kernel would from here, links included);
    an absolute one is kept as written, since where the store lives, link
    or not, is the person's choice.
    """
    if given is None or str(given) == "":
        given = os.environ.get(LEARNING_DIR_ENV) or None
    if given is None:
        return os.path.join(os.path.expanduser("~"), *DEFAULT_HOME_SUBDIR)
    path = os.path.expanduser(os.fspath(given))
    return path if os.path.isabs(path) else os.path.realpath(path)


def _stat_fields(st: os.stat_result) -> list[int]:
    return [st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns]


def rules_fingerprint(root: str | os.PathLike[str]) -> list[list[Any]] | None:
    """The identity of every rules file under `root`, sorted by name, as
    plain lists (it is written to and compared with JSON); `None` when there
    is no rules directory at all.

    An entry that vanished between listing and stat is kept as `[name]`
    alone: a fingerprint taken mid-change, which `is_racy` refuses."""
    try:
        entries = os.scandir(os.path.join(root, RULES_DIR))
    except (FileNotFoundError, NotADirectoryError):
        return None
    out: list[list[Any]] = []
    with entries:
        for entry in entries:
            name = entry.name
            if not name.endswith(RULES_SUFFIX):
                continue
            try:
                st = entry.stat(follow_symlinks=False)
            except FileNotFoundError:
                out.append([name])
                continue
            ident: list[Any] = [name, *_stat_fields(st), None]
            if entry.is_symlink():
                try:
                    ident[-1] = _stat_fields(os.stat(entry.path))
                except OSError:
                    ident[-1] = []  # a dangling link: read as no file
            out.append(ident)
    out.sort()
    return out


#: How recent a change may be for a fingerprint to be trusted beyond the
#: process that took it, on a filesystem with fine timestamps: well over the
#: coarse clock Linux stamps files with (one tick, 1–10 ms).
RACY_FINE_NS = 100_000_000
#: The same where timestamps are whole seconds (FAT keeps mtimes in 2 s
#: steps; ext3 and HFS+ in 1 s): more than the coarsest step.
RACY_COARSE_NS = 3_000_000_000


def is_racy(fingerprint: list[list[Any]] | None, now_ns: int) -> bool:
    """Whether a fingerprint is too fresh to key a cache that outlives the
    process: some file changed so recently (or is stamped in the future, by
    a clock set back) that a second change within the same timestamp tick
    would leave the fingerprint as it is. Also true for a fingerprint taken
    while an entry vanished. A whole-second stamp anywhere means the
    filesystem may be coarse, so the coarse window applies to all.

    Fails closed: a racy fingerprint costs a cache miss, never a stale
    answer."""
    if fingerprint is None:
        return False
    stamps: list[int] = []
    for ident in fingerprint:
        if len(ident) < 7:
            return True
        stamps += ident[4:6]
        if ident[6]:
            stamps += ident[6][3:5]
    if not stamps:
        return False
    window = RACY_COARSE_NS if any(s % 1_000_000_000 == 0 for s in stamps) else RACY_FINE_NS
    return max(stamps) > now_ns - window
