"""How the CLI shows a method's result to a person. Every function takes the
result as the wire has it (plain builtins), so what a person reads is exactly
what a script would get with `--json`."""

from __future__ import annotations

from typing import Any


def builtins(value: Any) -> Any:
    from mecha.protocol.methods import to_builtins

    return to_builtins(value)


def block(r: dict[str, Any]) -> str:
    lines = []
    if r["block"] is None:
        lines.append(f"(no rules block: nothing active in {', '.join(r['domains'])})")
    else:
        lines.append(r["block"])
        lines.append("")
        lines.append(f"rules_hash {r['rules_hash']}  ·  learned rule ids: {', '.join(r['rule_ids']) or '(none)'}")
    for ob in r.get("over_budget", []):
        lines.append(f"warning: {ob['domain']} has {ob['active']} active learned rules, over the cap")
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
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def proposal_line(p: dict[str, Any]) -> str:
    before = sum(1 for r in p["rules_before"] if r.get("enabled", True) and not r.get("retired_at"))
    after = sum(1 for r in p["rules"] if r.get("enabled", True) and not r.get("retired_at"))
    return f"{p['id']}  {p['status']:<16} {p['domain']:<10} {before} -> {after} active rules  {p['created_at']}"


def proposals(r: dict[str, Any]) -> str:
    if not r["proposals"]:
        return "no proposals"
    return "\n".join(proposal_line(p) for p in r["proposals"])


def proposal_with_diff(r: dict[str, Any]) -> str:
    p = r["proposal"]
    lines = [proposal_line(p)]
    if p.get("evidence"):
        lines.append(f"evidence: {p['evidence']}")
    if p.get("reason"):
        lines.append(f"reason: {p['reason']}")
    lines.append("")
    lines.append(r["diff"] or "(no change to the rendered rules block)")
    return "\n".join(lines)


def job_line(j: dict[str, Any]) -> str:
    what = j["kind"] + (f" {j['domain']}" if j.get("domain") else "")
    text = f"job {j['id']} ({what}): {j['state']}"
    if j.get("outcome"):
        text += f" — {j['outcome']}"
    if j.get("proposal_id"):
        text += f" [proposal {j['proposal_id']}]"
    return text


def jobs(r: dict[str, Any]) -> str:
    if not r["jobs"]:
        return "no jobs"
    return "\n".join(job_line(j) for j in r["jobs"])


def tallies(r: dict[str, Any]) -> str:
    if not r["tallies"]:
        return "no validations recorded"
    lines = ["rule id                     obs  improved  regressed  attributed  last validated"]
    for rule_id, t in r["tallies"].items():
        lines.append(
            f"{rule_id:<27} {t['observations']:>3}  {t['improved']:>8}  {t['regressed']:>9}  "
            f"{t['attributed_regressions']:>10}  {t.get('last_validated') or '-'}"
        )
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
