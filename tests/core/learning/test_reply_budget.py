"""The reply budget: what `max_tokens` each pass's request asks for, sized
from its reply contract, and the one second try a model that spent it all
thinking gets — against the scripted server over real HTTP, through the
real providers."""

from __future__ import annotations

import json

import pytest

from mecha.core.domain.rules import MAX_ACTIVE_RULES_PER_DOMAIN, Rule
from mecha.core.errors import UnusableReply
from mecha.core.learning.consolidation import LEARNER_CONTRACT, Learner, learner_budget
from mecha.core.learning.reflection import BEHAVIOR_CONTRACT, WRITING_CONTRACT, Reflector
from mecha.core.learning.replies import THINKING_TOKENS, reply_budget
from mecha.core.providers import OpenAIProvider
from mecha.core.providers._http import reply_byte_bound
from mecha.core.sessions.mining import Intervention, Trigger
from tests.model_server import ModelServer, huge, reply

LESSON = '{"skip": false, "reflexion": "Ask before deleting files.", "error_type": "overreach", "confidence": 0.9}'
RULES = json.dumps({"rules": [{"rule": "Ask before deleting files.", "based_on": ["R1"], "replaces": [],
                               "confidence": 0.9, "based_on_count": 1}], "dropped": []})


def steer() -> Intervention:
    return Intervention(trigger=Trigger.STEER, context="rm -rf build", text="stop, ask me first", aftermath="", at=2)


def sent_budgets(server: ModelServer) -> list[int]:
    return [r.body["max_tokens"] for r in server.completions()]


def test_each_contract_asks_for_what_its_reply_can_hold_not_a_round_4096():
    # Pins: every request asking max_tokens 4,096 for a lesson of three
    # sentences (a small model rambled to the limit: minutes of a CPU pass).
    assert BEHAVIOR_CONTRACT.max_tokens == WRITING_CONTRACT.max_tokens == reply_budget(sentences=3) < 1024
    # A whole rule set at most: the cap's rules of a sentence or two, and as many drops.
    cap = MAX_ACTIVE_RULES_PER_DOMAIN
    assert LEARNER_CONTRACT.max_tokens == reply_budget(sentences=2 * cap, objects=2 * cap + 1) < 8192
    # A call holds no more rules than its live rules and reflections together.
    assert learner_budget(1, 3) == reply_budget(sentences=2 * 4, objects=4 + 1 + 1)
    assert learner_budget(0, 0) == reply_budget(sentences=2, objects=2)
    assert learner_budget(40, 40) == LEARNER_CONTRACT.max_tokens
    assert BEHAVIOR_CONTRACT.max_tokens < learner_budget(1, 3) < LEARNER_CONTRACT.max_tokens
    # Room for a lesson of three long sentences, twice over.
    assert reply_budget(sentences=3) >= 2 * len(LESSON)


async def test_the_reflector_and_the_learner_send_their_contracts_budget():
    with ModelServer() as server:
        server.script(reply(LESSON), reply(RULES))
        provider = OpenAIProvider(server.config("openai"))
        assert await Reflector(provider).reflect(steer(), strict=True) is not None
        live = [Rule(text="Confirm destructive shell commands first.")]
        answer = await Learner(provider).learn("behavior", [], live, [], strict=True)
        assert answer is not None
        assert sent_budgets(server) == [BEHAVIOR_CONTRACT.max_tokens, learner_budget(1, 0)]


async def test_a_model_that_spent_the_budget_thinking_is_asked_once_more_with_room_to_think():
    # Pins: a reasoning model, whose thinking counts against max_tokens,
    # answering nothing at all to every request once the budget fits the
    # answer alone.
    with ModelServer() as server:
        server.script(reply("", "length"), reply(LESSON))
        provider = OpenAIProvider(server.config("openai"))
        reflection = await Reflector(provider).reflect(steer(), strict=True)
        assert reflection is not None and reflection.reflexion_text == "Ask before deleting files."
        budget = BEHAVIOR_CONTRACT.max_tokens
        assert sent_budgets(server) == [budget, budget + THINKING_TOKENS]


async def test_a_reply_cut_off_after_it_started_is_not_asked_again():
    # Pins: a small model that rambles inside its JSON being given more room
    # to ramble in, at minutes a call on a CPU.
    with ModelServer() as server:
        server.script(reply('{"skip": false, "reflexion": "When the person says stop, stop and and and', "length"))
        with pytest.raises(UnusableReply, match="cut off|length"):
            await Reflector(OpenAIProvider(server.config("openai"))).reflect(steer(), strict=True)
        assert sent_budgets(server) == [BEHAVIOR_CONTRACT.max_tokens]


async def test_the_reply_body_bound_follows_the_budget_the_request_asked():
    # Pins: the hostile-reply bound staying at what 4,096 tokens allow once
    # requests ask for a few hundred.
    bound = reply_byte_bound(BEHAVIOR_CONTRACT.max_tokens)
    with ModelServer() as server:
        server.script(huge('{"skip": false, "reflexion": "', "a", bound, '"}'))
        with pytest.raises(UnusableReply, match=f"larger than {bound:,} bytes") as caught:
            await Reflector(OpenAIProvider(server.config("openai"))).reflect(steer(), strict=True)
        assert f"max_tokens ({BEHAVIOR_CONTRACT.max_tokens})" in str(caught.value)
