"""A `tool_result` whose `content` is a list of blocks — the Anthropic
Messages API's shape, which a harness mirroring those types sends — is read
as its text, over the wire; any other shape is refused by name.

Before, such a transcript was refused whole with -32602, so a Rust harness
whose types followed the API learned nothing from any run with a denial.
"""

from __future__ import annotations

from typing import Any

import msgspec

from mecha.core.sessions.transcript import Block, Message
from mecha.protocol import errors as codes

from .client import Sidecar
from .helpers import assistant_text, assistant_tool, results, text, user

PNG = {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}


def blocks_result(tool_id: str, content: Any, is_error: bool = False) -> dict[str, Any]:
    return {"type": "tool_result", "tool_use_id": tool_id, "content": content, "is_error": is_error}


def test_a_denial_sent_as_text_blocks_is_a_denial(sidecar: Sidecar) -> None:
    # Pins: the whole transcript refused for the shape the Anthropic API uses.
    messages = [
        user("tidy the repo"),
        assistant_tool("t1", "shell", {"cmd": "rm -rf build"}),
        results(blocks_result("t1", [{"type": "text", "text": "Denied by the user: keep the build dir"}], is_error=True)),
        assistant_text("Listing instead."),
    ]
    got = sidecar.call("mecha/extractInterventions", {"messages": messages})["interventions"]
    assert [(i["trigger"], i["at"], i["text"]) for i in got] == [("denial", 2, "keep the build dir")]


def test_text_and_image_blocks_read_as_lines_with_the_image_named(sidecar: Sidecar) -> None:
    messages = [
        user("take a screenshot"),
        assistant_tool("t1", "screenshot"),
        results(
            blocks_result("t1", [{"type": "text", "text": "captured"}, {"type": "image", "source": PNG}, {"type": "text", "text": "1024x768"}]),
            text("no, the other window"),
        ),
        assistant_text("Taking the other one."),
    ]
    got = sidecar.call("mecha/extractInterventions", {"messages": messages})["interventions"]
    assert [(i["trigger"], i["text"]) for i in got] == [("steer", "no, the other window")]
    # What the miner reads for that result: the texts, a line each, the image named.
    block = msgspec.json.decode(msgspec.json.encode(messages[2]["content"][0]), type=Block)
    assert block.content == "captured\n[image]\n1024x768"
    assert msgspec.json.decode(b'{"role": "user", "content": [{"type": "tool_result", "content": []}]}', type=Message).text() == ""


def test_an_unknown_block_in_a_result_is_refused_by_its_type_and_path(sidecar: Sidecar) -> None:
    # Pins: a result block nobody reads dropped in silence (the error the person saw with it).
    messages = [
        user("read it"),
        assistant_tool("t1", "fetch"),
        results(blocks_result("t1", [{"type": "text", "text": "ok"}, {"type": "document", "source": {}}])),
    ]
    error = sidecar.error("mecha/extractInterventions", {"messages": messages})
    assert error["code"] == codes.INVALID_PARAMS
    assert "content[1] is a block of type 'document'" in error["message"]
    assert "$.messages[2].content[0]" in error["message"]
    assert "send a string, or a list of text and image blocks" in error["message"]


def test_a_result_content_of_another_shape_is_refused_naming_the_field(sidecar: Sidecar) -> None:
    for content, expected in (({"text": "ok"}, "got `object`"), ([7], "got `int`"), (5, "got `int`")):
        messages = [user("go"), assistant_tool("t1", "x"), results(blocks_result("t1", content))]
        error = sidecar.error("mecha/extractInterventions", {"messages": messages})
        assert error["code"] == codes.INVALID_PARAMS, content
        assert expected in error["message"] and "$.messages[2].content[0].content" in error["message"], error
    assert sidecar.call("mecha/extractInterventions", {"messages": [user("still served")]}) == {"interventions": []}
