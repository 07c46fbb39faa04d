"""`protocol/README.md` is held to the schema and to the method table, so
the contract a harness author reads is the one the server keeps.

It was written twice once — prose and examples by hand beside the generated
schema — and drifted: the `initialize` example listed 21 of 29 methods,
eight examples no longer met the schema, and the options table said what
the code did not. Now every JSON-RPC message the README shows is validated
against the checked-in schema, the method list and table are compared with
`protocol.methods.METHODS`, and the options tables with the keys the code
reads. A method added without an example, or a field added without the
table saying so, fails here with what to write.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import msgspec
import pytest
from jsonschema import Draft202012Validator

from mecha.core.providers import config as model_config
from mecha.protocol import errors as codes
from mecha.protocol import methods as m
from mecha.protocol import plainwire as pw
from mecha.protocol.initialize import LIFECYCLE, InitializationOptions
from mecha.protocol.schema import RESULT_TYPES
from tests.protocol.readme_contract import Example, Readme, cell_fields, method_table, pairs, read
from tests.protocol.test_schema import CHECKED_IN

REGENERATE = "python -m tests.protocol.wire_examples --fix-readme (it records a real exchange of every method)"


@pytest.fixture(scope="module")
def doc() -> dict[str, Any]:
    return json.loads(CHECKED_IN.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def readme() -> Readme:
    return read()


def _validator(doc: dict[str, Any], *path: str) -> Draft202012Validator:
    pointer = "#/" + "/".join(p.replace("~", "~0").replace("/", "~1") for p in path)
    return Draft202012Validator({**doc, "$ref": pointer})


def _problems(doc: dict[str, Any], payload: Any, *path: str) -> list[str]:
    return [f"{list(e.absolute_path)}: {e.message}" for e in _validator(doc, *path).iter_errors(payload)]


def _section(method: str) -> str:
    return "lifecycle" if method in LIFECYCLE else "methods"


def _pairs(readme: Readme) -> list[tuple[Example | None, Example]]:
    return pairs(readme)


def test_every_json_block_is_a_wire_message_or_says_what_it_elides(readme: Readme) -> None:
    # Pins: an example nobody checks, because it is not recognisably a message.
    assert readme.examples, "no JSON-RPC examples were found in protocol/README.md"
    assert not readme.unchecked, "JSON blocks that are neither a JSON-RPC message nor elide anything (`…`): " + ", ".join(
        b.where() for b in readme.unchecked
    )


def test_every_example_meets_the_schema(doc: dict[str, Any], readme: Readme) -> None:
    # Pins: eight examples that had fallen behind the results they show.
    failures: list[str] = []
    by_code = {code: name for name, code in doc["errors"].items()}
    for request, ex in _pairs(readme):
        msg = ex.message
        where = ex.block.where()
        if "method" in msg:  # a notification, either way
            method = msg["method"]
            entry = doc["methods"].get(method) or doc["lifecycle"].get(method)
            if entry is None or not entry["notification"]:
                failures.append(f"{where}: {method} is not a notification in the schema")
                continue
            failures += [f"{where}: {method} params {p}" for p in _problems(doc, msg.get("params"), _section(method), method, "params")]
        elif "error" in msg:
            error = msg["error"]
            if error.get("code") not in by_code or not isinstance(error.get("message"), str):
                failures.append(f"{where}: an error the schema's table does not have: {error}")
            elif error["code"] in codes.PROJECT_CODES.values() and error.get("data", {}).get("name") not in (
                by_code[error["code"]], "StoreFull", "InvalidInput"
            ):
                failures.append(f"{where}: data.name {error.get('data')} is not {by_code[error['code']]}")
        elif request is None:
            failures.append(f"{where}: a result whose request (id {msg.get('id')}) is not shown before it")
        else:
            method = request.message["method"]
            if method not in doc["methods"] and method not in doc["lifecycle"]:
                failures.append(f"{where}: {method} answered with a result, but the schema has no such method")
                continue
            params = request.message.get("params", {})
            section = _section(method)
            failures += [f"{request.block.where()}: {method} params {p}" for p in _problems(doc, params, section, method, "params")]
            failures += [f"{where}: {method} result {p}" for p in _problems(doc, msg["result"], section, method, "result")]
    assert not failures, f"README examples the schema refuses (regenerate them with {REGENERATE}):\n" + "\n".join(failures)


def test_every_method_has_an_example(readme: Readme) -> None:
    # Pins: a method served, in the table, and never shown answering.
    answered: set[str] = set()
    for request, ex in _pairs(readme):
        if request is not None and "result" in ex.message:
            answered.add(request.message["method"])
        elif "method" in ex.message:
            answered.add(ex.message["method"])
    wanted = set(m.METHODS) | {"initialize", "shutdown"}
    missing = sorted(wanted - answered)
    assert not missing, f"methods with no example answered in protocol/README.md: {missing}; add one from {REGENERATE}"


def test_the_initialize_example_is_what_the_server_answers(readme: Readme) -> None:
    # Pins: an initialize example listing 21 methods of a server that served 29.
    from mecha.sidecar.serve import capabilities

    shown = [
        ex.message["result"]
        for request, ex in _pairs(readme)
        if request is not None and request.message["method"] == "initialize" and "result" in ex.message
    ]
    assert shown, "protocol/README.md shows no initialize result"
    expected = m.to_builtins(capabilities())
    for result in shown:
        assert result == expected, "the initialize example differs from what the server answers; show:\n" + json.dumps(expected, indent=2)


def _struct_fields(cls: type, *, written: bool) -> list[tuple[str, bool]]:
    """A Struct's wire fields, each with whether the README marks it `?`:
    in params, a field that may be left out (it has a default); in a
    result, one the server may leave out (a default it omits)."""
    out = []
    omit = cls.__struct_config__.omit_defaults
    for f in msgspec.structs.fields(cls):
        has_default = f.default is not msgspec.NODEFAULT or f.default_factory is not msgspec.NODEFAULT
        out.append((f.encode_name, has_default and (omit or not written)))
    return out


def _cell_problems(method: str, part: str, cell: str, cls: type, *, written: bool) -> list[str]:
    named = cell_fields(cell)
    if isinstance(named, str):
        return [] if named == cls.__name__ else [f"{method} {part}: the table says `{named}`, the type is {cls.__name__}"]
    expected = sorted(_struct_fields(cls, written=written))
    # `{a, b}` or `{…, c}` (alternatives): every field once, marked as the type says.
    seen = sorted(set(named))
    if seen == expected:
        return []
    shown = ", ".join(n + ("?" if o else "") for n, o in expected)
    return [f"{method} {part}: the table says {cell}, the type reads `{{{shown}}}`"]


def test_the_method_table_is_the_method_table(readme: Readme) -> None:
    # Pins: seven methods missing from the table, and `ruleSources`'
    # `sources` and `tallies` shown as always there when they could be absent.
    table = method_table(readme)
    requests = {name: spec for name, spec in m.METHODS.items() if not spec.notification}
    assert sorted(table) == sorted(requests), (
        f"§8's table lists {sorted(set(table) - set(requests))} that the server does not serve "
        f"and lacks {sorted(set(requests) - set(table))}"
    )
    problems: list[str] = []
    for name, spec in requests.items():
        params_cell, result_cell = table[name]
        problems += _cell_problems(name, "params", params_cell, spec.params, written=False)
        result = RESULT_TYPES[spec.result] if isinstance(spec.result, str) else spec.result
        assert isinstance(result, type)
        problems += _cell_problems(name, "result", result_cell, result, written=True)
    assert not problems, "§8's method table disagrees with the types:\n" + "\n".join(problems)


def _table_keys(readme: Readme, after: str) -> list[str]:
    """The first column of the first table after the line `after`."""
    text = readme.text.split(after, 1)[1]
    rows = re.findall(r"^\| `([A-Za-z]+)` \|", text.split("\n\n|", 1)[1].split("\n\n", 1)[0], re.M)
    return rows


def test_the_options_tables_list_the_keys_the_code_reads(readme: Readme) -> None:
    # Pins: `structured` and `concurrency` read by the code, absent from the schema.
    top = {f.encode_name for f in msgspec.structs.fields(InitializationOptions)}
    assert set(_table_keys(readme, "## 3. initializationOptions")) == top == set(pw.INITIALIZATION_OPTIONS_KEYS)
    model_keys = set(model_config.INIT_KEYS.values())
    assert set(_table_keys(readme, "`model` (all keys camelCase):")) == model_keys == set(pw.MODEL_OPTION_KEYS)


def test_the_model_options_schema_carries_the_codes_defaults(doc: dict[str, Any]) -> None:
    # Pins: `timeoutS` documented as defaulting to 120 while the code used 600.
    model = doc["$defs"]["InitializationOptions"]["properties"]["model"]["anyOf"][0]
    props = model["properties"]
    assert set(props) == set(model_config.INIT_KEYS.values())
    assert props["timeoutS"]["default"] == model_config.DEFAULT_TIMEOUT_S == 600
    assert props["concurrency"]["default"] == model_config.DEFAULT_CONCURRENCY
    assert props["concurrency"]["maximum"] == model_config.CONCURRENCY_LIMIT
    assert set(props["structured"]["enum"]) == {s for modes in model_config.STRUCTURED_BY_API.values() for s in modes}


def test_the_schema_covers_the_lifecycle(doc: dict[str, Any]) -> None:
    # Pins: a schema with nothing for initialize, shutdown, exit or $/cancelRequest.
    assert set(doc["lifecycle"]) == {"initialize", "initialized", "shutdown", "exit", "$/cancelRequest"}
    assert _problems(doc, {"id": 7}, "lifecycle", "$/cancelRequest", "params") == []
    assert _problems(doc, {"id": "a"}, "lifecycle", "$/cancelRequest", "params") == []
    assert _problems(doc, {}, "lifecycle", "$/cancelRequest", "params")
    assert _problems(doc, None, "lifecycle", "shutdown", "result") == []
    assert _problems(doc, {}, "lifecycle", "shutdown", "result")
    assert doc["lifecycle"]["exit"]["result"] is None and doc["lifecycle"]["exit"]["notification"] is True
    assert _problems(doc, {"processId": 1, "capabilities": {}, "initializationOptions": {"learningDir": "/x"}},
                     "lifecycle", "initialize", "params") == []
    assert _problems(doc, {"initializationOptions": {"harnessVoices": "x"}}, "lifecycle", "initialize", "params")


def test_the_framing_example_counts_its_bytes(readme: Readme) -> None:
    # Pins: a Content-Length in the one example of a good frame that does not
    # count the body below it (a client written from it would hang or cut).
    frames = [b for b in readme.blocks if b.lang == "" and b.text.startswith("Content-Length: ") and "\\r\\n" in b.text]
    assert frames, "§1 shows no frame"
    for block in frames:
        header, _, body = block.text.partition("\\r\\n\n\\r\\n\n")
        length = int(header.removeprefix("Content-Length: "))
        assert len(body.rstrip("\n").encode("utf-8")) == length, f"{block.where()}: the body is not {length} bytes"
        message = json.loads(body)
        assert message["method"] in m.METHODS


def test_the_fixer_mends_a_stale_example_and_adds_a_missing_one(tmp_path: Path) -> None:
    # Pins: a failing check that leaves the engineer to splice recordings by hand.
    from tests.protocol.readme_contract import README, refresh
    from tests.protocol.wire_examples import capture, schema_problems, to_markdown

    recorded = to_markdown(capture(tmp_path))
    text = README.read_text(encoding="utf-8")
    jobs = text.index("### mecha/jobs")
    stale = text[:jobs] + text[jobs:].replace('"waiting": ', '"waitin": ', 1)
    problems = schema_problems()
    mended, report = refresh(stale, recorded, problems, list(m.METHODS))
    assert any("mecha/jobs replaced by the recorded 'mecha/jobs'" in line for line in report), report
    assert len(report) == 1, report
    path = tmp_path / "README.md"
    path.write_text(mended, encoding="utf-8")
    for request, ex in pairs(read(path)):
        if request is not None and request.message["method"] == "mecha/jobs" and "result" in ex.message:
            assert problems(ex.message["result"], "mecha/jobs", "result") == []

    bare = "# t\n\n### mecha/inbox, mecha/inboxDrop\n\nWhat waits.\n\n## next\n"
    added, report = refresh(bare, recorded, problems, ["mecha/inbox"])
    assert report == ["mecha/inbox: added the recorded exchange under '### mecha/inbox, mecha/inboxDrop'"]
    assert '"method": "mecha/inbox"' in added and added.index("mecha/inbox\"") < added.index("## next")
