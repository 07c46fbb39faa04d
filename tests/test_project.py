"""The project's own promises to a newcomer: the README's commands are the
ones CI runs, and the package ships everything it needs."""

from __future__ import annotations

import re
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
    assert commands[0].endswith("mecha-sidecar demo")
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


def test_the_stores_layout_is_spelled_only_by_the_store():
    # Pins: file and folder names of the store typed again in the passes,
    # the handlers and the editor endpoint, free to drift from store.py.
    spelled = re.compile(
        r"""["'](?:reflections\.jsonl|validations\.jsonl|mined\.jsonl|MECHA_LEARNING_DIR)["']|["'](?:logs|inbox)/"""
    )
    owners = {Path("core/store/learning_store.py"), Path("core/store/layout.py")}
    found = []
    for layer in ("core", "protocol", "sidecar"):
        for path in sorted((ROOT / layer).rglob("*.py")):
            rel = path.relative_to(ROOT)
            if rel in owners:
                continue
            for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                if spelled.search(line) and not line.lstrip().startswith("#"):
                    found.append(f"{rel}:{n}: {line.strip()}")
    assert not found, "use the constants in core/store/learning_store.py:\n" + "\n".join(found)
