"""How the CLI shows the results of the verbs that reach the agents' own
files: the hooks (`hooks install|uninstall|status`), the export of rules
into the agents' instructions, and a share with the team. As in `humane`,
each function takes the result as the wire has it."""

from __future__ import annotations

from typing import Any

from mecha.core.environment.agents import CLAUDE, CODEX


def _hook_events(inst: dict[str, Any]) -> str:
    return ", ".join(inst["events"]) if inst["events"] else "none"


def _skills_lines(r: dict[str, Any]) -> list[str]:
    """What became of Codex's review skills, for `hooks install|uninstall codex`."""
    skills = r.get("skills")
    if not skills:
        return []
    folder = skills["folder"]
    if r["action"] == "uninstall":
        lines = [f"{folder}: mecha's review skills {'removed (' + ', '.join(skills['changed']) + ')' if skills['changed'] else 'were not there'}"]
    else:
        names = skills["changed"] + skills["unchanged"]
        state = "installed" if skills["changed"] else "already installed, unchanged"
        lines = [f"{folder}: review skills {state} ({', '.join(names) or 'none'}): in Codex, type "
                 "$mecha-review to go through waiting proposals, $mecha-why to ask where a rule came from"] if names else []
    lines += [f"  {why}" for why in skills["left"]]
    return lines


def hooks_changed(r: dict[str, Any]) -> str:
    inst = r["installed"]
    if r["action"] == "uninstall":
        return "\n".join([f"{r['path']}: mecha's hooks {'removed' if r['changed'] else 'were not there'}; everything else left as it was",
                          *_skills_lines(r)])
    lines = [f"{r['path']}: {'hooks installed' if r['changed'] else 'already installed, unchanged'} "
             f"({_hook_events(inst)})"]
    command = next(iter(inst["events"].values()), None)
    if command:
        lines.append(f"  runs: {command}")
    lines.append("  at session end (and before a compaction): the session's new interventions are queued and a "
                 "reflect pass starts in the background, then a learn pass once enough lessons wait; at session "
                 "start: one line when proposals await review")
    if r.get("double_reading"):
        lines.append(f"  warning: {r['double_reading']}")
    elif r["agent"] == CLAUDE.name:
        lines.append("  to review them inside Claude Code (/mecha:review), install the plugin instead of these hooks: "
                     "docs/agents.md, \"Review inside the agent\"")
    if r.get("model"):
        lines.append(f"  model: {r['model']}")
    lines.append("  `mecha-sidecar hooks status` shows what the hooks last did")
    if r["agent"] == CODEX.name:
        lines.append("  Codex runs a new hook only once you trust it: open /hooks in Codex (Codex 0.169 runs hooks by "
                     "default; an older one needs [features] hooks = true, or codex_hooks, in ~/.codex/config.toml)")
    lines += _skills_lines(r)
    return "\n".join(lines)


def hooks_status(r: dict[str, Any]) -> str:
    lines = []
    for row in r["files"]:
        where = f"{row['agent']} ({row['scope']}) {row['path']}"
        if not row["events"]:
            lines.append(f"{where}: not installed" + ("" if row["exists"] else " (no such file)"))
            continue
        lines.append(f"{where}: {_hook_events(row)}" + (f"; missing {', '.join(row['missing'])}" if row["missing"] else ""))
        for program in row["stale_programs"]:
            lines.append(f"  {program} is not there any more: run `hooks install {row['agent']}` again")
    for plugin in r.get("plugins") or []:
        where = f" for {plugin['project']}" if plugin.get("project") else ""
        state = "enabled" if plugin["enabled"] else "disabled: its hooks do not run"
        lines.append(f"claude plugin {plugin['key']} ({plugin['scope']}{where}) {plugin['path']}: {state}")
    if r.get("double_reading"):
        lines.append(f"warning: {r['double_reading']}")
    lines.append(f"store: {r['store']}")
    if r["log"]:
        lines.append("last hook runs:")
        lines.extend(f"  {line}" for line in r["log"])
    else:
        lines.append("no hook has run yet")
    return "\n".join(lines)


def exports(r: dict[str, Any]) -> str:
    """An export's files, one line each, with the scope each was told."""
    lines = []
    for e in r["exports"]:
        if e.get("error"):
            continue  # said on stderr, by name
        where = "global rules" if e.get("project") is None else f"project {e['project']}"
        if e.get("skipped"):
            lines.append(f"{e['path']}: {e['skipped']}")
            continue
        if r.get("check"):
            state = "out of date (run export without --check)" if e["changed"] else "up to date"
        else:
            state = "rules section written" if e["changed"] else "already up to date"
        lines.append(f"{e['path']}: {state} ({where})")
    return "\n".join(lines)


def shared(r: dict[str, Any]) -> str:
    """A share: the rules, the files that now hold them, and the commit to
    make after a look."""
    lines = [f"shared {len(r['rules'])} rule(s) with the team of {r['repository']}:"]
    lines += [f"  {x['id']}: {x['text']}" for x in r["rules"]]
    for f in r["files"]:
        lines.append(f"  {f['path']}: {'written' if f['changed'] else 'already holds them'}")
    if any(f["changed"] for f in r["files"]) and r["commit"]:
        lines.append(f"review the change (git diff), then commit it: {r['commit']}")
    elif any(f["changed"] for f in r["files"]):
        lines.append("review the change (git diff), then commit it with git (the repository's path holds "
                     "characters that hide, so no command to paste is offered)")
    lines.append("the rules stay yours too, with their sources and record")
    return "\n".join(lines)
