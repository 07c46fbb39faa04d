"""Every hand-edited file the project reads — a rules file, the config file —
fails by name, bounded in time and depth: nested past any parser's recursion
or grown past any real file's size, it is refused before it is parsed, and
the message says which file and why."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from mecha.core.nesting import MAX_TOML_BYTES, toml_nesting
from tests.e2e.conftest import WAIT_S, clean_env

DEEP = 100_000


def run(env: dict[str, str], store: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "mecha.sidecar", "--learning-dir", str(store), *argv],
                          env=env, cwd=store.parent, capture_output=True, text=True, timeout=WAIT_S)


def _deep_rules(kind: str) -> str:
    if kind == "array":
        return "[[rules]]\nid = \"u1\"\ntext = \"x\"\ncites = " + "[" * DEEP + "]" * DEEP + "\n"
    return "[[rules]]\nid = \"u1\"\ntext = \"x\"\nextra = " + "{a = " * DEEP + "1" + "}" * DEEP + "\n"


@pytest.mark.parametrize("kind", ["array", "inline table"])
def test_a_rules_file_nested_a_hundred_thousand_deep_is_refused_by_name(tmp_path: Path, kind: str) -> None:
    # Pins: `block` and `doctor` dying with a RecursionError traceback, and
    # every run's rulesPromptBlock answering "internal error: RecursionError".
    store = tmp_path / "learning"
    rules = store / "rules" / "behavior.user.toml"
    rules.parent.mkdir(parents=True)
    rules.write_text(_deep_rules(kind))
    env = clean_env(tmp_path)
    block = run(env, store, "block")
    assert block.returncode != 0 and "Traceback" not in block.stderr and "RecursionError" not in block.stderr
    assert str(rules) in block.stderr and "nest more than" in block.stderr, block.stderr
    doctor = run(env, store, "--json", "doctor")
    assert "Traceback" not in doctor.stderr, doctor.stderr
    assert str(rules) in doctor.stdout and "nest more than" in doctor.stdout, doctor.stdout


def test_a_rules_file_larger_than_any_real_one_is_refused_unread(tmp_path: Path) -> None:
    # Pins: one 64 MiB rule making every run's first rulesPromptBlock take ~23 s.
    store = tmp_path / "learning"
    rules = store / "rules" / "behavior.user.toml"
    rules.parent.mkdir(parents=True)
    with rules.open("w") as f:
        f.write('[[rules]]\nid = "u1"\ntext = "')
        f.write("x" * (MAX_TOML_BYTES + 1))
        f.write('"\n')
    block = run(clean_env(tmp_path), store, "block")
    assert block.returncode != 0 and str(rules) in block.stderr and "MiB" in block.stderr, block.stderr


def test_a_config_file_nested_too_deep_is_named(tmp_path: Path) -> None:
    config = tmp_path / "sidecar.toml"
    config.write_text("[trust]\nallow = " + "[" * DEEP + "]" * DEEP + "\n")
    env = clean_env(tmp_path, MECHA_SIDECAR_CONFIG=str(config))
    listed = run(env, tmp_path / "learning", "trust", "list")
    assert listed.returncode != 0 and "Traceback" not in listed.stderr, listed.stderr
    assert str(config) in listed.stderr and "nest more than" in listed.stderr, listed.stderr


def test_toml_nesting_counts_brackets_outside_strings_and_comments_only() -> None:
    assert toml_nesting('a = [[1], {b = "[[[["}] # [[[[[[\n[t]\n', 10) == 2
    assert toml_nesting("s = '''[[[[\n]]'''\nm = \"\"\"{{{\"\"\"\n", 10) == 0
    assert toml_nesting("x = " + "[" * 50, 10) == 11


@pytest.mark.parametrize("argv", [("hooks", "status"), ("hooks", "install", "claude", "--scope", "project"),
                                  ("hooks", "uninstall", "claude", "--scope", "project")])
def test_an_agents_settings_file_nested_a_hundred_thousand_deep_is_refused_by_name(tmp_path: Path, argv) -> None:
    # Pins: a repository's `.claude/settings.json` of 100k nested arrays
    # ending `hooks status`, `install` and `uninstall` in a RecursionError
    # traceback that named no file.
    repo = tmp_path / "clone"
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    settings = repo / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text('{"hooks": {"Stop": ' + "[" * DEEP + "]" * DEEP + "}}\n")
    before = settings.read_bytes()
    done = subprocess.run([sys.executable, "-m", "mecha.sidecar", "--learning-dir", str(tmp_path / "learning"), *argv],
                          env=clean_env(tmp_path), cwd=repo, capture_output=True, text=True, timeout=WAIT_S)
    assert done.returncode != 0 and "Traceback" not in done.stderr and "RecursionError" not in done.stderr, done.stderr
    assert str(settings) in done.stderr and "nest more than" in done.stderr, done.stderr
    assert settings.read_bytes() == before
