"""The shape of the code: no module imports, directly or through others, a
module that imports it back — an import inside a function included, since it
closes the cycle as surely on the path that runs it. Imports under
`if TYPE_CHECKING:` do not count: they never run.

And the packages stand on floors (`FLOORS`, lowest first): a module imports
from its own floor or the ones below, never from a floor above, so a reader
who opens the store never has to climb into the passes to learn what it
keeps. A cycle guard alone lets an upward arrow stand as long as nothing
points back down the same path; this one names each such arrow."""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LAYERS = {"core": "mecha.core", "protocol": "mecha.protocol", "sidecar": "mecha.sidecar"}


#: The floors, lowest first: the packages (or modules) on each, by dotted
#: prefix. The base modules every package uses, the agent table among them
#: (every package asks it what an agent is called and where it keeps
#: things); the domain model (what the store persists and its name rules);
#: reading sessions; the store; the person's machine (the config file, which
#: is written with the store's writer and holds the trust decisions the
#: session readers apply, and the agents installed); the model clients; the
#: passes; the gate, which judges what the passes propose; the features
#: built on all of it (the editor's, the agents'); the package itself and
#: the doctor, which look at everything; then the wire, then the endpoint.
FLOORS: tuple[tuple[str, ...], ...] = (
    ("mecha.core.errors", "mecha.core.identity", "mecha.core.nesting", "mecha.core.visible", "mecha.core.shellwords",
     "mecha.core.environment.agents", "mecha.core.plainjson"),
    ("mecha.core.domain",),
    ("mecha.core.sessions",),
    ("mecha.core.store",),
    ("mecha.core.environment",),
    ("mecha.core.providers",),
    ("mecha.core.learning",),
    ("mecha.core.gate",),
    ("mecha.core.editor", "mecha.core.agents"),
    ("mecha.core", "mecha.core.doctor"),
    ("mecha.protocol",),
    ("mecha.sidecar",),
)

#: The upward arrows that stand, each with why: "source -> target" by module.
#: Every entry is one the code has today; a new one is a decision to write
#: down here, not a line to slip past the test (and an entry the code no
#: longer has fails the test, so the list only shrinks).
UPWARD_ALLOWED: dict[str, str] = {}


@dataclass(frozen=True)
class Edge:
    source: str
    target: str
    where: str
    deferred: bool

    def __str__(self) -> str:
        how = "inside a function" if self.deferred else "at the top"
        return f"{self.source} -> {self.target} ({self.where}, {how})"


def _modules(root: Path, layers: dict[str, str]) -> dict[str, Path]:
    """Dotted name -> file, for every module of the layers under `root`."""
    out = {}
    for folder, dotted in layers.items():
        for path in sorted((root / folder).rglob("*.py")):
            parts = list(path.relative_to(root / folder).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            out[".".join([dotted, *parts])] = path
    return out


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(tree: ast.Module) -> list[tuple[ast.Import | ast.ImportFrom, bool]]:
    """Every import statement that can run, with whether it sits inside a
    function; the body of `if TYPE_CHECKING:` is skipped (its `else` is not)."""
    found: list[tuple[ast.Import | ast.ImportFrom, bool]] = []

    def visit(node: ast.AST, deferred: bool) -> None:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            found.append((node, deferred))
            return
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            for child in node.orelse:
                visit(child, deferred)
            return
        inner = deferred or isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
        for child in ast.iter_child_nodes(node):
            visit(child, inner)

    visit(tree, False)
    return found


def _resolve(name: str, modules: dict[str, Path]) -> str | None:
    """The longest known module `name` is or lies inside."""
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name or None


def _targets(node: ast.Import | ast.ImportFrom, here: str, is_package: bool, modules: dict[str, Path]) -> set[str]:
    if isinstance(node, ast.Import):
        names = [alias.name for alias in node.names]
    else:
        base = node.module or ""
        if node.level:
            package = here if is_package else here.rpartition(".")[0]
            for _ in range(node.level - 1):
                package = package.rpartition(".")[0]
            base = f"{package}.{base}" if base else package
        # `from package import name`: the name is a submodule or a name in
        # the package; either way the import runs what it resolves to.
        names = [f"{base}.{alias.name}" for alias in node.names] or [base]
    out = set()
    for name in names:
        if not name.startswith("mecha."):
            continue
        target = _resolve(name, modules)
        if target is not None:
            out.add(target)
    return out


def import_graph(root: Path, layers: dict[str, str]) -> dict[str, list[Edge]]:
    modules = _modules(root, layers)
    graph: dict[str, list[Edge]] = {name: [] for name in modules}
    for name, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node, deferred in _imports(tree):
            for target in _targets(node, name, path.name == "__init__.py", modules):
                if target != name:
                    where = f"{path.relative_to(root)}:{node.lineno}"
                    graph[name].append(Edge(name, target, where, deferred))
    return graph


def strongly_connected(graph: dict[str, list[Edge]]) -> list[list[str]]:
    """Tarjan's components with more than one module, iteratively."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []
    counter = 0
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(graph[start]))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, edges = work[-1]
            for edge in edges:
                nxt = edge.target
                if nxt not in index:
                    index[nxt] = low[nxt] = counter
                    counter += 1
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(graph[nxt])))
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        out.append(sorted(component))
    return out


def _a_cycle(graph: dict[str, list[Edge]], component: list[str]) -> list[Edge]:
    """One concrete loop through the component's first module, as edges."""
    members = set(component)
    start = component[0]
    came: dict[str, Edge] = {}
    frontier = [start]
    while frontier:
        nxt_frontier = []
        for node in frontier:
            for edge in graph[node]:
                if edge.target not in members:
                    continue
                if edge.target == start:
                    path = [edge]
                    while path[0].source != start:
                        path.insert(0, came[path[0].source])
                    return path
                if edge.target not in came:
                    came[edge.target] = edge
                    nxt_frontier.append(edge.target)
        frontier = nxt_frontier
    raise AssertionError(f"no loop through {start}")


def cycles_report(root: Path, layers: dict[str, str]) -> list[str]:
    graph = import_graph(root, layers)
    report = []
    for component in strongly_connected(graph):
        loop = "\n    ".join(str(edge) for edge in _a_cycle(graph, component))
        report.append(f"{', '.join(component)}:\n    {loop}")
    return report


def floor_of(module: str, floors: tuple[tuple[str, ...], ...]) -> int | None:
    """The floor of the longest prefix in `floors` that `module` is or lies in."""
    best: tuple[int, int] | None = None
    for level, prefixes in enumerate(floors):
        for prefix in prefixes:
            if (module == prefix or module.startswith(prefix + ".")) and (best is None or len(prefix) > best[1]):
                best = (level, len(prefix))
    return None if best is None else best[0]


def upward_edges(root: Path, layers: dict[str, str], floors: tuple[tuple[str, ...], ...]) -> list[Edge]:
    """Every import from a module to one on a higher floor."""
    out = []
    for edges in import_graph(root, layers).values():
        for edge in edges:
            here, there = floor_of(edge.source, floors), floor_of(edge.target, floors)
            if here is not None and there is not None and there > here:
                out.append(edge)
    return out


def test_every_module_has_a_floor():
    # Pins: a new package nobody placed, which the upward guard cannot see.
    unplaced = sorted(m for m in _modules(ROOT, LAYERS) if floor_of(m, FLOORS) is None)
    assert not unplaced, f"modules on no floor (add their package to FLOORS in this file): {unplaced}"


def test_no_package_imports_from_a_floor_above():
    # Pins: the store reaching up into the passes for the types it keeps
    # (the tangle the domain floor untied), or any other arrow up a floor.
    upward = upward_edges(ROOT, LAYERS, FLOORS)
    found = {f"{e.source} -> {e.target}" for e in upward}
    new = [str(e) for e in upward if f"{e.source} -> {e.target}" not in UPWARD_ALLOWED]
    assert not new, (
        "imports from a floor above (move the shared part down a floor, or import it from where it now lives):\n    "
        + "\n    ".join(new)
    )
    gone = sorted(set(UPWARD_ALLOWED) - found)
    assert not gone, f"allowed upward arrows the code no longer has (delete them from UPWARD_ALLOWED): {gone}"


def test_the_floor_guard_names_an_upward_import_inside_a_function(tmp_path: Path):
    # Pins: a guard that only reads top-level imports, or that flags an
    # import down a floor or across one.
    pkg = tmp_path / "core"
    for sub in ("low", "high"):
        (pkg / sub).mkdir(parents=True)
        (pkg / sub / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("")
    (pkg / "high" / "a.py").write_text("from mecha.core.low import b\n")
    (pkg / "low" / "b.py").write_text("def f():\n    from mecha.core.high.a import x\n    return x\n")
    (pkg / "low" / "c.py").write_text("from mecha.core.low import b\n")
    floors = (("mecha.core.low",), ("mecha.core.high",), ("mecha.core",))
    found = [str(e) for e in upward_edges(tmp_path, {"core": "mecha.core"}, floors)]
    assert found == ["mecha.core.low.b -> mecha.core.high.a (core/low/b.py:2, inside a function)"], found


def test_no_module_imports_itself_back_through_any_path():
    # Pins: a cycle closed by an import inside a function (the foreign
    # reader and the readers it picks between, the request context and the
    # job control, the first stage and the server), which keeps working
    # until the day someone moves that import to the top.
    report = cycles_report(ROOT, LAYERS)
    assert not report, "import cycles (break each by moving the shared part down a layer):\n" + "\n".join(report)


def test_the_cycle_guard_sees_deferred_imports_and_skips_type_checking(tmp_path: Path):
    # Pins: a guard that only reads top-level imports, or that counts an
    # import which never runs.
    pkg = tmp_path / "core"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from mecha.core.sub import b\n")
    (pkg / "sub" / "b.py").write_text("def f():\n    from ..a import thing\n    return thing\n")
    (pkg / "c.py").write_text("import mecha.core.a\n")
    (pkg / "d.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from mecha.core.c import x\n"
    )
    (pkg / "e.py").write_text("import mecha.core.d\nimport os\n")
    found = cycles_report(tmp_path, {"core": "mecha.core"})
    assert len(found) == 1, found
    assert found[0].startswith("mecha.core.a, mecha.core.sub.b:"), found
    assert "core/sub/b.py:2, inside a function" in found[0], found
    (pkg / "d.py").write_text("import mecha.core.e\n")
    found = cycles_report(tmp_path, {"core": "mecha.core"})
    assert len(found) == 2 and found[1].startswith("mecha.core.d, mecha.core.e:"), found


# ─── the agents and the config file have one home ──────────────────────────

#: The package that knows the person's machine: the agent table, the config
#: file's reader and writer (`core/environment/`).
ENVIRONMENT = ROOT / "core" / "environment"

#: Where the agents' spellings stand outside the environment package, each
#: with why; the word is not an agent there. Like `UPWARD_ALLOWED`, an
#: entry the code no longer has fails the test.
NAMES_ALLOWED: dict[str, str] = {
    "sidecar/handlers/__init__.py: 'agents'": "the name of the agents feature's handler module, in ROUTES",
    "sidecar/verbs/__init__.py: 'agents'": "the name of the agents feature's verb module, in VERBS",
    "core/doctor.py: 'agents'": "the name of doctor's check of the agents installed",
}


def agent_spellings() -> set[str]:
    """Every string that spells an agent or where it keeps things: its
    names (`claude`, `codex`, the `api` `claude-code`, the `export`
    targets), its folders and files (`.claude`, `CLAUDE.md`, …) and the
    variable that moves its home — read off the table itself, so a row
    added is held to the same rule."""
    from mecha.core.environment import agents

    out: set[str] = {*agents.NAMES, *agents.APIS, *agents.EXPORT_TARGETS, agents.AGENTS_MD_FILE}
    for a in agents.AGENTS:
        out |= {a.program, a.instructions_team, *a.home, *a.home_instructions, *a.instructions_personal}
        out |= {part for parts in a.instructions_read for part in parts}
        out |= {part for parts in (a.skills_home or (), a.skills_project or ()) for part in parts}
        out |= {a.home_env} if a.home_env else set()
        out |= {a.session_id_prefix} if a.session_id_prefix else set()
    return out - {"config.toml", "skills"}  # words too common to be an agent's alone


#: What locates the config file: only `environment.settings` may spell them.
CONFIG_SPELLINGS = frozenset({"sidecar.toml", "MECHA_SIDECAR_CONFIG"})


def spelled_strings(path: Path, spellings: set[str] | frozenset[str]) -> list[tuple[int, str]]:
    """Each string in the module at `path` (docstrings aside; the parts of
    an f-string included) that is one of `spellings`, with its line."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
        and node.body and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)
    }
    return sorted(
        (node.lineno, node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings
        and node.value in spellings
    )


def test_no_module_outside_the_environment_names_an_agent_or_locates_the_config_file():
    # Pins: an agent spelled as a string key in nine modules (one agent
    # three ways), the config file found by three packages — a third agent
    # then meant editing about twenty files instead of adding a row.
    spellings = agent_spellings()
    found: dict[str, list[str]] = {}
    for path in sorted(p for folder in LAYERS for p in (ROOT / folder).rglob("*.py")):
        if ENVIRONMENT in path.parents:
            continue
        for line, word in spelled_strings(path, spellings | CONFIG_SPELLINGS):
            found.setdefault(f"{path.relative_to(ROOT)}: {word!r}", []).append(str(line))
    new = [f"{key} (line {', '.join(lines)})" for key, lines in found.items() if key not in NAMES_ALLOWED]
    assert not new, (
        "agents' names and places, or the config file's, spelled outside core/environment "
        "(ask the agent table or `environment.settings` instead):\n    " + "\n    ".join(new)
    )
    gone = sorted(set(NAMES_ALLOWED) - set(found))
    assert not gone, f"allowed spellings the code no longer has (delete them from NAMES_ALLOWED): {gone}"


def test_the_spelling_guard_reads_f_strings_and_skips_docstrings(tmp_path: Path):
    # Pins: a guard that a docstring mentioning Claude Code trips, or that
    # an f-string hides a name from.
    module = tmp_path / "m.py"
    module.write_text('"""About claude."""\nX = f"{1}claude"\ndef f():\n    """codex"""\n    return ("codex", "x")\n')
    assert spelled_strings(module, {"claude", "codex"}) == [(2, "claude"), (5, "codex")]


# ─── short functions, modules of a readable size ───────────────────────────

#: Functions longer than `LONG` lines (decorators aside) that stand, with
#: why; like the lists above, an entry the code no longer has fails.
LONG_ALLOWED: dict[str, str] = {
    "core/learning/replies.py:find_json": "one scan over every character of every reply, its state in locals: "
    "split into helpers, each character would pay a call",
}
LONG = 60
#: Fewer than `MANY` functions may be longer than `FAIRLY_LONG` lines.
FAIRLY_LONG, MANY = 50, 17
#: No module may be this long or longer.
MODULE_LINES = 900


def function_lengths(root: Path, layers: dict[str, str]) -> dict[str, int]:
    """Every function's length in lines, by `path:name` (a method by its
    own name), from its `def` to its last line."""
    out: dict[str, int] = {}
    for folder in layers:
        for path in sorted((root / folder).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    key = f"{path.relative_to(root)}:{node.name}"
                    out[key] = max(out.get(key, 0), (node.end_lineno or node.lineno) - node.lineno + 1)
    return out


def test_functions_are_short_and_modules_under_their_bound():
    # Pins: functions over 60 lines went from 1 to 8, over 50 from 17 to
    # 27, in one step of work; the shell reader grew past 1,100 lines.
    lengths = function_lengths(ROOT, LAYERS)
    long = {k for k, n in lengths.items() if n > LONG}
    assert long <= set(LONG_ALLOWED), f"functions over {LONG} lines (split them): {sorted(long - set(LONG_ALLOWED))}"
    assert not set(LONG_ALLOWED) - long, f"no longer long (delete from LONG_ALLOWED): {sorted(set(LONG_ALLOWED) - long)}"
    fairly = sorted((n, k) for k, n in lengths.items() if n > FAIRLY_LONG)
    assert len(fairly) < MANY, f"{len(fairly)} functions over {FAIRLY_LONG} lines, fewer than {MANY} may be: {fairly}"
    big = sorted(
        f"{p.relative_to(ROOT)} ({n})"
        for folder in LAYERS for p in (ROOT / folder).rglob("*.py")
        if (n := len(p.read_text(encoding="utf-8").splitlines())) >= MODULE_LINES
    )
    assert not big, f"modules of {MODULE_LINES} lines or more (split them by concern): {big}"
