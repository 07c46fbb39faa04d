"""The review procedures: one source text each, and the files each agent
reads kept equal to its rendering.

`python -m tests.core.agents.test_procedures --write` renders them again
after the source (`plugins/mecha/procedures/`) changed.
"""

from __future__ import annotations

import re
import shlex
import sys
from pathlib import Path

from mecha.core.agents import procedures as pr
from mecha.core.agents.skills import install_skills, skill_name

PLUGIN = Path(__file__).resolve().parents[3] / "plugins" / "mecha"
WRITE = "python -m tests.core.agents.test_procedures --write"


def test_each_agents_review_file_is_the_rendering_of_the_one_procedure():
    # Pins: the review written twice, in different words, for Claude Code and
    # Codex — a step added to one and missing from the other.
    stale = [path for path, text in pr.renderings().items() if (PLUGIN / path).read_text(encoding="utf-8") != text]
    assert not stale, f"not the rendering of plugins/mecha/procedures (run {WRITE}): {stale}"


def test_a_step_in_the_source_reaches_both_agents_and_an_agents_own_line_only_that_agent():
    source = ("---\ndescription: D\nargument-hint: \"ID\"\nruns: proposals, why\ncodex-when: Use then.\n"
              "codex-title: T\n---\nclaude| Words: $ARGUMENTS\ncodex| 1. Run `{mecha} proposals`.\n"
              "2. Share with `{mecha} share RULE`, then {review}.\n")
    claude = pr.render(source, "claude", "review")
    codex = pr.render(source, "codex", "review", program="/opt/bin/mecha-sidecar")
    assert "2. Share with `mecha-sidecar share RULE`, then /mecha:review." in claude
    assert "2. Share with `/opt/bin/mecha-sidecar share RULE`, then the mecha-review skill." in codex
    assert "Words: $ARGUMENTS" in claude and "$ARGUMENTS" not in codex
    assert "1. Run `/opt/bin/mecha-sidecar proposals`." in codex and "1. Run" not in claude
    assert "allowed-tools: Bash(mecha-sidecar proposals:*), Bash(mecha-sidecar why:*)" in claude
    assert skill_name(codex) == "mecha-review" and "description: D. Use then." in codex and "\n# T\n" in codex


def test_the_renderings_front_matter_is_plain_yaml_a_colon_and_space_never_inside_a_value():
    # Pins: a description with ": " in it, which YAML reads as a second
    # mapping — the agent then drops the command or skill without a word.
    for path, text in pr.renderings().items():
        head = text.split("---\n", 2)[1]
        for line in head.splitlines():
            value = line.partition(": ")[2]
            assert ": " not in value or value.startswith('"'), f"{path}: {line}"


def test_installed_skills_name_the_program_by_its_absolute_path(tmp_path: Path):
    # Pins: Codex runs a skill's commands in a login shell that resets PATH,
    # where `mecha-sidecar` is "command not found".
    program = pr.skill_program(str(tmp_path / "my store"))
    first = shlex.split(program)[0]
    assert Path(first).is_absolute() and Path(first).exists(), program
    assert program.endswith(shlex.join(["--learning-dir", str(tmp_path / "my store")]))
    install_skills(tmp_path / "skills", program)
    text = (tmp_path / "skills" / "mecha-review" / "SKILL.md").read_text()
    commands = re.findall(r"`([^`]*proposals[^`]*)`", text)
    assert commands and all(c.startswith(program + " ") for c in commands), commands
    assert "`mecha-sidecar " not in text


def write() -> None:
    for path, text in pr.renderings().items():
        (PLUGIN / path).write_text(text, encoding="utf-8")
        print(f"wrote plugins/mecha/{path}")


if __name__ == "__main__":
    if sys.argv[1:] != ["--write"]:
        raise SystemExit(f"usage: {WRITE}")
    write()
