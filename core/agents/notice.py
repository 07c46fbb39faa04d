"""What an agent's session-start hook tells the person, with the standard
library alone.

Claude Code and Codex run the session-start hook before every session, and
the agent's first answer waits for it, so it may cost no more than an
interpreter's start: this module imports `os` and the `json` package's C
scanner (`_json`, without the package, whose import compiles regular
expressions) and one module of this project, the store's layout.
`tests/test_import_budget.py` pins that.

What it says, and to whom. One line, and only when proposals wait for a
person's review: how many, and the command that lists them. It goes out as
the hook output's `systemMessage`, which both agents show the *person*; it is
never model context (`hookSpecificOutput.additionalContext`, or plain text on
stdout, which Claude Code hands to the model): a rule proposal is the
person's to accept, and an agent told about pending rules might act on rules
nobody accepted. With nothing pending, stdout stays empty.

"Pending" here is what `mecha.core.learning.proposals.is_pending` says of a
proposal file, read without msgspec; a test holds the two to the same answer
on a real store.

No silent loop. With no model configured every pass fails with `NoModel`,
and a person who installed the plugin heard nothing: corrections piled up in
the inbox, no proposal ever came, and only `doctor` said `BAD model`. So a
reflect pass that fails for want of a model leaves a note in the store
(`note_no_model`: how many corrections wait), and the next session start
says so — once: the note remembers it was told, a later failing pass keeps
that, and the first pass that has a model takes the note away
(`clear_no_model`), so a model that goes missing again is told again. The
line names the one command that makes the person's own agent the model.

Every command a line names is one the person can paste: `mecha-sidecar`
when that name on their `PATH` is this installation, else the console
script by its absolute path (`typed_program`) — a hook installed from a
virtual environment runs without it on `PATH`.
"""

from __future__ import annotations

import os
import sys

from mecha.core.environment.agents import AGENTS, CODEX, agent_home
from mecha.core.environment.agents import agent as agent_row
from mecha.core.plainjson import quote as _quote
from mecha.core.plainjson import scan as _scan
from mecha.core.shellwords import PROGRAM, mecha_or_none
from mecha.core.store.layout import LEARNING_DIR_ENV, no_model_path, proposals_dir

#: The status a proposal file carries while it waits for a person; the wire
#: spelling of `ProposalStatus.PENDING`.
PENDING_STATUS = "pending"
#: A proposal file larger than this is not read here (a real one is a few
#: KiB); it is the full reader's to report.
_MAX_PROPOSAL_BYTES = 1 << 22


def _status(data: bytes) -> object:
    text = data.decode("utf-8").strip(" \t\r\n")
    value, end = _scan(text, 0)
    if end != len(text) or not isinstance(value, dict):
        raise ValueError("not one JSON object")
    return value.get("status")


def pending_proposals(root: str) -> int:
    """How many proposals under the store at `root` wait for a person. A
    store that does not exist has none; an unreadable file is not counted
    (the full reader names it: `mecha-sidecar proposals`)."""
    try:
        entries = os.scandir(proposals_dir(root))
    except (FileNotFoundError, NotADirectoryError):
        return 0
    count = 0
    with entries:
        for entry in entries:
            name = entry.name
            if name.startswith(".") or not name.endswith(".json"):
                continue
            try:
                if entry.stat().st_size > _MAX_PROPOSAL_BYTES:
                    continue
                with open(entry.path, "rb") as f:
                    status = _status(f.read())
            except (OSError, ValueError, StopIteration, RecursionError):
                continue
            if status == PENDING_STATUS:
                count += 1
    return count


def typed_program(env: dict[str, str] | None = None, executable: str | None = None) -> str:
    """How a person runs this installation's console script: `mecha-sidecar`
    when the first of that name on `PATH` is the script beside this
    interpreter, else that script's absolute path (plain `mecha-sidecar`
    when there is no script beside it to name)."""
    env = dict(os.environ) if env is None else env
    script = os.path.join(os.path.dirname(os.path.abspath(executable or sys.executable)), PROGRAM)
    if not os.path.isfile(script):
        return PROGRAM
    for folder in (env.get("PATH") or "").split(os.pathsep):
        found = os.path.join(folder or ".", PROGRAM)
        if os.path.isfile(found) and os.access(found, os.X_OK):
            try:
                return PROGRAM if os.path.samefile(found, script) else script
            except OSError:
                return script
    return script


def notice_line(pending: int, learning_dir: str | None = None, review: str | None = None,
                program: str = PROGRAM) -> str | None:
    """The one line a person is shown at a session's start, or `None`.

    `review` is the agent's own command that reviews proposals inside the
    session (the plugin's `/mecha:review`; the plugin's hook names it): the
    line offers it first, so reviewing never means leaving the agent. Without
    it, the terminal commands."""
    if pending <= 0:
        return None
    listing = (mecha_or_none("proposals", learning_dir=learning_dir, program=program)
               or "mecha-sidecar --learning-dir STORE proposals")
    what = "1 rule proposal awaits" if pending == 1 else f"{pending} rule proposals await"
    if review:
        return (
            f"mecha: {what} your review: type {review} to go through it here "
            f"(or run `{listing}` in a terminal)"
        )
    return (
        f"mecha: {what} your review: `{listing}` lists them, "
        f"`proposals show ID` shows the change, `proposals accept ID` or `reject ID` decides it"
    )


def _read_note(path: str) -> dict[str, object] | None:
    try:
        with open(path, "rb") as f:
            data = f.read(1 << 16)
        text = data.decode("utf-8").strip(" \t\r\n")
        value, end = _scan(text, 0)
    except (OSError, ValueError, StopIteration, RecursionError):
        return None
    return value if end == len(text) and isinstance(value, dict) else None


def _write_note(path: str, waiting: int, told: bool) -> None:
    """The note, whole or not at all (a temp file renamed over it)."""
    os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
    tmp = f"{path}.{os.getpid()}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    try:
        os.write(fd, b'{"waiting": %d, "told": %s}\n' % (waiting, b"true" if told else b"false"))
    finally:
        os.close(fd)
    os.replace(tmp, path)


def note_no_model(root: str, waiting: int) -> None:
    """A reflect pass failed for want of a model while the corrections of
    `waiting` inbox entries (sessions, mostly) wait: leave that for the next session start, keeping whether it was told."""
    path = no_model_path(root)
    before = _read_note(path)
    _write_note(path, waiting, bool(before and before.get("told") is True))


def clear_no_model(root: str) -> None:
    """A pass has a model: the note, if any, is no longer true."""
    try:
        os.unlink(no_model_path(root))
    except FileNotFoundError:
        pass


def no_model_line(root: str, agent: str, program: str = PROGRAM) -> str | None:
    """The line that says corrections wait on a model nobody configured,
    the first time a session starts after a pass said so; `None` after that,
    or with no such note. Telling marks the note told."""
    path = no_model_path(root)
    note = _read_note(path)
    if note is None or note.get("told") is True:
        return None
    waiting = note.get("waiting")
    waiting = waiting if isinstance(waiting, int) and waiting > 0 else 0
    _write_note(path, waiting, True)
    what = f"corrections from {waiting} session{'s' if waiting != 1 else ''}" if waiting else "corrections"
    row = agent_row(agent) or AGENTS[0]
    use = mecha_or_none("model", "use", row.api, program=program) or f"mecha-sidecar model use {row.api}"
    doctor = mecha_or_none("doctor", program=program) or "mecha-sidecar doctor"
    return (
        f"mecha: {what} wait to be learned from, but no model is configured, so nothing is learned: "
        f"`{use}` makes {row.label} the model, on your own account "
        f"(`{doctor}` shows the other choices)"
    )


#: The Codex skill that reviews proposals inside Codex, as a person mentions
#: it, and where Codex finds a person's skills (`$CODEX_HOME/skills`, else
#: `~/.codex/skills`; and `~/.agents/skills`) and a repository's
#: (`.agents/skills` in the working directory or a folder above it, up to
#: the repository's root — where `hooks install codex --scope project` puts it).
CODEX_REVIEW_SKILL = "mecha-review"


def _repository_skill_folders(cwd: str) -> list[str]:
    """`.agents/skills` of `cwd` and each folder above it, up to the first
    that holds `.git` (all the way up outside a repository)."""
    out = []
    here = os.path.abspath(cwd)
    while True:
        out.append(os.path.join(here, *(CODEX.skills_project or ())))
        parent = os.path.dirname(here)
        if os.path.lexists(os.path.join(here, ".git")) or parent == here:
            return out
        here = parent


#: More than any skill file of ours: a larger one is not read.
_MAX_SKILL_BYTES = 256 * 1024


def _skill_bytes(path: str) -> bytes | None:
    """A regular file's bytes, opened without blocking (`None`: not there,
    not a regular file, too large or unreadable)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if not (info.st_mode & 0o170000 == 0o100000) or info.st_size > _MAX_SKILL_BYTES:
            return None
        return os.read(fd, _MAX_SKILL_BYTES + 1)
    except OSError:
        return None
    finally:
        os.close(fd)


def _our_review_skills(learning_dir: str | None, env: dict[str, str]) -> set[bytes]:
    """The review skill as `hooks install codex` writes it here: naming
    the program as this installation runs, with or without the store it
    was pinned to."""
    from mecha.core.agents.procedures import skill_program
    from mecha.core.agents.skills import SKILL_FILE, shipped

    stores = {None, learning_dir, env.get(LEARNING_DIR_ENV) or None}
    return {shipped(skill_program(store))[CODEX_REVIEW_SKILL][SKILL_FILE] for store in stores}


def codex_review_command(
    env: dict[str, str] | None = None, cwd: str | None = None, learning_dir: str | None = None
) -> str | None:
    """`$mecha-review` when that skill is installed where Codex reads a
    person's skills, or the skills of the repository `cwd` is in, else
    `None`: the notice offers only what is there.

    A repository's skill is a stranger's text until shown otherwise: a
    cloned repository once shipped its own `.agents/skills/mecha-review`,
    and the notice told the person to type `$mecha-review` — which ran the
    repository's instructions under mecha's name. So a repository's copy
    counts only when it is byte for byte the one this installation writes
    (`hooks install codex --scope project`, for the store `learning_dir`
    or the default one); any other skill
    of that name in the repository means the name is not ours to offer
    there at all, whatever the person's own folders hold."""
    env = dict(os.environ) if env is None else env
    home = env.get("HOME") or os.path.expanduser("~")
    folders = [os.path.join(agent_home(CODEX, home, env), "skills"), os.path.join(home, *(CODEX.skills_home or ()))]
    found = False
    if cwd is not None:
        ours: set[bytes] | None = None
        for folder in _repository_skill_folders(cwd):
            path = os.path.join(folder, CODEX_REVIEW_SKILL, "SKILL.md")
            if not os.path.lexists(path) and not os.path.lexists(os.path.dirname(path)):
                continue
            ours = _our_review_skills(learning_dir, env) if ours is None else ours
            if _skill_bytes(path) not in ours:
                return None
            found = True
    if found or any(os.path.isfile(os.path.join(f, CODEX_REVIEW_SKILL, "SKILL.md")) for f in folders):
        return "$" + CODEX_REVIEW_SKILL
    return None


def hook_output(line: str | None) -> bytes:
    """What the session-start hook writes on stdout: a JSON object with the
    line as `systemMessage` (shown to the person), or nothing at all."""
    if line is None:
        return b""
    return b'{"systemMessage": ' + _quote(line).encode("ascii") + b"}\n"
