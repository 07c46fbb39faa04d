"""The agents' review commands. The Claude Code plugin (`plugins/mecha`,
listed by the repository's `.claude-plugin/marketplace.json`) checked by the
real `claude plugin validate` and installed by the real CLI, and a review driven through a real `claude -p` run: the real
CLI loads the plugin, expands `/mecha:review` (running its `!` command for
the pending list), offers the model the Bash tool under the command's
`allowed-tools`, and runs what the model asks with the real `mecha-sidecar`
— only the model is scripted, on 127.0.0.1, and it asks for exactly what
the person's words say. The plugin's hook script is run as Claude Code runs
it, with the hook's JSON on stdin. The Codex skills, checked as the real
Codex lists them to its model."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from mecha.core.store.learning_store import LearningStore, ProposalStatus
from tests import builders
from tests.model_server import ModelServer, lessons_responder
from tests.realparts import manifest

from .conftest import REPO, WAIT_S, wait_until

PLUGIN = REPO / "plugins" / "mecha"


def _sse(event: str, data: dict[str, Any]) -> bytes:
    return f"event: {event}\ndata: {json.dumps(data)}\n\n".encode()


class BashModel:
    """The Messages API, streamed, answering a first request with one call
    of the Bash tool (`command`) and any request that carries its result
    with a line of text. Every request body is kept."""

    def __init__(self, command: str) -> None:
        self.command = command
        #: The line of text a request is answered with once no tool is called.
        self.text = "Done."
        self.bodies: list[dict[str, Any]] = []
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.0"

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib's name
                pass

            def do_HEAD(self) -> None:  # noqa: N802 - stdlib's name
                self._send(b"", "text/plain")

            def do_POST(self) -> None:  # noqa: N802 - stdlib's name
                body = json.loads(self.rfile.read(int(self.headers.get("content-length") or 0)) or b"{}")
                owner.bodies.append(body)
                self._send(owner.reply(body), "text/event-stream")

            def _send(self, data: bytes, kind: str) -> None:
                self.send_response(200)
                self.send_header("content-type", kind)
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def reply(self, body: dict[str, Any]) -> bytes:
        last = (body.get("messages") or [{}])[-1]
        answered = isinstance(last.get("content"), list) and any(
            isinstance(b, dict) and b.get("type") == "tool_result" for b in last["content"])
        offered = [t.get("name") for t in body.get("tools") or []]
        if not answered and "Bash" in offered:
            block: dict[str, Any] = {"type": "tool_use", "id": "toolu_review", "name": "Bash", "input": {}}
            delta = {"type": "input_json_delta",
                     "partial_json": json.dumps({"command": self.command, "description": "the person's decision"})}
            stop = "tool_use"
        else:
            block, delta, stop = {"type": "text", "text": ""}, {"type": "text_delta", "text": self.text}, "end_turn"
        start = {"id": "msg_review", "type": "message", "role": "assistant", "model": body.get("model", "m"),
                 "content": [], "stop_reason": None, "stop_sequence": None,
                 "usage": {"input_tokens": 10, "output_tokens": 1}}
        return b"".join([
            _sse("message_start", {"type": "message_start", "message": start}),
            _sse("content_block_start", {"type": "content_block_start", "index": 0, "content_block": block}),
            _sse("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta}),
            _sse("content_block_stop", {"type": "content_block_stop", "index": 0}),
            _sse("message_delta", {"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None},
                                   "usage": {"output_tokens": 5}}),
            _sse("message_stop", {"type": "message_stop"}),
        ])

    def texts(self) -> list[str]:
        """Every user turn's text and tool result, per request."""
        out = []
        for body in self.bodies:
            parts = []
            for m in body.get("messages") or []:
                content = m.get("content")
                for b in content if isinstance(content, list) else [{"type": "text", "text": content}]:
                    if b.get("type") == "text":
                        parts.append(b["text"])
                    elif b.get("type") == "tool_result":
                        c = b.get("content")
                        parts.append(c if isinstance(c, str) else json.dumps(c))
            out.append("\n".join(parts))
        return out

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def claude() -> str:
    return str(manifest("agents")["claude"])


@pytest.fixture
def agent_env(env: dict[str, str], store_dir: Path) -> dict[str, str]:
    """A person's machine: mecha-sidecar and claude on PATH, the store named."""
    venv_bin = os.path.dirname(sys.executable)
    return {**env, "PATH": f"{venv_bin}{os.pathsep}{env.get('PATH', '/usr/bin:/bin')}",
            "MECHA_LEARNING_DIR": str(store_dir), "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "ANTHROPIC_API_KEY": "scripted-key-not-a-secret", "LANG": "C.UTF-8"}


@pytest.fixture
def pending(agent_env: dict[str, str], store_dir: Path, tmp_path: Path) -> Iterator[str]:
    """A pending proposal of three new rules, filed by a real learn pass."""
    LearningStore.open(store_dir).append_reflexions([
        builders.reflexion(f"R{n}", text, session_id=f"s{n}", context="ctx", intervention=text)
        for n, text in enumerate([
            "Run the test suite before saying a change is done.",
            "Ask before deleting files you did not create.",
            "Keep commit messages to one line under 72 characters.",
        ])
    ])
    with ModelServer(responder=lessons_responder) as model:
        env = {**agent_env, "MECHA_MODEL_API": "openai", "MECHA_MODEL_BASE_URL": model.url, "MECHA_MODEL": "m"}
        done = subprocess.run([sys.executable, "-m", "mecha.sidecar", "learn", "behavior"], env=env, cwd=tmp_path,
                              capture_output=True, text=True, timeout=WAIT_S)
    assert done.returncode == 0 and "pending review" in done.stdout, done.stdout + done.stderr
    (proposal,) = LearningStore.open(store_dir).proposals()
    yield proposal.id


def test_the_plugin_and_the_marketplace_pass_the_real_claude_plugin_validate(claude, agent_env):
    # Pins: a manifest, hooks file or command the real CLI refuses.
    for path in (PLUGIN, REPO):
        done = subprocess.run([claude, "plugin", "validate", "--strict", str(path)], env=agent_env,
                              capture_output=True, text=True, timeout=WAIT_S * 2)
        assert done.returncode == 0 and "Validation passed" in done.stdout, done.stdout + done.stderr
    provides = subprocess.run([claude, "plugin", "validate", str(PLUGIN)], env=agent_env, capture_output=True,
                              text=True, timeout=WAIT_S * 2).stdout
    assert "commands: mecha:review" in provides and "commands: mecha:why" in provides
    assert 'SessionEnd command "\\"${CLAUDE_PLUGIN_ROOT}/bin/mecha-hook\\" session-end"' in provides

    # Installed as the README says: the repository as a marketplace, then the plugin from it.
    def plugin(*argv: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([claude, "plugin", *argv], env=agent_env, capture_output=True, text=True,
                              timeout=WAIT_S * 2)

    added = plugin("marketplace", "add", str(REPO))
    assert added.returncode == 0 and "Successfully added marketplace: mecha" in added.stdout, added.stdout + added.stderr
    installed = plugin("install", "mecha@mecha")
    assert installed.returncode == 0 and "Successfully installed plugin: mecha@mecha" in installed.stdout
    assert "enabled" in plugin("list").stdout
    home = Path(agent_env["HOME"])
    assert list((home / ".claude" / "plugins").rglob("bin/mecha-hook")), "the hook script travels with the plugin"


def test_a_review_inside_claude_accepts_on_the_persons_word_leaving_out_the_change_they_named(
    claude, agent_env, pending, store_dir, tmp_path
):
    # Pins: reviewing only from a terminal with --learning-dir typed out; a
    # plugin command whose pending list or tool permission never reaches the
    # model; an accept that keeps a change the person left out.
    model = BashModel(f"mecha-sidecar proposals accept {pending} --without 2")
    try:
        project = tmp_path / "project"
        project.mkdir()
        run = subprocess.run(
            [claude, "-p", f"/mecha:review accept {pending} without 2", "--plugin-dir", str(PLUGIN),
             "--output-format", "json"],
            env={**agent_env, "ANTHROPIC_BASE_URL": model.url}, cwd=project, capture_output=True, text=True,
            timeout=WAIT_S * 4,
        )
    finally:
        model.close()
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    result = json.loads(run.stdout)
    assert result["is_error"] is False and result["permission_denials"] == [], result
    first, *rest = model.texts()
    # The command's body, the person's words and the `!` pending list reached the model.
    assert "You are helping the person review rules" in first and f"accept {pending} without 2" in first
    assert pending in first.split("The proposals waiting for review", 1)[1], "the pending list, run by the command"
    # The real mecha-sidecar ran the accept, and said what became of CLAUDE.md.
    told = rest[-1]
    assert f"accepted {pending}" in told and "left out 2" in told, told
    assert "no agent's instructions changed" in told
    store = LearningStore.open(store_dir)
    accepted = store.proposal(pending)
    assert accepted.status == ProposalStatus.ACCEPTED
    live = [r.text for r in store.learned_rules("behavior")]
    assert len(live) == 2 and "Ask before deleting files" not in " ".join(live), live


def test_a_review_inside_claude_accepts_a_rule_in_the_persons_own_words(claude, agent_env, pending, store_dir, tmp_path):
    # Pins: a person able to accept, leave out or reject a rule from the
    # review, but not fix its words.
    mine = "Ask before deleting any file the task did not name."
    model = BashModel(f'mecha-sidecar proposals accept {pending} --edit 1 "{mine}"')
    try:
        project = tmp_path / "project"
        project.mkdir()
        run = subprocess.run(
            [claude, "-p", f'/mecha:review accept {pending} with 1 as "{mine}"', "--plugin-dir", str(PLUGIN),
             "--output-format", "json"],
            env={**agent_env, "ANTHROPIC_BASE_URL": model.url}, cwd=project, capture_output=True, text=True,
            timeout=WAIT_S * 4,
        )
    finally:
        model.close()
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    result = json.loads(run.stdout)
    assert result["is_error"] is False and result["permission_denials"] == [], result
    first, *rest = model.texts()
    assert '--edit N "…"' in first, "the procedure tells the model how to land the person's words"
    assert f"in your words: “{mine}”" in rest[-1], rest[-1]
    store = LearningStore.open(store_dir)
    assert mine in [r.text for r in store.learned_rules("behavior")]


def test_the_plugins_hooks_read_the_session_and_offer_the_review_command(agent_env, pending, store_dir, tmp_path):
    # Pins: a hook that names an absolute path of one machine, and a notice
    # that sends the person to a terminal when /mecha:review is at hand.
    hook = PLUGIN / "bin" / "mecha-hook"
    start = subprocess.run([str(hook), "session-start"], input=json.dumps({"session_id": "s", "source": "startup",
                           "hook_event_name": "SessionStart", "cwd": str(tmp_path)}), env=agent_env, cwd=tmp_path,
                           capture_output=True, text=True, timeout=WAIT_S)
    assert start.returncode == 0 and start.stderr == "", start.stderr
    told = json.loads(start.stdout)["systemMessage"]
    assert "1 rule proposal awaits your review: type /mecha:review to go through it here" in told

    transcript = tmp_path / "gone.jsonl"
    end = subprocess.run([str(hook), "session-end"], input=json.dumps({"session_id": "s", "transcript_path":
                         str(transcript), "cwd": str(tmp_path), "hook_event_name": "SessionEnd"}), env=agent_env,
                         cwd=tmp_path, capture_output=True, text=True, timeout=WAIT_S)
    assert end.returncode == 0 and end.stdout == ""
    # The hook hands the session to a hook pass, which logs what it made of it.
    log = store_dir / "logs" / "hooks.log"
    wait_until(lambda: log.exists() and "session-end" in log.read_text(), "the hook pass to log the session")

    missing = subprocess.run([str(hook), "session-start"], input="{}", env={**agent_env, "PATH": "/usr/bin:/bin"},
                             cwd=tmp_path, capture_output=True, text=True, timeout=WAIT_S)
    assert missing.returncode == 0 and missing.stdout == ""
    assert "mecha-sidecar not found on PATH" in missing.stderr, missing.stderr
    # The install it names is the documented one (mecha-sidecar is installed
    # from its repository, not from a package index).
    install = missing.stderr.split("'")[1]
    assert install == "python3 -m venv .venv && .venv/bin/pip install -q -e ."
    assert install in (REPO / "docs" / "agents.md").read_text()


def test_codex_lists_the_review_skills_to_its_model_once_they_are_in_its_skills_folder(agent_env, tmp_path):
    # Pins: a SKILL.md the real Codex does not load (a missing name or
    # description, a folder it does not read), so `$mecha-review` is offered nowhere.
    import shutil

    codex = str(manifest("agents")["codex"])
    codex_home = tmp_path / "codex-home"
    for skill in ("mecha-review", "mecha-why"):
        shutil.copytree(PLUGIN / "codex" / "skills" / skill, codex_home / "skills" / skill)
    shown = subprocess.run([codex, "debug", "prompt-input"], env={**agent_env, "CODEX_HOME": str(codex_home)},
                           cwd=tmp_path, capture_output=True, text=True, timeout=WAIT_S * 2)
    assert shown.returncode == 0, shown.stderr[-2000:]
    listed = json.dumps(json.loads(shown.stdout))
    assert "- mecha-review: Review mecha's pending rule proposals" in listed
    assert "- mecha-why: Say where one of mecha's learned rules came from" in listed


def test_codexs_session_start_notice_offers_the_review_skill_once_it_is_installed(agent_env, pending, tmp_path):
    # Pins: a Codex notice that sends the person to a terminal though the
    # review skill is right there, or offers a skill that is not installed.
    from mecha.core.agents.hooks import HOOK_VERB, MODULE

    command = [sys.executable, "-P", "-m", MODULE, HOOK_VERB, "codex", "session-start"]
    payload = json.dumps({"session_id": "s", "transcript_path": None, "cwd": str(tmp_path), "source": "startup",
                          "hook_event_name": "SessionStart"})

    def notice() -> str:
        done = subprocess.run(command, input=payload, env=agent_env, cwd=tmp_path, capture_output=True, text=True,
                              timeout=WAIT_S)
        assert done.returncode == 0 and done.stderr == "", done.stderr
        return str(json.loads(done.stdout)["systemMessage"])

    assert "mecha-sidecar proposals` lists them" in notice() and "$mecha-review" not in notice()
    import shutil

    shutil.copytree(PLUGIN / "codex" / "skills" / "mecha-review", Path(agent_env["HOME"]) / ".codex" / "skills" / "mecha-review")
    assert "type $mecha-review to go through it here" in notice()
