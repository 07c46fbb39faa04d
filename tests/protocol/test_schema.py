"""The JSON Schema of the wire: checked in, in step with the code, and true of
what a real sidecar sends and accepts."""

from __future__ import annotations

import json
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import msgspec
import pytest
from jsonschema import Draft202012Validator

from mecha.core.domain.reflexion import Origin
from mecha.core.gate.appraisal import Affect, Agency, Appraisal, Channel, Cite, GoalError, appraisal_to_builtins
from mecha.core.gate.assembler import appraise_session
from mecha.core.gate.candidate import Disposition, Judgement, Tally
from mecha.core.gate.goal import GoalRef
from mecha.core.gate.run import Homeostat, RunStats
from mecha.core.sessions.files import samples_dir
from mecha.core.sessions.transcript import Taint
from mecha.core.store.jobs import Job
from mecha.protocol import errors as codes
from mecha.protocol import methods as m
from mecha.protocol.schema import schema, schema_json

REPO = Path(__file__).resolve().parents[2]
CHECKED_IN = REPO / "protocol" / "schema" / "mecha-sidecar.schema.json"
REGENERATE = "mecha-sidecar schema > protocol/schema/mecha-sidecar.schema.json"


@pytest.fixture(scope="module")
def doc() -> dict[str, Any]:
    return json.loads(CHECKED_IN.read_text(encoding="utf-8"))


def _pointer(*parts: str) -> str:
    return "#/" + "/".join(p.replace("~", "~0").replace("/", "~1") for p in parts)


def validator(doc: dict[str, Any], *path: str) -> Draft202012Validator:
    """A validator for the schema at `path` in the document (its `$ref`s
    resolve against the document's root, as a consumer's would)."""
    return Draft202012Validator({**doc, "$ref": _pointer(*path)})


def params_of(doc: dict[str, Any], method: str) -> Draft202012Validator:
    return validator(doc, "methods", method, "params")


def result_of(doc: dict[str, Any], method: str) -> Draft202012Validator:
    return validator(doc, "methods", method, "result")


def assert_valid(v: Draft202012Validator, payload: Any) -> None:
    errors = sorted(v.iter_errors(payload), key=lambda e: list(e.absolute_path))
    assert not errors, "\n".join(f"{list(e.absolute_path)}: {e.message}" for e in errors)


def assert_invalid(v: Draft202012Validator, payload: Any) -> None:
    assert not v.is_valid(payload), f"the schema accepted {payload!r}"


# ─── the file and the code agree ────────────────────────────────────────────


def test_checked_in_schema_matches_the_code() -> None:
    assert CHECKED_IN.exists(), f"{CHECKED_IN.name} is missing; generate it with `{REGENERATE}`"
    assert CHECKED_IN.read_text(encoding="utf-8") == schema_json(), (
        "protocol/schema/mecha-sidecar.schema.json is out of date with the Structs; "
        f"regenerate it with `{REGENERATE}` and review the diff"
    )


def test_the_cli_prints_exactly_the_checked_in_file() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "mecha.sidecar", "schema"],
        capture_output=True,
        timeout=60,
        check=True,
    )
    assert out.stdout == CHECKED_IN.read_bytes(), f"`mecha-sidecar schema` differs from the checked-in file; `{REGENERATE}`"


def test_schema_json_is_stable_sorted_and_ends_with_one_newline() -> None:
    text = schema_json()
    assert text == schema_json()
    assert text.endswith("}\n") and not text.endswith("\n\n")
    assert text == json.dumps(json.loads(text), indent=2, sort_keys=True) + "\n"


def test_document_shape(doc: dict[str, Any]) -> None:
    assert doc["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert doc["title"] == "mecha-sidecar wire protocol"
    Draft202012Validator.check_schema(doc)
    assert set(doc["methods"]) == set(m.METHODS)
    for name, spec in m.METHODS.items():
        entry = doc["methods"][name]
        assert entry["notification"] is spec.notification
        assert entry["summary"] == spec.summary
        assert (entry["result"] is None) is spec.notification
        for part in ("params", "result"):
            if entry[part] is not None:
                ref = entry[part]["$ref"]
                assert ref.startswith("#/$defs/") and ref.removeprefix("#/$defs/") in doc["$defs"], (name, part)
    assert doc["initializationOptions"] == {"$ref": "#/$defs/InitializationOptions"}
    assert doc["rulesFile"] == {"$ref": "#/$defs/RulesFile"}


def test_every_ref_resolves(doc: dict[str, Any]) -> None:
    def refs(node: Any) -> list[str]:
        if isinstance(node, dict):
            own = [node["$ref"]] if "$ref" in node else []
            return own + [r for v in node.values() for r in refs(v)]
        if isinstance(node, list):
            return [r for v in node for r in refs(v)]
        return []

    for ref in refs(doc):
        assert ref.startswith("#/$defs/") and ref.removeprefix("#/$defs/") in doc["$defs"], ref


def test_errors_table_names_every_code_the_server_uses(doc: dict[str, Any]) -> None:
    assert doc["errors"] == {
        "ParseError": -32700,
        "InvalidRequest": -32600,
        "MethodNotFound": -32601,
        "InvalidParams": -32602,
        "InternalError": -32603,
        "ServerNotInitialized": -32002,
        "RequestCancelled": -32800,
        **codes.PROJECT_CODES,
    }


def test_string_named_results_resolve_to_the_real_type(doc: dict[str, Any]) -> None:
    assert m.METHODS["mecha/appraiseSession"].result == "Appraisal"
    assert doc["methods"]["mecha/appraiseSession"]["result"] == {"$ref": "#/$defs/Appraisal"}
    assert doc["$defs"]["Appraisal"]["properties"]["label"] == {"$ref": "#/$defs/Affect"}


# ─── real payloads validate ─────────────────────────────────────────────────


def test_rules_prompt_block_result(doc: dict[str, Any]) -> None:
    v = result_of(doc, "mecha/rulesPromptBlock")
    full = m.RulesPromptBlockResult(
        block="## Learned rules\n\n…\n\n### behavior\n- Ask before pushing.",
        rules_hash="1949fd6940575b8c",
        rule_ids=["r-20261101-1a2b3c4d"],
        domains=["behavior", "writing"],
        over_budget=[m.OverBudget(domain="writing", active=17)],
    )
    empty = m.RulesPromptBlockResult(block=None, rules_hash=None, rule_ids=[], domains=["behavior", "writing"], over_budget=[])
    assert_valid(v, m.to_builtins(full))
    assert_valid(v, m.to_builtins(empty))
    wire = m.to_builtins(full)
    del wire["rule_ids"]
    assert_invalid(v, wire)
    assert_invalid(v, {**m.to_builtins(full), "over_budget": [{"domain": "writing"}]})


def _appraisal_with_every_cite() -> Appraisal:
    def error(cite: Cite, **kw: Any) -> GoalError:
        base = dict(channel=Channel.COUNTER, sign=-0.5, agency=Agency.WORLD, visible=False, cite=cite)
        base.update(kw)
        return GoalError(**base)

    return Appraisal(
        id="a-1",
        session_id="run-0142",
        goals=[GoalRef.task("01J8ZK"), GoalRef.setpoint("attention-debt")],
        state=Homeostat(peak_context_pressure=0.82, load_avg_1m=None),
        errors=[
            error(Cite.turn(4), goal=GoalRef.task("01J8ZK"), channel=Channel.INTERVENTION, agency=Agency.OWN, controllable=True),
            error(Cite.draft("ob-7f3a"), channel=Channel.EDIT, sign=1.0, agency=Agency.OWN, visible=True),
            error(Cite.counter("context_overflows")),
            error(Cite.setpoint("load_avg_1m")),
            error(Cite.appraiser(), channel=Channel.APPRAISAL, sign=0.5, agency=Agency.OWN, controllable=False),
        ],
        label=Affect.ANGER,
        origin=Origin.CLEAN,
        taint=Taint(),
        created_at="2026-11-03T10:00:00.000000Z",
    )


def test_appraisal_as_appraisal_to_builtins_writes_it(doc: dict[str, Any]) -> None:
    v = result_of(doc, "mecha/appraiseSession")
    wire = appraisal_to_builtins(_appraisal_with_every_cite())
    assert wire["errors"][4]["cite"] == {"kind": "appraiser"}
    assert wire["goals"] == ["task:01J8ZK", "setpoint:attention-debt"]
    assert_valid(v, wire)


def test_appraisal_from_the_real_derivation(doc: dict[str, Any]) -> None:
    from mecha.core.gate.assembler import Probe, ProbeAt
    from mecha.core.sessions.transcript import Message, TaintCheckpoint
    from tests.protocol.wire_examples import MESSAGES, STATS, TIMELINE

    appraisal = appraise_session(
        "run-0142",
        msgspec.convert(STATS, RunStats),
        msgspec.convert(MESSAGES, list[Message]),
        created_at="2026-11-03T10:00:00.000000Z",
        goal=GoalRef.task("01J8ZK"),
        taint_timeline=msgspec.convert(TIMELINE, list[TaintCheckpoint]),
        probes=[ProbeAt(at=4, verdict=Probe("mattered"))],
    )
    assert_valid(result_of(doc, "mecha/appraiseSession"), appraisal_to_builtins(appraisal))


@pytest.mark.parametrize(
    "mutate",
    [
        pytest.param(lambda w: w["errors"][0].__setitem__("cite", {"kind": "turn", "id": "4"}), id="turn-id-string"),
        pytest.param(lambda w: w["errors"][0].__setitem__("cite", {"kind": "turn", "id": -1}), id="turn-id-negative"),
        pytest.param(lambda w: w["errors"][0].__setitem__("cite", {"kind": "turn"}), id="turn-without-id"),
        pytest.param(lambda w: w["errors"][1].__setitem__("cite", {"kind": "draft", "id": 3}), id="draft-id-int"),
        pytest.param(lambda w: w["errors"][4].__setitem__("cite", {"kind": "appraiser", "id": None}), id="appraiser-with-id"),
        pytest.param(lambda w: w["errors"][0].__setitem__("cite", {"turn": 4}), id="externally-tagged-cite"),
        pytest.param(lambda w: w["errors"][0].__setitem__("goal", None), id="null-goal"),
        pytest.param(lambda w: w["errors"][0].__setitem__("controllable", None), id="null-controllable"),
        pytest.param(lambda w: w.__setitem__("goals", ["epic:9"]), id="unknown-goal-kind"),
        pytest.param(lambda w: w.__setitem__("goals", [{"kind": "task", "id": "1"}]), id="goal-as-object"),
        pytest.param(lambda w: w.__setitem__("state", None), id="null-state"),
        pytest.param(lambda w: w.__setitem__("taint", {}), id="taint-without-its-fields"),
        pytest.param(lambda w: w.__setitem__("label", "frustrated"), id="unknown-label"),
        pytest.param(lambda w: w.pop("goals"), id="goals-missing"),
    ],
)
def test_appraisal_schema_rejects_what_the_sidecar_never_writes(doc: dict[str, Any], mutate: Any) -> None:
    wire = appraisal_to_builtins(_appraisal_with_every_cite())
    mutate(wire)
    assert_invalid(result_of(doc, "mecha/appraiseSession"), wire)


@pytest.mark.parametrize(
    "disposition",
    [Disposition.accept(), Disposition.propose("an architecture change is a person's decision"), Disposition.reject("tool_error_rate rose")],
    ids=["accept", "propose", "reject"],
)
def test_judgement_with_each_disposition(doc: dict[str, Any], disposition: Disposition) -> None:
    judgement = Judgement(
        disposition=disposition,
        selection=Tally(wins=6, losses=1, ties=2),
        holdout=Tally(wins=2, losses=0, ties=1),
        work_baseline=54,
        work_candidate=51,
    )
    wire = judgement.to_wire()
    assert wire == m.to_builtins(judgement)
    for method in ("mecha/judge", "mecha/judgeDrawn"):
        assert_valid(result_of(doc, method), wire)


@pytest.mark.parametrize(
    "disposition",
    ["accept", {"Accept": None}, {"Propose": 3}, {"Propose": "a", "Reject": "b"}, {"Maybe": "x"}, {"kind": "Propose", "why": "x"}],
)
def test_judgement_rejects_a_misspelled_disposition(doc: dict[str, Any], disposition: Any) -> None:
    wire = {"disposition": disposition, "selection": {"wins": 1, "losses": 0, "ties": 0},
            "holdout": {"wins": 0, "losses": 0, "ties": 1}, "work_baseline": 3, "work_candidate": 3}
    assert_invalid(result_of(doc, "mecha/judge"), wire)


def test_sample_rules_files_validate_as_the_rules_file(doc: dict[str, Any]) -> None:
    v = validator(doc, "rulesFile")
    paths = sorted((samples_dir() / "rules").glob("*.toml"))
    assert paths
    for path in paths:
        assert_valid(v, tomllib.loads(path.read_text(encoding="utf-8")))


@pytest.mark.parametrize(
    "toml",
    [
        '[[rules]]\nenabled = true\n',  # no text
        '[[rules]]\ntext = "x"\nconfidence = "high"\n',
        '[[rules]]\ntext = "x"\nsources = "r1"\n',
        'rules = "none"\n',
    ],
)
def test_rules_file_rejects_a_broken_rule(doc: dict[str, Any], toml: str) -> None:
    assert_invalid(validator(doc, "rulesFile"), tomllib.loads(toml))


def test_job_always_carries_its_state(doc: dict[str, Any]) -> None:
    v = validator(doc, "$defs", "Job")
    running = Job(id="20261130T100234-learn-4e8277-16711", kind="learn", domain="behavior", state="running",
                  started_at="2026-11-30T10:02:34.290804Z")
    wire = m.to_builtins(running)
    assert wire["state"] == "running"
    assert_valid(v, wire)
    del wire["state"]
    assert_invalid(v, wire)
    assert_invalid(v, {**m.to_builtins(running), "domain": None})


def test_learn_result_always_carries_job(doc: dict[str, Any]) -> None:
    v = result_of(doc, "mecha/learn")
    refused = m.to_builtins(m.LearnResult(job=None, reason="behavior has 1 learnable unprocessed reflection(s)"))
    assert refused == {"job": None, "reason": "behavior has 1 learnable unprocessed reflection(s)"}
    assert_valid(v, refused)
    assert_invalid(v, {"reason": "x"})
    assert_invalid(v, {"job": None, "reason": None})


def test_params_schema_agrees_with_the_decoder_on_bad_params(doc: dict[str, Any]) -> None:
    cases = [
        ("mecha/locateFollowup", {"messages": [{"role": "system", "content": "hi"}], "text": "x"}),
        ("mecha/appraiseSession", {"session_id": "s", "messages": [], "probes": [{"at": 1, "verdict": "maybe"}]}),
        ("mecha/judge", {"class": "vibes", "prediction": {"metric": "turns", "rationale": ""}, "holdout_in": 4}),
        ("mecha/sessionEnded", {"messages": []}),
        ("mecha/rulesPromptBlock", {"domain": 3}),
    ]
    for method, params in cases:
        with pytest.raises(codes.RpcError):
            m.decode_params(m.METHODS[method].params, json.dumps(params).encode())
        assert_invalid(params_of(doc, method), params)


def test_initialization_options(doc: dict[str, Any]) -> None:
    v = validator(doc, "initializationOptions")
    assert_valid(v, {})
    assert_valid(v, {"learningDir": "~/.mecha/learning", "finalAnswerNudge": "Answer now.", "harnessVoices": ["[context compacted]"],
                     "model": {"api": "anthropic", "model": "claude-sonnet-4-5", "apiKeyEnv": "ANTHROPIC_API_KEY"}})
    assert_invalid(v, {"harnessVoices": "[context compacted]"})
    assert_invalid(v, {"model": {"api": "gemini", "model": "x"}})


# ─── everything a real sidecar said validates ───────────────────────────────


@pytest.fixture(scope="module")
def wire(tmp_path_factory: pytest.TempPathFactory) -> Any:
    from tests.protocol.wire_examples import capture

    return capture(tmp_path_factory.mktemp("wire"))


def test_every_real_exchange_validates(doc: dict[str, Any], wire: Any) -> None:
    served: set[str] = set()
    for ex in wire.exchanges:
        req, reply = ex.request, ex.reply
        if req is not None and req.get("method") in m.METHODS and "error" not in ex.tags:
            method = req["method"]
            assert_valid(params_of(doc, method), req.get("params", {}))
            assert reply is not None and "result" in reply, (ex.title, reply)
            assert_valid(result_of(doc, method), reply["result"])
            served.add(method)
        if reply is not None and reply.get("method") in m.METHODS:
            method = reply["method"]
            assert doc["methods"][method]["notification"] is True
            assert_valid(params_of(doc, method), reply["params"])
            served.add(method)
    assert served == set(m.METHODS), f"not exercised: {sorted(set(m.METHODS) - served)}"
    assert wire.exit_code == 0


def test_every_real_error_is_in_the_table(doc: dict[str, Any], wire: Any) -> None:
    by_code = {code: name for name, code in doc["errors"].items()}
    seen: dict[str, int] = {}
    for ex in wire.exchanges:
        if ex.reply is None or "error" not in ex.reply:
            continue
        error = ex.reply["error"]
        assert error["code"] in by_code, error
        if error["code"] in codes.PROJECT_CODES.values():
            assert error["data"]["name"] == by_code[error["code"]], error
        if error["code"] == codes.AMBIGUOUS:
            matches = error["data"]["matches"]
            assert len(matches) >= 2 and all(m.startswith(ex.request["params"]["id"]) for m in matches), error
        seen[ex.title] = error["code"]
    assert seen == {
        "before initialize": codes.SERVER_NOT_INITIALIZED,
        "mecha/acceptProposal (again)": codes.NOT_PENDING,
        "NotFound": codes.NOT_FOUND,
        "mecha/ruleSources (no such rule)": codes.NOT_FOUND,
        "InvalidDomain": codes.INVALID_DOMAIN,
        "invalid params": codes.INVALID_PARAMS,
        "method not found": codes.METHOD_NOT_FOUND,
        "cancelled": codes.REQUEST_CANCELLED,
        "invalid JSON": codes.PARSE_ERROR,
        "bad frame": codes.PARSE_ERROR,
        "after shutdown": codes.INVALID_REQUEST,
        "Ambiguous": codes.AMBIGUOUS,
        "Stale": codes.STALE,
        "InvalidStore": codes.INVALID_STORE,
    }


def test_generated_schema_is_the_document_schema_returns() -> None:
    assert json.loads(schema_json()) == schema()


def test_the_proposals_status_filter_is_the_stores_status_enum():
    # Pins: the wire spelled the statuses again as a Literal, free to drift
    # from the store's enum.
    from mecha.core.store.learning_store import ProposalStatus
    from mecha.protocol import methods as m

    doc = schema()
    assert json.dumps(doc).count('"rejected_by_gate"') == 1, "one spelling of the statuses, the enum's"
    assert sorted(doc["$defs"]["ProposalStatus"]["enum"]) == sorted(s.value for s in ProposalStatus)
    params = msgspec.json.decode(b'{"status": "rejected_by_gate"}', type=m.ProposalsParams)
    assert params.status is ProposalStatus.REJECTED_BY_GATE
