"""Every command the project prints for a person to paste, pasted into a real
`sh`: the program it names must receive exactly the words meant, whatever a
session put in them, and nothing else may run."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from tests.core.ccfixture import Claude, text, use

from .conftest import WAIT_S

#: One program name holding every character a POSIX shell gives a meaning:
#: quotes, expansions, separators, redirections, globs, history, comments,
#: escapes and a space. Each `touch` would leave a file if the shell ran it.
EVERY_METACHARACTER = "x'\"$(touch P1)`touch P2`;touch P3|touch P4&<>*?[]{}!#~\\ ${HOME}%^=,"


@pytest.fixture
def cli(env, store_dir, tmp_path):
    def run(*argv: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "mecha.sidecar", "--learning-dir", str(store_dir), *argv],
            env=env, cwd=tmp_path, capture_output=True, text=True, timeout=WAIT_S * 2,
        )

    return run


def _session_running(home: Path, program: str) -> Path:
    cc = Claude(session="cccc0001-1111-4222-8333-444455556666")
    cc.user("Pick the next issue.").assistant(
        text("Listing."), use("s1", "Bash", command=shlex.quote(program) + " ready --json")).result("s1", "[]")
    cc.assistant(text("Nothing is ready.")).user("Then file one for the flaky test.")
    cc.assistant(text("Filed."))
    session = home / ".claude" / "projects" / "-home-pat-proj" / "s.jsonl"
    session.parent.mkdir(parents=True)
    session.write_bytes(cc.bytes())
    return session


def _paste(command: str, where: Path) -> list[str]:
    """`command` run by `sh` in `where`, with a `mecha-sidecar` on PATH that
    records the words it was given: those words."""
    bin_dir = where / "bin"
    bin_dir.mkdir(exist_ok=True)
    fake = bin_dir / "mecha-sidecar"
    fake.write_text(f"#!{sys.executable}\nimport json, sys\nopen({str(where / 'argv.json')!r}, 'w').write(json.dumps(sys.argv[1:]))\n")
    fake.chmod(0o755)
    (where / "argv.json").unlink(missing_ok=True)
    ran = subprocess.run(["sh", "-c", command], cwd=where, env={"PATH": f"{bin_dir}:/usr/bin:/bin", "HOME": str(where)},
                         capture_output=True, text=True, timeout=30)
    assert ran.returncode == 0, (command, ran.stderr)
    return json.loads((where / "argv.json").read_text())


def _suggestions(cli, home: Path) -> tuple[list[str], dict]:
    """Every `trust add` command the import (text and --json) and `mine`
    print for the session under `home`, and the --json import."""
    dry = cli("import", "claude", "--dry-run")
    assert dry.returncode == 0, dry.stderr
    printed = [line.split(" — ", 1)[1] for line in dry.stdout.splitlines() if " — mecha-sidecar trust add " in line]
    as_json = json.loads(cli("--json", "import", "claude", "--dry-run").stdout)
    printed += [u["command"] for u in as_json["unknown"] if u.get("command")]
    mined = cli("mine", str(next(home.rglob("s.jsonl"))))
    printed += re.findall(r"\(to trust it: (.*)\)$", mined.stderr, flags=re.MULTILINE)
    return printed, as_json


def test_a_program_name_full_of_shell_metacharacters_gets_no_command_to_paste_and_says_why(cli, tmp_path):
    # Pins: `trust add 'Bash(x';touch PWNED;')'` printed by import, its
    # --json and mine, which ran the session's `touch` when pasted — and,
    # once quoted, a command that `trust add` itself refuses (no entry can
    # spell such a name), offered all the same.
    _session_running(tmp_path / "home", EVERY_METACHARACTER)
    printed, as_json = _suggestions(cli, tmp_path / "home")
    assert printed == [], printed
    (row,) = as_json["unknown"]
    assert row.get("command") is None and "no command is offered for it" in row["refused"], row
    assert "a program, or a program and one subcommand" in row["refused"], row


#: What a trust entry's program name may hold besides letters and digits
#: (`reader._COMMAND_ENTRY`).
ODD_BUT_TRUSTABLE = "x:+.-_y"


def test_a_trust_suggestion_pasted_into_sh_gives_the_program_the_entry_and_runs_nothing_else(cli, tmp_path):
    _session_running(tmp_path / "home", ODD_BUT_TRUSTABLE)
    (tmp_path / "paste").mkdir()
    printed, _ = _suggestions(cli, tmp_path / "home")
    assert len(printed) == 3, printed
    for command in printed:
        assert _paste(command, tmp_path / "paste") == ["trust", "add", f"Bash({ODD_BUT_TRUSTABLE})"]
        assert sorted(p.name for p in (tmp_path / "paste").iterdir()) == ["argv.json", "bin"], command


@pytest.mark.parametrize("hidden", ["\u202e", "\u2066", "\u200b", "\t", "\x1b[2J"])
def test_a_program_name_that_hides_from_a_person_is_named_and_no_command_is_offered(cli, tmp_path, hidden):
    # Pins: a suggestion holding a bidi control or an escape sequence, which
    # a terminal shows as something other than what it runs.
    _session_running(tmp_path / "home", f"tool{hidden}x")
    as_json = json.loads(cli("--json", "import", "claude", "--dry-run").stdout)
    (row,) = as_json["unknown"]
    assert row.get("command") is None, row
    assert "cannot see" in row["refused"] and "\\" in row["entry"], row
    shown_to_a_person = cli("import", "claude", "--dry-run").stdout
    assert hidden not in shown_to_a_person and "trust add" not in shown_to_a_person, shown_to_a_person


def test_the_code_spells_no_command_to_paste_by_hand_around_a_quoted_word():
    # Pins: `f"… trust add '{entry}'"`, the form that let a session's quote
    # end the word early; commands are built with `mecha.core.shellwords`.
    root = Path(__file__).resolve().parents[2]
    hand_quoted = re.compile(r"""f["'][^"'\n]*mecha-sidecar [^"\n]*'\{""")
    found = [f"{p.relative_to(root)}:{n}" for folder in ("core", "sidecar", "protocol") for p in (root / folder).rglob("*.py")
             for n, line in enumerate(p.read_text().splitlines(), 1) if hand_quoted.search(line)]
    assert not found, found


def test_only_the_one_builder_quotes_a_command_for_a_person():
    # Pins: the share's commit and the install command quoted with shlex by
    # hand, beside `shellwords`, so a word that hides from the person went
    # into a command they were told to paste. The session readers join a
    # recorded argument list to judge it as typed, and are not printing it.
    root = Path(__file__).resolve().parents[2]
    by_hand = re.compile(r"shlex\.(quote|join)\(")
    found = [f"{p.relative_to(root)}:{n}" for folder in ("core", "sidecar", "protocol") for p in (root / folder).rglob("*.py")
             if p.relative_to(root).as_posix() != "core/shellwords.py" and "core/sessions/" not in p.as_posix()
             for n, line in enumerate(p.read_text().splitlines(), 1) if by_hand.search(line)]
    assert not found, found


def test_a_store_path_with_metacharacters_in_the_session_start_notice_pastes_as_one_word(tmp_path):
    # Pins: `mecha-sidecar --learning-dir {dir} proposals` formatted bare.
    from mecha.core.agents.notice import notice_line

    store = str(tmp_path / "my store; touch P5")
    line = notice_line(2, store)
    command = re.search(r"`([^`]*proposals)`", line).group(1)
    paste_in = tmp_path / "paste"
    paste_in.mkdir()
    assert _paste(command, paste_in) == ["--learning-dir", store, "proposals"]
    assert not (paste_in / "P5").exists()


def test_shellwords_round_trips_every_printable_word_through_sh_and_refuses_what_hides(tmp_path):
    from mecha.core import shellwords

    words = [EVERY_METACHARACTER, "", "-n", "plain", "naïve café", "'", "''", "\\", "a\\'b", "$((1+1))"]
    paste_in = tmp_path / "paste"
    paste_in.mkdir()
    assert _paste(shellwords.mecha(*words), paste_in) == words
    for bad in ["a\nb", "a\x00b", "\x1b]0;t\x07", "ab\u202ec", "a\u200db", "\r"]:
        with pytest.raises(shellwords.Unpasteable, match="cannot be put in a command"):
            shellwords.command("mecha-sidecar", bad)
        assert shellwords.command_or_none("x", bad) is None
    assert os.listdir(paste_in) == ["bin", "argv.json"] or sorted(os.listdir(paste_in)) == ["argv.json", "bin"]
