"""The verbs that are a process of their own rather than a call on the
store: the two endpoints, the detached pass, the demo, the bundled model's
server, and the schema. They run outside the CLI's error wording (each
speaks for itself) and take no context."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import argparse


def serve(args: argparse.Namespace) -> int:
    from ..serve import serve_stdio

    _serve_store(args.learning_dir)
    return serve_stdio()


def lsp(args: argparse.Namespace) -> int:
    from ..lsp import serve_lsp

    _serve_store(args.learning_dir)
    return serve_lsp()


def _serve_store(learning_dir: str | None) -> None:
    """`--learning-dir` on an endpoint (`serve`, `lsp`): the store a client
    gets when its `initialize` names none. The endpoints resolve the store
    from the options, then `$MECHA_LEARNING_DIR`; the flag takes the
    variable's place for this process (resolved once, here), so a client's
    own `learningDir` still wins, as it does over the variable. Once
    ignored, silently serving the default store."""
    import os

    from mecha.core.store.layout import LEARNING_DIR_ENV, resolve_root

    if learning_dir is not None:
        os.environ[LEARNING_DIR_ENV] = resolve_root(learning_dir)


def run_pass(args: argparse.Namespace) -> int:
    from ..passrun import run_pass

    return run_pass(
        args.kind, args.job, args.domain, args.min, args.learning_dir, args.project, args.budget, args.proposal,
        learn_after=args.learn_after, retry=args.retry,
    )


def demo(args: argparse.Namespace) -> int:
    from ..demo import run_demo

    if not args.timeout > 0:
        print("mecha-sidecar: demo --timeout must be a positive number of seconds", file=sys.stderr)
        return 2
    return run_demo(keep=args.keep, timeout=args.timeout, local=args.local, accept_optional=args.accept_optional,
                    agent=args.agent)


def model(args: argparse.Namespace) -> int:
    from ..modelserve import DEFAULT_PORT, serve_model, use_agent

    if args.action == "use":
        return use_agent(args.api, as_json=bool(args.json))
    if args.api is not None:
        print(f"mecha-sidecar: model serve takes no agent ({args.api}); did you mean model use {args.api}?",
              file=sys.stderr)
        return 2
    port = DEFAULT_PORT if args.port is None else args.port
    if not 0 <= port <= 65535 or (args.threads is not None and args.threads < 1):
        print("mecha-sidecar: model serve: --port must be 0-65535 and --threads at least 1", file=sys.stderr)
        return 2
    return serve_model(port, args.threads)


def schema(args: argparse.Namespace) -> int:
    # By name: a type checker takes `mecha.protocol.schema` for the folder
    # of the checked-in schema beside the module.
    from importlib import import_module

    sys.stdout.write(import_module("mecha.protocol.schema").schema_json())
    return 0
