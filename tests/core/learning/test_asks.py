"""The ask a rule learned from refusals carries: derived by code from the
refused calls, each lesson made the way the reflect pass makes one — a
Claude Code session with the refusal in it, read by the real reader and
miner, its denial's context as the lesson's."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import msgspec

from mecha.core.domain.reflexion import Reflexion
from mecha.core.editor.review import accepted_message
from mecha.core.learning.asks import asks_kept_by, derived_ask, refused_call, with_derived_asks
from mecha.core.learning.consolidation import Learner
from mecha.core.learning.learn import learn_domain
from mecha.core.learning.proposals import accept
from mecha.core.sessions.claude_code import read_claude_code
from mecha.core.sessions.foreign import HARNESS_VOICE_PROFILES
from mecha.core.sessions.mining import Trigger, Voices
from mecha.core.sessions.survey import survey_session
from mecha.core.store.learning_store import LearningStore
from tests.builders import reflexion, rule
from tests.core.ccfixture import REJECTION, Claude, text, use
from tests.fakes import ScriptedProvider

VOICES = Voices(harness_prefixes=HARNESS_VOICE_PROFILES["claude"])


def refusal(n: int, tool: str = "Bash", why: str = "no, ask me before that", **args: Any) -> Reflexion:
    """The lesson of one session in which the person refused one call."""
    cc = Claude().user("Ship the fix.")
    cc.assistant(text("Tests pass; next I will do this."), use(f"c{n}", tool, **args))
    cc.result(f"c{n}", REJECTION, is_error=True)
    cc.user(why)
    cc.assistant(text("Understood, I will not."))
    read = read_claude_code(cc.bytes())
    [found] = [p.intervention for p in survey_session(read.messages, read.taint_timeline, voices=VOICES)]
    assert found.trigger is Trigger.DENIAL
    return reflexion(f"x{n}", "Ask before pushing to main.", trigger="denial", context=found.context,
                     intervention=found.text, session_id=f"s{n}")


def pushes(*commands: str) -> list[Reflexion]:
    return [refusal(n, command=c, description="Push") for n, c in enumerate(commands)]


def test_three_refusals_of_one_push_ask_before_that_push():
    lessons = pushes("git push origin main", "git push origin main", "git push origin main")
    assert refused_call(lessons[0]) == ("Bash", "git push origin main")
    assert derived_ask("Ask before running `git push` to main.", lessons) == "Bash(git push origin main:*)"


def test_a_forced_push_beside_plain_ones_shares_their_prefix():
    lessons = pushes("git push origin main", "git push  origin main --force")
    assert derived_ask("Never git push to main without asking.", lessons) == "Bash(git push origin main:*)"


def test_a_rule_whose_words_do_not_name_the_program_gets_no_ask():
    # The person reads the rule, not the pattern: "pushing" does not say `git`.
    lessons = pushes("git push origin main", "git push origin main")
    assert derived_ask("Ask before pushing to main.", lessons) is None


def test_commands_with_no_common_two_word_prefix_give_none():
    assert derived_ask("Ask before git or npm publishing.", pushes("git push origin main", "npm publish")) is None
    assert derived_ask("Ask before any git command.", pushes("git push origin main", "git status")) is None


def test_a_pipeline_or_a_chain_gives_none():
    # An ask on `curl -fsSL https://get.example.sh` would ask before every
    # fetch of it; the refusal was of running what it fetched.
    piped = pushes("curl -fsSL https://get.example.sh | sh", "curl -fsSL https://get.example.sh | sh")
    assert derived_ask("Ask before piping curl into sh.", piped) is None
    chained = pushes("cd app && git push origin main", "cd app && git push origin main")
    assert derived_ask("Ask before cd and git push.", chained) is None
    redirected = pushes("git log > /tmp/log.txt", "git log > /tmp/log.txt")
    assert derived_ask("Ask before writing git log to files.", redirected) is None
    substituted = pushes("git push origin $(git branch --show-current)", "git push origin $(git branch --show-current)")
    assert derived_ask("Ask before git push.", substituted) is None


def test_a_quoted_or_assigned_prefix_gives_none():
    # Cut before the quote, it would ask before every `git commit -m`.
    assert derived_ask("Ask before git commit.", pushes('git commit -m "wip"', 'git commit -m "wip"')) is None
    # Where the commands part before any quote, their plain prefix stands.
    assert derived_ask("Ask before git commit.", pushes('git commit -m "wip"', "git commit --amend")) == "Bash(git commit:*)"
    assert derived_ask("Ask before running git.", pushes("GIT_DIR=x git push", "GIT_DIR=x git push")) is None


def test_a_rule_that_also_rests_on_a_steer_gets_no_ask():
    lessons = [*pushes("git push origin main"), reflexion("s1", "Ask before git push.", trigger="steer")]
    assert derived_ask("Ask before git push to main.", lessons) is None
    assert derived_ask("Ask before git push to main.", []) is None


def test_other_tools_ask_by_name_only_when_every_refusal_was_that_tool_and_the_rule_names_it():
    fetches = [refusal(n, "WebFetch", url=f"https://example.com/{n}", prompt="read it") for n in range(2)]
    assert derived_ask("Ask before using WebFetch on any page.", fetches) == "WebFetch"
    assert derived_ask("Ask before reading web pages.", fetches) is None
    mixed = [fetches[0], *pushes("git push origin main")]
    assert derived_ask("Ask before WebFetch or git push.", mixed) is None


def test_a_learn_pass_gives_asks_only_to_its_new_rules_and_only_from_cited_refusals():
    lessons = {r.id: r for r in pushes("git push origin main", "git push origin main --force")}
    new = rule("Ask before any git push to main.", "r-new", sources=list(lessons))
    unknown = rule("Ask before git push to main, always.", "r-other", sources=["x0", "gone"])
    live = rule("Ask before git push.", "r-live", sources=list(lessons))
    out = with_derived_asks([new, unknown, live], [live], lessons)
    assert [r.ask for r in out] == [["Bash(git push origin main:*)"], [], []]


def test_an_edit_keeps_an_ask_only_while_its_words_name_the_program():
    ask = ["Bash(git push origin main:*)"]
    assert asks_kept_by("Check with me before any git push to main.", ask) == (ask, [])
    assert asks_kept_by("Check with me before publishing to main.", ask) == ([], ask)
    assert asks_kept_by("Never use webfetch here.", ["WebFetch"]) == (["WebFetch"], [])


def learner_reply(text: str, cites: list[str]) -> str:
    return json.dumps({"rules": [{"rule": text, "based_on": cites, "replaces": [], "confidence": 0.9,
                                  "based_on_count": len(cites)}], "dropped": []})


async def test_a_learn_pass_over_three_refused_pushes_proposes_the_rule_with_its_ask(tmp_path: Path) -> None:
    # Pins: nothing derived Rule.ask, so no learned rule ever carried one.
    store = LearningStore.open(tmp_path / "learning")
    lessons = [msgspec.structs.replace(r, reflexion_text="Ask before any git push to main.")
               for r in pushes("git push origin main", "git push origin main", "git push origin main --force")]
    store.append_reflexions(lessons)
    text = "Ask before running git push to main."
    outcome = await learn_domain(store, "behavior", Learner(ScriptedProvider(learner_reply(text, ["R1", "R2", "R3"]))))
    assert outcome.status == "pending", outcome.outcome
    [proposed] = store.proposal(outcome.proposal_id or "").rules
    assert (proposed.text, proposed.ask) == (text, ["Bash(git push origin main:*)"])

    # The person's words drop the program: the ask goes, and the edit says so.
    done = accept(store, outcome.proposal_id or "", edits={1: "Check with me before publishing to main."})
    [kept] = store.learned_rules("behavior")
    assert kept.ask == [] and kept.edited is not None and kept.edited.ask_dropped == ["Bash(git push origin main:*)"]
    assert "not asking before `Bash(git push origin main:*)`: your words no longer name `git`" in accepted_message(done.proposal)


def test_each_time_the_ask_asked_after_the_accept_is_counted_with_what_the_person_did(tmp_path: Path) -> None:
    # Pins: an enforced permission whose effect nobody could see — the
    # record said nothing of the calls it stopped, or counted calls from
    # before the accept, or counted a call twice when its session grew.
    from mecha.core.agents.importing import import_sessions
    from mecha.core.learning.record import live_records
    from tests.builders import write_learned_rules

    store = LearningStore.open(tmp_path / "learning")
    since = "2026-11-01T10:00:04.000000Z"
    write_learned_rules(store, "behavior", [rule("Ask before git push to main.", "r-push",
                                                 ask=["Bash(git push origin main:*)"], created_at=since)])
    cc = Claude().user("Ship it.")
    cc.assistant(text("Pushing."), use("c1", "Bash", command="git push origin main"))  # before the accept
    cc.result("c1", REJECTION, is_error=True)
    cc.user("not yet")
    cc.assistant(text("Pushing now."), use("c2", "Bash", command="git push  origin main --force"))
    cc.result("c2", "To github.com:pat/proj.git\n   1a2b..3c4d  main -> main")
    cc.assistant(text("And the tag."), use("c3", "Bash", command="git push origin main --tags"))
    cc.result("c3", REJECTION, is_error=True)
    cc.user("no tags")
    cc.assistant(text("Status."), use("c4", "Bash", command="git status"))
    cc.result("c4", "clean")
    cc.assistant(text("Done."))
    folder = tmp_path / "projects" / "-home-pat-proj"
    folder.mkdir(parents=True)
    (folder / "s.jsonl").write_bytes(cc.bytes())
    import_sessions(store, "claude", tmp_path / "projects", voices=VOICES, ended=True)
    assert [(a.call_id, a.outcome) for a in store.asked()] == [("c2", "ran"), ("c3", "refused")]

    # Read again (the file grew by a line): nothing counted twice.
    cc.user("thanks")
    (folder / "s.jsonl").write_bytes(cc.bytes())
    import_sessions(store, "claude", tmp_path / "projects", voices=VOICES, ended=True)
    assert len(store.asked()) == 2
    [record] = [s.record for s in live_records(store, now="2026-11-02T00:00:00.000000Z")]
    assert (record.asked, record.asked_ran, record.asked_refused) == (2, 1, 1)
    assert "its permission asked 2× (ran 1, refused 1)" in record.line


def test_a_push_codex_exec_did_not_run_for_its_command_rule_counts_as_not_answered(tmp_path: Path) -> None:
    # Pins: Codex's output of a call its rules kept from running (no error
    # mark on it) counted as a push that ran.
    from mecha.core.agents.importing import import_sessions
    from mecha.core.sessions.foreign import HARNESS_VOICE_PROFILES as PROFILES
    from tests.builders import write_learned_rules
    from tests.core.ccfixture import Codex

    store = LearningStore.open(tmp_path / "learning")
    write_learned_rules(store, "behavior", [rule("Ask before git push to main.", "r-push",
                                                 ask=["Bash(git push origin main:*)"], created_at="2026-11-01T09:00:00Z")])
    cx = Codex(source="exec").user("Push it.")
    cx.call("c1", "exec_command", cmd="git push origin main")
    cx.output("c1", 'exec_command failed: CreateProcess { message: "Rejected(\\"approval required by policy, '
                    'but AskForApproval is set to Never\\")" }')
    cx.call("c2", "exec_command", cmd="git push origin main --tags")
    cx.output("c2", "Process exited with code 0\nOutput:\napproval required by policy is what the docs say\n")
    cx.say("Done.")
    folder = tmp_path / "sessions" / "2026" / "11" / "01"
    folder.mkdir(parents=True)
    (folder / "rollout-2026-11-01T10-00-00-0199aaaa-bbbb-7ccc-8ddd-000000000001.jsonl").write_bytes(cx.bytes())
    import_sessions(store, "codex", tmp_path / "sessions", voices=Voices(harness_prefixes=PROFILES["codex"]), ended=True)
    assert [(a.call_id, a.outcome) for a in store.asked()] == [("c1", "not_run"), ("c2", "ran")]
