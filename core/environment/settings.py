"""The config file: where it is, the one reader of its tables and the one
writer that changes a table.

The person's settings live in one TOML file, `$MECHA_SIDECAR_CONFIG`, else
`~/.mecha/sidecar.toml`, one table per concern: `[model]` (the passes'
model, read by `providers.config`), `[trust]` (standing trust decisions,
`environment.trust`), `[export]` (where accepted rules are written,
`agents.export_targets`). Each of those modules decides what its table
means; this one is the only place that finds the file, opens it or writes
it, so a reader of any of them sees the same file the others do.

Reading: `read_table` gives one table, `None` when the file or the table is
absent, and `Unreadable` (which each caller words in its own terms) when
the file cannot be read or is not TOML. A caller that reads on a hot path
asks it to `skim`: a file that never names the table is not parsed at all.

Writing: `write_table` changes one table through `tomlkit`, so every other
byte of the file — the person's comments, order and spelling — stays as
they wrote it, and writes the result whole-or-not-at-all through the one
writer of a person's files (`confined.rewrite_file`: through a link the
person made, to its target; never through a link to nothing, into another
user's folder or a FIFO). `tomlkit` is imported only there: no reader pays
for it.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from mecha.core.errors import InvalidInput
from mecha.core.nesting import toml_loads, toml_problem

#: Names the config file; set it to point a test or a second setup elsewhere.
CONFIG_PATH_ENV = "MECHA_SIDECAR_CONFIG"


def config_path(env: Mapping[str, str] | None = None) -> Path:
    """`$MECHA_SIDECAR_CONFIG` if set, else `~/.mecha/sidecar.toml`."""
    env = os.environ if env is None else env
    override = env.get(CONFIG_PATH_ENV, "").strip()
    if override:
        return Path(override).expanduser()
    return Path.home() / ".mecha" / "sidecar.toml"


class Unreadable(Exception):
    """The config file exists but cannot be read (`exc` an `OSError`), is
    not UTF-8 (a `UnicodeDecodeError`) or is not valid TOML (a
    `tomllib.TOMLDecodeError`). Each reader turns it into its own error,
    naming the file."""

    def __init__(self, path: Path, exc: Exception) -> None:
        super().__init__(f"{path}: {exc}")
        self.path = path
        self.exc = exc


def mentions(data: bytes, name: str) -> bool:
    """Whether the file's bytes could hold table `name` (`[name`, `name.` or
    `name ` anywhere): when not, there is nothing to parse."""
    return f"[{name}".encode() in data or f"{name}.".encode() in data or f"{name} ".encode() in data


def read_table(path: Path, name: str, *, skim: bool = False) -> Any:
    """Table `name` of the config file at `path` as `tomllib` reads it (any
    value: the caller checks it is a table), or `None` when the file, or the
    table, is absent. `skim`: a file whose bytes never mention the table is
    not parsed (a broken file that does not is then no error).

    Raises `Unreadable`."""
    try:
        data = path.read_bytes()
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as exc:
        raise Unreadable(path, exc) from None
    if skim and not mentions(data, name):
        return None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise Unreadable(path, exc) from None
    try:
        return toml_loads(text).get(name)
    except tomllib.TOMLDecodeError as exc:
        raise Unreadable(path, exc) from None


def write_table(path: Path, name: str, values: Mapping[str, list[str] | str], drop: Iterable[str] = ()) -> None:
    """The config file at `path` with table `name`'s keys set to `values`
    (a string, or a list of strings; a list of more than three is written
    one item a line) and the keys in `drop` taken out, every other byte
    kept. Written by the one writer of a person's files
    (`confined.rewrite_file`): through a link the person made, to its
    target; never through a link to nothing, into another user's folder,
    or into a FIFO or device, each refused by name before anything is
    created; and a save of theirs meanwhile kept. The file is the owner's
    alone (0600), a new one in a folder of theirs alone. `InvalidInput`
    naming the file when it cannot be read or written, or is not TOML."""
    from mecha.core.environment.confined import rewrite_file
    from mecha.core.errors import ExportFailed

    def render(raw: bytes | None) -> bytes:
        try:
            text = "" if raw is None else raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InvalidInput(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start}); nothing was written") from None
        return _with_table(path, text, name, values, drop).encode("utf-8")

    try:
        if not os.path.lexists(path):
            path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        # Anywhere the person's own links lead (`within` the root), but
        # never through a link to nothing or into another user's folder.
        rewrite_file(path, render, within=Path(os.sep), appends=False, what="the config change", mode=0o600)
    except ExportFailed as exc:
        raise InvalidInput(str(exc)) from None
    except OSError as exc:
        raise InvalidInput(f"{path}: cannot write: {exc.strerror or exc}; nothing was written") from None


def _with_table(path: Path, text: str, name: str, values: Mapping[str, list[str] | str], drop: Iterable[str]) -> str:
    """The config file's `text` with table `name` changed as `write_table`
    says (pure but for naming `path` in its refusals)."""
    import tomlkit

    problem = toml_problem(len(text), text)
    if problem is not None:
        raise InvalidInput(f"{path}: {problem}")
    try:
        doc = tomlkit.parse(text)
    except tomlkit.exceptions.ParseError as exc:
        raise InvalidInput(f"{path}: not valid TOML ({exc}); nothing was written") from None
    table = doc.get(name)
    if table is None:
        table = tomlkit.table()
        doc[name] = table
    elif not isinstance(table, dict):
        raise InvalidInput(f"{path}: `{name}` is not a table; nothing was written")
    for key in drop:
        if key in table:
            del table[key]
    for key, wanted in values.items():
        if isinstance(wanted, str):
            table[key] = wanted
            continue
        array = tomlkit.array()
        array.extend(wanted)
        if len(wanted) > 3:
            array.multiline(True)
        table[key] = array
    rendered = tomlkit.dumps(doc)
    return rendered if rendered.endswith("\n") else rendered + "\n"
