"""`python -m tests.bench [--quick] [--write] [--only N,N]`

Prints the table; with `--write`, also rewrites the table in
`docs/benchmarks.md` (between its markers) and `tests/bench/results.json`. With `--only`
as well, the figures not run keep their rows from `results.json`, each
saying which run measured it.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import sys
import time
from pathlib import Path
from typing import Any

from .common import Figure, compile_bytecode

ROOT = Path(__file__).resolve().parent.parent.parent
#: The page whose table `--write` rewrites.
PAGE = ROOT / "docs" / "benchmarks.md"
RESULTS = Path(__file__).resolve().parent / "results.json"
BEGIN = "<!-- bench:begin (written by `python -m tests.bench --write`; edits inside are overwritten) -->"
END = "<!-- bench:end -->"

#: Figure number → (module, default rounds, quick rounds). Run in this order.
FIGURES: dict[int, tuple[str, int, int]] = {
    1: ("cold", 25, 7),  # figures 1, 2 and 8 come from one interleaved run
    3: ("warm", 3000, 800),
    4: ("busy", 4, 2),
    5: ("extract", 9, 3),
    6: ("store_scale", 5, 2),
    7: ("editor", 200, 60),
    9: ("claude_import", 3, 1),
    10: ("reflect_throughput", 3, 1),
    11: ("hooks", 15, 5),
    12: ("huge_reply", 5, 2),
    14: ("learn_gate", 4, 1),
    15: ("structured_probe", 3, 1),
    16: ("reply_budget", 2, 1),
    17: ("whole_run", 15, 5),
    18: ("agent_cli", 3, 1),
}
#: Figures that need a real part (the local model; cargo for 17) and run only when named in `--only`.
OPT_IN = {14, 16, 17, 18}
#: Figures that come along with another's run.
RIDES_WITH = {2: 1, 8: 1}
#: Row key → the issue's figure number; rows print in this order.
NUMBER = {
    "cold_vs_python": 1,
    "cold_miss_vs_python": 1,
    "cold_vs_pygls": 2,
    "warm_median": 3,
    "warm_p99": 3,
    "busy_p99": 4,
    "extract_mbps": 5,
    "pool_100k": 6,
    "mark_1k": 6,
    "editor_diagnostics": 7,
    "cold_peak_rss": 8,
    "claude_read_mbps": 9,
    "claude_reimport": 9,
    "claude_import_rss": 9,
    "claude_huge_rss": 9,
    "reflect_c1": 10,
    "reflect_c4": 10,
    "hook_session_end": 11,
    "hook_session_start": 11,
    "hook_storm": 11,
    "huge_reply_rss": 12,
    "learn_gate_filed": 14,
    "learn_gate_kept": 14,
    "probe_json_schema": 15,
    "probe_llama_cpp_python": 15,
    "probe_no_format": 15,
    "probe_anthropic": 15,
    "reply_budget_pass": 16,
    "run_paced_live_affect": 17,
    "run_paced_interventions": 17,
    "run_paced_cpu": 17,
    "run_back_cpu": 17,
    "agent_cli_claude": 18,
    "agent_cli_codex": 18,
}
ORDER = list(NUMBER)


def _fmt(value: float, unit: str) -> str:
    if unit in ("ms", "µs"):
        return f"{value:.3g} {unit}" if value < 10 else f"{value:.0f} {unit}"
    if unit == "MB/s":
        return f"{value:.1f} {unit}"
    if unit == "%":
        return f"{value:.0f}%"
    if unit == "MiB":
        return f"{value:.1f} {unit}"
    return f"{value:.3g} {unit}"


def table(figures: list[Figure]) -> str:
    rows = [
        "| # | figure | subject | baseline (same run, interleaved) | ratio | goal | met |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for f in figures:
        met = "—" if f.met is None else ("yes" if f.met else "**no**")
        notes = "".join(f"<br>{n}" for n in f.notes)
        rows.append(
            f"| {NUMBER.get(f.key, '?')} | {f.title}{notes} | {f.subject_label}: {_fmt(f.subject, f.unit)} "
            f"| {f.baseline_label}: {_fmt(f.baseline, f.unit)} | {f.ratio:.3g}× | {f.goal} | {met} |"
        )
    return "\n".join(rows)


def _command(args: argparse.Namespace) -> str:
    parts = ["python -m tests.bench"]
    if args.quick:
        parts.append("--quick")
    if args.only:
        parts.append(f"--only {args.only}")
    if args.write:
        parts.append("--write")
    return " ".join(parts)


def _machine() -> dict[str, object]:
    return {
        "cores": os.cpu_count(),
        "python": platform.python_version(),
        "implementation": platform.python_implementation(),
        "system": f"{platform.system()} {platform.machine()}",
        "load_avg_at_start": [round(x, 2) for x in os.getloadavg()],
    }


def write_page(text: str) -> None:
    readme = PAGE.read_text()
    if BEGIN not in readme or END not in readme:
        readme = readme.rstrip("\n") + "\n\n## Benchmarks\n\n" + BEGIN + "\n" + END + "\n"
    head, rest = readme.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    PAGE.write_text(head + BEGIN + "\n" + text.rstrip("\n") + "\n" + END + tail)


def _figure_from_json(entry: dict[str, Any]) -> Figure:
    return Figure(
        key=entry["key"], title=entry["title"], unit=entry["unit"],
        subject=entry["subject"]["value"], subject_label=entry["subject"]["label"],
        baseline=entry["baseline"]["value"], baseline_label=entry["baseline"]["label"],
        ratio=entry["ratio"], goal=entry["goal"], met=entry["met"], notes=entry["notes"], extra=entry["extra"],
    )


def _figure_json(f: Figure, run: dict[str, Any]) -> dict[str, Any]:
    return {
        "number": NUMBER.get(f.key),
        "key": f.key,
        "title": f.title,
        "unit": f.unit,
        "subject": {"label": f.subject_label, "value": round(f.subject, 4)},
        "baseline": {"label": f.baseline_label, "value": round(f.baseline, 4)},
        "ratio": round(f.ratio, 4),
        "goal": f.goal,
        "met": f.met,
        "notes": f.notes,
        "extra": {k: (round(v, 6) if isinstance(v, float) else v) for k, v in f.extra.items()},
        "run": run,
    }


def _kept_rows(measured: set[int]) -> list[tuple[Figure, dict[str, Any]]]:
    """The rows of `results.json` for figures this run did not measure,
    with the run that measured each (an entry written before runs were
    recorded per row is of the file's own run)."""
    if not RESULTS.exists():
        return []
    earlier = json.loads(RESULTS.read_text())
    whole = {"command": earlier.get("command"), "date": earlier.get("date")}
    return [
        (_figure_from_json(entry), entry.get("run") or whole)
        for entry in earlier.get("figures", [])
        if entry.get("number") not in measured and entry.get("key") in NUMBER
    ]


def _provenance(rows: list[tuple[Figure, dict[str, Any]]], run: dict[str, Any]) -> str:
    """A sentence per earlier run whose rows the table kept."""
    by_run: dict[tuple[str, str], set[int]] = {}
    for f, r in rows:
        if r != run:
            by_run.setdefault((str(r.get("command")), str(r.get("date"))), set()).add(NUMBER[f.key])
    return "".join(
        f" Figure{'s' if len(ns) > 1 else ''} {', '.join(map(str, sorted(ns)))}: kept from `{command}` on {date}."
        for (command, date), ns in sorted(by_run.items(), key=lambda item: min(item[1]))
    )


def write_results(args: argparse.Namespace, figures: list[Figure], wanted: set[int], machine: dict[str, object],
                  elapsed: float) -> None:
    """Rewrite the benchmarks page's table and `results.json`; with `--only`, the
    figures not run keep their earlier rows."""
    command = _command(args)
    date = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d")
    run = {"command": command, "date": date}
    rows = [(f, run) for f in figures]
    if args.only:
        measured = wanted | {n for n, rides in RIDES_WITH.items() if rides in wanted}
        rows += _kept_rows(measured)
    rows.sort(key=lambda row: ORDER.index(row[0].key) if row[0].key in ORDER else 99)
    text = table([f for f, _ in rows])
    section = (
        f"{text}\n\n"
        f"Produced by `{command}` on {date}: {machine['cores']} cores, {machine['system']}, "
        f"{machine['implementation']} {machine['python']}, load average {machine['load_avg_at_start'][0]} "
        f"at the start, {elapsed:.0f} s in all.{_provenance(rows, run)} Medians of interleaved repetitions; the "
        "project's bytecode compiled first, as an installed wheel has it. Machine-readable: "
        "[`tests/bench/results.json`](../tests/bench/results.json)."
    )
    write_page(section)
    results = {
        "command": command,
        "date": date,
        "machine": machine,
        "seconds": round(elapsed, 1),
        "figures": [_figure_json(f, r) for f, r in rows],
    }
    RESULTS.write_text(json.dumps(results, indent=2, ensure_ascii=False) + "\n")
    print(f"wrote {PAGE.relative_to(ROOT)} and {RESULTS.relative_to(ROOT)}", file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m tests.bench", description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="fewer repetitions: a rough table in about a minute")
    p.add_argument("--write", action="store_true", help="rewrite the table in docs/benchmarks.md and tests/bench/results.json")
    p.add_argument("--only", help=f"comma-separated figure numbers ({min(FIGURES)}-{max(FIGURES)}) to run; {sorted(OPT_IN)} need a real part (the local model, cargo) and run only when named")
    args = p.parse_args(argv)

    wanted = set(FIGURES) - OPT_IN
    if args.only:
        wanted = {RIDES_WITH.get(int(n), int(n)) for n in args.only.split(",")}
    machine = _machine()
    started = time.time()
    compile_bytecode()
    figures: list[Figure] = []
    import importlib

    for number, (module, rounds, quick_rounds) in FIGURES.items():
        if number not in wanted:
            continue
        mod = importlib.import_module(f"{__package__}.{module}")
        t = time.perf_counter()
        print(f"figure {number}: {module} …", file=sys.stderr, flush=True)
        got = mod.run(quick_rounds if args.quick else rounds)
        print(f"  done in {time.perf_counter() - t:.0f} s", file=sys.stderr, flush=True)
        figures.extend(got)
    figures.sort(key=lambda f: ORDER.index(f.key) if f.key in ORDER else 99)
    print(table(figures))
    if args.write:
        write_results(args, figures, wanted, machine, time.time() - started)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
