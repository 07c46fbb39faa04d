"""The README is a front page and `docs/` holds the rest; both stay true.

The README used to be one page of 1,099 lines, where a Claude Code user
found how to start at line 369. It is now a front page — what the project
does, the one command that installs and runs the demo, the one that runs the
tests, and a few lines for each place a person meets it (Claude Code, Codex,
a harness, an editor), each saying where the rules go — and every other
section is a page of `docs/`, linked from it.

Pages that nothing checks drift, so these tests hold them the way
`tests/protocol/test_readme.py` holds the wire's README:

- every link between the pages (and to the code, the wire's README and the
  editors') resolves, to a file and, with a `#`, to a heading of it;
- every `docs/` page is linked from the front page, so nothing moved there is
  lost to a reader;
- every `mecha-sidecar …` command a page gives to copy, and every inline one
  written out in full, is one the command line takes — parsed by the real
  parser, so a renamed verb or option fails here, not in a newcomer's shell;
- every `python -m MODULE` a page names is a module that exists.

The two commands of the front page (install-and-demo, test) are held in
`tests/test_project.py`, with CI's copy of the second.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import io
import re
import shlex
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
DOCS = ROOT / "docs"

#: The front page's limit: one screenful of scrolling, not a manual.
FRONT_PAGE_LINES = 200
#: The places a person meets the project, each a section of the front page.
FRONT_PAGE_SECTIONS = ("In Claude Code", "In Codex", "In your harness", "In your editor")


def _pages() -> list[Path]:
    """The front page, every page of `docs/`, and the other READMEs a page links to."""
    return [README, *sorted(DOCS.glob("*.md")), ROOT / "protocol" / "README.md", ROOT / "editors" / "README.md"]


def _slug(heading: str) -> str:
    """A heading's anchor as GitHub makes it: lower case, punctuation other
    than `-` and `_` dropped, spaces to `-`."""
    text = re.sub(r"`|\*\*|\*", "", heading.strip().lower())
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def _anchors(path: Path) -> set[str]:
    out: set[str] = set()
    seen: dict[str, int] = {}
    fenced = False
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            fenced = not fenced
        if fenced or not line.startswith("#"):
            continue
        slug = _slug(line.lstrip("#"))
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        out.add(slug if n == 0 else f"{slug}-{n}")
    return out


def _prose(text: str) -> str:
    """`text` without its fenced blocks: a link inside one is an example."""
    return re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)


def _links(path: Path) -> list[str]:
    return re.findall(r"\]\(([^)\s]+)\)", _prose(path.read_text(encoding="utf-8")))


def _code_blocks(path: Path, *kinds: str) -> list[str]:
    text = path.read_text(encoding="utf-8")
    return [m.group(2) for m in re.finditer(r"^```(\w*)\n(.*?)^```", text, flags=re.S | re.M) if m.group(1) in kinds]


def _commands(path: Path) -> list[str]:
    """The `mecha-sidecar` commands a page gives: every line of a `console`
    or `sh` block that runs it, and every inline one spelled out in full
    (no `[…]`, `|` or `…` standing for a choice)."""
    lines = [ln for block in _code_blocks(path, "console", "sh") for ln in block.splitlines()]
    inline = re.findall(r"`((?:\S*/)?mecha-sidecar [^`]+)`", _prose(path.read_text(encoding="utf-8")))
    lines += [c for c in inline if not re.search(r"[\[\]|…<>]|\.\.\.", c)]
    out = []
    for line in lines:
        for part in re.split(r"&&|;", line):
            if "mecha-sidecar" in part and not part.strip().startswith(("#", "claude ", "pip ", "python")):
                out.append(part.strip())
    return out


def _argv(command: str) -> list[str] | None:
    """The arguments after `mecha-sidecar` in `command`, or None when the
    command does not run it (a mention of the package, say)."""
    words = shlex.split(command, comments=True)
    while words and re.fullmatch(r"[A-Z_][A-Z0-9_]*=.*", words[0]):
        words.pop(0)
    if not words or Path(words[0]).name != "mecha-sidecar":
        return None
    return words[1:]


def _parses(parser: argparse.ArgumentParser, argv: list[str]) -> bool:
    """Whether the command line takes `argv`. A verb named alone in prose
    (`mecha-sidecar learn`) names the verb: it counts when `VERB --help`
    is answered, though the verb itself wants arguments."""
    quiet = io.StringIO()
    with contextlib.redirect_stdout(quiet), contextlib.redirect_stderr(quiet):
        try:
            parser.parse_args(argv)
            return True
        except SystemExit:
            if len(argv) != 1:
                return False
        try:
            parser.parse_args([*argv, "--help"])
        except SystemExit as answered:
            return answered.code == 0
    return False


def test_the_front_page_is_short_and_has_a_section_for_each_place_a_person_meets_it():
    # Pins: the README growing back into the manual (it was 1,099 lines, and
    # a Claude Code user's first step was at line 369).
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= FRONT_PAGE_LINES, f"README.md is {len(text.splitlines())} lines; move detail to docs/"
    headings = [line[3:].strip() for line in text.splitlines() if line.startswith("## ")]
    missing = [s for s in FRONT_PAGE_SECTIONS if s not in headings]
    assert not missing, f"README.md has no section {missing}; it has {headings}"
    for section in FRONT_PAGE_SECTIONS:
        body = text.split(f"## {section}\n", 1)[1].split("\n## ", 1)[0]
        assert "Where rules go" in body, f"README.md's {section!r} does not say where the rules go"


def test_every_docs_page_is_linked_from_the_front_page():
    # Pins: a page moved to docs/ that no reader can find from the README.
    linked = {(README.parent / link.split("#")[0]).resolve() for link in _links(README)}
    pages = sorted(DOCS.glob("*.md"))
    assert pages, "docs/ has no pages"
    orphans = [p.relative_to(ROOT).as_posix() for p in pages if p.resolve() not in linked]
    assert not orphans, f"not linked from README.md: {orphans}"


@pytest.mark.parametrize("page", _pages(), ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_link_on_a_page_resolves_to_a_file_and_heading(page: Path):
    # Pins: a section moved or renamed and the links to it left pointing at
    # nothing (the trust model's link into the wire's §7 when it moved down a
    # folder, "see Configure a model" once it was another page).
    broken = []
    for link in _links(page):
        if re.match(r"[a-z]+:", link):
            continue  # a web address; not this repository's to keep
        target, _, anchor = link.partition("#")
        path = (page.parent / target).resolve() if target else page
        if not path.exists():
            broken.append(f"{link}: no file {path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}")
        elif anchor and path.suffix == ".md" and anchor not in _anchors(path):
            broken.append(f"{link}: {path.name} has no heading whose anchor is #{anchor}")
    assert not broken, f"{page.relative_to(ROOT)}:\n" + "\n".join(broken)


def test_the_link_checker_sees_a_missing_file_and_a_missing_heading(tmp_path: Path):
    # Pins: a checker whose patterns quietly match nothing.
    page = tmp_path / "p.md"
    page.write_text("# Top\n\n## Two words\n\n[a](p.md#two-words) [b](gone.md) [c](#nowhere)\n"
                    "```md\n[d](inside-a-block.md)\n```\n")
    assert _links(page) == ["p.md#two-words", "gone.md", "#nowhere"]
    assert _anchors(page) == {"top", "two-words"}


def test_every_command_the_pages_give_is_one_the_command_line_takes():
    # Pins: a page telling a newcomer to type a verb or option that the
    # parser no longer has (or never had) — found only when they paste it.
    from mecha.sidecar.cli import _parser

    parser = _parser()
    checked, refused = 0, []
    for page in _pages():
        for command in _commands(page):
            argv = _argv(command)
            if argv is None or argv[:1] == ["hook"]:
                continue  # `hook` is what an agent runs, read before the parser
            if not _parses(parser, argv):
                refused.append(f"{page.relative_to(ROOT)}: {command}")
            checked += 1
    assert checked >= 30, f"only {checked} commands found: the extraction is broken"
    assert not refused, "commands the parser refuses:\n" + "\n".join(refused)


def test_every_python_module_the_pages_run_exists():
    # Pins: `python -m tests.bench` and the like outliving the module.
    missing = []
    for page in [README, *sorted(DOCS.glob("*.md"))]:
        for module in re.findall(r"python -m ([\w.]+)", page.read_text(encoding="utf-8")):
            if importlib.util.find_spec(module) is None:
                missing.append(f"{page.relative_to(ROOT)}: python -m {module}")
    assert not missing, "\n".join(missing)
