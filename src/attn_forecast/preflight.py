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


def season(p: Params, prep: Prepared) -> int:
    """``evaluate.season``, with ``auto`` read from what prepare found in the training part."""
    if p.evaluate.season == "auto":
        return int(prep.auto.get("season", {}).get("season", 0))
    return p.evaluate.season


def check(p: Params, prep: Prepared) -> None:
    if getattr(prep, "is_panel", False):  # the earliest test target of any series
        first, _ = prep.part_bounds("test")
        first_target = int((first - prep.offsets[:-1]).min())
    else:
        test = prep.split.ends("test")
        first_target = int(prep.first_target_level(test).min()) if len(test) else 0
    s = season(p, prep)
    if s > first_target:
        raise UserInputError(f"evaluate.season ({s}) reaches before the start "
                             f"of the series; it must be <= {first_target} here")
    W, H = prep.split.window, prep.split.horizon
    if p.model.instance_norm == "seasonal" and s and not (H <= s <= W):
        raise UserInputError(
            f"model.instance_norm seasonal needs a season between prepare.horizon ({H}) and "
            f"prepare.window ({W}), got evaluate.season {s}")


def model_settings(p: Params, prep: Prepared):
    """The ModelSettings of ``params.model`` on this prepared data (window, horizon, calendar
    features, season)."""
    from .model import ModelSettings
    s = season(p, prep)
    model = p.model.model_dump()
    if model["instance_norm"] == "seasonal" and not s:  # no season: the last value
        model["instance_norm"] = "last"
    model["quantiles"] = tuple(model["quantiles"])
    return ModelSettings(window=prep.split.window, horizon=prep.split.horizon,
                         n_time_features=prep.n_time_features, n_features=prep.n_features,
                         season=s, **model)
