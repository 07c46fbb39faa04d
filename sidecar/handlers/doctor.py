"""`mecha/doctor`: the checks of this machine, its store and its model
configuration, each with what to do when it fails."""

from __future__ import annotations

from mecha.core.doctor import run_checks
from mecha.protocol import methods as m

from ..context import Context
from ..rpc import Cancel


def doctor(ctx: Context, p: m.Empty, cancel: Cancel) -> m.DoctorResult:
    checks = run_checks(ctx.root, ctx.model_options)
    return m.DoctorResult(checks=[m.DoctorCheck(name=c.name, ok=c.ok, detail=c.detail) for c in checks])
