"""Unknown `initializationOptions` keys are named, never ignored in silence.

A harness once sent `{"learning_dir": …}` — snake_case, as every `mecha/*`
param is — and ran against `~/.mecha/learning` without a word. These drive a
real sidecar over stdio: the `initialize` result lists what it did not read,
with the key meant, and stderr says so; a first stage that could have
answered from its cache hands such an `initialize` to the full server
rather than answer it without the list.
"""

from __future__ import annotations

import time
from pathlib import Path

from mecha.protocol.initialize import ignored_options, near_miss
from mecha.protocol.plainwire import INITIALIZATION_OPTIONS_KEYS, MODEL_OPTION_KEYS

from .client import SpawnSidecar
from .test_first_stage import cached, exchange, init, msg


def test_a_snake_case_learning_dir_is_named_with_the_key_meant(spawn_sidecar: SpawnSidecar, tmp_path: Path) -> None:
    # Pins: `learning_dir` silently ignored, the run learning into the default store.
    sidecar = spawn_sidecar(initialize=False)
    result = sidecar.call("initialize", {"initializationOptions": {"learning_dir": str(tmp_path / "elsewhere"),
                                                                   "learningDir": str(tmp_path / "learning")}})
    assert result["ignoredOptions"] == [{"key": "learning_dir", "meant": "learningDir"}]
    deadline = time.monotonic() + 10
    while "learning_dir" not in sidecar.stderr and time.monotonic() < deadline:
        time.sleep(0.02)
    assert "`learning_dir` (did you mean `learningDir`?)" in sidecar.stderr
    assert "camelCase" in sidecar.stderr


def test_unknown_keys_inside_model_are_named_by_their_path(spawn_sidecar: SpawnSidecar) -> None:
    # Pins: `base_url` inside `model` dropped, the pass then failing on a missing baseUrl.
    sidecar = spawn_sidecar(initialize=False)
    model = {"api": "openai", "base_url": "http://127.0.0.1:9", "model": "local", "timeout": 30, "flavour": "x"}
    result = sidecar.call("initialize", {"initializationOptions": {"model": model}})
    assert result["ignoredOptions"] == [
        {"key": "model.base_url", "meant": "baseUrl"},
        {"key": "model.timeout", "meant": "timeoutS"},
        {"key": "model.flavour", "meant": None},
    ]


def test_known_keys_alone_leave_the_list_empty(spawn_sidecar: SpawnSidecar) -> None:
    sidecar = spawn_sidecar(initialize=False)
    result = sidecar.call("initialize", {"initializationOptions": {"harnessVoices": ["[x]"], "model": {"model": "m", "structured": "off"}}})
    assert result["ignoredOptions"] == []
    assert "ignored unknown" not in sidecar.stderr


def test_the_first_stage_hands_an_unknown_model_key_to_the_full_server(tmp_path: Path) -> None:
    # Pins: a cached `initialize` answered by the first stage without the list.
    root = tmp_path / "learning"
    root.mkdir()
    (root / "rules").mkdir()
    (root / "rules" / "behavior.user.toml").write_text('[[rules]]\ntext = "Ask before pushing"\n')
    cached(tmp_path, root)
    plain = exchange(tmp_path, init(root) + msg("shutdown", id=3) + msg("exit"))
    assert plain.first_stage_only and plain.result(1)["ignoredOptions"] == []
    run = exchange(tmp_path, init(root, model={"model": "m", "api_key": "K"}) + msg("shutdown", id=3) + msg("exit"))
    assert not run.first_stage_only
    assert run.result(1)["ignoredOptions"] == [{"key": "model.api_key", "meant": "apiKeyEnv"}]
    assert "model.api_key" in run.stderr and run.code == 0


def test_near_miss_folds_case_and_separators_then_spelling() -> None:
    assert near_miss("learning_dir", INITIALIZATION_OPTIONS_KEYS) == "learningDir"
    assert near_miss("LEARNINGDIR", INITIALIZATION_OPTIONS_KEYS) == "learningDir"
    assert near_miss("harness_voice", INITIALIZATION_OPTIONS_KEYS) == "harnessVoices"
    assert near_miss("max-retries", MODEL_OPTION_KEYS) == "maxRetries"
    assert near_miss("colour", INITIALIZATION_OPTIONS_KEYS) is None


def test_ignored_options_reads_only_objects() -> None:
    assert ignored_options(None) == [] and ignored_options([1]) == []
    assert ignored_options({"model": "x"}) == []
