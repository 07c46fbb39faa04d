"""The store's layout — every file and folder name under its root, where the
root is, and what its rules files are right now — with the standard library
alone.

This module spells the layout once; only the store's own modules
(`mecha.core.store.*`) join these names to a root, and everything else asks
the store for a path (`LearningStore.reflections_path`, `jobs.log_path`, …),
which `tests/test_project.py` checks. The harness endpoint's first stage
reads the root and the rules fingerprint from here too, before anything
heavier than the standard library is imported (msgspec alone costs more
than a bare interpreter's start), so this module imports nothing but `os`.

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

# ─── Scopes: where a rule applies ───────────────────────────────────────────
#
# A rule is global (every run, every repository) or belongs to one project.
# A project is a directory: the root of the repository where the session
# ran — for a linked worktree (`git worktree add`) its repository's main
# worktree, so every worktree of one repository is one project — or that
# directory itself outside any repository (`project_root`). On disk:
#
#     rules/<domain>.learned.toml                   global (as before scopes)
#     rules/<domain>@<project id>.learned.toml      one project's
#
# The project id is `<slug>-<hash>`: the root's last path component made
# safe (lowercase letters, digits, `-`, `_`; at most 40 characters) so a
# person listing `rules/` recognises the repository, then 16 hex digits of
# FNV-1a 64 over the root's absolute path, so two checkouts both called
# `app` never share a file. The id is a function of the path alone, stable
# across runs and machines that keep the repository in the same place; a
# moved repository is a new project (its old file still names the old path
# in its `project` key, where a person can see it and rename the file).
#
# Every file written for a project also holds the project's path itself,
# readable (`project = "/home/…/app"` and a comment naming it), since the id
# alone cannot be turned back into a directory: that key is how `export`
# finds the project's CLAUDE.md or AGENTS.md. An older version reads no
# project file at all: `behavior@….learned.toml` is no domain name to it,
# and a store written before scopes has global files only, so it reads as
# global exactly as it always did.

#: What a scope is called where it is named in words and on the wire.
GLOBAL_SCOPE = "global"
#: Between a rules file's domain and its project id.
PROJECT_SEP = "@"
#: The marker of a checkout's root: a directory in a repository's main
#: worktree; a file naming the git directory in a linked worktree (whose
#: project is the main worktree's, `project_root`) or a submodule (a
#: project of its own).
GIT_MARKER = ".git"
_SLUG_MAX = 40
_SLUG_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789_-")
_HEX = frozenset("0123456789abcdef")


def fnv1a_64_value(data: bytes) -> int:
    """FNV-1a, 64-bit, over `data`: the project's one implementation of the
    hash, written out rather than borrowed (Python's `hash()` is salted per
    process, and a runtime's hasher may change between releases), because
    what it keys must never move: the rules hash, a project's id, and the
    holdout split (`is_holdout`)."""
    h = 0xCBF29CE484222325
    for byte in data:
        h ^= byte
        h = (h * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return h


def fnv1a_64(data: bytes) -> str:
    """`fnv1a_64_value` as 16 hex digits: the rules hash
    (`rules_block.rules_hash`) and the project id's hash."""
    return f"{fnv1a_64_value(data):016x}"


def is_holdout(episode: str, holdout_in: int) -> bool:
    """Whether `episode` falls in the holdout: its FNV-1a 64 hash is a
    multiple of `holdout_in` (so about one in `holdout_in` episodes).

    By hash of the id rather than at random, so the same corpus splits the
    same way every time. A rerun that quietly graded against a different
    holdout would make "confirmed on unseen episodes" meaningless.

    Here, beside the hash, rather than with the gate that splits its
    episodes by it: the store keeps a transcript only for a session in the
    holdout (`learning.holdout`), and both must draw the same line.

    `holdout_in` must be at least 1; zero is a `ValueError` (the wire answers
    it with invalid params before it gets here).
    """
    if holdout_in < 1:
        raise ValueError(f"holdout_in must be at least 1, got {holdout_in}")
    return fnv1a_64_value(episode.encode("utf-8")) % holdout_in == 0


def checkout_root(path: str | os.PathLike[str]) -> str:
    """The checkout a directory is in: the nearest directory at or above
    `path` (resolved physically, links included) that holds `.git` — a
    repository's main worktree, a linked worktree or a submodule — else
    `path` itself. Where an agent reads a checkout's own files (its
    `CLAUDE.md`, its `.claude/settings.json`). Found by looking, as git
    looks, with no `git` process.

    A path that does not exist is its own checkout, normalised."""
    start = os.path.realpath(os.fspath(path))
    here = start
    while True:
        if os.path.lexists(os.path.join(here, GIT_MARKER)):
            return here
        parent = os.path.dirname(here)
        if parent == here:
            return start
        here = parent


def project_root(path: str | os.PathLike[str]) -> str:
    """The project a directory belongs to: its repository. That is the
    checkout it is in (`checkout_root`), except in a linked worktree (`git
    worktree add`), whose project is the repository's main worktree — every
    worktree of one repository is one project, so its lessons add up and
    its rules ride in every checkout. Found with no `git` process: the
    harness's cold path resolves a run's project on every start.

    A path that does not exist is its own project, normalised: a session
    recorded in a directory since removed still names where it ran."""
    here = checkout_root(path)
    main = main_worktree(here)
    return here if main is None else main


#: What a `.git` file says before the path of its git directory.
_GITDIR_PREFIX = "gitdir:"
#: The folder of a repository's git directory that holds one git directory
#: per linked worktree, and the files in each that lead back and home.
_WORKTREES_DIR = "worktrees"
_COMMONDIR_FILE = "commondir"
_BACKLINK_FILE = "gitdir"
#: A regular file's type bits in `st_mode` (POSIX's fixed values, spelled
#: here so that `stat` stays unimported on the cold path).
_S_IFMT, _S_IFREG = 0o170000, 0o100000
#: More than any of these small files holds; a bigger one is not git's.
_POINTER_MAX = 4096


def _pointer(path: str, prefix: str = "") -> str | None:
    """The one path a small git bookkeeping file names (after `prefix`),
    made absolute against the file's folder, or `None` when it cannot be
    read, is not such a file, or names nothing. Opened without blocking
    (a FIFO in its place never hangs a run's start)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        if os.fstat(fd).st_mode & _S_IFMT != _S_IFREG:
            return None
        raw = os.read(fd, _POINTER_MAX + 1)
    except OSError:
        return None
    finally:
        os.close(fd)
    if len(raw) > _POINTER_MAX:
        return None
    try:
        text = raw.decode("utf-8").strip()
    except UnicodeDecodeError:
        return None
    if not text.startswith(prefix):
        return None
    named = text[len(prefix) :].strip()
    if not named or "\n" in named or "\x00" in named:
        return None
    return os.path.realpath(os.path.join(os.path.dirname(path), named))


def main_worktree(checkout: str) -> str | None:
    """The main worktree's root of the repository whose LINKED worktree is
    at `checkout` (a `checkout_root`), or `None` when `checkout` is no
    linked worktree: a main worktree (`.git` is a folder), a submodule
    (its `.git` file names `<super>/.git/modules/<name>`, a git directory
    with no `commondir`), a worktree of a bare repository or of a
    submodule (its common directory is not a `.git` folder inside a
    checkout), or anything unreadable. Each of those stays its own
    project, as every checkout was before.

    A linked worktree is recognised by all of git's own bookkeeping
    agreeing, read as plain files: `<checkout>/.git` says `gitdir: G`; `G`
    is `<common>/worktrees/<name>`; `G/commondir` leads to `<common>`;
    `G/gitdir` leads back to `<checkout>/.git` (a worktree moved without
    `git worktree repair`, or a `.git` file written by hand to claim
    another repository, fails this); and `<common>` is the `.git` folder
    of its parent, the main worktree."""
    marker = os.path.join(checkout, GIT_MARKER)
    if os.path.isdir(marker):
        return None
    gitdir = _pointer(marker, _GITDIR_PREFIX)
    if gitdir is None or os.path.basename(os.path.dirname(gitdir)) != _WORKTREES_DIR:
        return None
    common = _pointer(os.path.join(gitdir, _COMMONDIR_FILE))
    if common is None or common != os.path.dirname(os.path.dirname(gitdir)):
        return None
    if _pointer(os.path.join(gitdir, _BACKLINK_FILE)) != os.path.realpath(marker):
        return None
    if os.path.basename(common) != GIT_MARKER or os.path.islink(common) or not os.path.isdir(common):
        return None
    return os.path.dirname(common)


#: Git's reflog of a repository's HEAD, under its git directory (git's
#: layout, not the store's).
_HEAD_REFLOG = os.path.join("logs", "HEAD")
#: How much of a reflog is read for a branch's name: the newest part, where
#: a worktree's merge is.
_REFLOG_TAIL = 1 << 20


def branch_known(repository: str, branch: str) -> bool:
    """Whether the git directory of the main worktree at `repository` names
    `branch`: a ref of it (a remote's too), a packed one, or a line of its
    HEAD's reflog that merges or checks it out — read as plain files, no
    `git` process. What finds a removed worktree's repository
    (`scope.repository_of_removed_worktree`)."""
    git = os.path.join(repository, ".git")
    if os.path.isfile(os.path.join(git, "refs", "heads", *branch.split("/"))):
        return True
    remotes = os.path.join(git, "refs", "remotes")
    try:
        if any(os.path.isfile(os.path.join(remotes, r, *branch.split("/"))) for r in os.listdir(remotes)):
            return True
    except OSError:
        pass
    needle = f"refs/heads/{branch}"
    if needle in _tail(os.path.join(git, "packed-refs")).split():
        return True
    said = _tail(os.path.join(git, _HEAD_REFLOG))
    words = (f"merge {branch}:", f"merge {branch} ", f" to {branch}\n", f"from {branch} to ", f"branch '{branch}'")
    return any(w in said for w in words)


def _tail(path: str) -> str:
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            size = f.tell()
            f.seek(max(0, size - _REFLOG_TAIL))
            return f.read().decode("utf-8", "replace")
    except OSError:
        return ""


def linked_worktrees(root: str) -> list[str]:
    """The roots of every linked worktree of the repository whose main
    worktree is at `root`, sorted: each `<root>/.git/worktrees/*/gitdir`
    names one. A worktree that no longer exists (removed without `git
    worktree prune`), whose own `.git` does not lead back here
    (`main_worktree`), or whose folder another user owns (`_owned_by`), is
    left out quietly."""
    common = os.path.join(root, GIT_MARKER)
    try:
        names = sorted(os.listdir(os.path.join(common, _WORKTREES_DIR)))
    except OSError:
        return []
    real_root = os.path.realpath(root)
    try:
        owner = os.stat(real_root).st_uid
    except OSError:
        return []
    out: list[str] = []
    for name in names:
        marker = _pointer(os.path.join(common, _WORKTREES_DIR, name, _BACKLINK_FILE))
        if marker is None or os.path.basename(marker) != GIT_MARKER:
            continue
        checkout = os.path.dirname(marker)
        if main_worktree(checkout) == real_root and checkout not in out and _owned_by(checkout, owner):
            out.append(checkout)
    return out


def _owned_by(path: str, uid: int) -> bool:
    """Whether the folder `path` belongs to `uid`. A repository unpacked
    from an archive can carry a `worktrees/x/gitdir` naming a folder of
    another user's that holds a `.git` file leading back: every check of
    git's bookkeeping agrees, and the project's rules were once exported
    into it. A checkout of the repository's own owner is the only one."""
    try:
        return os.stat(path).st_uid == uid
    except OSError:
        return False


def _slug(root: str) -> str:
    name = os.path.basename(root.rstrip("/")).lower()
    out: list[str] = []
    for ch in name:
        ch = ch if ch in _SLUG_CHARS else "-"
        if ch == "-" and out and out[-1] == "-":
            continue
        out.append(ch)
    slug = "".join(out).strip("-_")[:_SLUG_MAX].strip("-_")
    return slug or "project"


def project_id(root: str) -> str:
    """The stable id of the project at the absolute path `root` (already a
    `project_root`): `<slug>-<16 hex digits>`, see above."""
    return f"{_slug(root)}-{fnv1a_64(os.fsencode(root))}"


def is_project_id(text: str) -> bool:
    """Whether `text` is spelled as `project_id` spells one: a name in a
    rules directory that is not is no project's file."""
    slug, sep, digest = text.rpartition("-")
    return (
        bool(sep)
        and 0 < len(slug) <= _SLUG_MAX
        and slug[0] not in "-_"
        and set(slug) <= _SLUG_CHARS
        and len(digest) == 16
        and set(digest) <= _HEX
    )


def scoped_rules_name(domain: str, kind: str, project: str | None = None) -> str:
    """`<domain>.<kind>.toml` for the global scope, `<domain>@<id>.<kind>.toml`
    for the project whose id is `project`. Names only; the caller has
    checked the domain (and the id, when it came from outside)."""
    scope = "" if project is None else PROJECT_SEP + project
    return f"{domain}{scope}.{kind}{RULES_SUFFIX}"


def split_rules_name(name: str, kinds: tuple[str, ...]) -> tuple[str, str, str | None] | None:
    """`(domain, kind, project id or None)` from a rules file's name, or
    `None` when it is not one of `kinds`' names or names a project id that
    is not one. The domain is the caller's to validate."""
    for kind in kinds:
        suffix = f".{kind}{RULES_SUFFIX}"
        if name.endswith(suffix):
            stem = name[: -len(suffix)]
            domain, sep, project = stem.partition(PROJECT_SEP)
            if not sep:
                return stem, kind, None
            if not is_project_id(project):
                return None
            return domain, kind, project
    return None


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
#: Sessions the agents' session-end hooks handed over and the hook pass has
#: not read yet, one small JSON file each (`agents.hookqueue`). Process
#: state, git-ignored.
HOOK_QUEUE_DIR = "hook-queue"
#: What the hook pass writes on stdout and stderr (a traceback, if ever).
HOOK_PASS_LOG_FILE = "hook-pass.log"
#: Transcripts of handed-over sessions in the holdout, kept whole so
#: `validate` can replay them (`learning.holdout`): what people and
#: assistants said, so git-ignored, never history.
TRANSCRIPTS_DIR = "transcripts"


def proposals_dir(root: str | os.PathLike[str]) -> str:
    """`<root>/proposals`, for a reader with the standard library alone (the
    session-start hook's count of pending proposals)."""
    return os.path.join(root, PROPOSALS_DIR)


def hook_log_path(root: str | os.PathLike[str]) -> str:
    """`<root>/logs/hooks.log`: where an agent hook's runs are recorded."""
    return os.path.join(root, LOGS_DIR, HOOK_LOG_FILE)


#: The hook log's words for a session end the hook could not queue (its
#: disk full): `agents.hookqueue` writes and reads them, and the
#: session-start hook looks for them in the log's last `LOST_SCAN_BYTES`
#: before it imports anything to read them.
HOOK_LOG_NOT_QUEUED = "could not queue the session"
LOST_SCAN_BYTES = 256 * 1024


def hook_log_names_lost_ends(root: str | os.PathLike[str]) -> bool:
    """Whether the hook log's end holds `HOOK_LOG_NOT_QUEUED` at all: the
    session-start hook's cheap first look (`hookqueue.lost_ends` reads
    the lines, when it does)."""
    try:
        with open(hook_log_path(root), "rb") as f:
            f.seek(0, os.SEEK_END)
            f.seek(max(0, f.tell() - LOST_SCAN_BYTES))
            return HOOK_LOG_NOT_QUEUED.encode() in f.read()
    except OSError:
        return False


def hook_pass_log_path(root: str | os.PathLike[str]) -> str:
    """`<root>/logs/hook-pass.log`: the detached hook pass's stdout and stderr."""
    return os.path.join(root, LOGS_DIR, HOOK_PASS_LOG_FILE)


def hook_queue_dir(root: str | os.PathLike[str]) -> str:
    """`<root>/hook-queue`, for the session-end hook, which queues with the
    standard library alone."""
    return os.path.join(root, HOOK_QUEUE_DIR)


def started_path(root: str | os.PathLike[str]) -> str:
    """`<root>/started.jsonl`, for the session-start hook, which records
    with the standard library alone."""
    return os.path.join(root, STARTED_FILE)


def no_model_path(root: str | os.PathLike[str]) -> str:
    """`<root>/cache/no-model.json`, for the session-start hook, which reads
    it with the standard library alone."""
    return os.path.join(root, NO_MODEL_FILE)


def transcripts_dir(root: str | os.PathLike[str]) -> str:
    """`<root>/transcripts`: the holdout sessions' kept transcripts."""
    return os.path.join(root, TRANSCRIPTS_DIR)


#: The suffix of a write in flight (`files.write_atomic`'s temp files, named
#: `<target>.<pid>-<random>.tmp` beside their target).
TMP_SUFFIX = ".tmp"

REFLECTIONS_FILE = "reflections.jsonl"
MINED_FILE = "mined.jsonl"
MINED_OUTBOX_FILE = "mined_outbox.jsonl"
DISTILLED_FILE = "distilled.jsonl"
RUNS_FILE = "runs.jsonl"
VALIDATIONS_FILE = "validations.jsonl"
#: What `import claude` / `import codex` queued, per session file: the keys
#: of the interventions queued (so a grown session queues only its new
#: ones) and the file's size and mtime (so an unchanged one is not read).
IMPORTED_FILE = "imported.jsonl"
#: The person's vouches for corrections the reader's doubt held back
#: (`agents.held`): which, for what calls, who and when. In the history.
VOUCHED_FILE = "vouched.jsonl"
#: One line per correction that showed a live learned rule was not followed
#: (`domain.record.Repeat`): the rule's record of being corrected again.
REPEATS_FILE = "repeats.jsonl"
#: One line per call, after a rule's accept, that its ask permission made
#: the agent ask about, and what the person did (`domain.record.Asked`).
ASKED_FILE = "asked.jsonl"
#: One line per agent session the session-start hook saw begin, with the
#: learned rule lines that reached the agent then (`agents.started`): what
#: a rule's exposure is counted from.
STARTED_FILE = "started.jsonl"
JOBS_DIR = "jobs"
LOCK_FILE = ".lock"
GITIGNORE_FILE = ".gitignore"
#: The store's history (a git repository at the root).
GIT_DIR = ".git"
#: The local model server's log, when `mecha-sidecar demo` started one for
#: its throwaway store.
LOCAL_MODEL_LOG = "local-model.log"
#: Work handed over and not yet reflected (whole transcripts: never history).
INBOX_DIR = "inbox"
#: Inbox entries a pass set aside — a fault that will not change on retry,
#: or interventions the model never answered usably — until a person retries
#: or drops them (`mecha-sidecar inbox`).
SET_ASIDE_DIR = "inbox/set-aside"
#: One line per reflector answer a pass recorded, usable or not: what lets
#: a session be mined once per intervention, and an intervention the model
#: cannot answer be set aside after `MAX_UNUSABLE_ANSWERS` rather than asked
#: for ever.
ATTEMPTS_FILE = "reflect_attempts.jsonl"
#: Machine-local memory that is not learning history (which structured mode a
#: model server accepted, the last rules block read): `layout.CACHE_DIR`,
#: git-ignored, safe to delete.
STRUCTURED_MODES_FILE = "cache/structured-modes.json"
#: Left by a reflect pass that failed for want of a model while corrections
#: waited, for the next session-start hook to say so once
#: (`agents.notice.no_model_line`); gone once a pass has a model.
NO_MODEL_FILE = "cache/no-model.json"
#: A proposal's diff written as a file, for an editor with no document of
#: its own to show it in (`core.editor.diff_file`): derived, rewritten on
#: every request, safe to delete.
PROPOSAL_DIFFS_DIR = "cache/diffs"
#: A change of several files made as one (accepting or rejecting a
#: proposal): each new file staged here whole, then `journal/intent.json`
#: naming where each goes, then the renames into place. An intent on disk
#: is a change decided and not yet finished, which the next writer finishes
#: (`transaction`); staged files without one are a change abandoned before
#: it was decided. Process state: git-ignored.
JOURNAL_DIR = "journal"
INTENT_FILE = "journal/intent.json"
#: A journal whose intent could not be trusted is moved aside, whole, to a
#: folder named with this and the time (`transaction`): never acted on,
#: never deleted, kept out of history like the journal.
JOURNAL_ASIDE = "journal.set-aside-"

#: What git must never sweep into history. Process state, not learning
#: history: the writer lock, in-flight temp files, background jobs' records
#: and logs, and transcripts — waiting in the inbox, or kept for a holdout
#: (which may quote third-party content and must never enter history). Each
#: such folder also holds a `.gitignore` of its own, but that one is a file
#: a sync tool or an editor can empty: emptied, the next pass committed the
#: holdout transcripts, since this list did not name their folder.
GITIGNORE_ENTRIES: tuple[str, ...] = (
    LOCK_FILE,
    "*" + TMP_SUFFIX,
    JOBS_DIR + "/",
    LOGS_DIR + "/",
    INBOX_DIR + "/",
    TRANSCRIPTS_DIR + "/",
    CACHE_DIR + "/",
    JOURNAL_DIR + "/",
    JOURNAL_ASIDE + "*/",
    HOOK_QUEUE_DIR + "/",
)

USER_KIND = "user"
LEARNED_KIND = "learned"


def rules_file_name(domain: str, kind: str, project: str | None = None) -> str:
    """`<domain>.<kind>.toml`, or `<domain>@<project id>.<kind>.toml` for the
    project whose root is `project`: the one spelling of a rules file's name
    (`layout.scoped_rules_name`)."""
    if kind not in (USER_KIND, LEARNED_KIND):
        raise ValueError(f"unknown rules kind {kind!r}")
    return scoped_rules_name(domain, kind, None if project is None else project_id(project))


def sibling_kind(kind: str) -> str:
    """The other file of a domain's pair: a person's rules are checked
    against the learned ones and the other way round."""
    return USER_KIND if kind == LEARNED_KIND else LEARNED_KIND


def job_log_name(job_id: str) -> str:
    """A job's log, relative to the store root (`logs/<id>.log`), as the job
    record names it."""
    return f"{LOGS_DIR}/{job_id}.log"


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
    until = racy_until(fingerprint)
    return until is not None and until > now_ns


#: A time no clock reaches: when a fingerprint taken mid-change is trusted.
_NEVER = 1 << 128


def racy_until(fingerprint: list[list[Any]] | None) -> int | None:
    """The time (`time.time_ns()`) from which `fingerprint` is no longer
    racy (`is_racy`): its newest stamp plus the window its filesystem
    needs; `None` when it never was; a time far ahead for a fingerprint
    taken while an entry vanished, which never becomes trustworthy."""
    if fingerprint is None:
        return None
    stamps: list[int] = []
    for ident in fingerprint:
        if len(ident) < 7:
            return _NEVER
        stamps += ident[4:6]
        if ident[6]:
            stamps += ident[6][3:5]
    if not stamps:
        return None
    window = RACY_COARSE_NS if any(s % 1_000_000_000 == 0 for s in stamps) else RACY_FINE_NS
    return max(stamps) + window
