"""The export never writes outside the project it exports for.

A project's `CLAUDE.local.md` / `AGENTS.md` may come with the repository
(the person's file is git-ignored, not absent), and a repository may be a
stranger's clone: its instructions files may be links
to the person's `~/.bashrc` or `~/.ssh/authorized_keys`, links to nothing
(writing through one creates the file and its folders wherever it names),
or a FIFO that blocks whoever opens it. Every case here is a real git
repository, a real home folder and the real command line, each call under
a timeout, so a hang fails the test instead of stalling it. Each is refused
by name, nothing outside the project changes, and the other projects are
still written — by `export` and by the re-export an accept runs.

A session run outside any repository (`~/src`) is its own project in the
store, but its lessons are never written into a folder that holds other
projects: Claude Code would read them in every repository below it.
"""

from __future__ import annotations

import json
import os
import socket
import stat
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from mecha.core.domain.rules import Rule
from mecha.core.store.learning_store import LearningStore
from tests import builders
from tests.builders import write_learned_rules

#: Long enough for a loaded machine; a hang on a FIFO would be forever.
CLI_TIMEOUT_S = 60

BASHRC = b"# the person's shell\nexport PATH=$HOME/bin:$PATH\n"
KEYS = b"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIKeyOfThePerson me@laptop\n"


def git_repo(path: Path) -> str:
    path.mkdir(parents=True, exist_ok=True)
    subprocess.run(["git", "init", "-q", str(path)], check=True)
    return str(path.resolve())


class World:
    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.home = tmp / "home"
        (self.home / ".ssh").mkdir(parents=True)
        (self.home / ".bashrc").write_bytes(BASHRC)
        (self.home / ".ssh" / "authorized_keys").write_bytes(KEYS)
        self.store_dir = tmp / "learning"
        self.store = LearningStore.open(self.store_dir)
        self.config = tmp / "sidecar.toml"
        self.config.write_text("[export]\nclaude = true\nagents = true\n")

    def project(self, name: str, rule: str) -> str:
        root = git_repo(self.tmp / "src" / name)
        write_learned_rules(self.store, "behavior", [Rule(text=rule, id=f"r-{name}")], root)
        return root

    def cli(self, *argv: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
        env = {**os.environ, "HOME": str(self.home), "MECHA_SIDECAR_CONFIG": str(self.config)}
        for key in ("MECHA_MODEL_API", "MECHA_MODEL_BASE_URL", "MECHA_MODEL", "MECHA_LEARNING_DIR"):
            env.pop(key, None)
        return subprocess.run(
            [sys.executable, "-m", "mecha.sidecar", "--learning-dir", str(self.store_dir), *argv],
            env=env, cwd=cwd or self.tmp, capture_output=True, text=True, timeout=CLI_TIMEOUT_S,
        )

    def outside_untouched(self) -> None:
        assert (self.home / ".bashrc").read_bytes() == BASHRC
        assert (self.home / ".ssh" / "authorized_keys").read_bytes() == KEYS
        assert not (self.home / ".config").exists(), "a folder was made through a dangling link"

    def pending_proposal(self) -> str:
        self.store.write_proposal(builders.proposal(
            "p-reach", [builders.rule("Ask before deleting anything.", "r-g")], created_at="2026-11-01T10:00:00Z",
        ))
        return "p-reach"


@pytest.fixture
def world(tmp_path: Path) -> World:
    return World(tmp_path)


@pytest.fixture
def hostile(world: World) -> Iterator[tuple[str, str, str]]:
    """A cloned repository whose instructions files reach into the home
    folder, one that links to nothing, and a plain one beside them."""
    clone = world.project("clone", "Clone rule.")
    (Path(clone) / "CLAUDE.local.md").symlink_to(world.home / ".bashrc")
    (Path(clone) / "AGENTS.md").symlink_to(world.home / ".ssh" / "authorized_keys")
    dangling = world.project("dangling", "Dangling rule.")
    (Path(dangling) / "CLAUDE.local.md").symlink_to(world.home / ".config" / "autostart" / "evil.desktop")
    (Path(dangling) / "AGENTS.md").symlink_to("../../home/.config/autostart/evil2.desktop")
    plain = world.project("plain", "Plain rule.")
    yield clone, dangling, plain


def _by_path(result: dict) -> dict[str, dict]:
    return {e["path"]: e for e in result["exports"]}


@pytest.mark.parametrize("agent", ["claude", "agents"])
def test_a_cloned_repository_linking_out_of_itself_is_refused_and_the_rest_is_exported(world, hostile, agent) -> None:
    # Pins: `export claude|agents` appending the rules section to
    # ~/.bashrc and ~/.ssh/authorized_keys through a clone's links, and a
    # dangling link creating ~/.config/autostart/ and a file in it.
    clone, dangling, plain = hostile
    done = world.cli("export", agent, "--json")
    assert done.returncode == 1, done.stderr
    world.outside_untouched()
    name = {"claude": "CLAUDE.local.md", "agents": "AGENTS.md"}[agent]
    exports = _by_path(json.loads(done.stdout))
    out_link = exports[str(Path(clone) / name)]["error"]
    assert out_link.startswith("ExportFailed: ") and "outside the project" in out_link, out_link
    nowhere = exports[str(Path(dangling) / name)]["error"]
    assert "which is not there" in nowhere and "link" in nowhere, nowhere
    assert f"{Path(clone) / name}:" in done.stderr and f"{Path(dangling) / name}:" in done.stderr
    assert exports[str(Path(plain) / name)]["changed"] is True
    assert "Plain rule." in (Path(plain) / name).read_text()


def test_the_re_export_of_an_accept_refuses_the_links_and_the_accept_stands(world, hostile) -> None:
    # Pins: the re-export every accept runs with `[export]` on appending
    # to the person's dotfiles through a clone's links.
    clone, dangling, plain = hostile
    done = world.cli("proposals", "accept", world.pending_proposal(), "--json")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["proposal"]["status"] == "accepted"
    world.outside_untouched()
    exports = _by_path(result)
    for link in [Path(clone) / "CLAUDE.local.md", Path(clone) / "AGENTS.md", Path(dangling) / "CLAUDE.local.md"]:
        assert exports[str(link)]["error"] and "nothing was written" in exports[str(link)]["error"]
    assert "Plain rule." in (Path(plain) / "CLAUDE.local.md").read_text()
    assert "Ask before deleting anything." in (world.home / ".claude" / "CLAUDE.md").read_text()


def test_a_link_that_stays_inside_the_project_is_followed(world) -> None:
    root = Path(world.project("docs", "Docs rule."))
    (root / "docs").mkdir()
    (root / "docs" / "CLAUDE.local.md").write_text("# ours\n")
    (root / "CLAUDE.local.md").symlink_to("docs/CLAUDE.local.md")
    done = world.cli("export", "claude")
    assert done.returncode == 0, done.stderr
    assert (root / "CLAUDE.local.md").is_symlink() and "Docs rule." in (root / "docs" / "CLAUDE.local.md").read_text()


def _fifo(path: Path) -> None:
    os.mkfifo(path)


def _socket(path: Path) -> None:
    s = socket.socket(socket.AF_UNIX)
    s.bind(str(path))
    s.close()


def _device(path: Path) -> None:
    os.mknod(path, 0o600 | stat.S_IFCHR, os.makedev(1, 3))  # /dev/null's numbers


SPECIALS: dict[str, tuple[Callable[[Path], None], str]] = {
    "fifo": (_fifo, "a FIFO (named pipe)"),
    "socket": (_socket, "a socket"),
    "device": (_device, "a character device"),
}


@pytest.mark.parametrize("kind", list(SPECIALS))
def test_a_fifo_socket_or_device_is_refused_by_name_without_blocking_and_the_rest_is_written(world, kind) -> None:
    # Pins: a project whose CLAUDE.local.md is a FIFO hanging `export claude`
    # in open() forever, and with it every later accept (its re-export
    # walks every project), no other project re-exported.
    if kind == "device" and os.geteuid() != 0:
        pytest.fail("making a device node needs root; run this test as root")  # never a skip
    make, said = SPECIALS[kind]
    odd = Path(world.project("odd", "Odd rule."))
    plain = Path(world.project("plain", "Plain rule."))
    make(odd / "CLAUDE.local.md")
    before = os.lstat(odd / "CLAUDE.local.md")

    exported = world.cli("export", "claude", "--json")
    assert exported.returncode == 1
    exports = _by_path(json.loads(exported.stdout))
    error = exports[str(odd / "CLAUDE.local.md")]["error"]
    assert said in error and "not a regular file" in error and "nothing was written" in error, error
    assert "Plain rule." in (plain / "CLAUDE.local.md").read_text()

    accepted = world.cli("proposals", "accept", world.pending_proposal(), "--json")
    assert accepted.returncode == 0, accepted.stderr
    assert json.loads(accepted.stdout)["proposal"]["status"] == "accepted"
    assert "Ask before deleting anything." in (world.home / ".claude" / "CLAUDE.md").read_text()
    after = os.lstat(odd / "CLAUDE.local.md")
    assert (after.st_ino, after.st_mode) == (before.st_ino, before.st_mode), "the special file was replaced"
    assert sorted(p.name for p in odd.iterdir()) == [".git", "AGENTS.md", "CLAUDE.local.md"], "a temp was left beside it"
    assert "Odd rule." in (odd / "AGENTS.md").read_text()


def test_a_session_outside_any_repository_is_not_exported_into_the_folder_holding_the_projects(world) -> None:
    # Pins: a session run in ~/src (no repository) exporting its lessons
    # to ~/src/CLAUDE.md, which Claude Code reads in every repository below.
    app = Path(world.project("app", "App rule."))
    src = app.parent
    write_learned_rules(world.store, "behavior", [Rule(text="Whatever was said in src.", id="r-src")], str(src))
    for agent, name in [("claude", "CLAUDE.local.md"), ("agents", "AGENTS.md")]:
        done = world.cli("export", agent, "--json", cwd=src)
        assert done.returncode == 0, done.stderr
        assert not (src / name).exists()
        skipped = _by_path(json.loads(done.stdout))[str(src / name)]
        assert skipped["changed"] is False and skipped["error"] is None
        assert "is not a repository" in skipped["skipped"] and "stay in the store" in skipped["skipped"]
        assert "App rule." in (app / name).read_text()
    said = world.cli("export", "claude")
    assert f"{src / 'CLAUDE.local.md'}: not exported: {src} is not a repository" in said.stdout
    # The rules block a run in that folder gets still holds them.
    block = world.cli("block", "--project", str(src))
    assert "Whatever was said in src." in block.stdout
    # Named by the person, it is written.
    named = world.cli("export", "claude", "--project", str(src))
    assert named.returncode == 0, named.stderr
    assert "Whatever was said in src." in (src / "CLAUDE.local.md").read_text()


@pytest.mark.parametrize("plant", ["exclude", "info"])
def test_an_exclude_list_linked_out_of_the_repository_is_refused_and_left_alone(world, plant) -> None:
    # Pins: an unpacked repository's `.git/info/exclude` (or its whole
    # `.git/info`) linked to the person's ~/.bashrc, and the line keeping
    # CLAUDE.local.md out of git status appended to their shell start-up.
    root = Path(world.project("unpacked", "Unpacked rule."))
    plain = Path(world.project("plain", "Plain rule."))
    info = root / ".git" / "info"
    if plant == "exclude":
        (info / "exclude").unlink()
        (info / "exclude").symlink_to(world.home / ".bashrc")
    else:
        for p in info.iterdir():
            p.unlink()
        info.rmdir()
        (world.home / "info").mkdir()
        (world.home / "info" / "exclude").symlink_to(world.home / ".bashrc")
        info.symlink_to(world.home / "info")
    done = world.cli("export", "claude", "--json")
    assert done.returncode == 1, done.stdout + done.stderr
    world.outside_untouched()
    error = _by_path(json.loads(done.stdout))[str(root / "CLAUDE.local.md")]["error"]
    assert "exclude" in error and "outside" in error and "nothing was written" in error, error
    assert not (root / "CLAUDE.local.md").exists()
    assert "Plain rule." in (plain / "CLAUDE.local.md").read_text()
