"""Ask permissions from refused calls: the pattern, the settings change made
on the person's file's text, and what an accept adds and takes out."""

from __future__ import annotations

from pathlib import Path

from mecha.core.agents.permissions import ask_pattern, asks_after, set_asks
from mecha.core.domain.rules import Rule


def test_a_refused_shell_call_asks_by_its_command_and_nothing_else_becomes_an_allow() -> None:
    assert ask_pattern("Bash", {"command": "git push  origin main"}) == "Bash(git push origin main:*)"
    assert ask_pattern("Bash", {"command": "echo a\necho b"}) is None
    assert ask_pattern("WebFetch", {"url": "x"}) == "WebFetch"


def test_adding_then_taking_out_an_ask_gives_the_persons_bytes_back(tmp_path: Path) -> None:
    # Pins: a retired rule's permission left behind, or a settings file
    # reformatted around it (its `1e3`, its indentation, its key order).
    settings = tmp_path / "settings.json"
    mine = b'{\n  "env": {"N": 1e3},\n  "hooks": {}\n}\n'
    settings.write_bytes(mine)
    assert set_asks(settings, ["Bash(git push origin main:*)"], [])
    assert '"ask": [' in settings.read_text() and "1e3" in settings.read_text()
    assert not set_asks(settings, ["Bash(git push origin main:*)"], [])  # once is enough
    assert set_asks(settings, [], ["Bash(git push origin main:*)"])
    assert settings.read_bytes() == mine
    # A person's own ask list keeps its other entries.
    settings.write_bytes(b'{"permissions": {"ask": ["Bash(rm:*)"]}}\n')
    set_asks(settings, ["Bash(git push:*)"], [])
    set_asks(settings, [], ["Bash(git push:*)"])
    assert settings.read_bytes() == b'{"permissions": {"ask": ["Bash(rm:*)"]}}\n'


def test_an_accept_keeps_the_asks_of_live_rules_and_takes_out_those_of_retired_ones() -> None:
    push = Rule(text="Ask before pushing to main.", id="r1", ask=["Bash(git push origin main:*)"])
    other = Rule(text="Ask before deleting.", id="r2", ask=["Bash(rm -rf:*)"])
    retired = Rule(text="Ask before deleting.", id="r2", ask=["Bash(rm -rf:*)"], retired_at="2026-12-06T00:00:00Z")
    assert asks_after([], [push]) == (["Bash(git push origin main:*)"], [])
    assert asks_after([push, other], [push, retired]) == (["Bash(git push origin main:*)"], ["Bash(rm -rf:*)"])
    assert asks_after([push], []) == ([], ["Bash(git push origin main:*)"])


def test_a_proposal_and_its_accept_say_which_call_the_agent_will_ask_before() -> None:
    # Pins: a permission written into the person's settings without the
    # review ever showing it.
    from mecha.sidecar import humane

    rule = {"text": "Ask before pushing to main.", "ask": ["Bash(git push origin main:*)"]}
    proposal = {"rules_before": [], "rules": [rule]}
    assert humane.new_asks(proposal) == ["Bash(git push origin main:*)"]
    assert humane.new_asks({"rules_before": [rule], "rules": [rule]}) == []


def test_an_accept_whose_edit_took_the_program_out_says_the_ask_was_not_written() -> None:
    # Pins: an edit that silently dropped (or silently kept) the permission.
    from mecha.sidecar import humane

    edited = {"text": "Check with me before publishing.", "ask": [],
              "edited": {"was": "Ask before git push to main.", "proposal_id": "p-1", "at": "2026-12-06T00:00:00Z",
                         "ask_dropped": ["Bash(git push origin main:*)"]}}
    result = {"proposal": {"id": "p-1", "domain": "behavior", "status": "accepted", "reflexion_ids": [],
                           "rules_before": [], "rules": [edited], "created_at": "2026-12-06T00:00:00Z"},
              "exports": [{"path": "/x/CLAUDE.md", "changed": True}]}
    said = humane.accepted(result)
    assert "not asking before `Bash(git push origin main:*)`: your words no longer name `git`" in said
    assert "also asks before" not in said


def test_codex_rules_file_holds_one_prompt_rule_per_shell_ask_and_goes_with_the_last(tmp_path: Path) -> None:
    # Pins: a Codex user whose refusals never reached Codex's own enforced
    # place, or a rules file (or folder) left behind once every rule is retired.
    from mecha.core.agents.permissions import codex_rules_file, set_codex_asks

    codex = tmp_path / ".codex"
    codex.mkdir()
    path = codex_rules_file(tmp_path, {})
    assert path == codex / "rules" / "mecha.rules"
    assert set_codex_asks(path, ["Bash(git push origin main:*)", "WebFetch"], [])
    text = path.read_text()
    assert 'pattern = ["git", "push", "origin", "main"],' in text and 'decision = "prompt",' in text
    assert "WebFetch" not in text and "allow" not in text.split("\n", 3)[-1]
    assert set_codex_asks(path, ["Bash(npm publish:*)"], [])
    assert not set_codex_asks(path, ["Bash(npm publish:*)"], [])
    assert set_codex_asks(path, [], ["Bash(git push origin main:*)"])
    assert "git" not in path.read_text().split("\n", 3)[-1] and '"npm", "publish"' in path.read_text()
    assert set_codex_asks(path, [], ["Bash(npm publish:*)"])
    assert sorted(p.name for p in codex.iterdir()) == [], "the file and the folder made for it are gone"


def test_a_codex_rules_file_changed_by_hand_is_refused_and_left_as_it_is(tmp_path: Path) -> None:
    import pytest

    from mecha.core.agents.permissions import set_codex_asks
    from mecha.core.errors import ExportFailed

    path = tmp_path / "rules" / "mecha.rules"
    set_codex_asks(path, ["Bash(git push origin main:*)"], [])
    mine = path.read_bytes() + b'prefix_rule(pattern = ["rm"], decision = "allow")\n'
    path.write_bytes(mine)
    with pytest.raises(ExportFailed, match="changed since it was written"):
        set_codex_asks(path, [], ["Bash(git push origin main:*)"])
    with pytest.raises(ExportFailed, match="changed since it was written"):
        set_codex_asks(path, ["Bash(npm publish:*)"], [])
    assert path.read_bytes() == mine


def test_an_accept_writes_codex_rules_only_when_codex_is_exported_to(tmp_path: Path) -> None:
    from mecha.core.agents.permissions import write_asks

    push = Rule(text="Ask before git push to main.", id="r1", ask=["Bash(git push origin main:*)"])
    claude = tmp_path / ".claude" / "settings.json"
    rules = tmp_path / ".codex" / "rules" / "mecha.rules"
    done = write_asks([], [push], home=tmp_path, codex=False, env={})
    assert [(w.path, w.changed) for w in done] == [(str(claude), True)] and not rules.exists()
    done = write_asks([], [push], home=tmp_path, codex=True, env={})
    assert [(w.path, w.changed) for w in done] == [(str(claude), False), (str(rules), True)]
    retired = Rule(text=push.text, id="r1", ask=push.ask, enabled=False, retired_at="2026-12-06T00:00:00Z")
    done = write_asks([push], [retired], home=tmp_path, codex=True, env={})
    assert all(w.changed and w.error is None for w in done) and not rules.exists()
    assert "ask" not in claude.read_text()


def test_a_codex_rules_file_that_is_a_fifo_is_refused_by_name_without_waiting(tmp_path: Path) -> None:
    # Pins: the rules file read with a plain open before the confined
    # writer saw it, so a FIFO there held every accept exporting to Codex.
    import os
    import threading

    import pytest

    from mecha.core.agents.permissions import set_codex_asks
    from mecha.core.errors import ExportFailed

    path = tmp_path / "rules" / "mecha.rules"
    path.parent.mkdir()
    os.mkfifo(path)
    said: list[BaseException | bool] = []

    def write() -> None:
        try:
            said.append(set_codex_asks(path, ["Bash(git push origin main:*)"], []))
        except BaseException as exc:  # noqa: BLE001 - handed to the test's thread
            said.append(exc)

    worker = threading.Thread(target=write, daemon=True)
    worker.start()
    worker.join(10)
    if worker.is_alive():  # let the blocked reader go before failing
        os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))
        worker.join(10)
        pytest.fail("the rules file's FIFO was opened for reading and waited on")
    assert isinstance(said[0], ExportFailed) and "FIFO" in str(said[0]) and str(path) in str(said[0]), said
