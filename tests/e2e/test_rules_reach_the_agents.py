"""The whole loop with the agents' real command lines, only the models
scripted: a person installs the plugin (Claude Code) or the hooks (Codex),
writes no `[export]`, corrects the agent three times, accepts the proposal
a learn pass files from inside the agent — and the next session's request
to the model carries the rule, while `git status` in the project, whose
team committed its own instructions, shows nothing new.

The three corrections are typed into each agent's real terminal UI,
driven through a pseudo-terminal (`Terminal`, as a person uses it): a task,
the scripted model's answer that it renamed a module, the correction, then
`/exit` (Claude Code) or `/quit` (Codex), which runs the session-end hook;
the reader learns from those sessions only because a person ran them (it
never learns from a headless `claude -p` or `codex exec`). The hook's
reflect pass asks a scripted OpenAI-style model (`lessons_responder`) and
starts the learn pass by itself. Claude Code's review is `/mecha:review
accept ID` in a real `claude -p`, whose scripted model asks for the accept
the person's words say; Codex's is `$mecha-review accept ID` typed into
its terminal UI, whose model runs the skill's command outside the sandbox
once the person lets it. The check is what the next real `claude -p` or
`codex exec` sends its model.

A refused call takes the same road and comes out enforced: three times
the person refuses `git push origin main` at Claude Code's real
permission prompt and says why; the learn pass derives the rule's ask
from those refusals, the proposal shows it, the accept writes it into the
person's Claude Code settings and, Codex being connected too, Codex's
command rules; the next `claude -p` that may run any shell call is not let
push (and the rule's record counts it), nor is the next `codex exec`
(whose push ran before the accept), and retiring the rule gives the
settings file and the rules folder back byte for byte."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from mecha.core.store.learning_store import LearningStore, ProposalStatus
from tests.realparts import manifest

from .conftest import REPO, WAIT_S, wait_until
from .test_agent_plugins import BashModel
from .test_codex_session_end import Terminal

CORRECTIONS = [
    "No, never rename a module without asking me first.",
    "No, never rename a module without asking me first; put the old name back.",
    "Stop: never rename a module without asking me first.",
]


class AgentModel(BashModel):
    """The agent's model: a line of text, unless `command` is set, when a
    request offering the Bash tool is answered by running it."""

    def __init__(self) -> None:
        super().__init__("")
        self.command: str | None = None  # type: ignore[assignment]

    def reply(self, body: dict[str, Any]) -> bytes:
        if self.command is None:
            body = {**body, "tools": []}
        return super().reply(body)


def git(cwd: Path, *argv: str) -> str:
    done = subprocess.run(["git", "-C", str(cwd), *argv], capture_output=True, text=True, check=True)
    return done.stdout


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A repository whose team committed its own CLAUDE.md and AGENTS.md."""
    root = tmp_path / "src" / "invoices"
    root.mkdir(parents=True)
    git(root, "init", "-q")
    (root / "CLAUDE.md").write_text("# Invoices\n\nRun `make test` before a commit.\n")
    (root / "AGENTS.md").write_text("# Invoices\n\nRun `make test` before a commit.\n")
    git(root, "add", ".")
    git(root, "-c", "user.name=team", "-c", "user.email=team@example.com", "commit", "-qm", "team instructions")
    return root


@pytest.fixture
def person(env: dict[str, str], store_dir: Path, server: Any) -> dict[str, str]:
    """A person's machine: mecha-sidecar on PATH, a model for the passes in
    the environment the agent hands its hooks, and no `[export]` anywhere."""
    venv_bin = os.path.dirname(sys.executable)
    return {**env, "PATH": f"{venv_bin}{os.pathsep}{env.get('PATH', '/usr/bin:/bin')}",
            "MECHA_LEARNING_DIR": str(store_dir), "MECHA_MODEL_API": "openai", "MECHA_MODEL_BASE_URL": server.url,
            "MECHA_MODEL": "scripted-model", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "ANTHROPIC_API_KEY": "scripted-key-not-a-secret", "LANG": "C.UTF-8"}


#: What the scripted agent answers a task with, in the terminal sessions.
PROPOSED = "I renamed totals.py to sums.py and updated its imports."

#: Claude Code's empty prompt, drawn once its terminal UI takes input.
PROMPT = "\u276f\u00a0".encode()


def words(screen: bytes) -> str:
    """A terminal UI's output as the words it drew: every escape sequence
    (cursor moves place words apart) becomes a space, runs of spaces one."""
    text = re.sub(r"\x1b\[[0-9;?<>=]*[ -/]*[@-~]|\x1b\][^\x07]*\x07|\x1b[()][A-Z0-9]|\x1b[=>78]", " ",
                  screen.decode("utf-8", "replace"))
    return " ".join(text.replace("\u00a0", " ").split())


def trust_for_the_terminal_ui(home: Path, project: Path, key: str) -> None:
    """What a person's first interactive `claude` asks once and keeps in
    `~/.claude.json`: onboarding done with a theme chosen, the API key in
    the environment approved (by its last 20 characters), the offer to make
    auto mode the default answered (it is made to a person whose settings
    choose another mode), the project's folder trusted — so the terminal UI
    opens on its prompt."""
    path = home / ".claude.json"
    kept = json.loads(path.read_text()) if path.exists() else {}
    kept.update({"hasCompletedOnboarding": True, "theme": "dark", "hasSeenAutoDefaultNudge": True,
                 "customApiKeyResponses": {"approved": [key[-20:]], "rejected": []},
                 "projects": {str(project.resolve()): {"hasTrustDialogAccepted": True,
                                                       "hasCompletedProjectOnboarding": True}}})
    path.write_text(json.dumps(kept))


def correct_in_the_terminal_ui(claude: str, env: dict[str, str], project: Path, model: AgentModel,
                               correction: str, store_dir: Path) -> str:
    """One interactive session: the person types a task, the model answers
    it has renamed a module, the person types `correction`, then `/exit`.
    Returns the line the plugin's session-end hook logged for it."""
    log = store_dir / "logs" / "hooks.log"
    ended = len(log.read_text().splitlines()) if log.exists() else 0
    ui = Terminal([claude], {**env, "TERM": "xterm-256color"}, project)
    try:
        ui.wait_for(PROMPT, "the prompt")
        for said, answer in (("Rename the totals module to sums.", PROPOSED), (correction, "Done.")):
            asked, drawn = len(model.bodies), len(ui.screen)
            model.text = answer
            ui.type(said.encode())
            ui.type(b"\r")
            wait_until(lambda asked=asked: len(model.bodies) > asked, "the model to be asked")
            wait_until(lambda drawn=drawn, answer=answer: (ui.pump(0.1), answer in words(ui.screen[drawn:]))[1],
                       f"the answer {answer!r} on the screen")
        exit_claude(ui)
    finally:
        ui.close()
    return session_end_line(log, ended)


def exit_claude(ui: Any) -> None:
    """End an interactive claude session as a person does: `/exit`."""
    ui.type(b"/exit")
    ui.type(b"\r")
    wait_until(lambda: ui.exited() is not None or None, "claude to exit")


def session_end_line(log: Path, ended: int) -> str:
    """The hook log's first line after its first `ended` lines: the
    session-end hook's record of the session that just ended."""
    return str(wait_until(lambda: log.exists() and log.read_text().splitlines()[ended:][:1] and
                          log.read_text().splitlines()[ended], "the session-end hook's record"))


def correct_in_codexs_terminal_ui(codex: str, env: dict[str, str], project: Path, model: Any, correction: str,
                                  store_dir: Path) -> str:
    """The same session in Codex's terminal UI, quit with `/quit` (its hooks
    trusted as a person trusts them once in `/hooks`)."""
    log = store_dir / "logs" / "hooks.log"
    ended = len(log.read_text().splitlines()) if log.exists() else 0
    ui = Terminal([codex, "--dangerously-bypass-hook-trust"], {**env, "TERM": "xterm-256color"}, project)
    try:
        ui.wait_for(b"Ask Codex", "the prompt")
        for said in ("Rename the totals module to sums.", correction):
            asked, drawn = len(model.seen), len(ui.screen)
            ui.type(said.encode())
            ui.type(b"\r")
            wait_until(lambda asked=asked: len(model.seen) > asked, "the model to be asked")
            wait_until(lambda drawn=drawn: (ui.pump(0.1), "I renamed the module." in words(ui.screen[drawn:]))[1],
                       "the answer on the screen")
        ui.type(b"/quit")
        ui.type(b"\r")
        wait_until(lambda: ui.exited() is not None or None, "codex to exit")
    finally:
        ui.close()
    return str(wait_until(lambda: log.exists() and log.read_text().splitlines()[ended:][:1] and
                          log.read_text().splitlines()[ended], "the session-end hook's record"))


def review_in_codexs_terminal_ui(codex: str, env: dict[str, str], project: Path, said: str, store_dir: Path) -> None:
    """A Codex session in which the person types `said`, lets the command
    the model asks to run outside the sandbox run (`y` at Codex's approval
    prompt), sees the answer, and quits."""
    log = store_dir / "logs" / "hooks.log"
    ended = len(log.read_text().splitlines()) if log.exists() else 0
    ui = Terminal([codex, "--dangerously-bypass-hook-trust"], {**env, "TERM": "xterm-256color"}, project)
    try:
        ui.wait_for(b"Ask Codex", "the prompt")
        ui.type(said.encode())
        ui.type(b"\r")
        ui.wait_for(b"Would you like to run the following command?", "Codex's approval prompt")
        ui.pump(1.0)  # the prompt takes keys once it has settled
        drawn = len(ui.screen)
        ui.type(b"y")
        ui.wait_for(b"accepted", "the accept's output")
        wait_until(lambda: (ui.pump(0.1), b"Worked for" in ui.screen[drawn:])[1], "the turn to end")
        ui.type(b"/quit")
        ui.type(b"\r")
        wait_until(lambda: ui.exited() is not None or None, "codex to exit")
    finally:
        ui.close()
    wait_until(lambda: log.exists() and log.read_text().splitlines()[ended:], "the session-end hook's record")


def skill_running_model() -> type:
    """Codex's scripted model (`agent_server.AgentModelServer`) that, asked
    with the `$mecha-review` skill in its request and the person's words
    "accept ID", runs the command the skill gives for that decision, then
    answers with what it printed; any other request as the responder says."""
    from tests.agent_server import AgentModelServer, Call, Seen, Text

    class Model(AgentModelServer):
        def next_action(self, seen: Seen) -> Any:
            items = seen.body.get("input") or [] if isinstance(seen.body, dict) else []
            printed = [i.get("output") for i in items if isinstance(i, dict) and i.get("type") == "function_call_output"]
            if printed:
                return Text(str(printed[-1]))
            texts = [c.get("text", "") for i in items if isinstance(i, dict) and i.get("type") == "message"
                     for c in i.get("content") or [] if isinstance(c, dict)]
            skill = next((t for t in texts if t.startswith("<skill>\n<name>mecha-review</name>")), "")
            decided = next((m for t in texts for m in [re.match(r"\$mecha-review accept (\S+)$", t)] if m), None)
            command = re.search(r'"accept ID": `(.+?) proposals accept ID`', skill)
            if decided and command:
                call = {"cmd": f"{command.group(1)} proposals accept {decided.group(1)}"}
                if "`sandbox_permissions`\nset to `require_escalated`" in skill:
                    call.update(sandbox_permissions="require_escalated", justification="Accept the proposal?")
                return Call("exec_command", call)
            return super().next_action(seen)

    return Model


def run(argv: list[str], env: dict[str, str], cwd: Path, timeout: float = WAIT_S * 4) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done


def test_claude_code_with_the_plugin_reads_an_accepted_rule_in_the_next_session_and_git_sees_nothing(
    person, project, store_dir, server
):
    # Pins: an accept that ends in the store unless [export] is configured
    # (the agent never reads it), and a person's project rule written into
    # the team's committed CLAUDE.md, which git then shows as changed.
    claude = str(manifest("agents")["claude"])
    run([claude, "plugin", "marketplace", "add", str(REPO)], person, project)
    run([claude, "plugin", "install", "mecha@mecha"], person, project)
    model = AgentModel()
    env = {**person, "ANTHROPIC_BASE_URL": model.url}
    trust_for_the_terminal_ui(Path(person["HOME"]), project, person["ANTHROPIC_API_KEY"])
    try:
        # Three sessions a person types into, each read by the plugin's
        # session-end hook as it exits; each lesson in before the next session.
        sessions = []
        for n, correction in enumerate(CORRECTIONS, start=1):
            ended = correct_in_the_terminal_ui(claude, env, project, model, correction, store_dir)
            assert "claude session-end" in ended and "queued 1 new intervention(s) as claude:" in ended, ended
            sessions.append(ended.split(" as ", 1)[1].split(";", 1)[0])
            wait_until(lambda n=n: len(LearningStore.open(store_dir).reflexions()) >= n, f"lesson {n} reflected")
        # The third session's reflect pass starts the learn pass by itself.
        proposal = wait_until(lambda: next(iter(LearningStore.open(store_dir).proposals()), None),
                              "a learn pass to file a proposal")
        read = {r.id: r for r in LearningStore.open(store_dir).reflexions()}
        assert sorted((read[i].session_id, read[i].intervention) for i in proposal.reflexion_ids) == sorted(
            zip(sessions, CORRECTIONS)), "the proposal rests on the three typed corrections"
        assert proposal.status == ProposalStatus.PENDING and proposal.project == str(project.resolve())
        rule = proposal.rules[-1].text

        model.command = f"mecha-sidecar proposals accept {proposal.id}"
        review = run([claude, "-p", f"/mecha:review accept {proposal.id}", "--output-format", "json"], env, project)
        assert json.loads(review.stdout)["is_error"] is False
        told = model.texts()[-1]
        assert f"accepted {proposal.id}" in told and f"the rules are now in {project.resolve()}/CLAUDE.local.md" in told
        assert LearningStore.open(store_dir).proposal(proposal.id).status == ProposalStatus.ACCEPTED

        model.command = None
        before = len(model.bodies)
        run([claude, "-p", "Rename the totals helper.", "--output-format", "json"], env, project)
        sent = json.dumps(model.bodies[before:])
    finally:
        model.close()
    assert json.dumps(rule)[1:-1] in sent, "the next session's request carries the rule"
    assert "Run `make test` before a commit." in sent, "beside the team's own CLAUDE.md"
    assert git(project, "status", "--porcelain") == ""
    assert (project / "CLAUDE.md").read_text() == "# Invoices\n\nRun `make test` before a commit.\n"

    # Sharing it is a decision of its own: the team's files, and git says exactly that.
    [live] = LearningStore.open(store_dir).learned_rules("behavior", str(project.resolve()))
    shared = run([sys.executable, "-m", "mecha.sidecar", "share", str(live.id)], person, project)
    assert "review the change (git diff), then commit it: git -C" in shared.stdout, shared.stdout
    assert git(project, "status", "--porcelain") == " M AGENTS.md\n M CLAUDE.md\n"
    assert (project / "CLAUDE.md").read_text().startswith("# Invoices\n\nRun `make test` before a commit.\n\n")
    assert f"- {rule}" in (project / "CLAUDE.md").read_text()
    assert [r.id for r in LearningStore.open(store_dir).learned_rules("behavior", str(project.resolve()))] == [live.id]


def test_codex_with_the_hooks_reads_an_accepted_rule_in_the_next_session_and_git_sees_nothing(
    person, project, store_dir
):
    # Pins: Codex rules written into the team's AGENTS.md (shown by git), or
    # into a file Codex does not read, so the next session never sees them.
    from tests.agent_server import Text
    from tests.agentcli.conftest import codex_config

    SkillRunningModel = skill_running_model()  # noqa: N806 - a class
    codex = str(manifest("agents")["codex"])
    home = Path(person["HOME"])
    codex_home = home / ".codex"
    codex_home.mkdir(parents=True, exist_ok=True)
    with SkillRunningModel(responder=lambda system, user, dialect: Text("I renamed the module.")) as agent_model:
        # The person's Codex: a model provider, and this project trusted (Codex asks once per project).
        (codex_home / "config.toml").write_text(
            codex_config(agent_model.url) + f'\n[projects."{project.resolve()}"]\ntrust_level = "trusted"\n')
        env = {**person, "CODEX_HOME": str(codex_home)}
        run([sys.executable, "-m", "mecha.sidecar", "hooks", "install", "codex"], env, project)
        sessions = []
        for n, correction in enumerate(CORRECTIONS, start=1):
            ended = correct_in_codexs_terminal_ui(codex, env, project, agent_model, correction, store_dir)
            assert "codex session-end" in ended and "queued 1 new intervention(s) as " in ended, ended
            sessions.append(ended.split(" as ", 1)[1].split(";", 1)[0])
            wait_until(lambda n=n: len(LearningStore.open(store_dir).reflexions()) >= n, f"lesson {n} reflected")
        proposal = wait_until(lambda: next(iter(LearningStore.open(store_dir).proposals()), None),
                              "a learn pass to file a proposal")
        read = {r.id: r for r in LearningStore.open(store_dir).reflexions()}
        assert sorted((read[i].session_id, read[i].intervention) for i in proposal.reflexion_ids) == sorted(
            zip(sessions, CORRECTIONS)), "the proposal rests on the three typed corrections"
        assert proposal.project == str(project.resolve())
        rule = proposal.rules[-1].text
        # The person reviews in Codex: `$mecha-review accept ID`, whose skill
        # the model reads in its request and whose command it runs, outside
        # the sandbox as the skill says, once the person lets it.
        asked = len(agent_model.seen)
        review_in_codexs_terminal_ui(codex, env, project, f"$mecha-review accept {proposal.id}", store_dir)
        [printed] = [i["output"] for s in agent_model.seen[asked:] for i in s.body.get("input") or []
                     if i.get("type") == "function_call_output"]
        assert f"accepted {proposal.id}" in printed, printed
        assert f"the rules are now in {project.resolve()}/.codex/config.toml" in printed, printed
        assert LearningStore.open(store_dir).proposal(proposal.id).status == ProposalStatus.ACCEPTED

        before = len(agent_model.seen)
        run([codex, "exec", "Rename the totals helper."], env, project)
        sent = json.dumps([s.body for s in agent_model.seen[before:]])
    assert json.dumps(rule)[1:-1] in sent, "the next session's request carries the rule"
    assert "Run `make test` before a commit." in sent, "beside the team's own AGENTS.md"
    assert git(project, "status", "--porcelain") == ""
    assert (project / "AGENTS.md").read_text() == "# Invoices\n\nRun `make test` before a commit.\n"


#: The call the person refuses, three times, at Claude Code's permission prompt.
PUSH = "git push origin main"
#: Each refusal: how the call is refused at the prompt (Esc, or its "No"),
#: then what the person types when asked what to do instead.
REFUSALS = [
    ("esc", "No: never git push to main without asking me first."),
    ("no", "Don't git push to main yourself; I push it."),
    ("esc", "Stop, ask me before any git push to main."),
]
#: The rule the scripted learner writes from the three refusals.
PUSH_RULE = "Ask the person before any git push to main; never push it yourself."


def one_rule_from_every_lesson(request: Any, dialect: Any) -> Any:
    """The passes' scripted model: lessons as `lessons_responder` draws
    them, and a learner that, as a careful one would, merges every lesson
    it is shown into `PUSH_RULE`, citing them all."""
    from tests.model_server import lessons_responder, reply, request_prompts

    system, user = request_prompts(request, dialect)
    if '"reflexion"' not in system and ('"rules"' in system or "rule set" in system.lower()):
        cited = re.findall(r"^\s*- (R\d+)\b", user, re.M)
        rule = {"rule": PUSH_RULE, "based_on": cited, "replaces": [], "confidence": 0.8, "based_on_count": len(cited)}
        return reply(json.dumps({"rules": [rule], "dropped": []}))
    return lessons_responder(request, dialect)


def refuse_in_the_terminal_ui(claude: str, env: dict[str, str], project: Path, model: AgentModel, refuse: str,
                              said: str, store_dir: Path) -> str:
    """One interactive session: the person asks for a push, refuses the
    call at the permission prompt (`refuse`: by Esc, or by its "No"), types `said` when asked what to
    do instead, then `/exit`. Returns the session-end hook's line for it."""
    log = store_dir / "logs" / "hooks.log"
    ended = len(log.read_text().splitlines()) if log.exists() else 0
    ui = Terminal([claude], {**env, "TERM": "xterm-256color"}, project)

    def shown(text: str, since: int) -> bool:
        ui.pump(0.1)
        return text in words(ui.screen[since:])

    try:
        ui.wait_for(PROMPT, "the prompt")
        model.command, drawn = PUSH, len(ui.screen)
        ui.type(b"Push the release to main.")
        ui.type(b"\r")
        wait_until(lambda: shown("Esc to cancel", drawn), "the permission prompt")
        ui.pump(1.0)  # the prompt takes keys once it has settled
        # "No" is numbered after the prompt's other choices, which vary.
        [no] = re.findall(r"(\d)\. No\b", words(ui.screen[drawn:]))[-1:] if refuse == "no" else ["\x1b"]
        drawn = len(ui.screen)
        ui.type(no.encode())
        wait_until(lambda: shown("What should Claude do instead?", drawn), "the refusal taken")
        model.command, model.text, drawn, asked = None, "Understood.", len(ui.screen), len(model.bodies)
        ui.type(said.encode())
        ui.type(b"\r")
        wait_until(lambda: len(model.bodies) > asked and shown("Understood.", drawn), "the answer on the screen")
        exit_claude(ui)
    finally:
        ui.close()
    return session_end_line(log, ended)


def folder(path: Path) -> dict[str, bytes]:
    """Every file under `path`, by its path there, with its bytes."""
    return {str(f.relative_to(path)): f.read_bytes() for f in sorted(path.rglob("*")) if f.is_file()}


def persons_own_settings(home: Path) -> tuple[Path, Path]:
    """The person's own Claude Code settings — manual permission mode (a
    gateway like the scripted one cannot pass auto mode's server-side
    check), `ls` allowed — and a command rule of their own in Codex's rules
    folder: the settings file and the rules folder."""
    settings = home / ".claude" / "settings.json"
    settings.parent.mkdir(parents=True, exist_ok=True)
    settings.write_bytes(b'{\n    "model": "opus",\n    "env": {"A": "1e3"},\n'
                         b'    "permissions": {"defaultMode": "default", "allow": ["Bash(ls:*)"]}\n}\n')
    rules = home / ".codex" / "rules"
    rules.mkdir(parents=True)
    (rules / "default.rules").write_text('prefix_rule(pattern = ["npm", "publish"], decision = "prompt")\n')
    return settings, rules


def pushes_to_a_remote(project: Path, tmp_path: Path) -> Path:
    """The project pushes its main branch to a bare remote whose ref shows
    what ran (`head_of`)."""
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    git(project, "branch", "-M", "main")
    git(project, "remote", "add", "origin", str(remote))
    return remote


def head_of(remote: Path) -> str:
    """The commit the remote's main branch is at, or nothing."""
    return subprocess.run(["git", "--git-dir", str(remote), "rev-parse", "-q", "--verify", "refs/heads/main"],
                          capture_output=True, text=True).stdout.strip()


def refusals_become_a_proposal_with_an_ask(claude: str, env: dict[str, str], me: dict[str, str], project: Path,
                                           model: Any, store_dir: Path) -> Any:
    """Each of `REFUSALS` made at the real claude permission prompt, read by
    the session-end hook into a denial lesson; the learn pass's proposal,
    one rule over all three carrying the push's ask, as `proposals show`
    says it."""
    sessions = []
    for n, (refuse, said) in enumerate(REFUSALS, start=1):
        ended = refuse_in_the_terminal_ui(claude, env, project, model, refuse, said, store_dir)
        assert "claude session-end" in ended and "queued 1 new intervention(s) as claude:" in ended, ended
        sessions.append(ended.split(" as ", 1)[1].split(";", 1)[0])
        wait_until(lambda n=n: len(LearningStore.open(store_dir).reflexions()) >= n, f"lesson {n} reflected")
    lessons = LearningStore.open(store_dir).reflexions()
    assert sorted((r.session_id, r.trigger, r.intervention) for r in lessons) == sorted(
        (s, "denial", said) for s, (_, said) in zip(sessions, REFUSALS, strict=True)), lessons
    proposal = wait_until(lambda: next(iter(LearningStore.open(store_dir).proposals()), None),
                          "a learn pass to file a proposal")
    assert sorted(proposal.reflexion_ids) == sorted(r.id for r in lessons)
    [rule] = proposal.rules
    assert (rule.text, rule.ask) == (PUSH_RULE, [f"Bash({PUSH}:*)"])
    shown = run([sys.executable, "-m", "mecha.sidecar", "proposals", "show", proposal.id], me, project)
    assert f"also ask before `Bash({PUSH}:*)`" in shown.stdout, shown.stdout
    return proposal


def retire_the_ask(me: dict[str, str], project: Path, store_dir: Path, rule_id: str, accepted: str) -> None:
    """`retire` the live rule, and accept the retirement it offers, which
    says the ask is gone."""
    offered = run([sys.executable, "-m", "mecha.sidecar", "retire", "behavior", str(rule_id),
                   "I push with a script now"], me, project)
    retirement = next(p for p in LearningStore.open(store_dir).proposals() if p.id != accepted)
    assert retirement.id in offered.stdout
    gone = run([sys.executable, "-m", "mecha.sidecar", "proposals", "accept", retirement.id], me, project)
    assert f"no longer asks before `Bash({PUSH}:*)`" in gone.stdout, gone.stdout


def accept_in_review(claude: str, env: dict[str, str], project: Path, model: Any, proposal_id: str,
                     settings: Path, rules: Path) -> None:
    """`/mecha:review accept` in a real claude -p: the review says which
    settings files the ask went into, and Claude Code's has it."""
    model.command = f"mecha-sidecar proposals accept {proposal_id}"
    review = run([claude, "-p", f"/mecha:review accept {proposal_id}", "--output-format", "json"], env, project)
    assert json.loads(review.stdout)["is_error"] is False
    told = model.texts()[-1]
    written = f"({settings}, {rules / 'mecha.rules'})"
    assert f"accepted {proposal_id}" in told and f"also asks before `Bash({PUSH}:*)` {written}" in told, told
    assert json.loads(settings.read_text())["permissions"]["ask"] == [f"Bash({PUSH}:*)"]


def claude_is_not_let_push(claude: str, env: dict[str, str], project: Path, model: Any, store_dir: Path) -> None:
    """The next Claude Code session may run every shell call, and is not
    let push; the session-end hook reads it (and so counts the ask)."""
    log = store_dir / "logs" / "hooks.log"
    ended = len(log.read_text().splitlines())
    model.command = PUSH
    pushed = run([claude, "-p", "Push it.", "--output-format", "json", "--allowedTools", "Bash"], env, project)
    denied = json.loads(pushed.stdout)["permission_denials"]
    assert [d["tool_input"]["command"] for d in denied] == [PUSH], denied
    read = f"session-end session={json.loads(pushed.stdout)['session_id']} "
    wait_until(lambda: any(read in x for x in log.read_text().splitlines()[ended:]),
               "the session-end hook's record of it")


def the_ask_was_counted_once(me: dict[str, str], project: Path, store_dir: Path) -> Any:
    """The live rule, whose record holds the one call its ask stopped (not
    answered), as `mecha-sidecar rules` shows it."""
    [live] = LearningStore.open(store_dir).learned_rules("behavior", str(project.resolve()))
    [asked] = LearningStore.open(store_dir).asked()
    assert (asked.rule_id, asked.pattern, asked.outcome) == (live.id, f"Bash({PUSH}:*)", "not_run")
    listed = run([sys.executable, "-m", "mecha.sidecar", "rules"], me, project)
    assert "its permission asked 1× (not answered 1)" in listed.stdout, listed.stdout
    return live


def codex_runs_the_push(codex: str, codex_model: Any, me: dict[str, str], project: Path) -> str:
    """`codex exec` whose model runs the push; what the call returned."""
    from tests.agent_server import Call, Text

    codex_model.script(Call("exec_command", {"cmd": PUSH}), Text("Done."))
    before = len(codex_model.seen)
    run([codex, "exec", "Push it."], me, project)
    return json.dumps([i for s in codex_model.seen[before:] for i in s.body.get("input") or []
                       if i.get("type") == "function_call_output"])


def test_a_push_refused_three_times_becomes_an_ask_both_real_agents_honour_and_retiring_it_restores_their_settings(
    person, project, store_dir, tmp_path
):
    # Pins: a refused call that only becomes prose; an ask the learn pass
    # never derives from real refusals, or the proposal never shows; an ask
    # entry a real CLI does not honour (a wrong key, pattern or rule
    # decision); an ask nobody counts; and a retirement that leaves the
    # person's settings file or Codex's rules folder other than it was.
    from tests.agent_server import AgentModelServer, Text
    from tests.agentcli.conftest import codex_config
    from tests.model_server import ModelServer

    claude, codex = str(manifest("agents")["claude"]), str(manifest("agents")["codex"])
    home = Path(person["HOME"])
    settings, rules = persons_own_settings(home)
    theirs = folder(rules)
    remote = pushes_to_a_remote(project, tmp_path)

    with ModelServer(responder=one_rule_from_every_lesson) as passes, \
            AgentModelServer(responder=lambda system, user, dialect: Text("Done.")) as codex_model:
        me = {**person, "MECHA_MODEL_BASE_URL": passes.url, "CODEX_HOME": str(home / ".codex")}
        (home / ".codex" / "config.toml").write_text(
            codex_config(codex_model.url) + f'\n[projects."{project.resolve()}"]\ntrust_level = "trusted"\n')
        run([sys.executable, "-m", "mecha.sidecar", "hooks", "install", "codex"], me, project)
        run([claude, "plugin", "marketplace", "add", str(REPO)], me, project)
        run([claude, "plugin", "install", "mecha@mecha"], me, project)
        mine = settings.read_bytes()  # with the plugin the person installed

        def codex_pushes() -> str:
            return codex_runs_the_push(codex, codex_model, me, project)

        model = AgentModel()
        env = {**me, "ANTHROPIC_BASE_URL": model.url}
        trust_for_the_terminal_ui(home, project, person["ANTHROPIC_API_KEY"])
        try:
            proposal = refusals_become_a_proposal_with_an_ask(claude, env, me, project, model, store_dir)

            # Before the accept, Codex runs the push.
            assert "Process exited with code 0" in codex_pushes()
            assert head_of(remote) == git(project, "rev-parse", "HEAD").strip()

            accept_in_review(claude, env, project, model, proposal.id, settings, rules)
            claude_is_not_let_push(claude, env, project, model, store_dir)
        finally:
            model.close()
        # Nor is the next Codex session: a new commit stays off the remote.
        git(project, "-c", "user.name=me", "-c", "user.email=me@example.com", "commit", "-q", "--allow-empty",
            "-m", "release")
        was = head_of(remote)
        refused = codex_pushes()
        assert "approval required by policy" in refused, refused
        assert head_of(remote) == was != git(project, "rev-parse", "HEAD").strip()

        live = the_ask_was_counted_once(me, project, store_dir)
        retire_the_ask(me, project, store_dir, live.id, proposal.id)
        assert settings.read_bytes() == mine
        assert folder(rules) == theirs
        # And Codex pushes again.
        assert "Process exited with code 0" in codex_pushes()
        assert head_of(remote) == git(project, "rev-parse", "HEAD").strip()
