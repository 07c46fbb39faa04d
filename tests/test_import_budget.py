"""The harness endpoint's cold path, pinned by what it imports.

A harness starts one sidecar per agent run and waits on it for the rules
block before its first model call, so every import on that path is paid on
every run. Times are for the benchmarks (`python -m tests.bench`); these tests
pin the *module set* of a real first exchange — initialize, rulesPromptBlock,
shutdown, exit — in a fresh interpreter, so the cold path cannot silently
grow: served by the first stage from the block cache (the standard library
and five small modules of this project), and served by the full server. (`tests/wire/test_lifecycle.py` checks that a longer exchange stays off
the editor server and the model client; this one is about the first request.)
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import msgspec
import pytest

from mecha.core.store.layout import is_racy, rules_fingerprint
from mecha.protocol.framing import FrameReader, encode_frame
from tests.processes import recording_modules

#: Serve the harness endpoint in this interpreter and record `sys.modules`
#: however serving ends.
_RECORD = recording_modules(["serve"], "MECHA_IMPORT_BUDGET_OUT")

#: Third-party packages the cold path must never load: the editor server and
#: its runtime, the model client and its runtime, the TOML *writer*, the
#: shell parser (only an import of a foreign session reads a command line).
FORBIDDEN_PACKAGES = ("pygls", "lsprotocol", "cattrs", "attrs", "attr", "httpx", "anyio", "tomlkit", "tree_sitter", "tree_sitter_bash")

#: The project's own modules the first request does not need.
FORBIDDEN_PROJECT = (
    "mecha.core.gate.appraisal",
    "mecha.core.learning.consolidation",
    "mecha.core.doctor",
    "mecha.core.sessions.shell",
    "mecha.core.learning.learn",
    "mecha.core.learning.reflect",
    "mecha.core.sessions.survey",
    "mecha.core.store.inbox",
    "mecha.core.learning.proposals",
    "mecha.core.providers",
    "mecha.core.learning.reflection",
    "mecha.core.learning.scope",  # only a run that names its project resolves it
    "mecha.core.editor.diagnostics",
    "mecha.core.editor.hover",
    "mecha.core.editor.lenses",
    "mecha.core.editor.actions",
    "mecha.core.editor.store_view",
    "mecha.protocol.schema",
    "mecha.sidecar.demo",
    "mecha.sidecar.jobs",
    "mecha.sidecar.lsp",
    "mecha.sidecar.passrun",
    # every feature's handlers but the rules block's (`handlers.ROUTES`)
    "mecha.sidecar.handlers.agents",
    "mecha.sidecar.handlers.doctor",
    "mecha.sidecar.handlers.gate",
    "mecha.sidecar.handlers.inbox",
    "mecha.sidecar.handlers.ledger",
    "mecha.sidecar.handlers.passes",
    "mecha.sidecar.handlers.proposals",
    "mecha.sidecar.handlers.sessions",
    "mecha.sidecar.handlers.transcript",
)

#: Standard-library modules that are measurable at startup and that nothing
#: on the cold path needs: package metadata (the version is a constant),
#: argument parsing (the harness's command line is recognised directly), git
#: (`subprocess`, only for writers), random ids (`secrets`, only for
#: writers), dataclasses (compiled at import), and event loops.
FORBIDDEN_STDLIB = ("importlib.metadata", "argparse", "subprocess", "secrets", "dataclasses", "asyncio", "email", "http")


def _rules(domain: str, n: int) -> str:
    return "".join(f'[[rules]]\nid = "r-{domain}-{i}"\ntext = "{domain} rule {i}"\n\n' for i in range(n))


def _store(tmp_path: Path) -> Path:
    root = tmp_path / "learning"
    (root / "rules").mkdir(parents=True)
    for domain in ("behavior", "writing", "coding"):
        (root / "rules" / f"{domain}.learned.toml").write_text(_rules(domain, 15))
    return root


def _serve_first_exchange(tmp_path: Path, root: Path | None = None) -> tuple[set[str], list[dict], int]:
    root = _store(tmp_path) if root is None else root
    record = tmp_path / "modules.txt"
    env = {k: v for k, v in os.environ.items() if not k.startswith("MECHA_")}
    env["MECHA_IMPORT_BUDGET_OUT"] = str(record)
    messages = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"initializationOptions": {"learningDir": str(root)}}},
        {"jsonrpc": "2.0", "method": "initialized", "params": {}},
        {"jsonrpc": "2.0", "id": 2, "method": "mecha/rulesPromptBlock", "params": {"domain": "coding"}},
        {"jsonrpc": "2.0", "id": 3, "method": "shutdown"},
        {"jsonrpc": "2.0", "method": "exit"},
    ]
    proc = subprocess.Popen(
        [sys.executable, "-c", _RECORD], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env
    )
    out, err = proc.communicate(b"".join(encode_frame(msgspec.json.encode(m)) for m in messages), timeout=60)
    replies = []
    read_fd, write_fd = os.pipe()
    os.write(write_fd, out)
    os.close(write_fd)
    reader = FrameReader(read_fd)
    while (frame := reader.read_frame()) is not None:
        assert frame.body is not None, frame.error
        replies.append(msgspec.json.decode(frame.body))
    os.close(read_fd)
    assert record.exists(), err.decode()[-2000:]
    return set(record.read_text().split()), replies, proc.returncode


def test_the_first_request_loads_only_what_it_needs(tmp_path: Path) -> None:
    modules, replies, code = _serve_first_exchange(tmp_path)

    # The record is of a process that served the whole exchange.
    assert code == 0
    by_id = {r["id"]: r for r in replies}
    assert sorted(by_id) == [1, 2, 3]
    assert len(by_id[2]["result"]["rule_ids"]) == 45
    assert by_id[2]["result"]["domains"] == ["behavior", "writing", "coding"]
    assert {"msgspec", "tomllib", "mecha.sidecar.serve", "mecha.core.store.learning_store", "mecha.sidecar.handlers.rules"} <= modules

    heavy = sorted(m for m in modules if m.split(".")[0] in FORBIDDEN_PACKAGES)
    assert heavy == [], f"the harness endpoint's cold path imported {heavy}"
    own = sorted(m for m in modules if m.startswith(FORBIDDEN_PROJECT))
    assert own == [], f"the first request does not need {own}"
    stdlib = sorted(m for m in modules if any(m == s or m.startswith(s + ".") for s in FORBIDDEN_STDLIB))
    assert stdlib == [], f"the cold path imported {stdlib}"


#: The project's modules the first stage may load: the entry point, itself,
#: and the standard-library-only readers of the wire, the store's layout and
#: the block cache.
FIRST_STAGE_PROJECT = {
    "mecha",
    "mecha.core",
    "mecha.core.store",
    "mecha.core.store.blockcache",
    "mecha.core.store.layout",
    "mecha.protocol",
    "mecha.protocol.lifecycle",
    "mecha.protocol.plainwire",
    "mecha.sidecar",
    "mecha.sidecar._version",
    "mecha.sidecar.cli",
    "mecha.sidecar.first_stage",
}

#: Standard-library modules the first stage does without, each a measurable
#: share of a bare interpreter's start: it frames JSON and reads one file.
FIRST_STAGE_FORBIDDEN_STDLIB = (
    "typing",
    "pathlib",
    "logging",
    "threading",
    "queue",
    "tomllib",
    "fcntl",
    "datetime",
    "urllib",
    "json",
    "re",
    *FORBIDDEN_STDLIB,
)


def _bare_modules() -> set[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MECHA_")}
    out = subprocess.run(
        [sys.executable, "-c", "import sys; print('\\n'.join(sys.modules))"], capture_output=True, text=True, env=env
    )
    return set(out.stdout.split())


def test_the_first_stage_serves_the_cold_path_with_the_standard_library_alone(tmp_path: Path) -> None:
    # Pins: msgspec (or any third-party or heavy module) back on the path every run pays for.
    root = _store(tmp_path)
    while is_racy(rules_fingerprint(root), time.time_ns()):
        time.sleep(0.02)
    _, _, code = _serve_first_exchange(tmp_path, root)  # the full server, which writes the cache
    assert code == 0 and (root / "cache" / "rules-block").exists()
    modules, replies, code = _serve_first_exchange(tmp_path, root)

    assert code == 0
    by_id = {r["id"]: r for r in replies}
    assert sorted(by_id) == [1, 2, 3]
    assert len(by_id[2]["result"]["rule_ids"]) == 45
    assert "mecha.sidecar.first_stage" in modules
    loaded = modules - _bare_modules()
    third_party = sorted(m for m in loaded if m.split(".")[0] not in sys.stdlib_module_names and not m.startswith("mecha"))
    assert third_party == [], f"the first stage imported {third_party}"
    own = sorted(m for m in loaded if m.startswith("mecha") and m not in FIRST_STAGE_PROJECT)
    assert own == [], f"the first stage imported {own}"
    heavy = sorted(m for m in loaded if any(m == s or m.startswith(s + ".") for s in FIRST_STAGE_FORBIDDEN_STDLIB))
    assert heavy == [], f"the first stage imported {heavy}"


#: All the standard library the first stage's modules import when loaded.
FIRST_STAGE_STDLIB = {"__future__", "_json", "os", "select", "sys"}


def _module_level_imports(module: str) -> set[str]:
    """What `module` imports when it is loaded: its body's import statements,
    not those inside functions or under `if TYPE_CHECKING:`."""
    import ast
    import importlib.util

    spec = importlib.util.find_spec(module)
    assert spec is not None and spec.origin is not None
    tree = ast.parse(Path(spec.origin).read_text())
    found: set[str] = set()

    def visit(body: list[ast.stmt]) -> None:
        for node in body:
            if isinstance(node, ast.Import):
                found.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                found.add("." if node.level else node.module or "")
            elif isinstance(node, ast.If) and not (isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING"):
                visit(node.body)
                visit(node.orelse)
            elif isinstance(node, ast.Try):
                visit(node.body)  # a fallback under `except ImportError` is not what loads

    visit(tree.body)
    return found


def test_the_first_stages_modules_import_only_what_framing_json_and_reading_a_file_need() -> None:
    # Pins: a heavy standard-library module (typing, pathlib, logging) that an
    # editable install's interpreter loads anyway, so the run above cannot see it.
    for module in sorted(FIRST_STAGE_PROJECT - {"mecha", "mecha.core", "mecha.core.store", "mecha.protocol", "mecha.sidecar"}):
        imports = {name for name in _module_level_imports(module) if name != "." and not name.startswith("mecha")}
        assert imports <= FIRST_STAGE_STDLIB, f"{module} imports {sorted(imports - FIRST_STAGE_STDLIB)} when loaded"


#: The project's modules the agents' session-start hook may load: the entry
#: point, the hook runner, and the standard-library-only readers of the
#: store's layout and its pending proposals, and the recorder of the start.
HOOK_START_PROJECT = {
    "mecha",
    "mecha.core",
    "mecha.core.agents",
    "mecha.core.agents.notice",
    "mecha.core.agents.started",
    # the agent table (standard library alone, written for this hook), and
    # the quoting of the commands the notice names
    "mecha.core.environment",
    "mecha.core.environment.agents",
    "mecha.core.errors",
    # the `json` package's C reader and writer, without the package
    "mecha.core.plainjson",
    "mecha.core.shellwords",
    "mecha.core.visible",
    "mecha.core.store",
    "mecha.core.store.layout",
    "mecha.sidecar",
    "mecha.sidecar.cli",
    "mecha.sidecar.hookrun",
}


def test_the_session_start_hook_runs_on_the_standard_library_alone(tmp_path: Path) -> None:
    # Pins: msgspec, argparse, pathlib or json on the hook Claude Code and
    # Codex run before every session, whose first answer waits for it.
    root = _store(tmp_path)
    (root / "proposals").mkdir()
    (root / "proposals" / "p-1.json").write_text('{\n  "id": "p-1",\n  "status": "pending"\n}\n')
    record = tmp_path / "modules.txt"
    env = {k: v for k, v in os.environ.items() if not k.startswith("MECHA_")}
    env["MECHA_IMPORT_BUDGET_OUT"] = str(record)
    program = recording_modules(["hook", "claude", "session-start", "--learning-dir", str(root)], "MECHA_IMPORT_BUDGET_OUT")
    payload = b'{"session_id": "s", "transcript_path": "/t.jsonl", "cwd": "/p", "hook_event_name": "SessionStart", "source": "startup"}'
    done = subprocess.run([sys.executable, "-c", program], input=payload, capture_output=True, env=env, timeout=60)
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    assert msgspec.json.decode(done.stdout)["systemMessage"].startswith("mecha: 1 rule proposal awaits")
    loaded = set(record.read_text().split()) - _bare_modules()
    assert "mecha.sidecar.hookrun" in loaded and "mecha.core.agents.notice" in loaded
    assert '"session_id":"claude:s"' in (root / "started.jsonl").read_text()  # the start recorded, within the budget
    third_party = sorted(m for m in loaded if m.split(".")[0] not in sys.stdlib_module_names and not m.startswith("mecha"))
    assert third_party == [], f"the session-start hook imported {third_party}"
    own = sorted(m for m in loaded if m.startswith("mecha") and m not in HOOK_START_PROJECT)
    assert own == [], f"the session-start hook imported {own}"
    heavy = sorted(m for m in loaded if any(m == s or m.startswith(s + ".") for s in FIRST_STAGE_FORBIDDEN_STDLIB))
    assert heavy == [], f"the session-start hook imported {heavy}"


#: What the session-end hook adds: its queue, which takes the hook pass's
#: lock (`fcntl`, small), and reads the hook's JSON without `json`
#: (`plainjson`: the package's regular expressions were the dearest part
#: of a hook beyond a bare interpreter).
HOOK_END_PROJECT = HOOK_START_PROJECT | {"mecha.core.agents.hookqueue"}
HOOK_END_STDLIB = {"fcntl"}


def test_the_session_end_hook_queues_on_the_standard_library_alone(tmp_path: Path) -> None:
    # Pins: the session-end hook reading the session itself (msgspec, the
    # readers, the store: 17 s each for 50 hooks at once on 2 cores).
    from tests.processes import wait_for_hook_pass

    root = _store(tmp_path)
    record = tmp_path / "modules.txt"
    env = {k: v for k, v in os.environ.items() if not k.startswith("MECHA_")}
    env["MECHA_IMPORT_BUDGET_OUT"] = str(record)
    program = recording_modules(["hook", "claude", "session-end", "--learning-dir", str(root)], "MECHA_IMPORT_BUDGET_OUT")
    payload = b'{"session_id": "s", "transcript_path": "/nowhere/t.jsonl", "cwd": "/p", "hook_event_name": "SessionEnd"}'
    done = subprocess.run([sys.executable, "-c", program], input=payload, capture_output=True, env=env, timeout=60)
    assert done.returncode == 0 and done.stdout == b"", done.stderr.decode()[-2000:]
    loaded = set(record.read_text().split()) - _bare_modules()
    assert "mecha.core.agents.hookqueue" in loaded
    third_party = sorted(m for m in loaded if m.split(".")[0] not in sys.stdlib_module_names and not m.startswith("mecha"))
    assert third_party == [], f"the session-end hook imported {third_party}"
    own = sorted(m for m in loaded if m.startswith("mecha") and m not in HOOK_END_PROJECT)
    assert own == [], f"the session-end hook imported {own}"
    heavy = sorted(m for m in loaded if any(m == s or m.startswith(s + ".") for s in FIRST_STAGE_FORBIDDEN_STDLIB)
                   and m.split(".")[0] not in HOOK_END_STDLIB)
    assert heavy == [], f"the session-end hook imported {heavy}"
    wait_for_hook_pass(root)
    assert "is not there" in (root / "logs" / "hooks.log").read_text(), "the hook pass read the queue"


#: The standard library's modules the hooks' own modules may import when
#: loaded, beyond the first stage's: the session-end queue's lock and file
#: checks, and the character database `visible` asks what hides. Not
#: `shlex`, whose `re` (and `enum`, `functools`…) once took a third of a
#: session-start hook in a regular install.
HOOK_STDLIB = FIRST_STAGE_STDLIB | {"errno", "fcntl", "stat", "time", "unicodedata"}


@pytest.mark.parametrize("module", sorted(HOOK_END_PROJECT - {"mecha"}))
def test_the_hooks_modules_import_only_the_standard_librarys_cheapest(module: str) -> None:
    # Pins: a heavy import added at module level, which an editable install's
    # interpreter may already hold, so the runs above cannot see it.
    imports = {name for name in _module_level_imports(module) if name != "." and not name.startswith("mecha")}
    assert imports <= HOOK_STDLIB, f"{module} imports {sorted(imports - HOOK_STDLIB)} when loaded"


def test_the_hook_command_install_writes_runs_without_the_module_runner(tmp_path: Path) -> None:
    # Pins: `python -P -m mecha.sidecar hook …`, whose module runner (runpy,
    # and with it importlib.util, collections, functools, contextlib) was
    # about 3.5 ms of the 8 ms of CPU a session-end hook spent beyond a bare
    # interpreter — paid by each of fifty hooks at once on two cores.
    from mecha.core.agents.hooks import hook_command, hook_program, parse_hook_argv
    from tests.processes import wait_for_hook_pass

    root = _store(tmp_path)
    command = hook_command(hook_program(sys.executable), "claude", "session-end", str(root))
    assert parse_hook_argv(command) == ["hook", "claude", "session-end", "--learning-dir", str(root)]
    env = {k: v for k, v in os.environ.items() if not k.startswith("MECHA_")}
    env["PYTHONPROFILEIMPORTTIME"] = "1"
    payload = b'{"session_id": "s", "transcript_path": "/nowhere/t.jsonl", "cwd": "/p", "hook_event_name": "SessionEnd"}'
    done = subprocess.run(["sh", "-c", command], input=payload, capture_output=True, env=env, cwd=tmp_path, timeout=60)
    assert done.returncode == 0 and done.stdout == b"", done.stderr.decode()[-2000:]
    loaded = {line.rsplit("|", 1)[-1].strip() for line in done.stderr.decode().splitlines() if line.startswith("import time:")}
    assert "mecha.core.agents.hookqueue" in loaded and "runpy" not in loaded, sorted(loaded)
    wait_for_hook_pass(root)
    assert "is not there" in (root / "logs" / "hooks.log").read_text(), "the hook pass read the queue"
