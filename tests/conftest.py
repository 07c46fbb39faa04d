"""Fixtures shared across the test suite."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.model_server import ModelServer


@pytest.fixture
def model_server() -> Iterator[ModelServer]:
    """A real scripted model server on 127.0.0.1 (see `tests/model_server.py`),
    stopped when the test ends."""
    with ModelServer() as server:
        yield server
