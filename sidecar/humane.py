"""How the CLI shows a method's result to a person. Every function takes the
result as the wire has it (plain builtins), so what a person reads is exactly
what a script would get with `--json`."""

from __future__ import annotations

from typing import Any

from mecha.core.environment.agents import CLAUDE
from mecha.core.learning.asks import ask_subject
from mecha.core.sessions.evidence import cut_at_word
from mecha.core.shellwords import mecha_or_none
from mecha.core.visible import shown


def builtins(value: Any) -> Any:
    from mecha.protocol.methods import to_builtins

    return to_builtins(value)


def block(r: dict[str, Any]) -> str:
    lines = []
    if r["block"] is None:
        lines.append(f"(no rules block: nothing active in {', '.join(r['domains'])}; rules arrive when you accept a "
                     "proposal: `mecha-sidecar proposals`)")
    else:
        lines.append(r["block"])
        lines.append("")
        lines.append(f"rules_hash {r['rules_hash']}  ·  learned rule ids: {', '.join(r['rule_ids']) or '(none)'}")
    if r.get("project"):
        lines.append(f"scopes: global, then project {r['project']}")
    for ob in r.get("over_budget", []):
        where = f" in project {ob['project']}" if ob.get("project") else ""
        lines.append(f"warning: {ob['domain']}{where} has {ob['active']} active learned rules, over the cap")
    return "\n".join(lines)


def interventions(r: dict[str, Any]) -> str:
    found = r["interventions"]
    if not found:
        return "no interventions: nobody stepped in"
    lines = [f"{len(found)} intervention(s):"]
    for i in found:
        lines.append(f"  [{i['trigger']}] at message {i['at']}: {i['text']}")
        if i.get("context"):
            lines.append(f"      while: {_one_line(i['context'], 100)}")
        if i.get("aftermath"):
            lines.append(f"      then:  {_one_line(i['aftermath'], 100)}")
    return "\n".join(lines)


def _one_line(text: str, limit: int) -> str:
    return cut_at_word(" ".join(text.split()), limit)


def scope_in_words(p: dict[str, Any]) -> str:
    """Which rules a proposal is for, in words: `global`, `project <root>`,
    a promotion's projects, a project's proposal a person accepted as global."""
    if p.get("promoted_from"):
        return f"global (promotion: live in {len(p['promoted_from'])} projects)"
    if p.get("project") is None:
        return "global"
    return f"project {p['project']}" + (", accepted as global" if p.get("accepted_as_global") else "")


def proposal_line(p: dict[str, Any]) -> str:
    before = sum(1 for r in p["rules_before"] if r.get("enabled", True) and not r.get("retired_at"))
    after = sum(1 for r in p["rules"] if r.get("enabled", True) and not r.get("retired_at"))
    return (
        f"{p['id']}  {p['status']:<16} {p['domain']:<10} {before} -> {after} active rules  {p['created_at']}  "
        + scope_in_words(p)
    )


def _left_out(p: dict[str, Any], verb: str) -> list[str]:
    """The changes a person left out (or named as wrong), one line each,
    with how many lessons were marked rejected for it."""
    lines = []
    for x in p.get("left_out") or []:
        rejected = len(x.get("rejected") or [])
        lessons = f"; {rejected} lesson(s) marked rejected" if rejected else ""
        lines.append(f"  {verb} {x['number']} ({x['change']}): “{_one_line(x['text'], 80)}”{lessons}")
    return lines


def rejected(r: dict[str, Any]) -> str:
    """A rejection's result: the proposal, the changes named as wrong,
    where the other lessons went, and the learn pass started for them."""
    p = r["proposal"]
    marked = {i for x in p.get("left_out") or [] for i in x.get("rejected") or []}
    back = len([i for i in p["reflexion_ids"] if i not in marked])
    lines = ["rejected " + proposal_line(p), *_left_out(p, "wrong:")]
    if p["reflexion_ids"]:
        lines.append(f"{back} lesson(s) back in the pool; a learn pass will not file this proposal again")
    if r.get("next_pass"):
        lines.append(r["next_pass"]["message"])
    return "\n".join(lines)


def new_asks(p: dict[str, Any]) -> list[str]:
    """The ask permissions a proposal's live rules carry that its rules
    before did not: what accepting it adds to the agent's settings."""
    before = {a for r in p.get("rules_before") or [] for a in r.get("ask") or []}
    live = [r for r in p.get("rules") or [] if r.get("enabled", True) and not r.get("retired_at")]
    return list(dict.fromkeys(a for r in live for a in r.get("ask") or [] if a not in before))


def gone_asks(p: dict[str, Any]) -> list[str]:
    """The ask permissions the rules before a proposal carried that its
    live rules do not: what accepting it takes out of the settings."""
    live = {a for r in p.get("rules") or [] if r.get("enabled", True) and not r.get("retired_at") for a in r.get("ask") or []}
    return list(dict.fromkeys(a for r in p.get("rules_before") or [] for a in r.get("ask") or [] if a not in live))


def accepted(r: dict[str, Any]) -> str:
    """An accept's result: the proposal, what was left out, what became of
    each instructions file it is exported to (or that none is, and how to),
    then each promotion it filed, and the learn pass started for the
    lessons still waiting in its scope."""
    p = r["proposal"]
    lines = ["accepted " + proposal_line(p), *_left_out(p, "left out")]
    for rule in p["rules"]:
        edited = rule.get("edited")
        if edited and edited.get("proposal_id") == p["id"]:
            lines.append(f"  in your words: “{_one_line(rule['text'], 80)}” (proposed: “{_one_line(edited['was'], 60)}”)")
            lines += [f"  not asking before `{a}`: your words no longer name `{ask_subject(a)}`"
                      for a in edited.get("ask_dropped") or []]
    if p.get("reflexion_ids"):
        used = len(r.get("used_lessons") or [])
        back = len(p["reflexion_ids"]) - used - len(
            {i for x in p.get("left_out") or [] for i in x.get("rejected") or []} - set(r.get("used_lessons") or [])
        )
        lines.append(f"  {used} lesson(s) used" + (f"; {back} back in the pool for a later pass" if back else ""))
    exports = r.get("exports") or []
    permissions = r.get("permissions") or []
    where = ", ".join(e["path"] for e in permissions if not e.get("error")) or "Claude Code's settings.json: permissions.ask"
    lines += [f"  also asks before `{a}` ({where})" for a in new_asks(p)]
    lines += [f"  no longer asks before `{a}` ({where})" for a in gone_asks(p)]
    lines += [f"  {e['path']}: the ask permissions not written — {e['error']}" for e in permissions if e.get("error")]
    written = [e["path"] for e in exports if e.get("changed") and not e.get("error")]
    if written:
        lines.append("  the rules are now in " + ", ".join(written))
    for e in exports:
        if e.get("error"):
            lines.append(f"  {e['path']}: not written — {e['error']}")
        elif e.get("skipped"):
            lines.append(f"  {e['path']}: not written — {e['skipped']}")
    if exports and not written and not any(e.get("error") or e.get("skipped") for e in exports):
        lines.append("  " + ", ".join(e["path"] for e in exports) + ": already up to date")
    if not exports:
        project = ("--project", p["project"]) if p.get("project") and not p.get("accepted_as_global") else ()
        export = mecha_or_none("export", CLAUDE.name, *project) or f"mecha-sidecar export {CLAUDE.name} --project PROJECT"
        lines.append(
            "  no agent's instructions changed: neither Claude Code nor Codex is connected (their plugin or hooks). "
            f"`{export}` writes the rules where Claude Code reads yours now; "
            "`mecha-sidecar hooks install claude` (or the plugin) does it on every accept"
            f" ([export] in {_config_file()} changes where)"
        )
    for q in r.get("promotions") or []:
        lesson = "; ".join(x["text"] for x in q["rules"][len(q["rules_before"]):])
        lines.append(
            f"filed promotion {q['id']}: “{_one_line(lesson, 80)}” is live in {len(q['promoted_from'])} projects; "
            f"`mecha-sidecar proposals accept {q['id']}` makes it global"
        )
    if r.get("next_pass"):
        lines.append(r["next_pass"]["message"])
    return "\n".join(lines)


def proposals(r: dict[str, Any]) -> str:
    if not r["proposals"]:
        return ("no proposals: a learn pass files one once enough lessons wait (`mecha-sidecar learn behavior`; "
                "with the hooks installed it starts by itself)")
    return "\n".join(proposal_line(p) for p in r["proposals"])


def proposal_with_diff(r: dict[str, Any]) -> str:
    p = r["proposal"]
    lines = [proposal_line(p), f"scope: {scope_in_words(p)}"]
    lines.extend(f"  from project {where}" for where in p.get("promoted_from") or [])
    lines.extend(
        f"rewrites {rule_id}: you corrected it again after it went live (`mecha-sidecar why {rule_id}` shows its record)"
        for rule_id in p.get("rewrite_of") or []
    )
    if p.get("evidence"):
        lines.append(f"evidence: {p['evidence']}")
    if p.get("reason"):
        lines.append(f"reason: {p['reason']}")
    lines.append("")
    lines.append(r["diff"] or "(no change to the rendered rules block)")
    lines += [f"also ask before `{a}` (on accept: Claude Code's permissions.ask, and Codex's command rules when Codex is connected)" for a in new_asks(p)]
    changes = r.get("changes") or []
    if changes:
        lines += ["", "why each change (leave one out: proposals accept ID --without N, or --wrong N when its lesson is "
                   "wrong; in your words: --edit N \"TEXT\"):"]
        for c in changes:
            where = c.get("scope") or "global"
            number = f"{c['number']}. " if c.get("number") else ""
            lines.append(f"  {number}{c['change']} ({where if where == 'global' else 'project ' + where}): {c['text']}")
            lines.extend(f"    replaces: {old}" for old in c.get("replaces", []))
            if c["change"] == "retired":
                lines.append(f"    reason: {c.get('reason') or '(none given)'}")
            if c["change"] == "removed":
                if c.get("absorbed_by"):
                    lines.append(f"    absorbed by: {c['absorbed_by']}")
                elif c.get("contradicted_by"):
                    lines.append(f"    contradicted by: {source_line(c['contradicted_by'])}")
            else:
                lines.extend(f"    from: {source_line(s)}" for s in c.get("sources", []))
                if not c.get("sources"):
                    lines.append("    from: (no recorded sources)")
            if c.get("measured"):
                lines.append(f"    measured: {c['measured']}")
    verdict = r.get("verdict") or {}
    lines += ["", f"verdict: {verdict.get('measured') or 'not measured yet'}"]
    if p.get("left_out"):
        verb = "left out" if p["status"] == "accepted" else "wrong:"
        lines += ["", "changes a person left out or named wrong:", *_left_out(p, verb)]
    refusals = [x for x in p.get("refusals") or [] if x.get("kind") != "drop"]
    kept = [x for x in p.get("refusals") or [] if x.get("kind") == "drop"]
    if refusals:
        lines += ["", f"the learn gate refused {len(refusals)}:"]
        lines.extend(f"  “{_one_line(x['rule'], 80)}”: {x['reason']}" for x in refusals)
    if kept:
        lines += ["", f"the learn gate kept {len(kept)} live rule(s) the model left out:"]
        lines.extend(f"  “{_one_line(x['rule'], 80)}”: {x['reason']}" for x in kept)
    return "\n".join(lines)


def source_line(s: dict[str, Any]) -> str:
    """One source of a rule as the wire has it, in the words every reader
    shares (`sources.describe_source`)."""
    import msgspec

    from mecha.core.learning.sources import RuleSource, describe_source

    return describe_source(msgspec.convert(s, RuleSource))


def rule_sources(r: dict[str, Any]) -> str:
    rule = r["rule"]
    state = "retired" if rule.get("retired_at") else ("active" if rule.get("enabled", True) else "disabled")
    who = "learned" if r["kind"] == "learned" else "your own"
    lines = [f"{rule.get('id')}  {r['domain']}  {who}, {state}", f"  {rule['text']}", ""]
    if r.get("note"):
        lines.append(r["note"])
    for s in r.get("sources", []):
        lines.append(f"from {source_line(s)}")
        if s.get("lesson"):
            lines.append(f"  lesson: {_one_line(s['lesson'], 200)}")
    lines += ["", f"measured: {r.get('measured') or 'not measured yet'}"]
    if r.get("record"):
        lines += ["", *record_lines(r["record"])]
    return "\n".join(lines)


def record_lines(rec: dict[str, Any]) -> list[str]:
    """A rule's record: its one line, each correction that came back with
    its session and where, and the proposal that answers it."""
    lines = [f"record: {rec['line']}"]
    for x in rec.get("corrected_again", []):
        where = f"session {x['session_id']}"
        if x.get("file"):
            where += f", {x['file']}:{x['line']}" if x.get("line") is not None else f", {x['file']}"
        when = (x.get("said_at") or x["created_at"])[:10]  # the correction's own day (`Repeat.corrected_at`)
        lines.append(f"  corrected again {when}: “{_one_line(x['text'], 160)}” ({where})")
    if rec.get("rewrite_proposal"):
        lines.append(f"  a rewrite waits: mecha-sidecar proposals show {rec['rewrite_proposal']}")
    if rec.get("retire_proposal"):
        lines.append(f"  offered for retirement: mecha-sidecar proposals show {rec['retire_proposal']}")
    return lines


def rules(r: dict[str, Any]) -> str:
    """Every live learned rule with its record, by scope."""
    if not r["rules"]:
        return "no learned rule is live yet: `mecha-sidecar proposals` lists what waits for your review"
    lines: list[str] = []
    for x in r["rules"]:
        scope = "global" if x["scope"] == "global" else f"project {x['scope']}"
        lines += [f"{x['rule'].get('id')}  {x['domain']}  {scope}", f"  {_one_line(x['rule']['text'], 300)}"]
        lines += [f"  {line}" for line in record_lines(x["record"])]
        lines.append("")
    return "\n".join(lines).rstrip()


def lessons(r: dict[str, Any]) -> str:
    """The stored lessons: the counts, then each lesson with where it came
    from and, when a learn pass may not use it, why."""
    c = r["counts"]
    if not c["total"]:
        return (
            "no lessons match: a reflect pass writes them from sessions "
            "(mecha-sidecar import claude, or the end of a run with the hooks installed)"
        )
    lines = [
        f"{c['total']} lesson(s): {c['learnable']} learnable, {c['untrusted']} untrusted, {c['derived']} derived; "
        f"{c['processed']} already used by a proposal"
        + (f"; {c['set_aside']} seen, no rule yet" if c.get("set_aside") else "")
        + (f"; {c['unusable']} whose text is no lesson" if c["unusable"] else "")
    ]
    if len(r["lessons"]) < c["total"]:
        lines.append(f"(the newest {len(r['lessons'])} shown; --limit shows more)")
    for x in r["lessons"]:
        scope = "global" if x["scope"] == "global" else f"project {x['scope']}"
        state = "learnable" if x["learnable"] else "not learnable"
        used = ", used" if x["processed"] else ""
        lines += ["", f"{x['id']}  {x['domain']}  {scope}  {x['trigger']}  {x['origin']}  {state}{used}"]
        lines.append(f"  lesson: {_one_line(x['lesson'], 300)}")
        lines.append(f"  person: {_one_line(x['intervention'], 200)}")
        if x.get("not_learnable_because"):
            lines.append(f"  not learnable: {x['not_learnable_because']}")
        if x.get("unusable_because"):
            lines.append(f"  no lesson: {x['unusable_because']}")
        if x.get("rejected"):
            lines.append(f"  rejected by you: {x['rejected']}")
        if x.get("set_aside"):
            lines.append(f"  {x['set_aside']}")
        found = x.get("found") or {}
        where = f"{found['file']}:{found['line']}" if found.get("file") and found.get("line") else f"session {x['session_id']}"
        lines.append(f"  from {where}")
    if c["learnable"]:
        lines += ["", "a learn pass proposes rules from the learnable ones: mecha-sidecar learn DOMAIN"]
    return "\n".join(lines)


def held(r: dict[str, Any]) -> str:
    """The corrections held back: each with its id, your words, the call
    that held it back (whole) and why; then whether you may vouch for it."""
    if not r["count"]:
        return "no correction is held back: every imported one read clean, or was asked again"
    lines = [f"{r['count']} correction(s) held back as untrusted; you may vouch for {r['vouchable']} of them "
             "(the reader could not see through what held them back; a stranger's text never is)"]
    if len(r["held"]) < r["count"]:
        lines.append(f"(the newest {len(r['held'])} shown)")
    for h in r["held"]:
        where = f"{h['file']}:{h['line']}" if h.get("file") and h.get("line") else f"session {h['session_id']}"
        lines += ["", f"{h['id']}  {h['trigger']}  {where}"]
        lines.append(f"  you said: {_one_line(h['words'], 300)}")
        if h.get("call"):
            lines.append(f"  held back by: {h.get('tool') or 'a call'} `{h['call']}`")
        lines.append(f"  why: {h['why']}")
        if h.get("clean_now"):
            lines.append("  reads clean now: not asked again yet (the trust changed outside `trust add`)")
        elif h.get("stranger"):
            lines.append("  never vouchable — a stranger's text was in context: " + "; ".join(h["stranger"]))
        elif h.get("unchecked"):
            lines.append(f"  cannot be vouched for: {h['unchecked']}")
        else:
            lines.append(f"  vouch: mecha-sidecar lessons vouch {h['id']}")
    return "\n".join(lines)


def vouched(r: dict[str, Any]) -> str:
    """What a vouch did."""
    lines = []
    if r["queued"]:
        lines.append(f"vouched for {len(r['queued'])} correction(s): each is queued for reflection once, and the "
                     "decision is in the store's history (no program is trusted by it): " + ", ".join(r["queued"]))
    if r["already"]:
        lines.append("vouched for before (asked once): " + ", ".join(r["already"]))
    lines += r["refused"]
    if r.get("job"):
        lines.append(job_line(r["job"]))
    return "\n".join(lines) or "nothing vouched for"


def job_line(j: dict[str, Any], *, full: bool = True) -> str:
    """One pass: what it is, its state, how far it has got while it runs,
    and its outcome — whole (`full`), or its first line only where many
    jobs are listed (a failure's help can run to twenty lines)."""
    what = j["kind"] + (f" {j['domain']}" if j.get("domain") else "")
    text = f"job {j['id']} ({what}): {j['state']}"
    if j["state"] == "running":
        import msgspec

        from mecha.core.store.jobs import Job, progress_text

        text += f" — {progress_text(msgspec.convert(j, Job))}"
    outcome = j.get("outcome") or ""
    if outcome:
        first, _, rest = outcome.strip().partition("\n")
        text += f" — {outcome if full else first}"
        if rest.strip() and not full:
            text += " (the whole of it: mecha-sidecar jobs --json)"
    if j.get("proposal_id"):
        import re

        # A pass over several scopes may file one proposal each: the job
        # keeps the first, its outcome names them all.
        filed = set(re.findall(r"\bproposal (\d{8}T\d{6}-[0-9a-f]{8})\b", outcome)) | {j["proposal_id"]}
        if len(filed) > 1:
            text += f" [{len(filed)} proposals] — review them: mecha-sidecar proposals list --status pending"
        else:
            text += f" [proposal {j['proposal_id']}] — review it: mecha-sidecar proposals show {j['proposal_id']}"
    return text


def stopped_waiting(j: dict[str, Any]) -> str:
    """What Ctrl-C while a verb waits on a pass says: the wait stopped, the
    pass did not, and how to watch or stop it."""
    pid = f" (pid {j['pid']})" if j.get("pid") else ""
    stop = f"`kill {j['pid']}` stops it" if j.get("pid") else "`mecha-sidecar jobs --json` gives its pid to stop it"
    return (
        f"\nstopped waiting; the {j['kind']} pass {j['id']}{pid} goes on in the background. "
        f"`mecha-sidecar jobs` shows how far it has got; {stop} (what it finished is kept)."
    )


def jobs(r: dict[str, Any]) -> str:
    lines = [job_line(j, full=False) for j in r["jobs"]] or ["no jobs: a pass starts with `import`, `learn` or an agent's hook"]
    if r.get("waiting") or r.get("set_aside"):
        lines.append(f"inbox: {r.get('waiting', 0)} waiting, {r.get('set_aside', 0)} set aside (mecha-sidecar inbox list)")
    if any(j["state"] == "running" for j in r["jobs"]):
        lines.append("a running pass goes on by itself; `kill PID` stops one (its pid: mecha-sidecar jobs --json)")
    return "\n".join(lines)


def set_aside_line(e: dict[str, Any]) -> str:
    return f"{e['id']}  {e.get('label') or '(unreadable entry)'}: {e['reason']}"


def inbox(r: dict[str, Any]) -> str:
    lines = [f"{r['waiting']} entr{'y' if r['waiting'] == 1 else 'ies'} waiting for a reflect pass"]
    if r["set_aside"]:
        lines.append(f"{len(r['set_aside'])} set aside (retry: mecha-sidecar inbox retry ID; drop: mecha-sidecar inbox drop ID):")
        lines += ["  " + set_aside_line(e) for e in r["set_aside"]]
    if r.get("withheld"):
        lines.append(f"{r['withheld']} intervention(s) recorded without a model call because they read untrusted "
                     "(`mecha-sidecar trust add …` asks them again once they read clean; newest first):")
        for w in r["withheld_recent"]:
            where = f"{w['file']}:{w['line']}" if w.get("file") and w.get("line") else w["session_id"]
            lines.append(f"  “{w['words']}” ({where}) — held back by {w['why']}")
            if w.get("now"):
                lines.append(f"    {w['now']}")
    return "\n".join(lines)


def tallies(r: dict[str, Any]) -> str:
    if not r["tallies"]:
        return "no validations recorded: `mecha-sidecar validate behavior --dry-run` plans one and says its cost"
    lines = ["rule id                     obs  improved  regressed  attributed  last validated"]
    for rule_id, t in r["tallies"].items():
        lines.append(
            f"{rule_id:<27} {t['observations']:>3}  {t['improved']:>8}  {t['regressed']:>9}  "
            f"{t['attributed_regressions']:>10}  {t.get('last_validated') or '-'}"
        )
    measured = r.get("measured") or {}
    if measured:
        lines.append("")
        lines.extend(f"{rule_id}: {text}" for rule_id, text in measured.items())
    return "\n".join(lines)


def validate_plan(r: dict[str, Any]) -> str:
    """A validate pass's plan: the cost first, then each probe."""
    plan = r["plan"]
    what = f"proposal {plan['proposal_id']} against the live rules" if plan.get("proposal_id") else f"the live {plan['domain']} rules"
    probes = plan["probes"]
    lines = [
        f"validate {plan['domain']}: {len(probes)} probe(s) of {what}, at most {plan['calls']} model call(s) "
        f"({plan['calls_per_probe']} per probe; budget {plan['budget']})"
    ]
    if plan.get("cost"):
        lines.append(f"  cost: {plan['cost']}")
    for p in probes:
        where = f"{p['file']}:{p['line']}" if p.get("file") and p.get("line") else (p.get("file") or f"session {p['session_id']}")
        again = " (measured before under this block)" if p.get("measured_before") else ""
        lines.append(f"  [{p['trigger']}] {p['reflexion_id']}: “{_one_line(p['text'], 100)}” ({where}){again}")
    kinds = plan.get("skipped_kinds", {})
    for reason, n in plan.get("skipped", {}).items():
        by_kind = ", ".join(f"{k} {c}" for k, c in kinds.get(reason, {}).items())
        lines.append(f"  not probed: {n} — {reason}" + (f" ({by_kind})" if by_kind else ""))
    if r.get("reason"):
        lines.append(r["reason"])
    return "\n".join(lines)


def doctor(r: dict[str, Any]) -> str:
    return "\n".join(f"{'ok ' if c['ok'] else 'BAD'}  {c['name']:<12} {c['detail']}" for c in r["checks"])


def reflect_summary(s: dict[str, Any]) -> str:
    parts = [f"{len(s['queued'])} session(s) queued for reflection"]
    if s["already_mined"]:
        parts.append(f"{len(s['already_mined'])} already mined ({', '.join(s['already_mined'])})")
    if s["no_interventions"]:
        parts.append(f"{len(s['no_interventions'])} with no interventions")
    return "; ".join(parts)


#: How many skipped files an import names before it only counts the rest.
SKIPS_NAMED = 5


def skipped_files(skipped: list[str]) -> list[str]:
    """The files an import skipped, as warning lines: the first
    `SKIPS_NAMED` by name and why, then how many more, so the summary that
    follows is not buried."""
    lines = [f"skipped {why}" for why in skipped[:SKIPS_NAMED]]
    if len(skipped) > SKIPS_NAMED:
        lines.append(f"skipped {len(skipped) - SKIPS_NAMED} more file(s) that are not sessions (`--json` lists every one)")
    return lines


def import_summary(s: dict[str, Any]) -> str:
    lines = []
    for session in s["sessions"]:
        counts = ", ".join(f"{k} {v}" for k, v in session["counts"].items()) or "nothing new"
        held = "; a last refusal waits for the person's reason" if session.get("held") else ""
        bad = f"; {session['skipped_lines']} line(s) skipped" if session.get("skipped_lines") else ""
        lines.append(f"  {session['session_id']}: {session['new']} new of {session['found']} ({counts}){held}{bad}")
        for h in session.get("held_back", []):
            lines.append(f"    untrusted ({h['interventions']}): {blame_line(h['blame'])}")
    head = f"{s['source']}: {len(s['sessions'])} session(s) read from {s['root']}"
    extras = []
    if s["unchanged"]:
        extras.append(f"{s['unchanged']} unchanged since the last import")
    if s["filtered"]:
        extras.append(f"{s['filtered']} left out by --since/--project")
    if s["skipped"]:
        extras.append(f"{len(s['skipped'])} skipped (not sessions)")
    if s.get("skipped_lines"):
        extras.append(f"{s['skipped_lines']} line(s) skipped as not records (named above)")
    if extras:
        head += "; " + "; ".join(extras)
    if s.get("dry_run"):
        would = sum(1 for session in s["sessions"] if session["new"])
        tail = f"dry run: {would} session(s) would be queued, nothing was"
    else:
        tail = f"{len(s['queued'])} queued for reflection" if s["queued"] else "nothing new to queue"
        if s.get("in_flight") and s.get("job"):
            tail += (
                f"; reflect pass {s['job']['id']} is still at work on what was queued before"
                f" ({_progress_of(s['job'])}) — waiting for it (Ctrl-C stops the waiting, not the pass)"
            )
    lines += [f"merged: {m}" for m in s.get("merged", [])]
    lines += _unknown_lines(s.get("unknown", []))
    return "\n".join([head, *lines, tail])


def _unknown_lines(unknown: list[dict[str, Any]]) -> list[str]:
    """What held interventions back, as the import's summary offers it:
    the trust entries that free some, then the reader's doubt, then a
    stranger's text."""
    lines: list[str] = []
    trustable = [u for u in unknown if u.get("command")]
    doubted = [u for u in unknown if not u.get("command") and not u.get("stranger")]
    strangers = [u for u in unknown if not u.get("command") and u.get("stranger") and not u.get("trusts")]
    remotes = [u for u in unknown if not u.get("command") and u.get("stranger") and u.get("trusts")]
    if trustable:
        lines.append("not in the table of local programs (trusting one alone frees exactly this many interventions; trust it if it is yours):")
        for u in trustable:
            lines.append(f"  {u['entry']}: frees {u['interventions']} in {u['sessions']} session(s) — {u['command']}")
            if u.get("trusts"):
                lines.append(f"    it trusts {u['trusts']}")
    if doubted:
        lines.append("held back by what the reader could not see through (no trust entry is offered; "
                     "once imported, `mecha-sidecar lessons --held` lets you vouch for the corrections):")
        for u in doubted:
            lines.append(f"  {u['entry']}: {u['interventions']} in {u['sessions']} session(s) — {u['refused']}")
    if remotes:
        lines.append("held back by a remote's replies too (its own entry is not offered: "
                     "trusting it alone frees none of them, another call holds the same corrections back):")
        for u in remotes:
            lines.append(f"  {u['entry']}: {u['interventions']} in {u['sessions']} session(s) — it would trust {u['trusts']}")
    if strangers:
        lines.append("held back by a stranger's text (never learnable, whatever is trusted):")
        for u in strangers:
            lines.append(f"  {u['entry']}: {u['interventions']} in {u['sessions']} session(s) — {u['refused']}")
    return lines


def _progress_of(j: dict[str, Any]) -> str:
    import msgspec

    from mecha.core.store.jobs import Job, progress_text

    return progress_text(msgspec.convert(j, Job))


def blame_line(b: dict[str, Any]) -> str:
    """A call that made a session untrusted, as one line (`reader.Blame.describe`)."""
    import msgspec

    from mecha.core.sessions.reader import Blame

    return msgspec.convert(b, Blame).describe()


def trust(r: dict[str, Any]) -> str:
    entries = ", ".join(r["entries"]) or "nothing beyond the built-in table"
    lines = [f"{r['path']}: trusts {entries}"]
    for why in r.get("ignored") or ():
        entry = why.split(": ", 1)[0]
        remove = mecha_or_none("trust", "remove", entry)
        how = f"`{remove}` takes it out" if remove else "take it out of the file by hand"
        lines.append(f"  ignored, no reader honours it: {shown(why)} — {how}")
    again = r.get("reclassified")
    if again is not None:
        if again["asked_again"]:
            lines.append(f"now clean: {again['asked_again']} held-back intervention(s) from {again['sessions']} session(s), "
                         "queued to be asked")
        else:
            lines.append(f"no held-back intervention reads clean yet ({again['sessions']} session(s) read again)")
        if again.get("already_asked"):
            lines.append(f"asked again before (answered, or waiting to be): {again['already_asked']}, not asked twice")
        if again["still_untrusted"]:
            lines.append(f"still untrusted: {again['still_untrusted']} (`mecha-sidecar inbox` says what holds each back)")
        for why in again["unreadable"]:
            lines.append(f"  not read again: {why}")
    if r.get("job"):
        lines.append(f"reflect pass {r['job']['id']} started: `mecha-sidecar jobs` shows it")
    return "\n".join(lines)


def _config_file() -> str:
    """The config file this process reads, as a person would type it."""
    from pathlib import Path

    from mecha.core.environment.settings import config_path

    path = config_path()
    try:
        return "~/" + str(path.relative_to(Path.home()))
    except ValueError:
        return str(path)
