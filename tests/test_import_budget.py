"""The harness endpoint's cold path, pinned by what it imports.

A harness starts one sidecar per agent run and waits on it for the rules
block before its first model call, so every import on that path is paid on
every run. Times are for the benchmarks (`python -m tests.bench`); this test
pins the *module set* of a real first exchange — initialize, rulesPromptBlock,
shutdown, exit — in a fresh interpreter, so the cold path cannot silently
grow. (`tests/wire/test_lifecycle.py` checks that a longer exchange stays off
the editor server and the model client; this one is about the first request.)
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import msgspec

from mecha.protocol.framing import FrameReader, encode_frame

#: Serve the harness endpoint in this interpreter and record `sys.modules`
#: however serving ends.
_RECORD = """\
import os, sys
try:
    from mecha.sidecar.cli import main
    code = main(["serve"])
finally:
    with open(os.environ["MECHA_IMPORT_BUDGET_OUT"], "w") as out:
        out.write("\\n".join(sorted(sys.modules)))
raise SystemExit(code)
"""

#: Third-party packages the cold path must never load: the editor server and
#: its runtime, the model client and its runtime, the TOML *writer*.
FORBIDDEN_PACKAGES = ("pygls", "lsprotocol", "cattrs", "attrs", "attr", "httpx", "anyio", "tomlkit")

#: The project's own modules the first request does not need.
FORBIDDEN_PROJECT = (
    "mecha.core.appraisal",
    "mecha.core.consolidation",
    "mecha.core.doctor",
    "mecha.core.passes",
    "mecha.core.proposals",
    "mecha.core.providers",
    "mecha.core.reflection",
    "mecha.core.rulecheck",
    "mecha.protocol.schema",
    "mecha.sidecar.demo",
    "mecha.sidecar.jobs",
    "mecha.sidecar.lsp",
    "mecha.sidecar.passrun",
)

#: Standard-library modules that are measurable at startup and that nothing
#: on the cold path needs: package metadata (the version is a constant),
#: argument parsing (the harness's command line is recognised directly), git
#: (`subprocess`, only for writers), random ids (`secrets`, only for
#: writers), dataclasses (compiled at import), and event loops.
FORBIDDEN_STDLIB = ("importlib.metadata", "argparse", "subprocess", "secrets", "dataclasses", "asyncio", "email", "http")


def _rules(domain: str, n: int) -> str:
    return "".join(f'[[rules]]\nid = "r-{domain}-{i}"\ntext = "{domain} rule {i}"\n\n' for i in range(n))


def _serve_first_exchange(tmp_path: Path) -> tuple[set[str], list[dict], int]:
    root = tmp_path / "learning"
    (root / "rules").mkdir(parents=True)
    for domain in ("behavior", "writing", "coding"):
        (root / "rules" / f"{domain}.learned.toml").write_text(_rules(domain, 15))
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
    assert {"msgspec", "tomllib", "mecha.sidecar.serve", "mecha.core.store"} <= modules

    heavy = sorted(m for m in modules if m.split(".")[0] in FORBIDDEN_PACKAGES)
    assert heavy == [], f"the harness endpoint's cold path imported {heavy}"
    own = sorted(m for m in modules if m.startswith(FORBIDDEN_PROJECT))
    assert own == [], f"the first request does not need {own}"
    stdlib = sorted(m for m in modules if any(m == s or m.startswith(s + ".") for s in FORBIDDEN_STDLIB))
    assert stdlib == [], f"the cold path imported {stdlib}"
