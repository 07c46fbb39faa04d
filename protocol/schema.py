"""The JSON Schema of the wire, generated from the Structs that define it.

One document describes every `mecha/*` method's params and result, the
`initializationOptions` of `initialize`, the rules TOML file (as the JSON
that `tomllib` reads it to) and the error codes. `mecha-sidecar schema`
prints it; `protocol/schema/mecha-sidecar.schema.json` is the checked-in copy
the harness side generates its types from, and a test fails when the two
drift apart.

The Structs are the single source: `msgspec.json.schema_components` does the
work, and this module only adds what a Struct cannot say by itself.

- **Shapes that are not Structs** come from a schema hook: `Disposition`'s
  serde external tagging (the candidate module's own hook), a `GoalRef` as
  one `"<kind>:<id>"` string, and a `Cite`'s adjacent tagging, which is a
  Struct in Python but is stricter on the wire than its field types say.
- **Read and written are different shapes.** What the sidecar *reads*
  (request params, `initializationOptions`) may leave out any field that has
  a default. What it *writes* (results, notifications) always carries every
  field of a Struct, unless the Struct omits defaults, in which case a
  defaulted field may be absent but is never `null`. The rules file is read
  with the written rules: TOML has no `null`, and code writes learned rules
  with defaults omitted. A Struct used on both sides whose two shapes differ
  appears twice in `$defs`, as `<Name>-Input` and `<Name>-Output`.
- **A few fields say more than their type** (a domain's pattern, a minimum,
  the label a plain `str` carries): `_FIELD_OVERRIDES` below.

Keys are sorted so the file diffs cleanly.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import msgspec

from mecha.core.agents.held import HeldResult, Vouched
from mecha.core.domain.rules import Rule, RulesFile
from mecha.core.gate import candidate
from mecha.core.gate.appraisal import Affect, Appraisal, Cite, CiteKind
from mecha.core.gate.goal import GoalKind, GoalRef
from mecha.core.learning.lessons import LessonsResult

from . import errors as codes
from . import methods as m

DIALECT = "https://json-schema.org/draft/2020-12/schema"
TITLE = "mecha-sidecar wire protocol"
DESCRIPTION = (
    "Every mecha/* method's params and result, LSP's lifecycle messages "
    "(initialize, initialized, shutdown, exit, $/cancelRequest), the "
    "initializationOptions of initialize, the rules TOML file (as the JSON it "
    "parses to) and the error codes. Each schema under methods, lifecycle, "
    "initializationOptions and rulesFile is a $ref into $defs, resolved against "
    "this document's root. A notification's result is null: nothing answers it. "
    "A field a result schema does not list may appear in a later version: "
    "clients must ignore fields they do not know."
)

_PREFIX = "#/$defs/"
_REF_TEMPLATE = _PREFIX + "{name}"

#: Results that `METHODS` names by string (to keep the harness endpoint's
#: imports lean) and the types they are.
RESULT_TYPES: dict[str, type] = {"Appraisal": Appraisal, "LessonsResult": LessonsResult, "HeldResult": HeldResult, "Vouched": Vouched}

_DOMAIN = {
    "type": "string",
    "pattern": "^[a-z0-9][a-z0-9_-]{0,63}$",
    "description": "A domain name: 1-64 lowercase letters, digits, '-' and '_', starting with a letter or digit.",
}


def _nullable(schema: dict[str, Any]) -> dict[str, Any]:
    return {"anyOf": [schema, {"type": "null"}]}


#: What each key of `initializationOptions.model` means, by the field it
#: sets (`providers.config.ModelConfig`); the keys, their spelling, bounds
#: and defaults come from the code (`_model_options`).
_MODEL_KEY_TEXT: dict[str, str] = {
    "api": (
        "The dialect: an OpenAI-compatible /v1/chat/completions, or the Anthropic Messages API; or an "
        "agent's own command line run per request on the person's account (`claude-code`: claude -p, "
        "`codex`: codex exec)."
    ),
    "base_url": (
        "The server's URL. Required for `openai`; `anthropic` defaults to the hosted API; refused for "
        "`claude-code` and `codex`, which read the agent's own settings."
    ),
    "model": (
        "The model id the server knows. Required whenever `model` is present and not empty, except for "
        "`claude-code` and `codex`, where none means the agent's default."
    ),
    "api_key_env": (
        "The NAME of the environment variable holding the API key; never the key. Refused for "
        "`claude-code` and `codex` (the agent has its own sign-in)."
    ),
    "timeout_s": "Seconds per attempt: connect, send and the whole read.",
    "max_retries": "Retries after the first attempt on 429/5xx.",
    "max_backoff_s": "Cap on one wait between attempts, Retry-After included.",
    "structured": "How replies are held to a pass's JSON Schema; `auto` finds what the server accepts.",
    "concurrency": "Model calls one pass keeps in flight.",
}


def _model_options() -> dict[str, Any]:
    """`initializationOptions.model`, from the code that reads it: the wire
    spelling of each key (`INIT_KEYS`), the bounds `_validate` checks and
    `ModelConfig`'s defaults — written by hand once, it said `timeoutS`
    defaulted to 120 while the code used 600."""
    from mecha.core.providers import config as c

    defaults = {f.name: f.default for f in msgspec.structs.fields(c.ModelConfig)}
    number = {"type": "number", "exclusiveMinimum": 0, "maximum": c.TIMEOUT_LIMIT_S}
    shapes: dict[str, dict[str, Any]] = {
        "api": {"enum": sorted(c.APIS), "default": "openai"},
        "base_url": {"type": "string", "pattern": "^https?://"},
        "model": {"type": "string"},
        "api_key_env": {"type": "string"},
        "timeout_s": {**number, "default": defaults["timeout_s"]},
        "max_retries": {"type": "integer", "minimum": 0, "maximum": c.MAX_RETRIES_LIMIT, "default": defaults["max_retries"]},
        "max_backoff_s": {**number, "default": defaults["max_backoff_s"]},
        "structured": {
            "enum": sorted({mode for modes in c.STRUCTURED_BY_API.values() for mode in modes}),
            "default": defaults["structured"],
        },
        "concurrency": {"type": "integer", "minimum": 1, "maximum": c.CONCURRENCY_LIMIT, "default": defaults["concurrency"]},
    }
    if set(shapes) != set(c.INIT_KEYS) or set(_MODEL_KEY_TEXT) != set(c.INIT_KEYS):
        raise RuntimeError(f"describe every model key: {sorted(c.INIT_KEYS)}")
    return {
        "type": "object",
        "description": (
            "The model background passes call. Empty or absent: the environment "
            "(MECHA_MODEL*), then the [model] table of ~/.mecha/sidecar.toml, decide. "
            "When present and non-empty it wins as a whole, and `model` is required. "
            "A key not listed here is ignored and named in the initialize result's ignoredOptions."
        ),
        "properties": {
            wire: {**shapes[name], "description": _MODEL_KEY_TEXT[name]} for name, wire in c.INIT_KEYS.items()
        },
    }


_PROJECT = {
    "type": "string",
    "pattern": "^/",
    "description": "An absolute directory path; the project is its git root, or the directory itself outside a repository.",
}

#: `(Struct, wire field name)` → the property's schema, replacing the one the
#: field's type gives (its `default` is kept).
_FIELD_OVERRIDES: dict[tuple[type, str], dict[str, Any]] = {
    (m.RulesPromptBlockParams, "domain"): _nullable(_DOMAIN),
    (m.RulesPromptBlockParams, "project"): _nullable(_PROJECT),
    (m.SessionEndedParams, "project"): _nullable(_PROJECT),
    (m.LearnParams, "domain"): _DOMAIN,
    (m.LearnParams, "min"): _nullable({"type": "integer", "minimum": 1}),
    (m.ProposalsParams, "domain"): _nullable(_DOMAIN),
    (m.ProposeRetirementParams, "domain"): _DOMAIN,
    (m.RuleTalliesParams, "domain"): _nullable(_DOMAIN),
    (m.LessonsParams, "domain"): _nullable(_DOMAIN),
    (m.LessonsParams, "scope"): _nullable({
        "anyOf": [{"const": "global"}, _PROJECT],
        "description": "`global`, or an absolute directory whose project's lessons are listed; absent: every scope.",
    }),
    (m.LessonsParams, "limit"): _nullable({"type": "integer", "minimum": 1}),
    (m.ValidationRecord, "domain"): _DOMAIN,
    (m.JudgeParams, "holdout_in"): {
        "type": "integer",
        "minimum": 1,
        "description": "One episode in every `holdout_in` is held out.",
    },
    (m.LiveAffectParams, "run_started_at"): {
        "type": "integer",
        "minimum": 0,
        "description": "The message count before this run's turn: only interventions from here on count.",
    },
    (m.LiveAffectResult, "affect"): {"$ref": _PREFIX + "Affect"},
    (m.AppraiseSessionParams, "goal"): _nullable(
        {
            "type": "string",
            "description": 'A goal reference "<kind>:<id>". A kind this sidecar does not know means no goal.',
        }
    ),
    (m.ProbeParam, "at"): {
        "type": "integer",
        "description": "The message index of the intervention the probe tested; one that names none is -32602.",
    },
}

#: `initializationOptions.model`, which the options Struct keeps as a loose
#: object (it is validated only when a pass needs a model).
_MODEL_FIELD = "model"


def _initialization_options() -> type:
    """The `initializationOptions` Struct. It lives with the sidecar that
    resolves it, so it is imported here, only when a schema is generated,
    against the usual sidecar → protocol direction."""
    from mecha.protocol.initialize import InitializationOptions

    return InitializationOptions


def _cite_schema() -> dict[str, Any]:
    """`Cite`, exactly: serde's `#[serde(tag = "kind", content = "id")]`."""

    def variant(kinds: list[CiteKind], id_schema: dict[str, Any] | None) -> dict[str, Any]:
        kind = {"const": kinds[0].value} if len(kinds) == 1 else {"enum": sorted(k.value for k in kinds)}
        properties: dict[str, Any] = {"kind": kind}
        required = ["kind"]
        if id_schema is not None:
            properties["id"] = id_schema
            required.append("id")
        return {"type": "object", "properties": properties, "required": required, "additionalProperties": False}

    return {
        "title": "Cite",
        "description": (
            "Where an error was read off, adjacently tagged: a turn carries a message index, "
            "a draft/counter/setpoint a string id, the appraiser no id."
        ),
        "oneOf": [
            variant([CiteKind.TURN], {"type": "integer", "minimum": 0}),
            variant([CiteKind.DRAFT, CiteKind.COUNTER, CiteKind.SETPOINT], {"type": "string"}),
            variant([CiteKind.APPRAISER], None),
        ],
    }


#: Components replaced whole: a Struct whose wire form is stricter than its
#: Python field types.
_COMPONENT_OVERRIDES: dict[type, Any] = {Cite: _cite_schema}

#: Descriptions that speak to the wire rather than to this code base.
_DESCRIPTIONS: dict[type, str] = {
    Affect: "The label derived from an appraisal's signed errors by a fixed rule; never reported by a model.",
    m.JudgeParams: (
        "Either `pairs`, or `baseline` and `candidate` keyed by episode id (paired by episode; "
        "an episode in one arm only is dropped)."
    ),
    Appraisal: (
        "How one session went against its goals: signed errors, each citing what it was "
        "read off, and the affect label derived from them (never reported by a model)."
    ),
}


def schema_hook(type_: type) -> dict[str, Any]:
    """The wire shapes no Struct spells: `GoalRef` here, `Disposition` by
    the candidate module's own hook."""
    if type_ is GoalRef:
        kinds = "|".join(sorted(k.value for k in GoalKind))
        return {
            "title": "GoalRef",
            "type": "string",
            "pattern": f"^({kinds}):[\\s\\S]+$",
            "description": (
                'A goal reference "<kind>:<id>"; the id is everything after the first colon. '
                "Kinds may be added: a reader drops a reference of a kind it does not know."
            ),
        }
    return candidate.schema_hook(type_)


# ─── generation ─────────────────────────────────────────────────────────────


def _result_type(result: Any) -> type | None:
    if isinstance(result, str):
        return RESULT_TYPES[result]
    return result


def _structs(types: list[type]) -> dict[str, type]:
    """Every Struct class reachable from `types`, by component name."""
    found: dict[str, type] = {}
    seen: set[int] = set()

    def walk(node: Any) -> None:
        if id(node) in seen:
            return
        seen.add(id(node))
        if isinstance(node, msgspec.inspect.StructType):
            other = found.setdefault(node.cls.__name__, node.cls)
            if other is not node.cls:
                raise RuntimeError(f"two Structs named {node.cls.__name__}: give one a distinct name")
        if isinstance(node, (tuple, list)):
            for item in node:
                walk(item)
        elif isinstance(node, (msgspec.inspect.Type, msgspec.inspect.Field)):
            for name in node.__struct_fields__:
                walk(getattr(node, name))

    walk(msgspec.inspect.multi_type_info(types))
    return found


def _refs(node: Any) -> set[str]:
    out: set[str] = set()
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith(_PREFIX):
            out.add(ref[len(_PREFIX) :])
        for value in node.values():
            out |= _refs(value)
    elif isinstance(node, list):
        for value in node:
            out |= _refs(value)
    return out


def _closure(roots: set[str], components: dict[str, Any]) -> set[str]:
    reached: set[str] = set()
    todo = list(roots)
    while todo:
        name = todo.pop()
        if name in reached:
            continue
        reached.add(name)
        todo.extend(_refs(components[name]) - reached)
    return reached


def _rename_refs(node: Any, names: dict[str, str]) -> Any:
    if isinstance(node, dict):
        out = {k: _rename_refs(v, names) for k, v in node.items()}
        ref = out.get("$ref")
        if isinstance(ref, str) and ref.startswith(_PREFIX):
            out["$ref"] = _PREFIX + names.get(ref[len(_PREFIX) :], ref[len(_PREFIX) :])
        return out
    if isinstance(node, list):
        return [_rename_refs(v, names) for v in node]
    return node


def _without_null(schema: dict[str, Any]) -> dict[str, Any]:
    """`schema` minus its `null` alternative."""
    options = schema.get("anyOf")
    if not isinstance(options, list):
        return schema
    kept = [o for o in options if o != {"type": "null"}]
    rest = {k: v for k, v in schema.items() if k != "anyOf"}
    if len(kept) == 1:
        return {**rest, **kept[0]}
    return {**rest, "anyOf": kept}


def _written(cls: type, schema: dict[str, Any]) -> dict[str, Any]:
    """A Struct's schema as msgspec encodes it: every field present, or,
    with `omit_defaults`, a defaulted field absent rather than at its
    default (so a `None` default is never written as `null`)."""
    out = copy.deepcopy(schema)
    properties = out.get("properties", {})
    omit = cls.__struct_config__.omit_defaults
    required: list[str] = []
    for field in msgspec.structs.fields(cls):
        name = field.encode_name
        has_default = field.default is not msgspec.NODEFAULT or field.default_factory is not msgspec.NODEFAULT
        prop = properties.get(name)
        if not (omit and has_default):
            required.append(name)
            if prop is not None:
                prop.pop("default", None)
        elif prop is not None and field.default is None:
            prop = properties[name] = _without_null(prop)
            prop.pop("default", None)
    out["required"] = required
    return out


def _components(param_types: list[type], written_types: list[type], rules_types: list[type]) -> tuple[dict[str, Any], dict[str, str], dict[str, str]]:
    """`$defs`, and the component name of each root on the read side and on
    the written side."""
    everything = [*param_types, *written_types, *rules_types, Affect]
    _, base = msgspec.json.schema_components(everything, schema_hook=schema_hook, ref_template=_REF_TEMPLATE)
    structs = _structs(everything)

    for cls, make in _COMPONENT_OVERRIDES.items():
        base[cls.__name__] = make()
    for cls, text in _DESCRIPTIONS.items():
        base[cls.__name__]["description"] = text
    overrides = dict(_FIELD_OVERRIDES)
    overrides[(_initialization_options(), _MODEL_FIELD)] = _nullable(_model_options())
    for (cls, field), override in overrides.items():
        props = base[cls.__name__]["properties"]
        if field not in props:
            raise RuntimeError(f"{cls.__name__} has no field {field!r} to describe")
        replaced = copy.deepcopy(override)
        if "default" in props[field]:
            replaced["default"] = props[field]["default"]
        props[field] = replaced

    def root_name(t: type) -> str:
        return t.__name__

    read_roots = {root_name(t) for t in param_types}
    written_roots = {root_name(t) for t in written_types} | {root_name(t) for t in rules_types}
    read = _closure(read_roots, base)
    written = _closure(written_roots, base)

    def written_form(name: str) -> dict[str, Any]:
        cls = structs.get(name)
        if cls is None or cls in _COMPONENT_OVERRIDES:
            return base[name]
        return _written(cls, base[name])

    # Names on each side; a component used on both sides whose two forms
    # differ (directly, or through a component it refers to) is split.
    split: set[str] = set()
    while True:
        read_names = {n: (f"{n}-Input" if n in split else n) for n in read}
        written_names = {n: (f"{n}-Output" if n in split else n) for n in written}
        grew = False
        for name in read & written - split:
            if _rename_refs(base[name], read_names) != _rename_refs(written_form(name), written_names):
                split.add(name)
                grew = True
        if not grew:
            break

    defs: dict[str, Any] = {}
    for name in read:
        defs[read_names[name]] = _rename_refs(base[name], read_names)
    for name in written:
        defs[written_names[name]] = _rename_refs(written_form(name), written_names)
    return defs, read_names, written_names


def schema() -> dict[str, Any]:
    """The whole wire contract as one JSON Schema document."""
    InitializationOptions = _initialization_options()
    param_types, written_types = _wire_types(InitializationOptions)
    defs, read_names, written_names = _components(param_types, written_types, [RulesFile, Rule])
    return {
        "$schema": DIALECT,
        "title": TITLE,
        "description": DESCRIPTION,
        "methods": _methods_section(read_names, written_names),
        "lifecycle": _lifecycle_section(read_names, written_names),
        "editor": _editor_section(read_names, written_names),
        "initializationOptions": _ref(read_names[InitializationOptions.__name__]),
        "rulesFile": _ref(written_names[RulesFile.__name__]),
        "errors": {codes.code_name(code): code for code in _error_codes()},
        "$defs": defs,
    }


def _ref(name: str) -> dict[str, str]:
    return {"$ref": _PREFIX + name}


def _wire_types(initialization_options: type) -> tuple[list[type], list[type]]:
    """The types the sidecar reads (params, command arguments) and the ones
    it writes (results, notifications' params)."""
    from .commands import COMMANDS, NOTIFICATIONS, ClientExtensions
    from .initialize import LIFECYCLE

    param_types: list[type] = [initialization_options]
    written_types: list[type] = []
    for message in LIFECYCLE.values():
        if message.params is not None:
            param_types.append(message.params)
        if message.result is not None:
            written_types.append(message.result)
    for spec in m.METHODS.values():
        # A notification's params are something the sidecar writes.
        (written_types if spec.notification else param_types).append(spec.params)
        result = _result_type(spec.result)
        if result is not None:
            written_types.append(result)
    for command in COMMANDS.values():
        written_types.append(command.result)
        param_types.extend(a.type for a in command.arguments if a.type is not str)
    written_types.extend(NOTIFICATIONS.values())
    param_types.append(ClientExtensions)
    return param_types, written_types


def _methods_section(read_names: dict[str, str], written_names: dict[str, str]) -> dict[str, Any]:
    methods: dict[str, Any] = {}
    for name, spec in m.METHODS.items():
        params_name = (written_names if spec.notification else read_names)[spec.params.__name__]
        result = _result_type(spec.result)
        methods[name] = {
            "params": _ref(params_name),
            "result": None if result is None else _ref(written_names[result.__name__]),
            "notification": spec.notification,
            "summary": spec.summary,
        }
    return methods


#: The params of a lifecycle message a server ignores: absent, `null`, or any object.
_IGNORED_PARAMS = {
    "anyOf": [{"type": "object"}, {"type": "null"}],
    "description": "Ignored: usually absent; null or any object is accepted.",
}


def _lifecycle_section(read_names: dict[str, str], written_names: dict[str, str]) -> dict[str, Any]:
    """LSP's lifecycle messages, shaped as `methods`' entries. A request
    answered `null` (`shutdown`) has the result `{"type": "null"}`; a
    notification's result is `null`: nothing answers it."""
    from .initialize import LIFECYCLE

    out: dict[str, Any] = {}
    for name, message in LIFECYCLE.items():
        result: Any = None
        if not message.notification:
            result = {"type": "null"} if message.result is None else _ref(written_names[message.result.__name__])
        out[name] = {
            "params": _IGNORED_PARAMS if message.params is None else _ref(read_names[message.params.__name__]),
            "result": result,
            "notification": message.notification,
            "summary": message.summary,
        }
    return out


def _editor_section(read_names: dict[str, str], written_names: dict[str, str]) -> dict[str, Any]:
    from .commands import COMMANDS, EXPERIMENTAL_KEY, NOTIFICATIONS, ClientExtensions

    def argument(a: Any) -> dict[str, Any]:
        shape = {"type": "string"} if a.type is str else _ref(read_names[a.type.__name__])
        return {"name": a.name, "schema": shape, "required": a.required}

    return {
        "commands": {
            cid: {
                "method": c.method,
                "arguments": [argument(a) for a in c.arguments],
                "result": _ref(written_names[c.result.__name__]),
                "summary": c.summary,
            }
            for cid, c in COMMANDS.items()
        },
        "notifications": {name: {"params": _ref(written_names[t.__name__])} for name, t in NOTIFICATIONS.items()},
        "clientCapabilities": {
            "description": (
                "What a client says under initialize's capabilities.experimental. A client that sends "
                "nothing here gets no notifications above, and is shown command results through "
                "window/showMessage and window/showDocument."
            ),
            "experimental": {EXPERIMENTAL_KEY: _ref(read_names[ClientExtensions.__name__])},
        },
    }


def _error_codes() -> list[int]:
    return [
        codes.PARSE_ERROR,
        codes.INVALID_REQUEST,
        codes.METHOD_NOT_FOUND,
        codes.INVALID_PARAMS,
        codes.INTERNAL_ERROR,
        codes.SERVER_NOT_INITIALIZED,
        codes.REQUEST_CANCELLED,
        *codes.PROJECT_CODES.values(),
    ]


def schema_json() -> str:
    """`schema()` as the checked-in file has it: sorted keys, two-space
    indent, ASCII only, one trailing newline."""
    return json.dumps(schema(), indent=2, sort_keys=True, ensure_ascii=True) + "\n"
