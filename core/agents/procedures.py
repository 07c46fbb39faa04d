"""The review procedures, one text each, rendered for every agent.

A person reviews mecha's proposals inside their agent: `/mecha:review` in
Claude Code (a plugin command), `$mecha-review` in Codex (a skill). The two
were once written separately, in different words, and drifted: a step added
to one (an accept's `--without`, say) was missing from the other. Now each
procedure is one source text (`plugins/mecha/procedures/<name>.md`) and the
files each agent reads are renderings of it, checked in beside the plugin
and held equal to the rendering by a test
(`tests/core/agents/test_procedures.py`, whose `--write` renders them
again). To add a step to the review, edit the source, not a rendering.

The source is Markdown with three additions, kept few so it reads as the
text it is:

- front matter (`key: value` lines between `---`): `description` and
  `argument-hint` for the command's menu, `runs` (the verbs the procedure
  may run: a Claude Code command's `allowed-tools`), `codex-when` (appended
  to a skill's description: when Codex should pick it) and `codex-title`;
- a line starting `claude| ` or `codex| ` is only that agent's (the rest of
  the line is the text; `claude|` alone is an empty line of it);
- `{mecha}` is the program, `{review}` how the person starts the review in
  that agent.

`{mecha}` is `mecha-sidecar` in the checked-in renderings. Codex runs a
skill's commands in a login shell that resets `PATH`, so a skill that says
`mecha-sidecar` fails there with "command not found": `hooks install codex`
renders the skills again with the absolute path of the program it runs as
(`skill_program`). Claude Code runs a plugin's commands in the person's own
environment, where `mecha-sidecar` is found, and its `allowed-tools` pattern
names the program as typed.
"""

from __future__ import annotations

import sys
import sysconfig
from pathlib import Path

import msgspec

from mecha.core import shellwords
from mecha.core.environment.agents import CLAUDE, CODEX
from mecha.core.errors import InvalidInput

#: Where the sources ship: a link, in the source tree, to the plugin's folder.
SOURCE = Path(__file__).resolve().parent / "procedure_files"
#: The procedures, by source name.
PROCEDURES = ("review", "why")
#: The program as a person types it, and as the checked-in renderings say it.
PROGRAM = "mecha-sidecar"


class Agent(msgspec.Struct, frozen=True):
    """How one agent reads a procedure."""

    #: The prefix of a line that is this agent's alone.
    only: str
    #: How the person starts the review there.
    review: str
    #: Where, under `plugins/mecha`, the rendering of procedure `{name}` is checked in.
    rendered: str


#: The agents a procedure is rendered for.
AGENTS: dict[str, Agent] = {
    CLAUDE.name: Agent(only=f"{CLAUDE.name}|", review="/mecha:review", rendered="commands/{name}.md"),
    CODEX.name: Agent(only=f"{CODEX.name}|", review="the mecha-review skill", rendered="codex/skills/mecha-{name}/SKILL.md"),
}


def split(source: str) -> tuple[dict[str, str], str]:
    """A source's front matter (key → value) and body."""
    if not source.startswith("---\n") or "\n---\n" not in source[3:]:
        raise InvalidInput("a procedure source starts with front matter between two '---' lines")
    head, body = source[4:].split("\n---\n", 1)
    meta = {}
    for line in head.splitlines():
        key, sep, value = line.partition(":")
        if not sep:
            raise InvalidInput(f"front matter line {line!r} is not 'key: value'")
        meta[key.strip()] = value.strip()
    return meta, body


def _body_for(body: str, agent: str) -> list[str]:
    """The lines of `body` that agent reads, its own prefix taken off."""
    own = AGENTS[agent].only
    others = tuple(a.only for name, a in AGENTS.items() if name != agent)
    out = []
    for line in body.splitlines():
        if line.startswith(others):
            continue
        if line.startswith(own):
            line = line[len(own):].removeprefix(" ")
        out.append(line)
    return out


def render(source: str, agent: str, name: str, program: str = PROGRAM) -> str:
    """The text `agent` reads for the procedure `name`, from its source."""
    meta, body = split(source)
    lines = _body_for(body, agent)
    if agent == CLAUDE.name:
        allowed = ", ".join(f"Bash({program} {verb}:*)" for verb in meta["runs"].split(", "))
        head = ["---", f"description: {meta['description']}", f"argument-hint: {meta['argument-hint']}",
                f"allowed-tools: {allowed}", "---", ""]
    else:
        head = ["---", f"name: mecha-{name}", f"description: {meta['description']}. {meta['codex-when']}", "---", "",
                f"# {meta['codex-title']}", ""]
    text = "\n".join(head + lines).rstrip("\n") + "\n"
    return text.replace("{mecha}", program).replace("{review}", AGENTS[agent].review)


def source_text(name: str, source: Path = SOURCE) -> str:
    path = source / f"{name}.md"
    try:
        return path.read_text(encoding="utf-8")
    except OSError as exc:
        raise InvalidInput(f"the {name} procedure is missing from this installation ({path}); "
                           "reinstall mecha-sidecar") from exc


def renderings(source: Path = SOURCE, program: str = PROGRAM) -> dict[str, str]:
    """Every checked-in rendering: its path under `plugins/mecha` → its text."""
    out = {}
    for name in PROCEDURES:
        text = source_text(name, source)
        for agent, how in AGENTS.items():
            out[how.rendered.format(name=name)] = render(text, agent, name, program)
    return out


def skill_program(learning_dir: str | None = None) -> str:
    """The program as an installed skill runs it: the `mecha-sidecar` console
    script by the absolute path it was installed at (the scripts folder of
    the interpreter running this), else that interpreter with `-m
    mecha.sidecar`; with `--learning-dir` when the hooks were pinned to a
    store. Quoted for a shell."""
    script = Path(sysconfig.get_path("scripts")) / PROGRAM
    words = [str(script)] if script.is_file() else [str(Path(sys.executable).absolute()), "-P", "-m", "mecha.sidecar"]
    if learning_dir is not None:
        words += ["--learning-dir", learning_dir]
    return shellwords.command(*words)
