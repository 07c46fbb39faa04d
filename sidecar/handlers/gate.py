"""The gate's verdicts on a candidate change, from paired episodes or a
drawn selection. Pure: nothing here reads the store."""

from __future__ import annotations

from typing import Any

from mecha.core.errors import InvalidInput
from mecha.core.gate import candidate
from mecha.protocol import methods as m

from ..context import Context
from ..rpc import Cancel


def _holdout_in(value: int) -> int:
    if value < 1:
        raise InvalidInput("holdout_in: must be at least 1 (one episode in every N is held out)")
    return value


def judge(ctx: Context, p: m.JudgeParams, cancel: Cancel) -> Any:
    holdout_in = _holdout_in(p.holdout_in)
    if p.pairs is not None:
        if p.baseline is not None or p.candidate is not None:
            raise InvalidInput("pairs: give either `pairs` or `baseline` and `candidate`, not both")
        pairs = p.pairs
    elif p.baseline is not None and p.candidate is not None:
        pairs = candidate.pair_arms(p.baseline, p.candidate)
    else:
        raise InvalidInput("pairs: missing; give `pairs`, or both `baseline` and `candidate`")
    return candidate.judge(p.change_class, p.prediction, pairs, holdout_in)


def judge_drawn(ctx: Context, p: m.JudgeDrawnParams, cancel: Cancel) -> Any:
    return candidate.judge_drawn(p.change_class, p.prediction, p.selection, p.holdout)
