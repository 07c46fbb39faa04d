"""`mecha-sidecar --learning-dir DIR serve` (and `lsp`): the flag names the
store the endpoint serves, as it does for every other verb."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.wire.client import SIDECAR_ARGV, Sidecar, clean_env


@pytest.mark.parametrize("verb", ["serve", "lsp"])
@pytest.mark.parametrize("flag_first", [True, False])
def test_the_learning_dir_flag_names_the_store_an_endpoint_serves(tmp_path: Path, verb: str, flag_first: bool) -> None:
    # Pins: `--learning-dir DIR serve` silently reading and writing the
    # default store under ~/.mecha/learning.
    chosen = tmp_path / "chosen"
    flag = ["--learning-dir", str(chosen)]
    argv = [*SIDECAR_ARGV, *(flag + [verb] if flag_first else [verb] + flag)]
    client = Sidecar(argv, env=clean_env(tmp_path), cwd=tmp_path, learning_dir=None)
    try:
        client.initialize({})
        (store,) = [c for c in client.call("mecha/doctor", {})["checks"] if c["name"] == "store"]
        assert str(chosen) in store["detail"] and ".mecha" not in store["detail"], store
        # The options of an initialize still name the store for that client.
    finally:
        client.close()
    other = tmp_path / "other"
    client = Sidecar(argv, env=clean_env(tmp_path), cwd=tmp_path, learning_dir=None)
    try:
        client.initialize({"learningDir": str(other)})
        (store,) = [c for c in client.call("mecha/doctor", {})["checks"] if c["name"] == "store"]
        assert str(other) in store["detail"], store
    finally:
        client.close()
