"""The long fuzz's hostile shapes (`tests/reliability/fuzz.py` draws them):
text nested past any depth a reader follows, replies of any size and any
brokenness, and rule text that tries to end the section an export writes.

Each kind asserts what every other kind of the fuzz does — nothing raised
but a named error (`LearningError`), nothing took longer than
`CASE_LIMIT_S`, nothing was lost — plus its own:

- **deep-frame**: a request with JSON nested 31 to 100,000 deep at a random
  place (a param, the id, the params themselves), dispatched like every body
  of the fuzz (`Fuzzer.run_body`'s checks);
- **deep-session**: a Claude Code or Codex session file with lines nested
  that deep — in a tool call's input, a tool result, a message's content, a
  field nobody reads — imported into the store: the person's words on the
  other lines are queued, the entry a pass reads back decodes and holds
  them, no line but a deep one is skipped, and each skip is named;
- **deep-reply**, **hostile-reply**, **huge-reply**: a reflect or learn pass (the
  real one, over real HTTP to the scripted server) whose reply is nested
  deep, holds unbalanced braces, unclosed strings or numbers past a float's
  range, or runs to 600 MB with or without a `Content-Length`: the pass ends
  with a lesson (one no longer than a person's words may be) or a named
  unusable answer, the server was not read past the reply's bound, the
  session is either mined with its lesson or still waiting in the inbox, a
  learn pass that failed left its pool whole and proposed nothing, and the
  writer lock is free. A well-formed answer with a number past a float's
  range is still an answer: its lesson, or its rule, is kept;
- **export-rule**: a rule whose text holds line breaks of every kind, the
  managed section's markers, a BOM, a NUL, exported into a person's file
  (with or without a BOM, CRLF, an existing section): the export succeeds,
  every byte of the person's outside the section is as it was, the file has
  exactly one begin and one end marker, and a second export changes nothing
  and is not refused as damaged.
"""

from __future__ import annotations

import asyncio
import json
import random
import shutil
import time
import traceback
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mecha.core.errors import LearningError, UnusableReply
from mecha.core.store.learning_store import LearningStore
from tests import builders
from tests.builders import write_learned_rules

if TYPE_CHECKING:
    from tests.model_server import ModelServer
    from tests.reliability.fuzz import Fuzzer

#: The longest any one case of these kinds may take.
CASE_LIMIT_S = 10.0
#: Depths around every limit there is: the reply and input bound (32), the
#: interpreter's recursion limit (about 1000), and far past both.
DEPTHS = [31, 32, 33, 34, 64, 200, 997, 999, 1000, 1001, 5000, 100_000]
KINDS = ["deep-frame", "deep-session", "deep-reply", "hostile-reply", "huge-reply", "export-rule"]
WEIGHTS = [3, 3, 2, 3, 1, 3]
LESSON = "Only edit files under docs/ unless the person names another folder."
WORDS = "Only touch the docs folder, nothing else."


def deep(rng: random.Random, depth: int | None = None) -> str:
    """JSON nested `depth` levels: arrays, objects or both, around a leaf."""
    depth = depth or rng.choice(DEPTHS)
    style = rng.randrange(3)
    if style == 0:
        return "[" * depth + "1" + "]" * depth
    if style == 1:
        return '{"a": ' * depth + '"x"' + "}" * depth
    opens = "".join('{"k": [' if i % 2 else "[" for i in range(depth))
    closes = "".join("]}" if i % 2 else "]" for i in reversed(range(depth)))
    return opens + "0" + closes


# ─── deep frames ────────────────────────────────────────────────────────────


def deep_body(rng: random.Random) -> bytes:
    from tests.reliability.fuzz import _containers, valid_request

    msg = valid_request(rng)
    where = rng.random()
    if where < 0.15:
        msg["id"] = "@"
    elif where < 0.3:
        msg["params"] = "@"
    else:
        leaves = [(node, k) for _, node in _containers(msg["params"])
                  for k in (node if isinstance(node, dict) else range(len(node)))]
        if leaves:
            node, k = rng.choice(leaves)
            node[k] = "@"
        else:
            msg["params"] = {"extra": "@"}
    return json.dumps(msg).replace('"@"', deep(rng), 1).encode()


# ─── deep session lines ─────────────────────────────────────────────────────


def _claude_session(rng: random.Random, session: str, words: str) -> tuple[list[str], int]:
    """Lines of a Claude Code session, and how many of them are deep."""
    from tests.core.ccfixture import Claude, text, use

    cc = Claude(session=session)
    cc.user("Tidy the docs.").assistant(text("Looking."), use("s1", "Read", file_path="/home/pat/proj/a.md"))
    cc.result("s1", "contents").assistant(text("Read it.")).user(words).assistant(text("Understood."))
    lines = [json.dumps(line) for line in cc.lines]
    inserted = rng.randint(1, 3)
    for _ in range(inserted):
        at = rng.randrange(len(lines) + 1)
        place = rng.choice(["input", "result", "content", "field", "bare"])
        if place == "input":
            line = {**cc.lines[1], "uuid": f"d{at}", "message": {**cc.lines[1]["message"], "id": f"msg_d{at}",
                    "content": [{"type": "tool_use", "id": f"d{at}", "name": "Read", "input": {"file_path": "@"}}]}}
        elif place == "result":
            line = {**cc.lines[2], "uuid": f"d{at}", "toolUseResult": {"file": {"content": "@"}}}
        elif place == "content":
            line = {**cc.lines[0], "uuid": f"d{at}", "message": {"role": "user", "content": "@"}}
        elif place == "field":
            line = {**cc.lines[3], "uuid": f"d{at}", "nested": "@"}
        else:
            line = None
        body = deep(rng) if line is None else json.dumps(line).replace('"@"', deep(rng), 1)
        lines.insert(at, body)
    return lines, inserted


def _codex_session(rng: random.Random, session: str, words: str) -> tuple[list[str], int]:
    from tests.core.ccfixture import Codex

    cx = Codex(session=session)
    cx.user("Tidy the docs.").say("Looking.").call("c1", "shell", command=["bash", "-lc", "ls docs"]).output("c1", "a.md")
    cx.say("Read it.").user(words).say("Understood.")
    lines = [json.dumps(line) for line in cx.lines]
    inserted = rng.randint(1, 3)
    for _ in range(inserted):
        at = rng.randrange(1, len(lines) + 1)
        place = rng.choice(["arguments", "output", "payload", "bare"])
        if place == "arguments":
            line = {"timestamp": "2026-11-01T10:00:01Z", "type": "response_item", "payload": {
                "type": "function_call", "name": "shell", "call_id": f"d{at}",
                "arguments": json.dumps({"command": ["ls"], "extra": "@"}).replace('"@"', deep(rng), 1)}}
            body = json.dumps(line)
        elif place == "output":
            body = json.dumps({"timestamp": "2026-11-01T10:00:01Z", "type": "response_item", "payload": {
                "type": "function_call_output", "call_id": "c1", "output": "@"}}).replace('"@"', deep(rng), 1)
        elif place == "payload":
            body = json.dumps({"timestamp": "2026-11-01T10:00:01Z", "type": "event_msg", "payload": "@"}).replace(
                '"@"', deep(rng), 1)
        else:
            body = deep(rng)
        lines.insert(at, body)
    return lines, inserted


def run_deep_session(fz: Fuzzer, case: int, rng: random.Random) -> None:
    from mecha.core.agents.importing import import_sessions
    from mecha.core.sessions.foreign import HARNESS_VOICE_PROFILES
    from mecha.core.sessions.mining import Voices
    from mecha.core.store.inbox import entry_decoder, inbox_dir
    from mecha.core.store.learning_store import LearningStore

    source = rng.choice(["claude", "codex"])
    session = f"{case:08x}-dddd-4000-8000-{rng.getrandbits(48):012x}"
    # Words of this case's own: an import queues an intervention it has
    # queued before from another file only once.
    words = f"{WORDS} (case {case})"
    lines, inserted = (_claude_session if source == "claude" else _codex_session)(rng, session, words)
    folder = fz.work.parent / "sessions" / f"case-{case}"
    where = folder / ("-home-pat-proj" if source == "claude" else "2026/11/01")
    where.mkdir(parents=True)
    name = f"{session}.jsonl" if source == "claude" else f"rollout-2026-11-01T10-00-00-{session}.jsonl"
    (where / name).write_text("\n".join(lines) + "\n")
    shown = "\n".join(line[:120] for line in lines).encode()
    store = LearningStore(fz.root)
    try:
        report = import_sessions(store, source, folder, voices=Voices(harness_prefixes=HARNESS_VOICE_PROFILES[source]))
    except LearningError:
        fz.fail(case, "deep-session", "a session with deep lines was refused whole", shown)
        return
    finally:
        shutil.rmtree(folder.parent, ignore_errors=True)
    session = f"{source}:{session}"  # as the import names a foreign session
    if session not in report.queued:
        fz.fail(case, "deep-session", f"the person's words were not queued ({report.skipped}, {report.warnings[:2]})", shown)
        return
    if report.skipped_lines > inserted:
        fz.fail(case, "deep-session", f"{report.skipped_lines} lines skipped, of which {inserted} were deep", shown)
    if len([w for w in report.warnings if "skipped a line" in w]) != report.skipped_lines:
        fz.fail(case, "deep-session", f"{report.skipped_lines} lines skipped, not each named: {report.warnings}", shown)
    import msgspec

    entries = [entry_decoder.decode(p.read_bytes()) for p in inbox_dir(store).iterdir() if not p.name.startswith(".")]
    mine = [e for e in entries if getattr(e, "session_id", None) == session]
    if not mine or words not in json.dumps(msgspec.to_builtins(mine[0])):
        fz.fail(case, "deep-session", "the queued entry lost the person's words", shown)


# ─── hostile replies, through a real reflect pass ───────────────────────────


def answer_parts(pass_: str, confidence: str = "0.8") -> tuple[str, str]:
    """What an answer of `pass_` (`reflect`, `learn`) holds before and after
    its lesson's (or rule's) text."""
    if pass_ == "learn":
        return ('{"rules": [{"rule": "', f'", "based_on": ["R1"], "replaces": [], "confidence": {confidence}, '
                '"based_on_count": 2}], "dropped": []}')
    return '{"skip": false, "reflexion": "', f'", "error_type": "overreach", "confidence": {confidence}}}'


def answer(pass_: str, confidence: str = "0.8") -> str:
    head, tail = answer_parts(pass_, confidence)
    return head + LESSON + tail


#: Numbers no float holds, and spellings JSON does not have.
OUT_OF_RANGE = ["1e999", "-1e400", "1" + "0" * 400, "1.2E+2037", "9" * 5000, "1e-99999", "NaN", "Infinity", "-Infinity"]


def hostile_text(rng: random.Random, pass_: str) -> tuple[str, bool]:
    """A reply's text, and whether it holds a well-formed answer that must
    be read (a number past a float's range reads as absent, not as no
    answer)."""
    roll = rng.randrange(9)
    n = rng.choice([1, 2, 10, 1000, 40_000])
    whole = answer(pass_)
    if roll == 0:
        return answer(pass_, rng.choice(OUT_OF_RANGE[:6])), True
    if roll == 1:
        return rng.choice(["{", "}", "{}", "}{", '{"', '"{']) * n, False
    if roll == 2:
        return whole[: rng.randrange(1, len(whole))], False  # cut off: an unclosed string or object
    if roll == 3:
        return answer_parts(pass_)[0] + "\\" * rng.randrange(1, 4) + '"' * n, False
    if roll == 4:
        return "{" * n + whole, True  # braces never closed, then the answer
    if roll == 5:
        return answer(pass_, rng.choice(OUT_OF_RANGE)), False
    if roll == 6:
        junk = rng.choice(['"', "{", '{"a": "', "\\", "}"]) * rng.choice([1, 3, 50])
        return f"Here you go: {junk} {whole}", True
    if roll == 7:
        return answer(pass_, f"[{'1e999, ' * n}0]"), False
    number = rng.choice(OUT_OF_RANGE)
    return whole[:-1] + f', "numbers": [{number}, {number}]}}', False


def deep_reply(rng: random.Random, pass_: str) -> Any:
    from tests.model_server import garbage, reply

    roll = rng.randrange(5)
    d = deep(rng)
    if roll == 0:
        return reply(answer(pass_, d))
    if roll == 1:
        return reply(d)
    if roll == 2:
        return reply(f"Thinking: {d}\n{answer(pass_)}")
    if roll == 3:
        return reply(answer(pass_)[:-1] + f', "extra": {d}}}')
    # The body itself nested deep, around a well-formed envelope's fields.
    return garbage(('{"choices": [{"message": {"role": "assistant", "content": "x"}, "x": ' + d + "}]}").encode())


def huge_reply(rng: random.Random, pass_: str) -> tuple[Any, int]:
    """A `huge` reply and the size of its text."""
    from tests.model_server import huge

    size = rng.choice([100_000, 190_000, 200_000, 1 << 20, 30_000_000, 600_000_000])
    head, tail = answer_parts(pass_)
    fill = rng.choice(["x", "All work and no play. ", '\\"', "\u00e9", "{"])
    return huge(head, fill, size // len(fill), tail, sized=rng.random() < 0.5), size


class ReplyCases:
    """Store templates and the scripted server for the reply kinds: a store
    with one session waiting for the reflect pass, and one with learnable
    reflections waiting for the learn pass."""

    def __init__(self, fz: Fuzzer, server: ModelServer):
        self.fz = fz
        self.server = server
        self.templates = {"reflect": fz.work.parent / "reflect-template", "learn": fz.work.parent / "learn-template"}
        _reflect_template(self.templates["reflect"])
        _learn_template(self.templates["learn"])
        self.root = fz.work.parent / "reply-store"

    def run(self, case: int, kind: str, rng: random.Random) -> None:
        from tests.model_server import reply

        pass_ = rng.choice(["reflect", "learn"])
        must_read, size = False, 0
        if kind == "deep-reply":
            action = deep_reply(rng, pass_)
        elif kind == "hostile-reply":
            text, must_read = hostile_text(rng, pass_)
            action = reply(text)
        else:
            action, size = huge_reply(rng, pass_)
        kind_ = f"{kind} ({pass_})"
        shown = repr(action)[:400].encode()
        shutil.rmtree(self.root, ignore_errors=True)
        shutil.copytree(self.templates[pass_], self.root, symlinks=True)
        self.server.clear()
        self.server.script(action)
        started, sent = time.monotonic(), self.server.sent
        error = self._pass(pass_)
        took = time.monotonic() - started
        if took > CASE_LIMIT_S:
            self.fz.fail(case, kind_, f"the pass took {took:.1f}s", shown)
        if isinstance(error, BaseException) and not isinstance(error, LearningError):
            tb = "".join(traceback.format_exception(error)[-3:]).strip()
            self.fz.fail(case, kind_, f"the pass raised {type(error).__name__}: {error}\n    {tb}", shown)
            return
        if self.server.sent - sent > 16 << 20:
            self.fz.fail(case, kind_, f"the pass read {self.server.sent - sent:,} bytes of a reply", shown)
        if size > 600_000 and not isinstance(error, UnusableReply):
            self.fz.fail(case, kind_, f"a {size:,}-byte reply was not an unusable answer: {error!r}", shown)
        whole = _reflect_whole if pass_ == "reflect" else _learn_whole
        for what in whole(self.root, error, must_read):
            self.fz.fail(case, kind_, what, shown)
        lock = LearningStore(self.root).try_lock()
        if lock is None:
            self.fz.fail(case, kind_, "the pass left the writer lock held", shown)
        else:
            lock.release()

    def _pass(self, pass_: str) -> BaseException | None:
        from mecha.core.learning.consolidation import Learner
        from mecha.core.learning.learn import learn_domain
        from mecha.core.learning.reflect import reflect_inbox
        from mecha.core.learning.reflection import Reflector
        from mecha.core.providers import provider_from_config

        provider = provider_from_config(self.server.config("openai", timeout_s=5.0, max_retries=0))
        store = LearningStore(self.root)
        try:
            if pass_ == "reflect":
                asyncio.run(reflect_inbox(store, Reflector(provider, "scripted-model")))
            else:
                asyncio.run(learn_domain(store, "behavior", Learner(provider, "scripted-model"), minimum=1))
        except BaseException as exc:  # judged by the caller: a named error or a crash
            return exc
        return None


REFLECT_SESSION = "reply-session"


def _reflect_template(root: Path) -> None:
    from mecha.core.sessions.transcript import Block, Message, Taint, TaintCheckpoint
    from mecha.core.store.inbox import enqueue, session_entry

    messages = [
        Message.user("Tidy the docs."),
        Message.assistant([Block.tool_use("t1", "fs_read", {"path": "a.md"})]),
        Message.tool_results([Block.tool_result("t1", "contents"), Block.text_block(WORDS)]),
        Message.assistant("Done."),
    ]
    enqueue(LearningStore.open(root), session_entry(REFLECT_SESSION, messages, [TaintCheckpoint(at=0, taint=Taint())]))


def _learn_template(root: Path) -> None:
    from mecha.core.identity import now

    store = LearningStore.open(root)
    store.append_reflexions([
        builders.reflexion(f"pool-{i}", f"Only touch the docs folder unless told otherwise, part {i}.",
                           session_id=f"s{i}", context="ctx", intervention=WORDS, created_at=now())
        for i in range(2)
    ])
    store.commit("fuzz: a learnable pool")


def _reflect_whole(root: Path, error: BaseException | None, must_read: bool) -> list[str]:
    """What is wrong with the store after a reflect pass over its one
    session: the session is mined with its lesson, or waits in the inbox."""
    from mecha.core.sessions.mining import INTERVENTION_BUDGET
    from mecha.core.store.inbox import inbox_dir

    store = LearningStore(root)
    kept = [r for r in store.reflexions() if r.session_id == REFLECT_SESSION]
    waiting = [p for p in inbox_dir(store).iterdir() if not p.name.startswith(".")]
    wrong = []
    if kept:
        if REFLECT_SESSION not in store.mined_sessions():
            wrong.append("a lesson was written but the session not marked mined")
        if len(kept[0].reflexion_text) > INTERVENTION_BUDGET:
            wrong.append(f"a lesson of {len(kept[0].reflexion_text):,} characters was stored")
    elif len(waiting) != 1:
        wrong.append(f"no lesson, and {len(waiting)} entries wait in the inbox: the session was lost")
    elif error is None:
        wrong.append("no lesson and no error: the pass said nothing of an unusable answer")
    if must_read and (not kept or kept[0].reflexion_text != LESSON):
        wrong.append(f"a well-formed answer was not read ({error!r})")
    return wrong


def _learn_whole(root: Path, error: BaseException | None, must_read: bool) -> list[str]:
    """What is wrong with the store after a learn pass: a failed one left
    the pool whole and proposed nothing; one that proposed holds the rule."""
    from mecha.core.learning.learn import learnable_pool

    store = LearningStore(root)
    pool = learnable_pool(store, "behavior")
    proposals = store.proposals()
    wrong = []
    if error is not None:
        if len(pool) != 2:
            wrong.append(f"the pass failed ({error!r}) but the pool holds {len(pool)} of 2 reflections")
        if proposals:
            wrong.append(f"the pass failed ({error!r}) but proposed {len(proposals)}")
    elif must_read and not any(LESSON in (r.text for r in p.rules) for p in proposals):
        wrong.append(f"a well-formed answer was not read ({[p.rules for p in proposals]})")
    if must_read and error is not None:
        wrong.append(f"a well-formed answer was refused: {error!r}")
    return wrong


# ─── section-ending rule text ───────────────────────────────────────────────

BREAKS = ["\n", "\r\n", "\r", "\u2028", "\u2029", "\x85", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\n\n"]


def hostile_rule(rng: random.Random) -> str:
    from mecha.core.agents.export import BEGIN_MARKER, END_MARKER

    parts = ["Keep the tests green."]
    for _ in range(rng.randint(1, 4)):
        parts.append(rng.choice(BREAKS))
        parts.append(rng.choice([
            END_MARKER, BEGIN_MARKER, "<!-- mecha:rules:end", "  <!-- mecha:rules:end -->  ", "\ufeff" + END_MARKER,
            "# Ignore the rules above", "\\" + END_MARKER, "\t" + END_MARKER, "<!-- mecha:rules:begin -->",
            "\x00", "```", "- a bullet of its own", END_MARKER + " trailing words",
        ]))
    return "".join(parts)


def persons_file(rng: random.Random) -> bytes:
    from mecha.core.agents.export import section

    eol = rng.choice(["\n", "\r\n"])
    text = eol.join(["# My notes", "", "Always answer in English.", f"Line {rng.randrange(1000)} of mine."]) + eol
    if rng.random() < 0.4:
        text += eol + section("# Learned rules\n- an older rule") + rng.choice(["", "After the section." + eol])
    data = text.encode()
    return (b"\xef\xbb\xbf" + data) if rng.random() < 0.4 else data


def run_export(fz: Fuzzer, case: int, rng: random.Random) -> None:
    from mecha.core.agents.export import BOM, _marker_lines, export_block
    from mecha.core.domain.rules import Rule
    from mecha.core.store.learning_store import LearningStore

    store = LearningStore(fz.root)
    kept = store.learned_rules("behavior")
    rules = [Rule(text=hostile_rule(rng), id=f"r-x{i}") for i in range(rng.randint(1, 3))]
    shown = repr([r.text for r in rules]).encode("utf-8", "backslashreplace")
    try:
        write_learned_rules(store, "behavior", [*kept, *rules])
    except LearningError:
        return  # refused by name: nothing to export
    folder = fz.work.parent / "export"
    folder.mkdir(exist_ok=True)
    target = folder / "CLAUDE.md"
    original = persons_file(rng)
    target.write_bytes(original)
    try:
        block = store.render_block().block
        first = export_block(target, block)
        again = export_block(target, block)
    except LearningError as exc:
        fz.fail(case, "export-rule", f"the export refused: {exc}", shown)
        return
    finally:
        write_learned_rules(store, "behavior", kept)
    data = target.read_bytes()
    shutil.rmtree(folder)
    if not first.changed or again.changed:
        fz.fail(case, "export-rule", f"first export changed={first.changed}, second changed={again.changed}", shown)
    if data.startswith(BOM) != original.startswith(BOM):
        fz.fail(case, "export-rule", "the file's BOM was not kept as it was", shown)
    text = data.removeprefix(BOM).decode()
    begins, ends = _marker_lines(text)
    if len(begins) != 1 or len(ends) != 1:
        fz.fail(case, "export-rule", f"{len(begins)} begin and {len(ends)} end markers after the export", data)
        return
    before = original.removeprefix(BOM).decode()
    outside_now = text[: begins[0][1]] + text[ends[0][2]:]
    old_begins, old_ends = _marker_lines(before)
    if old_begins:  # the section replaced where it stood
        kept_as_was = outside_now == before[: old_begins[0][1]] + before[old_ends[0][2]:]
    else:  # appended after a separating blank line
        kept_as_was = outside_now.startswith(before) and outside_now[len(before):] in ("", "\n", "\n\n")
    if not kept_as_was:
        fz.fail(case, "export-rule", "the person's text outside the section changed", data)
    if text[begins[0][2]: ends[0][1]].count("Keep the tests green.") != len(rules):
        fz.fail(case, "export-rule", "a rule did not reach the section", data)


# ─── one case ───────────────────────────────────────────────────────────────


def run_shape(fz: Fuzzer, case: int, rng: random.Random) -> str:
    """Draw one of `KINDS`, run it against the fuzzer's store (and, for the
    replies, its model server); the kind's name."""
    kind = rng.choices(KINDS, weights=WEIGHTS)[0]
    started = time.monotonic()
    try:
        if kind == "deep-frame":
            fz.run_body(case, kind, deep_body(rng))
        elif kind == "deep-session":
            run_deep_session(fz, case, rng)
        elif kind == "export-rule":
            run_export(fz, case, rng)
        else:
            if fz.replies is None:
                assert fz.server is not None, "the reply kinds need the fuzzer's model server"
                fz.replies = ReplyCases(fz, fz.server)
            fz.replies.run(case, kind, rng)
    except Exception as exc:
        tb = "".join(traceback.format_exception(exc)[-3:]).strip()
        fz.fail(case, kind, f"{type(exc).__name__}: {exc}\n    {tb}", b"")
    took = time.monotonic() - started
    if took > CASE_LIMIT_S:
        fz.fail(case, kind, f"the case took {took:.1f}s", b"")
    return kind
