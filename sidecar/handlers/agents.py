"""The agents around the sidecar: their session hooks (status, install,
uninstall) and the rules files they read (export)."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from mecha.core.agents import export_targets as et
from mecha.core.agents import hooks as hk
from mecha.core.agents.plugin import ClaudePlugin, double_reading, find_claude_plugins
from mecha.core.agents.procedures import skill_program
from mecha.core.agents.share import commit_command, share
from mecha.core.agents.skills import install_skills, skills_folder, uninstall_skills
from mecha.core.environment.agents import CLAUDE, CODEX, NAMES
from mecha.core.environment.confined import rewrite_file
from mecha.core.environment.installed import find_agents
from mecha.core.environment.settings import config_path
from mecha.core.learning.scope import resolve_project
from mecha.core.providers import resolve_model_config
from mecha.core.providers.config import SOURCE_ENV
from mecha.core.store.layout import project_root
from mecha.protocol import methods as m

from ..context import Context
from ..rpc import Cancel


def hook_status(ctx: Context, p: m.HookStatusParams, cancel: Cancel) -> m.HookStatusResult:
    home, cwd = Path.home(), Path.cwd()
    files = []
    for agent in [p.agent] if p.agent else list(NAMES):
        for scope in [p.scope] if p.scope else list(hk.SCOPES):
            got = hk.installed(hk.read_settings(hk.settings_path(agent, scope, home=home, cwd=cwd)), agent)
            files.append(m.HookFile(agent=agent, scope=scope, path=got.path, exists=got.exists, events=got.events,
                                    missing=got.missing, stale_programs=got.stale_programs))
    plugins = find_claude_plugins(home) if p.agent in (None, CLAUDE.name) else []
    # Every scope's file counts for the overlap, whichever scope was asked about.
    hooked = _claude_hook_files(home, cwd) if plugins else []
    return m.HookStatusResult(files=files, store=str(ctx.root), log=hk.hook_log_tail(ctx.root),
                              plugins=[_plugin_info(x) for x in plugins], double_reading=double_reading(plugins, hooked))


def _claude_hook_files(home: Path, cwd: Path) -> list[str]:
    """The Claude Code settings files, of either scope, that hold our hooks."""
    out = []
    for scope in hk.SCOPES:
        path = hk.settings_path(CLAUDE.name, scope, home=home, cwd=cwd)
        try:
            got = hk.installed(hk.read_settings(path), CLAUDE.name)
        except Exception:  # a file we cannot read is reported by its own row
            continue
        if got.events and str(path) not in out:
            out.append(str(path))
    return out


def _plugin_info(plugin: ClaudePlugin) -> m.ClaudePluginInstall:
    return m.ClaudePluginInstall(key=plugin.key, scope=plugin.scope, path=plugin.path, enabled=plugin.enabled,
                                 project=plugin.project)


def install_hooks(ctx: Context, p: m.InstallHooksParams, cancel: Cancel) -> m.InstallHooksResult:
    path = hk.settings_path(p.agent, p.scope, home=Path.home(), cwd=Path.cwd())
    learning_dir = str(ctx.root) if p.pin_store else None
    program = hk.hook_program(sys.executable)

    def change(doc: dict[str, Any]) -> dict[str, Any]:
        return hk.without_ours(doc) if p.uninstall else hk.with_ours(doc, p.agent, program, learning_dir)

    within = hk.scope_root(p.scope, cwd=Path.cwd())
    changed = rewrite_file(path, lambda raw: hk.settings_after(path, raw, change), appends=False,
                           what="the hooks change", within=within).changed
    got = hk.installed(hk.read_settings(path), p.agent)
    installed = m.HookSettings(path=got.path, exists=got.exists, events=got.events, missing=got.missing,
                               stale_programs=got.stale_programs)
    action = "uninstall" if p.uninstall else "install"
    twice = None
    if p.agent == CLAUDE.name and not p.uninstall:
        twice = double_reading(find_claude_plugins(Path.home()), _claude_hook_files(Path.home(), Path.cwd()))
    skills = None
    if p.agent == CODEX.name:
        folder = skills_folder(p.scope, home=Path.home(), cwd=Path.cwd())
        inside = None if within is None else folder.parent.parent  # the repository's root, where `.agents` is
        done = (uninstall_skills(folder, within=inside) if p.uninstall
                else install_skills(folder, skill_program(learning_dir), within=inside))
        skills = m.CodexSkills(folder=done.folder, changed=done.changed, unchanged=done.unchanged, left=done.left)
    return m.InstallHooksResult(
        action=action, agent=p.agent, path=str(path), changed=changed, installed=installed,
        model=None if p.uninstall else _hooks_model(), double_reading=twice, skills=skills,
    )


def _hooks_model() -> str:
    """What `hooks install` says of the model its passes will use."""
    try:
        config = resolve_model_config(None, os.environ, config_path())
    except ValueError as exc:
        return f"the model configuration here is not usable: {exc}; `mecha-sidecar doctor` says more"
    return hk.hooks_model_note(config, SOURCE_ENV, [a.describe() for a in find_agents()] if config is None else [])


def export_rules(ctx: Context, p: m.ExportRulesParams, cancel: Cancel) -> m.ExportRulesResult:
    """Each file chosen (`export_targets.chosen_targets`) told its scope's
    rules. One file named (by `path` or `project`) fails as the method's
    error; of several, each failure is named in its `exports` entry and the
    rest are still written."""
    store = ctx.existing_store()
    project = None if p.project is None else resolve_project(p.project)
    path = None if p.path is None else Path(p.path)
    targets = et.chosen_targets(
        p.target, path, project, projects=et.store_projects(store), home=Path.home(), cwd=os.getcwd()
    )
    if path is not None or project is not None:
        [target] = targets
        outcome = et.export_to(store, target, check=p.check)
        results = [et.TargetResult(str(target.path), target.project, changed=outcome.changed, skipped=outcome.skipped)]
    else:
        results = et.export_all(store, targets, check=p.check)
    changed = any(r.changed for r in results)
    return m.ExportRulesResult(
        path=results[0].path if results else "", changed=changed, up_to_date=not changed, check=p.check,
        exports=[m.ExportResult(path=r.path, changed=r.changed, error=r.error, project=r.project, skipped=r.skipped) for r in results],
    )


def share_rules(ctx: Context, p: m.ShareRulesParams, cancel: Cancel) -> m.ShareRulesResult:
    """The chosen rules into the repository's tracked instruction files
    (`share.share`); nothing is committed."""
    repository = resolve_project(p.project) if p.project is not None else project_root(os.getcwd())
    done = share(ctx.store(), p.rules, repository)
    commit = commit_command(done) or ""
    return m.ShareRulesResult(
        repository=repository,
        rules=[m.SharedRuleInfo(id=r.id, text=r.text, domain=r.domain, project=r.project) for r in done.rules],
        files=[m.SharedFile(path=path, changed=changed) for path, changed in done.files], commit=commit,
    )
