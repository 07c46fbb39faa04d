"""Finding the JSON in what a model wrote.

Models wrap answers in prose, code fences and reasoning; the contract every
pass states is "one JSON object", and the parsers here are lenient about the
envelope and strict about the object.
"""

from __future__ import annotations

import json
import logging
import math
import re
from collections.abc import Sequence
from typing import Any

import msgspec

from mecha.core.errors import UnusableReply
from mecha.core.nesting import MAX_REPLY_DEPTH, json_nesting
from mecha.core.providers.base import CompletionRequest, CompletionResponse, ReplySchema, StopReason

log = logging.getLogger("mecha.core.learning")

#: How many times the JSON finder starts a fresh scan at a `{` that the
#: first scan read as inside a string (see `find_json`). Each costs at most
#: one more pass over the text, so the finder stays linear; a reply that
#: needs more is prose too tangled to guess an object out of.
MAX_RESCANS = 8

#: The characters the finder's scan stops at; everything else is skipped.
_SCAN = re.compile(r'[{}"\\]')


class FoundJson(msgspec.Struct, frozen=True):
    """What `find_json` found: the object's text (`None` when nothing in the
    reply is a JSON object it may read), whether an object was passed over
    for nesting deeper than `MAX_REPLY_DEPTH`, and how many characters the
    search examined (its cost: at most a small multiple of the text's
    length)."""

    raw: str | None
    too_deep: bool = False
    examined: int = 0


def find_json(text: str) -> FoundJson:
    """The first balanced `{...}` in `text` that decodes as a JSON object.

    What "first" means: the object that starts earliest, where each `{` is
    read as the start of an object with string literals (and their escapes)
    tracked from there, so a brace inside a string does not end the object
    early, and quotes in prose between objects mean nothing.

    It used to scan from every `{` in turn to the end of the text, which on
    40,000 unmatched braces took 38 seconds. Now one scan with a stack finds
    every `{`'s matching `}` at once: two starts that agree on whether a
    position is inside a string read everything after it alike, so one scan
    serves every `{` it meets outside a string. A `{` it meets *inside* one
    may be where a scan from that brace would start an object, and gets its
    own scan (at most `MAX_RESCANS` of them). The stack holds at most
    `MAX_REPLY_DEPTH` open braces: one below those encloses more levels than
    a reply may have, and is dropped as too deep. So every character lies
    inside a bounded number of candidate objects, and trying them in order
    (each measured before it is decoded, `nesting.json_nesting`) costs a
    bounded multiple of the text's length.

    Over 60 lines on purpose: the scan is one loop over every character of
    every reply, its state in locals; split into helpers, each character
    would pay a call.
    """
    spans: dict[int, int] = {}
    covered: set[int] = set()
    inside: list[int] = []
    examined = 0
    too_deep = False

    def scan(start: int) -> None:
        nonlocal examined, too_deep
        stack: list[int] = []
        dropped = 0  # open braces under the stack's floor
        in_string = False
        i = start
        while True:
            m = _SCAN.search(text, i)
            if m is None:
                examined += len(text) - i
                return
            j = m.start()
            examined += j - i + 1
            c = text[j]
            i = j + 1
            if in_string:
                if c == "\\":
                    i = j + 2
                elif c == '"':
                    in_string = False
                elif c == "{" and j not in covered:
                    inside.append(j)
            elif c == "{":
                covered.add(j)
                stack.append(j)
                if len(stack) > MAX_REPLY_DEPTH:
                    stack.pop(0)
                    dropped += 1
                    too_deep = True
            elif c == "}":
                if stack:
                    spans[stack.pop()] = j
                elif dropped:
                    dropped -= 1
                if not stack and not dropped and start != first:
                    return  # back at the top level: the first scan reads on from here alike
            elif c == '"' and (stack or dropped):
                in_string = True

    first = text.find("{")
    if first == -1:
        return FoundJson(None)
    scan(first)
    rescans = 0
    # In order, by index: `inside` can hold a brace for every character of
    # the text (190,000 `{` in a lesson's string), and taking each from the
    # front of the list made the finder quadratic again.
    taken = 0
    while taken < len(inside) and rescans < MAX_RESCANS:
        at = inside[taken]
        taken += 1
        if at in covered:
            continue
        rescans += 1
        scan(at)
    for start in sorted(spans):
        candidate = text[start : spans[start] + 1]
        examined += len(candidate)
        if json_nesting(candidate, MAX_REPLY_DEPTH) > MAX_REPLY_DEPTH:
            too_deep = True
            continue
        if isinstance(_loads(candidate), dict):
            return FoundJson(candidate, too_deep, examined)
    return FoundJson(None, too_deep, examined)


def _loads(candidate: str) -> Any:
    """`candidate` decoded, with a number the decoder cannot hold — a float
    past a float's range, an integer past 64 bits — read as `_UNREADABLE`
    rather than refusing the whole object; `None` when it is not JSON."""
    try:
        return msgspec.json.decode(candidate)
    except msgspec.DecodeError:
        pass
    try:
        return json.loads(
            candidate,
            parse_float=_finite_or_unreadable,
            parse_int=_int_or_unreadable,
            parse_constant=lambda _: _UNREADABLE,
        )
    except (ValueError, RecursionError):
        return None


def extract_json(text: str) -> str | None:
    """The first JSON object in `text` (`find_json`), or `None`."""
    return find_json(text).raw


def reply_fault(response: CompletionResponse) -> str | None:
    """What went wrong with a reply that held no usable answer, when it is
    the model's failure rather than an answer: a refusal, a reply cut off at
    the token limit, or nothing at all. `None` for a complete reply that
    simply did not parse."""
    if response.stop_reason is StopReason.REFUSAL:
        category = f" ({response.refusal_category})" if response.refusal_category else ""
        return f"the model refused{category}"
    if response.stop_reason is StopReason.MAX_TOKENS:
        if not response.text.strip():
            return "the model spent its whole token budget without writing an answer (finish: length)"
        return "the model's reply was cut off at its token limit before the answer was complete (finish: length)"
    if not response.text.strip():
        return "the model sent an empty reply"
    return None


def refuse_unusable(response: CompletionResponse, parsed: bool, who: str, consequence: str = "") -> None:
    """Raise `UnusableReply` when a reply is the model failing rather than
    answering: a refusal (even one that happens to hold JSON), or a faulty
    reply (`reply_fault`) that did not parse. A complete reply that merely
    did not parse is left to the caller's lenient path."""
    fault = reply_fault(response)
    if fault is not None and (not parsed or response.stop_reason is StopReason.REFUSAL):
        raise UnusableReply(f"{who}: {fault}{consequence}")


# ─── The reply contract ─────────────────────────────────────────────────────
#
# A pass states its reply shape three times: in the prompt (so the model knows
# what to write), as a JSON Schema (so a server that constrains decoding can
# hold the model to it) and in the parser (so what comes back is read the same
# way). Written three times by hand, they drift; so all three come from one
# msgspec Struct. The first time this loop met a small local model, the
# prompt's hand-written template was echoed back as the lesson
# ("<the directive, one to three sentences>") and no reply parsed: 0 of 8
# unconstrained, 8 of 8 once the same prompts carried the schema.


# ─── Reply budgets ──────────────────────────────────────────────────────────
#
# A request's `max_tokens` is sized from what its contract asks for, not set
# to a round number: a lesson of one to three sentences, a rule set of at
# most so many rules of a sentence or two. A small model that rambles inside
# its JSON string is then cut off after a few hundred tokens rather than
# 4,096 (on a CPU, minutes of a pass spent on an answer that is unusable
# anyway), and the reply body bound derived from `max_tokens`
# (`providers._http.reply_byte_bound`) shrinks with it.

#: One sentence of a lesson or a rule, generously: a long English sentence
#: is 30 to 40 tokens.
TOKENS_PER_SENTENCE = 48
#: The JSON around one object's fields: keys, quotes, an enum word, a number,
#: a flag, a short list of ids.
TOKENS_PER_OBJECT = 48
#: Room beyond the contract, for a line before the object or a padded one.
BUDGET_HEADROOM = 2
#: What a model that spent a whole contract budget thinking, and so wrote
#: nothing, gets on top of it for a second try (`complete_within_budget`).
THINKING_TOKENS = 4096


def reply_budget(*, sentences: int, objects: int = 1) -> int:
    """The `max_tokens` for a reply of at most `sentences` sentences in at
    most `objects` JSON objects."""
    return BUDGET_HEADROOM * (sentences * TOKENS_PER_SENTENCE + objects * TOKENS_PER_OBJECT)


async def complete_within_budget(provider: Any, request: CompletionRequest) -> CompletionResponse:
    """`provider.complete(request)`, asked once more with `THINKING_TOKENS`
    more when the reply was cut off at the budget with nothing written: a
    reasoning model spends tokens thinking before the first word of its
    answer, and a contract's budget can be all thinking. A reply cut off
    after it started (a model that rambles) is not asked again: more room
    would only buy more rambling."""
    response: CompletionResponse = await provider.complete(request)
    if response.stop_reason is StopReason.MAX_TOKENS and not response.text.strip():
        log.warning("the model spent its %d-token budget before writing anything; asking once more with %d more",
                    request.max_tokens, THINKING_TOKENS)
        roomier = msgspec.structs.replace(request, max_tokens=request.max_tokens + THINKING_TOKENS)
        response = await provider.complete(roomier)
    return response


class ReplyContract:
    """One pass's reply shape, from one msgspec Struct: the schema a server
    is asked to hold the model to (`schema()`), the paragraph the prompt
    states it with (`describe()`), the decoder (`decode()`), and the reply
    budget a request under it asks for (`max_tokens`, `reply_budget`)."""

    def __init__(self, name: str, struct: type, *, summary: str, max_tokens: int | None = None):
        self.name = name
        self.struct = struct
        self.summary = summary
        #: Default: one object of up to three sentences.
        self.max_tokens = max_tokens if max_tokens is not None else reply_budget(sentences=3)
        self._schema: dict[str, Any] | None = None

    def schema(self) -> dict[str, Any]:
        """The Struct's JSON Schema, made self-contained and strict: every
        `$ref` inlined (some servers' grammar compilers read no `$defs`),
        every property required and no others allowed — the form OpenAI's
        `strict: true` demands, and the tightest a decoder can be held to.
        The parser stays the Struct, which also accepts a reply that leaves
        out an optional field: any reply that meets the schema decodes."""
        if self._schema is None:
            raw = msgspec.json.schema(self.struct)
            self._schema = strict_schema(raw, raw.get("$defs", {}))
        return self._schema

    def reply_schema(self) -> ReplySchema:
        """What a request carries so the server can constrain the reply."""
        return ReplySchema(name=self.name, description=self.summary, schema=self.schema())

    def describe(self) -> str:
        """The reply paragraph of the prompt, generated from the schema:
        field names, types and descriptions, with no fill-in-the-blank
        template a small model could copy back as its answer."""
        schema = self.schema()
        lines = [f"Reply with one JSON object and nothing else. {self.summary} Its fields:"]
        lines += _describe_properties(schema, indent="")
        return "\n".join(lines)

    def decode(self, text: str) -> Any | None:
        """The reply as the Struct, found through any prose around it; `None`
        when no JSON object in it matches the contract."""
        return self.read(text)[0]

    def read(self, text: str) -> tuple[Any | None, str | None]:
        """`(the reply as the Struct, None)`, or `(None, why not)`."""
        found = find_json(text)
        if found.raw is None:
            if found.too_deep:
                return None, f"the reply's JSON nests deeper than {MAX_REPLY_DEPTH} levels, more than any answer has"
            return None, "the reply held no JSON object that meets the reply contract"
        try:
            return msgspec.json.decode(found.raw, type=self.struct), None
        except msgspec.DecodeError:  # a ValidationError is one
            pass
        # A number past what a float holds (a small model wrote a confidence
        # of 1.2E+2037) is no number at all: read as absent, like any
        # confidence `confidence_or_none` cannot interpret, so the reply
        # stands or falls on its other fields. The depth was bounded above.
        try:
            return msgspec.convert(_without_unreadable(_loads(found.raw)), type=self.struct), None
        except msgspec.ValidationError:
            return None, "the reply held no JSON object that meets the reply contract"

    def placeholders(self) -> tuple[str, ...]:
        """The texts the contract itself contributes to a prompt (field
        descriptions), which a reply must never offer back as its content."""
        found: list[str] = []

        def walk(node: Any) -> None:
            if isinstance(node, dict):
                if isinstance(node.get("description"), str):
                    found.append(node["description"])
                for value in node.values():
                    walk(value)
            elif isinstance(node, list):
                for value in node:
                    walk(value)

        walk(self.schema())
        return tuple(found)


def strict_schema(node: Any, defs: dict[str, Any]) -> Any:
    """`node` with local `$ref`s inlined, `title`s dropped and every object
    closed: all properties required, `additionalProperties: false`."""
    if isinstance(node, list):
        return [strict_schema(item, defs) for item in node]
    if not isinstance(node, dict):
        return node
    if "$ref" in node:
        name = node["$ref"].rsplit("/", 1)[-1]
        return strict_schema(defs[name], defs)
    # `default` goes too: under `strict` every field is written, and OpenAI's
    # strict mode refuses keywords it does not support.
    out = {k: strict_schema(v, defs) for k, v in node.items() if k not in ("$defs", "title", "default")}
    if out.get("type") == "object" and "properties" in out:
        out["required"] = list(out["properties"])
        out["additionalProperties"] = False
    return out


def _describe_properties(schema: dict[str, Any], indent: str) -> list[str]:
    lines = []
    for name, prop in schema.get("properties", {}).items():
        lines.append(f'{indent}- "{name}" ({_type_words(prop)}): {prop.get("description", "")}'.rstrip(": "))
        item = prop.get("items") if prop.get("type") == "array" else None
        if isinstance(item, dict) and item.get("type") == "object":
            lines += _describe_properties(item, indent + "  ")
    return lines


def _type_words(prop: dict[str, Any]) -> str:
    if "anyOf" in prop:
        return " or ".join(_type_words(p) for p in prop["anyOf"])
    if "enum" in prop:
        return "one of " + ", ".join(msgspec.json.encode(v).decode() for v in prop["enum"])
    kind = prop.get("type")
    if kind == "array":
        return "a list of objects" if prop.get("items", {}).get("type") == "object" else "a list"
    if kind == "number" and "minimum" in prop and "maximum" in prop:
        return f"a number from {prop['minimum']:g} to {prop['maximum']:g}"
    if kind == "integer" and "minimum" in prop:
        return f"a whole number, at least {prop['minimum']}"
    return {"string": "text", "boolean": "true or false", "null": "null", "number": "a number", "integer": "a whole number"}.get(
        str(kind), str(kind)
    )


# ─── Is it a lesson at all? ─────────────────────────────────────────────────

#: What a model writes in the lesson field when it means "skip" but did not
#: say so (a small local model wrote "no lesson" with `skip: false`).
_NOT_A_LESSON = frozenset({
    "no lesson", "no lesson here", "no lessons", "none", "n/a", "na", "nothing", "nothing to learn",
    "no lesson to learn", "there is no lesson", "skip", "null", "-", "no", "not applicable",
})

#: A tag: what a small model writes when it has lost the thread and imitates
#: the markup around the material (`<pre><rem>…</rem></pre>`).
_TAG = re.compile(r"</?[A-Za-z][A-Za-z0-9-]*(?:\s[^<>]*)?/?>")
#: A fill-in-the-blank slot: `<the directive, one to three sentences>` —
#: words with spaces between angle brackets, which no tag has.
_SLOT = re.compile(r"<[A-Za-z][^<>=\"'\n]{0,80}\s[^<>=\"'\n]{0,80}>")


def _folded_words(text: str) -> str:
    return " ".join(_PLAIN_WORD.findall(text.lower()))


_PLAIN_WORD = re.compile(r"[a-z0-9]+")


def echoed_example(text: str, examples: Sequence[str]) -> str | None:
    """The first of a prompt's own `examples` that `text` repeats, wherever
    in it (case, punctuation and spacing aside), or that `text` is a piece
    of (three words or more); `None` when it repeats none."""
    words = _folded_words(text)
    if not words:
        return None
    for example in examples:
        ex = _folded_words(example)
        if not ex:
            continue
        if f" {ex} " in f" {words} " or (len(words.split()) >= 3 and f" {words} " in f" {ex} "):
            return example
    return None


def no_lesson_reason(text: str, placeholders: Sequence[str] = (), examples: Sequence[str] = ()) -> str | None:
    """Why `text`, offered as a lesson or a rule, is not one — or `None`
    when it reads as one.

    A reply can meet the schema and still say nothing: empty text, markup
    (tags a model copied from the material's framing), a template slot
    (`<the directive>`), one of the contract's own field descriptions
    echoed back, or one of the prompt's own `examples` repeated anywhere in
    it (a small model stored "The user told it to stop" — the prompt's
    example of what is *not* a lesson — as 6 of its 17 lessons). Each such
    reply, read as a lesson, would be learned as noise; read as "no
    lesson", would lose the person's intervention. It is neither: the
    caller treats it as an unusable answer and asks again later.
    """
    stripped = text.strip()
    if not stripped:
        return "the lesson is empty"
    if not any(c.isalpha() for c in stripped):
        return "the lesson has no words in it"
    folded = " ".join(stripped.lower().split())
    if folded.strip(".!") in _NOT_A_LESSON:
        return "the lesson says there is no lesson"
    echo = echoed_example(stripped, examples)
    if echo is not None:
        return f"the lesson echoes the prompt's own example (\"{echo}\")"
    for p in placeholders:
        q = " ".join(p.lower().split())
        bare = folded.rstrip(".")
        if q and (folded == q or (len(q) >= 16 and q in folded) or (len(bare) >= 16 and bare in q)):
            return "the lesson is the reply template's own description echoed back"
    if _SLOT.search(stripped):
        return "the lesson is a template placeholder, not a sentence"
    if _mostly_markup(stripped):
        return "the lesson is markup, not a sentence"
    return None


#: Fewest words a rule may have: every rule a person would keep that this
#: project has seen ("Run the tests before committing.", "Ask before changing
#: more than one file.") has three or more; every rule a small model filed
#: that nobody would ("revised", "serve / other", "remarkable_mistake",
#: "flipply-loves-flippy") has fewer. A word is a run of letters, so a
#: hyphenated or underscored identifier counts once.
INSTRUCTION_MIN_WORDS = 3

_WORD = re.compile(r"[^\W\d_](?:[^\W\d]|['’-])*")
_IDENTIFIER = re.compile(r"[\w./:-]+")


def not_an_instruction_reason(text: str, placeholders: Sequence[str] = ()) -> str | None:
    """Why `text`, offered as a rule, is not an instruction a run could
    follow — or `None` when it reads as one.

    Everything `no_lesson_reason` refuses, and then the shapes a small model
    files as rules when it has nothing to say: a lone word or identifier
    (`revised`, `remarkable_mistake`), or a fragment of fewer than
    `INSTRUCTION_MIN_WORDS` words (`serve / other`). A test of form, not of
    wisdom: a well-formed bad rule passes here and is the reviewer's to
    reject.
    """
    why = no_lesson_reason(text, placeholders)
    if why is not None:
        return why.replace("the lesson", "the rule")
    stripped = text.strip()
    if _IDENTIFIER.fullmatch(stripped):
        return "the rule is a lone word or identifier, not an instruction"
    words = _WORD.findall(stripped)
    if len(words) < INSTRUCTION_MIN_WORDS:
        return f"the rule is a fragment of {len(words)} word(s), not an instruction"
    return None


def _mostly_markup(text: str) -> bool:
    """Markup rather than a sentence that mentions a tag: the text opens
    with a tag, or tags take up a third of it. ("Wrap key names in <kbd>"
    is a lesson; `<pre><rem>…</rem></pre>` is not.)"""
    tags = _TAG.findall(text)
    if not tags:
        return False
    return bool(_TAG.match(text)) or sum(map(len, tags)) * 3 >= len(text)


#: What `_loads` puts where a number past what a float holds stood.
_UNREADABLE = object()


def _finite_or_unreadable(text: str) -> object:
    value = float(text)
    return value if math.isfinite(value) else _UNREADABLE


def _int_or_unreadable(text: str) -> object:
    """An integer a float can stand for, else `_UNREADABLE`: a confidence
    of 1 followed by 400 zeros refused the reply, and one of 5,000 digits
    passed even Python's limit for reading an integer. Past 310 digits no
    integer fits, so a long one is not converted at all."""
    if len(text.lstrip("-")) > 310:
        return _UNREADABLE
    value = int(text)
    return value if _fits_a_float(value) else _UNREADABLE


def _fits_a_float(value: int) -> bool:
    try:
        float(value)
    except OverflowError:
        return False
    return True


def _without_unreadable(node: Any) -> Any:
    """`node` with every object key whose value was an unreadable number
    left out, so an optional field that held one takes its default (and a
    required one is missing, which fails the contract as it should)."""
    if isinstance(node, dict):
        return {k: _without_unreadable(v) for k, v in node.items() if not _unreadable(v)}
    if isinstance(node, list):
        return [_without_unreadable(v) for v in node if not _unreadable(v)]
    return node


def _unreadable(value: Any) -> bool:
    """A number marked unreadable, or an integer (msgspec reads any length)
    that no float can stand for."""
    return value is _UNREADABLE or (type(value) is int and not _fits_a_float(value))


def confidence_or_none(value: float | None) -> float | None:
    """A reply's confidence if it is one (a number from 0 to 1), else `None`.

    The schema cannot hold a model to the range: llama.cpp's grammar
    compiler drops `minimum`/`maximum`, and a small model wrote 50 and 1.207.
    Refusing the whole reply for that would lose the person's intervention
    over a number nothing downstream depends on; keeping it would store a
    confidence no reader can interpret. So the number alone is dropped.
    """
    if value is None or not (0.0 <= value <= 1.0):
        return None
    return float(value)
