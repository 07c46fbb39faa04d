"""Fixtures shared across the test suite, and the line between its two halves.

Every test is either a unit test — the domain and the wire shapes in this
process, seconds for all of them — or meets a real part: a process it spawns
(the sidecar itself, a model server, git hooks, an editor, an agent's command
line, a compiler), or a real model, editor or agent installed by
`python -m tests.realparts`. The second kind carries the `realparts` marker,
so `python -m pytest -m "not realparts"` is the quick loop while working and
`python -m pytest` is the whole suite CI runs. The marker is given by folder,
in one place (`UNIT_FOLDERS` below), so a new folder of tests is `realparts`
until someone decides otherwise: the quick loop stays quick by default.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.model_server import ModelServer

#: The folders (and top-level modules) whose tests stay in this process.
#: Everything else under tests/ is marked `realparts`.
UNIT_FOLDERS = frozenset({"core", "protocol"})
UNIT_MODULES = frozenset({"test_structure.py", "test_project.py", "test_docs.py"})

TESTS = Path(__file__).resolve().parent


def is_unit(path: Path) -> bool:
    """Whether a test module at `path` is a unit test (see the docstring)."""
    try:
        rel = path.resolve().relative_to(TESTS)
    except ValueError:
        return False
    if len(rel.parts) == 1:
        return rel.name in UNIT_MODULES
    return rel.parts[0] in UNIT_FOLDERS


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "realparts: meets a real part (a spawned process, a real model, editor, agent CLI or compiler); "
        'deselect with -m "not realparts" for the quick unit loop',
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if not is_unit(Path(str(item.path))):
            item.add_marker(pytest.mark.realparts)


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
