"""`mecha-sidecar hook AGENT session-end|session-start`: what Claude Code or
Codex runs when a session ends, is compacted, or starts (`hooks install`
writes these commands; `mecha.core.agents.hooks` says which and why).

A hook must never disturb the agent that runs it, so both exit 0 whatever
happens, write nothing on stdout the agent could read as an instruction, and
record what they did — or why they could not — in the store's hook log
(`layout.hook_log_path`); a failure to write even that goes to stderr.

- **session-end** reads the hook's JSON, checks it names a session file,
  writes that down in the store's hook queue and returns: it reads no
  session, so it is done in the time an interpreter starts, whatever else
  runs (`mecha.core.agents.hookqueue` says why and how). Unless a hook
  pass is running already, it starts one (`hook AGENT pass`, detached, at
  a lower priority), which reads every queued session exactly as `import
  claude` / `import codex` does (the same `import_sessions`, given each
  file), then starts one detached reflect pass for all that was new
  (`jobs.start_pass`). That pass, once its lessons are in, starts a learn
  pass for each domain with enough of them (`learn_after`), so the next
  session-start notice can say a proposal waits without anyone having
  typed `learn`. The hook's stdout is pointed at /dev/null before anything
  else, so not even a stray warning reaches the agent. Running it twice
  queues nothing twice: an unchanged file is not read again, and an
  intervention is imported once. A session end that cannot be queued
  (the store's disk full) is logged in words that keep what the hook was
  told; the next hook pass queues it again (`hookqueue.lost_ends`), and
  the session-start hook, `import` and `learn` start one when the log
  names such an end (`resume_lost_ends`).
- **session-start** runs before every session and the agent's first answer
  waits for it, so it imports nothing beyond the standard library and the
  small modules that count pending proposals (`mecha.core.agents.notice`),
  name the store (`layout`) and record the start (`agents.started`: the
  session, and which learned rules reached the agent, for each rule's
  record); it prints one `systemMessage` line when proposals wait — and,
  once, a line when corrections wait on a model nobody configured
  (`notice.no_model_line`) — else nothing; with `--review CMD` (the plugin's hook) the line offers the
  agent's own command for the review.
"""

from __future__ import annotations

import os

# The hook imports nothing at the top but `os` (see above); these are for
# the type checker alone.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path

    from mecha.core.agents.hookpass import Read, Said

#: Most a hook's stdin is read to (an agent sends a few hundred bytes).
_MAX_INPUT = 1 << 24
#: The hook pass's own subcommand (`hook AGENT pass`): started by a
#: session-end hook, never written into an agent's settings.
HOOK_PASS = "pass"
#: How much gentler the hook pass runs than the hooks and the agent: it is
#: background work, and the hooks it serves must return within a second.
#: The reflect pass it starts (and the learn pass after) inherit it: a
#: storm of sessions ending once kept the person's machine busy for a
#: minute at full priority.
PASS_NICENESS = 10


class HookArgs:
    """What a hook command line says: the agent, the hook, the store named
    at install, and the agent's own review command when the hook comes with
    one (the Claude Code plugin's: `--review /mecha:review`)."""

    __slots__ = ("agent", "subcommand", "learning_dir", "review")

    def __init__(self, agent: str, subcommand: str, learning_dir: str | None, review: str | None) -> None:
        self.agent = agent
        self.subcommand = subcommand
        self.learning_dir = learning_dir
        self.review = review


def parse_argv(argv: list[str]) -> HookArgs | None:
    """`AGENT SUBCOMMAND [--learning-dir DIR] [--review CMD]`, or `None` if
    it is not that."""
    if len(argv) < 2:
        return None
    agent, subcommand, rest = argv[0], argv[1], argv[2:]
    options: dict[str, str] = {}
    while rest:
        name, eq, value = rest[0].partition("=")
        if name not in ("--learning-dir", "--review"):
            return None
        if eq:
            options[name], rest = value, rest[1:]
        elif len(rest) >= 2:
            options[name], rest = rest[1], rest[2:]
        else:
            return None
    from mecha.core.environment.agents import NAMES

    if agent not in NAMES or subcommand not in ("session-end", "session-start", HOOK_PASS):
        return None
    return HookArgs(agent, subcommand, options.get("--learning-dir"), options.get("--review"))


def _read_stdin() -> bytes:
    """All of stdin (the agent writes the hook's JSON and closes it; Codex
    counts a hook that exits before taking it as failed). Nothing is waited
    for on a terminal."""
    try:
        if os.isatty(0):
            return b""
    except OSError:
        return b""
    chunks: list[bytes] = []
    size = 0
    while size < _MAX_INPUT:
        try:
            chunk = os.read(0, 1 << 16)
        except OSError:
            break
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks)


def _quiet_stdout() -> None:
    """Point fd 1 (and `sys.stdout`) at /dev/null for the rest of the run."""
    try:
        sink = os.open(os.devnull, os.O_WRONLY)
        os.dup2(sink, 1)
        os.close(sink)
    except OSError:
        pass


def _record(root: object, agent: str, subcommand: str, what: str, session_id: str | None, cwd: str | None) -> None:
    """Into the hook log; to stderr when even that cannot be written."""
    try:
        from pathlib import Path

        from mecha.core.agents.hooks import log_hook_run

        log_hook_run(Path(str(root)), agent, subcommand, what, session_id=session_id, cwd=cwd)
    except Exception as exc:
        try:
            os.write(2, f"mecha-sidecar hook {agent} {subcommand}: {what} (and the hook log could not be written: "
                        f"{type(exc).__name__}: {exc})\n".encode("utf-8", "replace"))
        except OSError:
            pass


def run(argv: list[str]) -> int:
    """Run the hook `argv` names; always 0 (a hook never fails the agent)."""
    parsed = parse_argv(argv)
    if parsed is None:
        _read_stdin()
        os.write(2, b"mecha-sidecar hook: expected AGENT session-end|session-start [--learning-dir DIR] [--review CMD]\n")
        return 0
    from mecha.core.environment.agents import OWN_CALL_ENV

    if os.environ.get(OWN_CALL_ENV):
        # A pass's own model call on the agent's command line: not a
        # person's session, so nothing to queue and nothing to tell.
        _read_stdin()
        return 0
    if parsed.subcommand == "session-start":
        return session_start(parsed.agent, parsed.learning_dir, parsed.review)
    if parsed.subcommand == HOOK_PASS:
        return hook_pass(parsed.learning_dir)
    return session_end(parsed.agent, parsed.learning_dir)


def session_start(agent: str, learning_dir: str | None, review: str | None = None) -> int:
    data = _read_stdin()
    try:
        from mecha.core.agents.notice import (
            codex_review_command,
            hook_output,
            no_model_line,
            notice_line,
            pending_proposals,
            typed_program,
        )
        from mecha.core.environment.agents import CODEX
        from mecha.core.store.layout import resolve_root

        root = resolve_root(learning_dir)
        program = typed_program()
        pending = pending_proposals(root)
        if pending and review is None and agent == CODEX.name:
            review = codex_review_command(cwd=os.getcwd(), learning_dir=learning_dir)
        lines = [line for line in (no_model_line(root, agent, program),
                                   notice_line(pending, learning_dir, review, program)) if line]
        out = hook_output("\n".join(lines) if lines else None)
    except Exception as exc:
        from mecha.core.store.layout import resolve_root

        _record(resolve_root(learning_dir), agent, "session-start", f"failed: {type(exc).__name__}: {exc}", None, None)
        return 0
    view = memoryview(out)
    try:
        while view:
            view = view[os.write(1, view) :]
    except OSError:
        pass
    _record_start(agent, learning_dir, data)
    from mecha.core.store.layout import resolve_root

    resume_lost_ends(str(resolve_root(learning_dir)))
    return 0


def _record_start(agent: str, learning_dir: str | None, data: bytes) -> None:
    """The session's start and the rules that reached the agent, into the
    store (`agents.started`); a failure is logged, never raised."""
    from mecha.core.store.layout import resolve_root

    root = resolve_root(learning_dir)
    try:
        from mecha.core.agents.started import record_start

        record_start(root, agent, data)
    except Exception as exc:
        _record(root, agent, "session-start", f"failed to record the start: {type(exc).__name__}: {exc}", None, None)


def session_end(agent: str, learning_dir: str | None) -> int:
    """Queue the session the hook's input names and make sure a hook pass
    will read it (`agents.hookqueue`); nothing is read here. Input that
    names no session file is logged as the failure it is, and nothing is
    queued."""
    data = _read_stdin()
    _quiet_stdout()
    from mecha.core.store.layout import resolve_root

    root = resolve_root(learning_dir)
    fields = None
    try:
        from mecha.core.agents.hookqueue import enqueue, hook_fields, not_queued_words, pass_running

        fields = hook_fields(data)
        if fields is None:
            from mecha.core.agents.hooks import parse_hook_input

            parse_hook_input(data)  # says what is wrong, by name
            raise ValueError("the hook's input is not what an agent sends")
    except Exception as exc:
        _record(root, agent, "session-end", f"failed: {type(exc).__name__}: {exc}", None, None)
        return 0
    sid, cwd = fields.get("session_id"), fields.get("cwd")
    sid, cwd = (sid if isinstance(sid, str) else None), (cwd if isinstance(cwd, str) else None)
    try:
        enqueue(root, agent, fields)
    except Exception as exc:
        # Said in the words the next hook pass looks for: it queues the
        # session again once there is room (`hookqueue.lost_ends`).
        _record(root, agent, "session-end", not_queued_words(fields, exc), sid, cwd)
        return 0
    try:
        if not pass_running(root):
            _start_hook_pass(agent, root)
    except Exception as exc:
        _record(root, agent, "session-end", f"queued, but no hook pass started ({type(exc).__name__}: {exc}); "
                "the next session-end hook starts one", sid, cwd)
    return 0


def resume_lost_ends(root: str) -> None:
    """Start a hook pass when the hook log names a session end a hook could
    not queue and none runs: it queues them again (`hookqueue.lost_ends`).
    What the session-start hook, `import` and `learn` do, so such a session
    is read once there is room without anyone asking. Quick when there is
    none (the log's end, searched for the words); never raises."""
    try:
        from mecha.core.store.layout import hook_log_names_lost_ends

        if not hook_log_names_lost_ends(root):
            return
        from mecha.core.agents.hookqueue import lost_ends, pass_running

        lost = lost_ends(root)
        if lost and not pass_running(root):
            _start_hook_pass(lost[0].agent, root)
    except Exception as exc:
        _record(root, "?", "session-end", f"the session ends a hook could not queue are not queued again yet: "
                f"{type(exc).__name__}: {exc}", None, None)


def _start_hook_pass(agent: str, root: str) -> None:
    """`hook AGENT pass` as a process of its own session (the agent killing
    the hook's process group leaves it running), its output into the
    store's logs. Spawned, not forked: nothing of this process is copied."""
    import sys

    from mecha.core.store.layout import hook_pass_log_path

    log = hook_pass_log_path(root)
    os.makedirs(os.path.dirname(log), mode=0o700, exist_ok=True)
    argv = [sys.executable, "-P", "-m", "mecha.sidecar", "hook", agent, HOOK_PASS, "--learning-dir", root]
    actions = [
        (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
        (os.POSIX_SPAWN_OPEN, 1, log,
         os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW, 0o600),
        (os.POSIX_SPAWN_DUP2, 1, 2),
    ]
    os.posix_spawn(sys.executable, argv, dict(os.environ), file_actions=actions, setsid=True)


def hook_pass(learning_dir: str | None) -> int:
    """Read every queued session, then let go and look once more (see
    `agents.hookqueue`); another pass running means this one has nothing
    to do."""
    import time

    from mecha.core.agents.hookqueue import pass_lock, pending
    from mecha.core.store.layout import resolve_root

    root = resolve_root(learning_dir)
    try:
        os.nice(PASS_NICENESS)
    except OSError:
        pass
    while True:
        with pass_lock(root) as held:
            if not held:
                return 0
            time.sleep(GATHER_S)
            said: list[Said] = []
            passed: set[str] = set()
            read: Read = {}
            requeued: set[str] = set()
            ctx = None
            while True:
                _requeue_lost(root, requeued, said)
                while pending(root, passed):  # hooks that end while a round is read make the next round
                    ctx = _read_queued(root, said, passed, read) or ctx
                if _requeue_lost(root, requeued, said):
                    continue
                if not _more_within(root, LINGER_S, passed):
                    break
            _hand_on(root, ctx, said)
        if not pending(root, passed):
            return 0


#: How long the hook pass waits before it reads anything: hooks that end
#: together arrive meanwhile, and its own start (the reader, the store)
#: does not take the cores from them while they do.
GATHER_S = 0.5
#: How long the hook pass waits for one more session once its queue is
#: empty, before it starts the reflect pass and leaves. Hooks of a storm
#: arrive over seconds on a busy machine (each an interpreter starting);
#: without the wait, 50 at once made 10 passes, each with its reflect pass.
LINGER_S = 1.0


def _requeue_lost(root: str, requeued: set[str], said: list[Said]) -> bool:
    """Queue again the session ends a hook could not queue, each once a
    pass (`requeued`: their log lines); whether any was. One an import has
    read since the hook ran is not queued: its hook log line says so, and
    no pass looks at it again. One that cannot be queued yet (the disk
    still full) waits for the next pass."""
    from mecha.core.agents.hookqueue import lost_ends, requeue

    if not any(e.line not in requeued for e in lost_ends(root)):
        return False
    from pathlib import Path

    from mecha.core.agents.hooks import imported_since, lost_session_ends
    from mecha.core.store.learning_store import LearningStore

    waiting = {e.line for e in lost_session_ends(Path(root), imported_since(LearningStore(Path(root)).imports()))}
    any_new = False
    for end in lost_ends(root):
        if end.line in requeued:
            continue
        requeued.add(end.line)
        if end.line not in waiting:
            said.append((end.agent, "read by an import since its hook could not queue it: not queued again",
                         end.session_id, _cwd_of(end.fields), False))
            continue
        try:
            any_new = requeue(root, end) or any_new
        except OSError as exc:
            _record(root, end.agent, "pass", f"could not queue session {end.session_id} again yet "
                    f"({type(exc).__name__}: {exc}); the next hook pass tries again", None, None)
            return any_new
    return any_new


def _cwd_of(fields: dict[str, object]) -> str | None:
    cwd = fields.get("cwd")
    return cwd if isinstance(cwd, str) else None


def _more_within(root: str, seconds: float, passed: set[str]) -> bool:
    """Whether a session is queued within `seconds`."""
    import time

    from mecha.core.agents.hookqueue import pending

    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        time.sleep(0.05)
        if pending(root, passed):
            return True
    return False


def _hand_on(root: str, ctx: object, said: list[Said]) -> None:
    """The reflect pass the inbox needs once every session read is queued
    (`inbox.pass_after_queue`, as every door that hands sessions over: one
    for all the sessions that queued something new, or for work an earlier
    pass left waiting), then one hook log line per session (as each hook
    run had), naming the pass where it started one."""
    started = ""
    any_new = any(new for *_, new in said)
    if ctx is not None:
        try:
            from mecha.core.store.inbox import pass_after_queue

            from .context import Context
            from .jobs import start_pass

            assert isinstance(ctx, Context)
            context = ctx
            after = pass_after_queue(context.store(), any_new, lambda: start_pass(context, "reflect", learn_after=True))
            if after.job is not None and not after.in_flight:
                started = f"; reflect pass {after.job.id} started (a learn pass follows where enough lessons wait)"
        except Exception as exc:
            started = f"; no reflect pass started: {type(exc).__name__}: {exc}"
    for agent, what, session_id, cwd, new in said:
        # The pass is named where it takes this session's work, or on every
        # line when it only takes what an earlier pass left waiting.
        _record(root, agent, "session-end", what + (started if new or not any_new else ""), session_id, cwd)


def _read_queued(root: str, said: list[Said], passed: set[str], read: Read | None = None) -> object:
    """One round of the hook pass (`hookpass.read_round`: each queued
    session read once per round and once per pass), each session read
    exactly as `import` reads it; what each came to added to `said`. The
    context it read with (`None`: nothing read)."""
    from mecha.core.agents.hookpass import read_round
    from mecha.core.agents.importing import import_sessions

    from .context import Context, InitializationOptions

    ctx = None

    def import_one(agent: str, session: Path, ended: bool) -> tuple[str, bool]:
        nonlocal ctx
        ctx = Context.from_options(InitializationOptions(learning_dir=root)).with_voices(agent)
        report = import_sessions(ctx.store(), agent, session, voices=ctx.voices, ended=ended)
        return _summary(report), bool(report.queued)

    said += read_round(root, passed, {} if read is None else read, import_one,
                       lambda what: _record(root, "?", "session-end", what, None, None))
    return ctx


def _summary(report: object) -> str:
    from mecha.core.agents.importing import ImportReport

    assert isinstance(report, ImportReport)
    if report.skipped:
        return "skipped " + "; ".join(report.skipped)
    if report.unchanged:
        return "unchanged since it was last read: nothing new"
    new = sum(len(s.fresh) for s in report.sessions)
    held = sum(s.held for s in report.sessions)
    said = f"queued {new} new intervention(s) as {', '.join(report.queued)}" if report.queued else "nothing new to queue"
    if held:
        said += f"; {held} refusal(s) wait for the reason you give next"
    from mecha.core.sessions.trust import trust_command

    for session in report.sessions:
        for h in session.held_back:
            said += f"; {h.interventions} held back as untrusted by {h.blame.describe()}"
            offer = trust_command(h.blame.entry) if h.blame.entry is not None else None
            if offer is not None:
                said += f" (to trust it: {offer})"
    if report.warnings:
        said += "; warnings: " + "; ".join(report.warnings)
    return said
