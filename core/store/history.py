"""The store's history: its own git repository, when git is available.

`git log` is the audit trail, `git revert` the undo for a bad acceptance;
without git the history is lost and nothing else is. Git runs only under
the writer lock, with a fixed identity, no hooks, and against the store's
own repository — never one it happens to sit in. `subprocess` is imported
where git runs: an agent run reading its rules block needs no git.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import TYPE_CHECKING

from mecha.core.store.files import store_full
from mecha.core.store.layout import GIT_DIR

if TYPE_CHECKING:
    import subprocess

log = logging.getLogger(__name__)

#: The one identity every store commit is made under, so a commit works on a
#: machine with no git configuration and the history says who wrote it.
GIT_IDENTITY: tuple[str, ...] = ("-c", "user.name=mecha", "-c", "user.email=mecha@localhost")

#: Environment a store's git must not inherit: any of these would point git
#: at another repository (a harness run from inside a git hook has GIT_DIR
#: set) or put another name on the store's history.
_GIT_ENV_SCRUB: tuple[str, ...] = (
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_COMMON_DIR",
    "GIT_NAMESPACE",
    "GIT_CEILING_DIRECTORIES",
    "GIT_AUTHOR_NAME",
    "GIT_AUTHOR_EMAIL",
    "GIT_AUTHOR_DATE",
    "GIT_COMMITTER_NAME",
    "GIT_COMMITTER_EMAIL",
    "GIT_COMMITTER_DATE",
)
_GIT_TIMEOUT_S = 60
#: A git lock older than this, with no sign of whose it is, is a dead git's
#: (`stale_lock`): long enough for a person's own `git commit` waiting on
#: its editor in the store, which holds `index.lock` meanwhile.
_STALE_GIT_LOCK_S = 600
#: A git lock older than this, when mecha's own git was interrupted
#: (`_IN_FLIGHT` still there), is that git's: a store's `add` and `commit`
#: take well under a second, and a git orphaned by its killed parent
#: finishes within this.
_INTERRUPTED_LOCK_S = 5
#: The file mecha's git runs under (`_add_and_commit`): created before git
#: starts, removed when it is done. Found at the next commit, it says the
#: last one was killed mid-way, and the locks its git left are known dead.
_IN_FLIGHT = "mecha-commit-in-flight"
#: How git says it ran out of room (it runs with `LC_ALL=C`).
_FULL_SIGNS = ("No space left on device", "Disk quota exceeded", "Out of diskspace")


class History:
    """The git repository of the store at `root`."""

    def __init__(self, root: Path):
        self._root = root

    def exists(self) -> bool:
        """Whether the store is a git repository (its audit trail)."""
        return (self._root / GIT_DIR).is_dir()

    def git(self, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
        import subprocess

        env = {k: v for k, v in os.environ.items() if k not in _GIT_ENV_SCRUB}
        env["LC_ALL"] = "C"  # "nothing to commit" is matched in English
        env["GIT_TERMINAL_PROMPT"] = "0"
        return subprocess.run(
            ["git", *args],
            cwd=self._root,
            env=env,
            input=stdin,
            stdin=subprocess.DEVNULL if stdin is None else None,
            capture_output=True,
            text=True,
            timeout=_GIT_TIMEOUT_S,
            check=False,
            # What git creates (objects, the index, COMMIT_EDITMSG) is as
            # private as the rest of the store, whatever the caller's umask.
            umask=0o077,
        )

    def init(self) -> None:
        import subprocess

        try:
            result = self.git("-c", "init.defaultBranch=main", "init", "--quiet")
        except (OSError, subprocess.SubprocessError) as e:
            log.warning("git unavailable (%s); the learning store keeps no history", e)
            return
        if result.returncode != 0:
            log.warning("git init failed in the learning store: %s", result.stderr.strip())

    def commit(self, message: str, *, full_is_error: bool = False) -> bool:
        """Commit the store's current state; `True` if a commit was made.

        Best effort, always: losing git loses the audit trail, never the
        data, so a failure is a logged warning and "nothing to commit" is not
        even that. Runs with a fixed identity and without hooks, against this
        directory's own repository only — never one it happens to sit in.
        With `full_is_error`, git failing for want of room is `StoreFull`
        naming the repository instead (`transaction` keeps its change's
        intent until the commit is made).
        """
        # The message goes to git on its standard input (`-F -`), never as an
        # argument: the kernel caps one argument at 128 KiB, and a long
        # message (a proposal's evidence) would skip the commit of a change
        # already written. A NUL would end it early there too.
        message = message.replace("\x00", "\\0")
        git_dir = self._root / GIT_DIR
        if not git_dir.exists():
            log.warning("the learning store is not a git repository; not committing %r", message)
            return False
        if git_dir.is_symlink() or not git_dir.is_dir():
            # A link, or a `gitdir:` file, would put the commit somewhere else.
            log.warning("%s is not the store's own directory; not committing %r", git_dir, message)
            return False
        self.clear_stale_lock()
        said = self._add_and_commit(message)
        if said is None:
            return True
        if "nothing to commit" in said or "nothing added to commit" in said:
            return False
        if full_is_error and any(sign in said for sign in _FULL_SIGNS):
            raise store_full(git_dir, kept="the change is not in the store's history yet")
        log.warning("learning store commit failed: %s", said.strip())
        return False

    def _add_and_commit(self, message: str) -> str | None:
        """`git add -A` and `git commit`: `None` when a commit was made, else
        what git (or the attempt to run it) said."""
        import subprocess

        repo = ("--git-dir", str(self._root / GIT_DIR), "--work-tree", str(self._root))
        # No detached `gc --auto`: a background git outliving the commit
        # would hold the repository's locks where nothing waits for it.
        config = (*GIT_IDENTITY, "-c", "commit.gpgsign=false", "-c", f"core.hooksPath={os.devnull}", "-c", "gc.autoDetach=false")
        marker = self._root / GIT_DIR / _IN_FLIGHT
        # A marker already there is a killed commit's whose locks stand (too
        # young to clear yet): this try leaves it for the commit that clears them.
        inherited = marker.exists()
        try:
            if not inherited:
                marker.write_bytes(b"%d\n" % os.getpid())
        except OSError:
            pass  # the commit below says what is wrong with the repository
        try:
            added = self.git(*repo, "add", "-A")
            if added.returncode != 0:
                return f"git add failed: {added.stderr.strip()}"
            done = self.git(*repo, *config, "commit", "--quiet", "-F", "-", stdin=message)
        except (OSError, subprocess.SubprocessError) as e:
            return f"skipped ({e})"
        finally:
            if not inherited:
                marker.unlink(missing_ok=True)
        if done.returncode == 0:
            return None
        return f"{done.stdout}\n{done.stderr}"

    def stall(self) -> str | None:
        """Why the history has stopped taking commits, or `None`: a lock a
        git left (every commit fails while it stands, each with only a log
        warning), and how many changed files wait outside the history."""
        import subprocess

        git_dir = self._root / GIT_DIR
        locks = git_locks(git_dir)
        if not locks:
            return None
        names = ", ".join(f"{path.relative_to(git_dir)} ({age:.0f}s old)" for path, age in locks[:5])
        how = ("mecha's own commit was killed mid-way, and the next write removes them"
               if interrupted_commit(git_dir) else
               f"remove them if no git is running in {self._root} (the next write does, once they are "
               f"{_STALE_GIT_LOCK_S // 60} minutes old)")
        outside = ""
        try:
            status = self.git("status", "--porcelain", "--untracked-files=all")
            changed = sum(1 for line in status.stdout.splitlines() if line.strip()) if status.returncode == 0 else 0
            if changed:
                outside = f"; {changed} changed file(s) are outside the history until then"
        except (OSError, subprocess.SubprocessError):
            pass
        return f"git left {names}: every commit fails while they stand{outside}; {how}"

    def clear_stale_lock(self) -> None:
        """Remove the locks of a git that died mid-command (power loss, a
        killed process group): `index.lock`, `HEAD.lock`, a branch's
        `refs/heads/main.lock`, `packed-refs.lock` — left in place, any one
        of them fails every later commit, and the audit trail stops for
        good. A `kill -9` loop over accepts once left `HEAD.lock` behind and
        every commit after it failed while the data went on changing.
        Mecha runs git only under the writer lock; which locks are a dead
        git's is `stale_lock`'s decision."""
        git_dir = self._root / GIT_DIR
        interrupted = (git_dir / _IN_FLIGHT).exists()
        kept = False
        for lock, age in git_locks(git_dir):
            if stale_lock(age, interrupted=interrupted):
                log.warning("removing %s, left %.0fs ago by a git that did not finish", lock, age)
                lock.unlink(missing_ok=True)
            else:
                kept = True
        if interrupted and not kept:
            # The marker goes with the last of its locks: while one is too
            # young to clear, it is still known as mecha's killed commit's.
            (git_dir / _IN_FLIGHT).unlink(missing_ok=True)


def stale_lock(age_s: float, *, interrupted: bool) -> bool:
    """Whether a git lock `age_s` old is a dead git's: when mecha's own
    commit was interrupted (its in-flight marker was left), once older than
    the few seconds an orphaned git could still need; otherwise only after
    `_STALE_GIT_LOCK_S`, since it may be a person's git at work in the store."""
    return age_s > (_INTERRUPTED_LOCK_S if interrupted else _STALE_GIT_LOCK_S)


def git_locks(git_dir: Path) -> list[tuple[Path, float]]:
    """Every lock file git keeps in the repository `git_dir` (its own files'
    `*.lock` and those of every ref), with its age in seconds, oldest first."""
    import time

    found: list[tuple[Path, float]] = []
    now = time.time()
    for folder, recurse in ((git_dir, False), (git_dir / "refs", True)):
        try:
            candidates = folder.rglob("*.lock") if recurse else folder.glob("*.lock")
            for path in candidates:
                try:
                    found.append((path, now - path.lstat().st_mtime))
                except OSError:
                    continue
        except OSError:
            continue
    return sorted(found, key=lambda f: -f[1])


def interrupted_commit(git_dir: Path) -> bool:
    """Whether mecha's last commit in `git_dir` was killed before it ended."""
    return (git_dir / _IN_FLIGHT).exists()
