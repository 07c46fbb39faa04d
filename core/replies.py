"""Finding the JSON in what a model wrote.

Models wrap answers in prose, code fences and reasoning; the contract every
pass states is "one JSON object", and the parsers here are lenient about the
envelope and strict about the object.
"""

from __future__ import annotations

import msgspec

from .errors import UnusableReply
from .provider import CompletionResponse, StopReason


def extract_json(text: str) -> str | None:
    """The first balanced `{...}` in `text` that decodes as a JSON object.

    Scans from each `{` in turn, tracking string literals and escapes so a
    brace inside a string does not end the object early. `None` when nothing
    in the text is a JSON object.
    """
    start = text.find("{")
    while start != -1:
        end = _balanced_end(text, start)
        if end is not None:
            candidate = text[start : end + 1]
            try:
                if isinstance(msgspec.json.decode(candidate), dict):
                    return candidate
            except msgspec.DecodeError:
                pass
        start = text.find("{", start + 1)
    return None


def _balanced_end(text: str, start: int) -> int | None:
    depth = 0
    in_string = False
    escaped = False
    for i in range(start, len(text)):
        c = text[i]
        if in_string:
            if escaped:
                escaped = False
            elif c == "\\":
                escaped = True
            elif c == '"':
                in_string = False
        elif c == '"':
            in_string = True
        elif c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                return i
    return None


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
