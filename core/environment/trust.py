"""The person's standing trust decisions, kept in the config file's
`[trust]` table (`settings`): the one reader (`load_trust`) and the writers
(`add_trust`, `remove_trust`).

What an entry means, which entries may stand and how a reader applies them
is the sessions' business (`sessions.trust`: `Trust`, `check_entry`); this
module only finds them in the file and puts them back. Import, the hooks,
`mine`, `reflect --sessions` and `validate` load them here and hand them to
the reader (`foreign.read_session(..., trust=)`, `policy_with`), so every
verb honours the same decisions and the reader itself never opens the
config file. A file with no `[trust]` table costs no TOML parse (most
files: the hooks read this on every session).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path

from mecha.core.environment.settings import Unreadable, config_path, read_table, write_table
from mecha.core.errors import InvalidInput
from mecha.core.sessions.reader import TaintPolicy
from mecha.core.sessions.trust import TRUST_KEY, TRUST_TABLE, Trust, check_entry


def load_trust(config: Path | None = None, env: Mapping[str, str] | None = None) -> Trust:
    """The person's standing trust decisions, from `config` (default: the
    config file, `config_path`). A file with no `[trust]` table, or no file,
    trusts nothing more than the defaults. A table that does not read is an
    `InvalidInput` naming the file and the key: a reader never guesses at
    what the person meant to trust."""
    path = config_path(env) if config is None else config
    try:
        table = read_table(path, TRUST_TABLE, skim=True)  # most files: no table, no parse
    except Unreadable as exc:
        if isinstance(exc.exc, OSError):
            raise InvalidInput(f"{path}: {exc.exc.strerror or exc.exc}") from None
        raise InvalidInput(f"{path}: not valid TOML: {exc.exc}") from None
    entries, ignored = _entries_of(table, path)
    return Trust(entries=entries, path=str(path), ignored=ignored)


def _entries_of(table: object, path: Path) -> tuple[tuple[str, ...], tuple[tuple[str, str], ...]]:
    """The entries a reader honours, and those it ignores with why: one entry
    that may not stand costs that entry, never the whole table."""
    if table is None:
        return (), ()
    if not isinstance(table, dict):
        raise InvalidInput(f"{path}: [{TRUST_TABLE}] must be a table with {TRUST_KEY} = [\"Bash(bd)\", …]")
    unknown = sorted(k for k in table if k != TRUST_KEY)
    if unknown:
        raise InvalidInput(f"{path}: [{TRUST_TABLE}] {unknown[0]}: unknown key (the table holds only {TRUST_KEY} = [\"Bash(bd)\", …])")
    values = table.get(TRUST_KEY, [])
    if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
        raise InvalidInput(f"{path}: [{TRUST_TABLE}] {TRUST_KEY}: expected a list of strings, e.g. [\"Bash(bd)\", \"mcp__notes__read\"]")
    out: list[str] = []
    ignored: list[tuple[str, str]] = []
    for value in values:
        try:
            entry = check_entry(value)
        except InvalidInput as exc:
            if value not in (raw for raw, _ in ignored):
                ignored.append((value, str(exc)))
            continue
        if entry not in out:
            out.append(entry)
    return tuple(out), tuple(ignored)


def add_trust(entries: Iterable[str], config: Path | None = None) -> Trust:
    """`entries` added to the config file's `[trust]` table (each checked
    first: nothing is written when one is refused); the decisions after."""
    checked = [check_entry(e) for e in entries]
    current = load_trust(config)
    wanted = current.stored() + [e for e in dict.fromkeys(checked) if e not in current.entries]
    return _write(current, wanted)


def remove_trust(entries: Iterable[str], config: Path | None = None) -> Trust:
    """`entries` taken out of the `[trust]` table; one the table does not
    hold is an `InvalidInput` listing what it does hold (nothing written).
    An ignored entry (`Trust.ignored`) is taken out by its spelling in the
    file, so no entry the person cannot trust is one they cannot remove."""
    entries = list(entries)
    current = load_trust(config)
    raw_ignored = {raw for raw, _ in current.ignored}
    checked = [e if e in raw_ignored else check_entry(e, standing=False) for e in entries]
    missing = [e for e in checked if e not in current.entries and e not in raw_ignored]
    if missing:
        held = ", ".join(current.stored()) or "nothing"
        raise InvalidInput(f"{missing[0]} is not trusted in {current.path} (it holds: {held}); `mecha-sidecar trust list` shows them")
    return _write(current, [e for e in current.stored() if e not in checked])


def _write(current: Trust, wanted: list[str]) -> Trust:
    """The config file with its `[trust]` table saying `wanted`, every
    other byte kept (`settings.write_table`)."""
    assert current.path is not None
    path = Path(current.path)
    if current.stored() == wanted:
        return current
    write_table(path, TRUST_TABLE, {TRUST_KEY: wanted})
    target = path.resolve() if path.is_symlink() else path
    return load_trust(path) if target.exists() else Trust(entries=tuple(wanted), path=str(path))


def policy_with(source: str, trust: Iterable[str] = (), distrust: Iterable[str] = ()) -> TaintPolicy:
    """The taint policy of `source`'s reader with the person's standing
    trust decisions from the config file (`load_trust`) and one run's
    changes (`TaintPolicy.with_overrides`). Every verb that reads a session
    file with a run's `--trust-tool` gets its policy here, so each honours
    the same decisions."""
    return load_trust().policy(source, trust=trust, distrust=distrust)
