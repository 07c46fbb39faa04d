"""Where each agent reads a person's own instructions, and how a file put
there stays out of the team's repository.

An accepted rule is the person's: it was learned from their corrections.
Both agents keep a person's instructions apart from a team's, and the
export writes only into the person's side (a team's tracked files are
written only when the person names them):

- **Claude Code** reads `~/.claude/CLAUDE.md` in every project, and, in a
  project, `CLAUDE.local.md` at the checkout's root beside the team's
  `CLAUDE.md` (checked with the real CLI, 2.1.328: a `claude -p` run in a
  repository sends both to its model). So the global rules go into the
  first, a project's rules into the second. The alternatives were weighed:
  an `@import` of a file outside the repository has to be written into the
  team's `CLAUDE.md`, which is the very change a person must not find in
  `git status`; `~/.claude/rules/*.md` with `paths:` frontmatter is loaded
  when the agent reads a matching file, not when the session starts, so a
  rule about how to work would miss the first turns.
- **Codex** reads `$CODEX_HOME/AGENTS.md` (default `~/.codex/AGENTS.md`)
  in every project, and, in a project, one file per folder from the
  repository's root down — `AGENTS.override.md` *instead of* `AGENTS.md`,
  so a personal file there would hide the team's. What Codex does read
  per project and per person is the project's `.codex/config.toml`, whose
  `developer_instructions` reach the model as developer instructions
  (checked with the real CLI, 0.169.0, `codex debug prompt-input`) — in a
  project the person trusts (`[projects."<dir>"] trust_level = "trusted"`
  in `~/.codex/config.toml`, which Codex writes when the person says so),
  and not otherwise. So the global rules go into `AGENTS.md` in Codex's
  home, a project's rules into that key (`codex_config_after`).

A file made in a checkout is kept out of git by the repository's own
`info/exclude` (`keep_out_of_git`): never `.gitignore`, which is tracked
and would itself show in `git status`. `info/exclude` lives in the
repository's common git directory, so one line covers every worktree. A
file the team has committed is never written: its change would show.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterable, Mapping
from pathlib import Path

from mecha.core.environment.agents import CLAUDE, CODEX, agent_home
from mecha.core.errors import ExportFailed
from mecha.core.nesting import toml_loads, toml_problem
from mecha.core.store.layout import GIT_MARKER

#: A person's own instructions for one project, beside the team's
#: `CLAUDE.md` at a checkout's root; Claude Code reads both.
CLAUDE_LOCAL_FILE = os.path.join(*CLAUDE.instructions_personal)
#: The project layer of Codex's configuration, at a checkout's root.
CODEX_PROJECT_CONFIG = CODEX.instructions_personal
#: The key of Codex's configuration whose text reaches the model.
CODEX_INSTRUCTIONS_KEY = "developer_instructions"
#: Codex's global instructions file, in its home.
CODEX_GLOBAL_FILE = CODEX.home_instructions[0]
#: How long a `git` question about a checkout may take.
GIT_TIMEOUT_S = 20.0


def codex_home(home: Path, env: Mapping[str, str] | None = None) -> Path:
    """Codex's home: `$CODEX_HOME`, else `~/.codex`."""
    return Path(agent_home(CODEX, str(home), os.environ if env is None else env))


def claude_local_file(checkout: str) -> Path:
    return Path(checkout) / CLAUDE_LOCAL_FILE


def codex_project_config(checkout: str) -> Path:
    return Path(checkout).joinpath(*CODEX_PROJECT_CONFIG)


def _git(checkout: str, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["git", "-C", checkout, *argv], capture_output=True, text=True, timeout=GIT_TIMEOUT_S,
        stdin=subprocess.DEVNULL, check=False,
    )


def is_tracked(checkout: str, relative: str) -> bool:
    """Whether the repository at `checkout` tracks the file `relative`."""
    return _git(checkout, "ls-files", "--error-unmatch", "--", relative).returncode == 0


def exclude_file(checkout: str) -> Path | None:
    """The repository's `info/exclude` (in its common git directory, so
    every worktree shares it), or `None` when `checkout` is no repository."""
    if not os.path.lexists(os.path.join(checkout, GIT_MARKER)):
        return None
    done = _git(checkout, "rev-parse", "--git-common-dir")
    if done.returncode != 0 or not done.stdout.strip():
        return None
    common = Path(done.stdout.strip())
    return (common if common.is_absolute() else Path(checkout) / common) / "info" / "exclude"


def exclude_line(relative: str) -> str:
    """The pattern that ignores exactly the file `relative` from the root."""
    return "/" + relative.lstrip("/")


def exclude_after(raw: bytes | None, lines: Iterable[str]) -> bytes | None:
    """`info/exclude` with each of `lines` in it (pure; `None`: unchanged).
    A line already there is not written twice; the person's lines stay."""
    text = (raw or b"").decode("utf-8", errors="surrogateescape")
    have = {line.strip() for line in text.splitlines()}
    missing = [line for line in lines if line not in have]
    if not missing:
        return None
    if text and not text.endswith("\n"):
        text += "\n"
    text += "# mecha-sidecar: a person's own instructions, kept out of the repository\n"
    text += "".join(f"{line}\n" for line in missing)
    return text.encode("utf-8", errors="surrogateescape")


def keep_out_of_git(checkout: str, path: Path) -> None:
    """Make sure the file `path` inside `checkout` will not show in `git
    status`: refused (`ExportFailed`) when the repository tracks it — the
    team's file, not the person's — and otherwise named in the
    repository's `info/exclude` unless git ignores it already, written
    only inside the repository's git folder (a link out of it, or to
    nothing, is refused by name). A folder that is no repository has no
    status to keep clean."""
    from mecha.core.environment.confined import rewrite_file

    relative = os.path.relpath(path, checkout)
    exclude = exclude_file(checkout)
    if exclude is None:
        return
    if is_tracked(checkout, relative):
        raise ExportFailed(
            f"{path}: the repository tracks this file, so it is the team's, not yours; nothing was written. "
            "Name the file by hand (`mecha-sidecar export claude FILE`) to write the team's instructions"
        )
    if _git(checkout, "check-ignore", "-q", "--", relative).returncode == 0:
        return
    # Confined to the repository's git folder: an unpacked repository's
    # `info/exclude` may be a link to a file of the person's (`~/.bashrc`).
    rewrite_file(exclude, lambda raw: exclude_after(raw, [exclude_line(relative)]), within=exclude.parent.parent,
                 what="the exclude line")


def codex_config_after(raw: bytes | None, block: str | None, *, name: str) -> bytes | None:
    """Codex's project configuration with `developer_instructions` set to
    `block` (`None`: the key taken out again), every other byte the
    person's (tomlkit keeps comments and layout). A key already there that
    this export did not write (it does not open with the rules block's
    heading) is the person's: refused by name, nothing written. A file the
    key was the only thing in is given back empty."""
    import tomlkit
    from tomlkit.exceptions import TOMLKitError

    from mecha.core.domain.rules import RULES_BLOCK_HEADING

    try:
        text = raw.decode("utf-8") if raw is not None else ""
        problem = toml_problem(len(text), text)
        if problem is not None:
            raise ExportFailed(f"{name}: {problem}; nothing was written")
        doc = tomlkit.parse(text)
    except (UnicodeDecodeError, TOMLKitError) as exc:
        raise ExportFailed(f"{name}: not TOML this export can read ({exc}); nothing was written") from None
    current = doc.get(CODEX_INSTRUCTIONS_KEY)
    if current is not None and not str(current).startswith(RULES_BLOCK_HEADING):
        raise ExportFailed(
            f"{name}: {CODEX_INSTRUCTIONS_KEY} is set by you, not by this export; nothing was written. "
            "Move your text to AGENTS.md, or remove the key, to let the rules in"
        )
    if block is None:
        if current is None:
            return None
        del doc[CODEX_INSTRUCTIONS_KEY]
    else:
        if current is not None and str(current) == block:
            return None
        doc[CODEX_INSTRUCTIONS_KEY] = tomlkit.string(block, multiline=True)
    return tomlkit.dumps(doc).encode("utf-8")


def codex_trusts(project: str, home: Path, env: Mapping[str, str] | None = None) -> bool:
    """Whether Codex's own configuration marks `project` (or a folder
    above it) as trusted: only then does it read the project's
    `.codex/config.toml`."""

    try:
        data = toml_loads((codex_home(home, env) / "config.toml").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    projects = data.get("projects")
    if not isinstance(projects, dict):
        return False
    here = Path(os.path.realpath(project))
    for folder in (here, *here.parents):
        entry = projects.get(str(folder))
        if isinstance(entry, dict) and entry.get("trust_level") == "trusted":
            return True
    return False
