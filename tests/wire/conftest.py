"""Fixtures for the wire tests: a real `python -m mecha.sidecar` per test,
over stdio, with a private learning dir and an environment that names no
model and no store of its own."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from tests.processes import wait_for_passes

from .client import SIDECAR_ARGV, Sidecar, SpawnSidecar, clean_env


@pytest.fixture
def spawn_sidecar(tmp_path: Path) -> Iterator[SpawnSidecar]:
    """A factory: `spawn_sidecar(options=..., env=..., argv=..., initialize=True)`
    starts a sidecar whose learning dir is `tmp_path/"learning"` (unless
    `options` names another), optionally initialized. Every process it
    started is killed at teardown."""
    started: list[Sidecar] = []

    def spawn(
        *,
        options: Mapping[str, Any] | None = None,
        env: Mapping[str, str] | None = None,
        argv: Sequence[str] = SIDECAR_ARGV,
        initialize: bool = True,
        learning_dir: Path | None = None,
    ) -> Sidecar:
        root = learning_dir or tmp_path / "learning"
        client = Sidecar(argv, env=clean_env(tmp_path, env), cwd=tmp_path, learning_dir=root)
        started.append(client)
        if initialize:
            client.initialize(options)
        return client

    yield spawn
    for client in started:
        client.close()
    wait_for_passes(tmp_path / "learning")


@pytest.fixture
def sidecar(spawn_sidecar: SpawnSidecar) -> Sidecar:
    """An initialized sidecar on an empty (not yet created) learning dir."""
    return spawn_sidecar()
