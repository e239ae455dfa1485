"""Checks of the params against the prepared data, before any stage after prepare works.

``params.yaml`` as a whole is validated by every stage when it starts (a bad value anywhere
stops the first stage that runs); some limits depend on the data (how far back a season may
reach), so the train and evaluate stages also run :func:`check` before training or scoring:
a bad ``evaluate`` value never costs a training run first.
"""
from __future__ import annotations

from .errors import UserInputError
from .params import Params
from .windows import Prepared


def check(p: Params, prep: Prepared) -> None:
    test = prep.split.ends("test")
    first_target = int(prep.first_target_level(test).min()) if len(test) else 0
    if p.evaluate.season > first_target:
        raise UserInputError(f"evaluate.season ({p.evaluate.season}) reaches before the start "
                             f"of the series; it must be <= {first_target} here")
