"""What every verb shares: the context it runs in, how its result is
shown (`emit`: as a person reads it, or `--json`), and waiting on the pass
it started (`finish_job`), as the job file says how far it got.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import argparse
    from collections.abc import Callable


def context(args: argparse.Namespace) -> Any:
    from ..context import Context, InitializationOptions

    return Context.from_options(InitializationOptions(learning_dir=args.learning_dir))


def emit(args: argparse.Namespace, result: Any, human: Any) -> None:
    if args.json:
        import msgspec

        sys.stdout.write(msgspec.json.format(msgspec.json.encode(result).decode(), indent=2) + "\n")
    else:
        text = human(result) if callable(human) else human
        if text:
            # What a person reads is shown with every character that hides
            # (a bidi control, a zero-width joiner, an escape sequence)
            # spelled out: a rule under review once read as one instruction
            # and carried another. `--json` carries the text as it is.
            from mecha.core.visible import shown

            text = shown(text, keep_layout=True)
            sys.stdout.write(text if text.endswith("\n") else text + "\n")


def mining_context(ctx: Any, args: argparse.Namespace, *profiles: str) -> Any:
    """The context with the voices the command line adds: the profiles of
    the formats being read, `$MECHA_HARNESS_VOICES`, then `--voices`. A pass
    started from it is handed the same (`Context.pass_environment`)."""
    return ctx.with_voices(*profiles, extra=args.voices)


def policy(args: argparse.Namespace, source: str) -> Any:
    from mecha.core.environment.trust import policy_with

    return policy_with(source, args.trust_tool, args.distrust_tool)


def reflect_what_was_queued(
    ctx: Any, args: argparse.Namespace, summary: dict[str, Any], render: Callable[[dict[str, Any]], str], queued: bool
) -> int:
    """After `reflect --sessions` queued sessions (`queued`: any): the
    reflect pass the inbox needs (`inbox.pass_after_queue`), as every door
    that hands sessions over starts it."""
    from mecha.core.store.inbox import pass_after_queue

    from .. import humane
    from ..jobs import start_pass

    after = pass_after_queue(ctx.store(), queued, lambda: start_pass(ctx, "reflect"))
    if after.job is not None:
        summary["job"] = humane.builtins(after.job)
    return report_queued(ctx, args, summary, render)


def report_queued(ctx: Any, args: argparse.Namespace, summary: dict[str, Any], render: Callable[[dict[str, Any]], str]) -> int:
    """A verb's summary of what it queued (`import`, `reflect --sessions`),
    and the reflect pass it started, if it did (waited on unless
    `--no-wait`)."""
    if summary["job"] is None:
        emit(args, summary, render)
        return 0
    if not args.json:
        sys.stdout.write(render(summary) + "\n")
    return finish_job(ctx, args, summary["job"], args.no_wait, quiet_start=True, extra=summary)


def finish_job(
    ctx: Any,
    args: argparse.Namespace,
    job: dict[str, Any],
    no_wait: bool,
    quiet_start: bool = False,
    extra: dict[str, Any] | None = None,
) -> int:
    import time

    from mecha.core.store.jobs import read_job

    from .. import humane

    if no_wait:
        emit(args, {**(extra or {}), "job": job}, lambda r: f"started {humane.job_line(r['job'])}")
        return 0
    from ..progress import ProgressView

    if not args.json and not quiet_start:
        sys.stdout.write(f"started {humane.job_line(job)}; waiting for it to finish…\n")
        sys.stdout.flush()
    # How far it has got, as the pass writes it: on stdout for a person, on
    # stderr beside --json (stdout is then the result alone).
    view = ProgressView(sys.stderr if args.json else sys.stdout)
    final = read_job(ctx.root, job["id"])
    try:
        while final.state == "running":
            view.show(final)
            time.sleep(0.1)
            final = read_job(ctx.root, job["id"])
    except KeyboardInterrupt:
        view.clear()
        print(humane.stopped_waiting(humane.builtins(final)), file=sys.stderr)
        return 130
    view.clear()
    result = humane.builtins(final)
    emit(args, {**(extra or {}), "job": result}, lambda r: humane.job_line(r["job"]))
    return 0 if final.state == "done" else 1
