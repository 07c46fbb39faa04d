"""Whether Claude Code already runs mecha's hooks through the plugin.

mecha reaches Claude Code two ways: the plugin (`plugins/mecha`, installed
with `claude plugin install`), whose hooks run `bin/mecha-hook`, and
`hooks install claude`, which writes the same three hooks into a
`settings.json`. With both, every session end fires two hooks and the
session is read twice; `hooks status` and `hooks install claude` must see the
plugin and say to keep one.

Claude Code records what it installed in `~/.claude/plugins/installed_plugins.json`
(checked with the real CLI, 2.1.x: `{"version": 2, "plugins": {"<plugin>@<marketplace>":
[{"scope": "user" | "project" | "local", "installPath": …, "projectPath"?: …}]}}`),
with a copy of the plugin under `installPath`, and whether it is switched on in
the scope's `settings.json` under `enabledPlugins["<plugin>@<marketplace>"]`.
A plugin is ours when its copy carries our hook script (`bin/mecha-hook`) or
its manifest is named `mecha`: a marketplace of another name may list it. One
switched off (`claude plugin disable`) runs no hook and is reported as such.
Reading is forgiving on purpose: a record this code does not understand is
passed by, never an error — the person asked about hooks, not plugins.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import msgspec

from mecha.core import shellwords
from mecha.core.environment.agents import CLAUDE
from mecha.core.visible import shown

#: The plugin's name, in its manifest and in the key Claude Code files it under.
PLUGIN_NAME = "mecha"
#: The hook script our plugin carries: present in every copy Claude Code made of it.
HOOK_SCRIPT = ("bin", "mecha-hook")
#: Where Claude Code lists installed plugins, under the home folder.
INSTALLED_FILE = (*CLAUDE.home, "plugins", "installed_plugins.json")


class ClaudePlugin(msgspec.Struct, frozen=True, kw_only=True):
    """One installation of our plugin, as Claude Code recorded it."""

    #: `<plugin>@<marketplace>`, as `claude plugin uninstall` takes it.
    key: str
    #: `user`, `project` or `local`.
    scope: str
    #: The copy Claude Code runs.
    path: str
    #: The project a `project` or `local` installation is for.
    project: str | None = None
    #: Switched on in its scope's settings (absent there: on, as installed).
    enabled: bool = True


def _read_json(path: Path) -> Any:
    """The JSON file at `path`, or `None` when it cannot be read as JSON:
    missing, broken, a FIFO (opened without blocking, as the confined
    writer opens a person's files), or nested past `MAX_SETTINGS_DEPTH`."""
    from mecha.core.environment.confined import read_file
    from mecha.core.errors import ExportFailed
    from mecha.core.nesting import MAX_SETTINGS_DEPTH, json_nesting

    try:
        raw = read_file(path)
    except ExportFailed:
        return None
    if raw is None or json_nesting(raw, MAX_SETTINGS_DEPTH) > MAX_SETTINGS_DEPTH:
        return None
    try:
        return json.loads(raw)
    except ValueError:
        return None


def is_our_plugin(key: str, install_path: Path) -> bool:
    """Whether the plugin filed under `key` with its copy at `install_path`
    is mecha's: its copy carries our hook script, or its manifest (or,
    with the copy gone, its key) names it `mecha`."""
    if install_path.joinpath(*HOOK_SCRIPT).is_file():
        return True
    manifest = _read_json(install_path / ".claude-plugin" / "plugin.json")
    if isinstance(manifest, dict):
        return manifest.get("name") == PLUGIN_NAME
    return key.split("@", 1)[0] == PLUGIN_NAME


def _enabled(key: str, settings: Path) -> bool:
    doc = _read_json(settings)
    enabled = doc.get("enabledPlugins") if isinstance(doc, dict) else None
    if isinstance(enabled, dict) and key in enabled:
        return enabled[key] is not False
    return True


def find_claude_plugins(home: Path) -> list[ClaudePlugin]:
    """Every installation of our plugin Claude Code has recorded under
    `home`, in the order it lists them."""
    doc = _read_json(home.joinpath(*INSTALLED_FILE))
    plugins = doc.get("plugins") if isinstance(doc, dict) else None
    if not isinstance(plugins, dict):
        return []
    found = []
    for key, records in plugins.items():
        for record in records if isinstance(records, list) else [records]:
            if not isinstance(record, dict) or not isinstance(record.get("installPath"), str):
                continue
            path = Path(record["installPath"])
            if not is_our_plugin(str(key), path):
                continue
            scope = record.get("scope") if isinstance(record.get("scope"), str) else "user"
            project = record.get("projectPath") if isinstance(record.get("projectPath"), str) else None
            if scope == "user" or project is None:
                settings = home.joinpath(*CLAUDE.settings_home)
            elif scope == "local":
                settings = Path(project).joinpath(*CLAUDE.settings_project).with_name("settings.local.json")
            else:
                settings = Path(project).joinpath(*CLAUDE.settings_project)
            found.append(ClaudePlugin(key=str(key), scope=str(scope), path=str(path), project=project,
                                      enabled=_enabled(str(key), settings)))
    return found


def double_reading(plugins: list[ClaudePlugin], hook_files: list[str]) -> str | None:
    """What to tell a person whose Claude Code sessions are read twice —
    an enabled plugin of ours and our hooks in the settings files
    `hook_files` — or `None` when only one of them reads them."""
    on = [p for p in plugins if p.enabled]
    if not on or not hook_files:
        return None
    plugin = on[0]
    # The key's marketplace part is named by whoever published it: quoted
    # word by word, and no command at all for a key that hides characters.
    uninstall = shellwords.command_or_none(CLAUDE.program, "plugin", "uninstall", plugin.key)
    keep = (f"run `{uninstall}`" if uninstall is not None else
            "uninstall the plugin in Claude Code (its name holds characters that hide, so no command to paste is offered)")
    return (
        f"Claude Code runs mecha's hooks twice: the plugin {shown(plugin.key)} ({plugin.scope}) and "
        f"the hooks in {', '.join(hook_files)}. Keep one: the plugin also gives /mecha:review, so "
        "`mecha-sidecar hooks uninstall claude` (with --scope project for a project's file) removes the other; "
        f"or keep these hooks and {keep}"
    )
