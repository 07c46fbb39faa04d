"""The project's own promises to a newcomer: the README's commands are the
ones CI runs, and the package ships everything it needs."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _readme_commands() -> list[str]:
    text = (ROOT / "README.md").read_text()
    return re.findall(r"```sh\n(.+?)\n```", text)


def test_the_readme_gives_exactly_two_commands_run_and_test():
    # A newcomer needs one command for the main job and one for the tests.
    commands = _readme_commands()
    assert len(commands) == 2, commands
    # The bundled model may stop short of an accept; the command says that is expected.
    assert commands[0].endswith("mecha-sidecar demo --accept-optional")
    assert commands[1].endswith("python -m pytest")


def test_ci_runs_the_readme_test_command_verbatim():
    # If these drift, CI stops testing what the README promises.
    ci = (ROOT / ".ci" / "run").read_text()
    assert _readme_commands()[1] in ci.splitlines()


def test_every_python_package_folder_is_listed_for_the_wheel():
    # A subpackage missing from pyproject works in an editable install and
    # vanishes from a wheel.
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    mapping = config["package-dir"]
    listed = set(config["packages"])
    for name, folder in mapping.items():
        for init in (ROOT / folder).rglob("__init__.py"):
            rel = init.parent.relative_to(ROOT / folder)
            dotted = ".".join([name, *rel.parts]) if rel.parts else name
            assert dotted in listed, f"{dotted} is not in [tool.setuptools] packages"


def test_no_tracked_text_names_the_folder_the_checkout_sits_in():
    # The project speaks of itself alone: no tracked file carries the absolute
    # path of the machine it was written on (the checkout's own folder is the
    # path any such leak would contain).
    import subprocess

    tracked = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    here = str(ROOT)
    for name in tracked.decode().split("\0"):
        if not name:
            continue
        try:
            text = (ROOT / name).read_text()
        except (UnicodeDecodeError, OSError):
            continue
        assert here not in text, name


def _layout_names() -> dict[str, str]:
    """The store's file and folder names, as `core/store/layout.py` spells
    them: every module-level string constant named `*_FILE` or `*_DIR`."""
    tree = ast.parse((ROOT / "core/store/layout.py").read_text())
    out = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            for target in node.targets:
                if isinstance(target, ast.Name) and target.id.endswith(("_FILE", "_DIR")):
                    out[target.id] = node.value.value
    return out


#: Names that mean something else when they stand alone in a literal —
#: `rules` is also the rules files' TOML key, `proposals`, `jobs` and
#: `inbox` are verbs, `.git` is any project's history too; as a path's first
#: part (`"inbox/…"`) they still count.
_COMMON_WORDS = {"rules", "cache", "proposals", "jobs", "inbox", ".git"}


def _is_root(node: ast.expr) -> bool:
    """`root`, `store_root`, `x.root`, `self._root`, `Path(root)`."""
    if isinstance(node, ast.Name):
        return node.id.endswith("root")
    if isinstance(node, ast.Attribute):
        return node.attr in ("root", "_root")
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "Path" and node.args:
        return _is_root(node.args[0])
    return False


def _layout_findings(path: Path, names: dict[str, str], *, store_code: bool) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docstrings = {
        id(n.body[0].value) for n in ast.walk(tree)
        if isinstance(n, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
        and n.body and isinstance(n.body[0], ast.Expr) and isinstance(n.body[0].value, ast.Constant)
    }
    spelled = set(names.values()) | {"MECHA_LEARNING_DIR"}
    found = []
    for node in ast.walk(tree):
        where = f"{path.relative_to(ROOT) if path.is_relative_to(ROOT) else path.name}:{getattr(node, 'lineno', 0)}"
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
            text = node.value
            alone = text in spelled and text not in _COMMON_WORDS
            if alone or any(text.startswith(name + "/") for name in spelled):
                found.append(f"{where}: the literal {text!r} spells the store's layout")
        if store_code:
            continue
        if isinstance(node, ast.ImportFrom) and node.module in ("mecha.core.store.layout", "mecha.core.store.learning_store"):
            for alias in node.names:
                if alias.name in names:
                    found.append(f"{where}: imports {alias.name}; ask the store for the path instead")
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div) and _is_root(node.left):
            found.append(f"{where}: joins a path to the store root ({ast.unparse(node)})")
        if isinstance(node, ast.Call) and ast.unparse(node.func) == "os.path.join" and node.args and _is_root(node.args[0]):
            found.append(f"{where}: joins a path to the store root ({ast.unparse(node)})")
    return found


def test_the_stores_layout_is_spelled_by_layout_and_joined_only_by_the_store():
    # Pins: file and folder names of the store typed again (a literal
    # "logs" three lines after LOGS_DIR), and paths under the store root
    # built outside the store (the inbox in the passes, job logs in the
    # endpoint, the demo's rules) — each free to drift from the layout.
    names = _layout_names()
    assert {"REFLECTIONS_FILE", "INBOX_DIR", "LOGS_DIR", "JOBS_DIR", "PROPOSALS_DIR"} <= set(names)
    found = []
    for layer in ("core", "protocol", "sidecar"):
        for path in sorted((ROOT / layer).rglob("*.py")):
            rel = path.relative_to(ROOT)
            if rel == Path("core/store/layout.py"):
                continue
            found += _layout_findings(path, names, store_code=rel.parts[:2] == ("core", "store"))
    assert not found, "spell the layout in core/store/layout.py, join it in core/store/:\n" + "\n".join(found)


def test_the_layout_guard_sees_the_joins_and_literals_it_is_for(tmp_path: Path):
    # Pins: a guard whose pattern quietly misses what it is meant to catch.
    names = _layout_names()
    sample = tmp_path / "sample.py"
    sample.write_text(
        "from mecha.core.store.learning_store import LOGS_DIR\n"
        "def f(store, root):\n"
        "    a = store.root / LOGS_DIR\n"
        "    b = store.root / 'logs'\n"
        "    c = Path(root) / 'x'\n"
        "    d = 'inbox/set-aside'\n"
        "    return a, b, c, d\n"
    )
    found = _layout_findings(sample, names, store_code=False)
    kinds = sorted(line.split(": ", 1)[1].split(" ")[0] for line in found)
    assert len(found) == 6, found
    assert kinds.count("joins") == 3 and kinds.count("imports") == 1 and kinds.count("the") == 2, found


def test_the_quick_loop_deselects_every_test_that_meets_a_real_part():
    # Pins: `pytest -m "not realparts"` quietly running an end-to-end, wire or
    # editor test (the quick loop slowing to minutes), or the marker not being
    # registered (a typo in -m would then select nothing and pass).
    def collected(*args: str) -> list[str]:
        done = subprocess.run(
            [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", *args],
            capture_output=True, text=True, cwd=Path(__file__).resolve().parent.parent, timeout=300,
        )
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
        return [line for line in done.stdout.splitlines() if "::" in line]

    quick = collected("-m", "not realparts", "--strict-markers")
    slow = collected("-m", "realparts", "--strict-markers")
    assert quick and slow
    assert all(t.split("/")[1] in ("core", "protocol") or t.startswith(("tests/test_structure.py", "tests/test_project.py", "tests/test_docs.py"))
               for t in quick), [t for t in quick if "/core/" not in t][:5]
    assert not {t.split("::")[0] for t in slow} & {t.split("::")[0] for t in quick}
    for folder in ("e2e", "wire", "editors", "lsp", "reliability"):
        assert any(t.startswith(f"tests/{folder}/") for t in slow), folder


def test_the_domain_tests_are_laid_out_like_the_domain():
    # Pins: tests/core going flat again while core/ has packages (a test of
    # the store beside one of the editor), or a folder of tests for a package
    # that was renamed away, so a reader cannot find a package's tests.
    core, tests = ROOT / "core", ROOT / "tests" / "core"
    packages = {p.name for p in core.iterdir() if (p / "__init__.py").is_file()}
    modules = {p.stem for p in core.glob("*.py") if p.stem != "__init__"}
    folders = {p.name for p in tests.iterdir() if p.is_dir() and p.name != "__pycache__"}
    assert folders <= packages, (
        f"{', '.join(f'tests/core/{f}/' for f in sorted(folders - packages))}: no package of core/ has that name; "
        "move its tests into the folder of the package they exercise"
    )
    assert all((tests / f / "__init__.py").is_file() for f in folders), "each tests/core folder is a package"
    flat = {p.stem.removeprefix("test_") for p in tests.glob("test_*.py")}
    assert flat <= modules, (
        f"{', '.join(f'tests/core/test_{m}.py' for m in sorted(flat - modules))}: no top-level module of core/ has "
        "that name; move it into tests/core/<package>/ beside the package it exercises"
    )
