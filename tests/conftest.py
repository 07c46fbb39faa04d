"""Fixtures shared across the test suite."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.model_server import ModelServer


@pytest.fixture(autouse=True)
def _own_config_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test reads (and a `trust add` writes) its own config file, never
    the developer's `~/.mecha/sidecar.toml`: the session readers honour the
    trust decisions kept there."""
    monkeypatch.setenv("MECHA_SIDECAR_CONFIG", str(tmp_path / "sidecar.toml"))


@pytest.fixture
def model_server() -> Iterator[ModelServer]:
    """A real scripted model server on 127.0.0.1 (see `tests/model_server.py`),
    stopped when the test ends."""
    with ModelServer() as server:
        yield server
