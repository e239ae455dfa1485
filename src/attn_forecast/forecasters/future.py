"""The future of one whole series by a baseline refitted on all of it (the forecast command's
blend members): the same methods as the pipeline's baselines, fitted on every value known
now instead of a training part."""
from __future__ import annotations

import numpy as np

from .simple import seasonal_indices
from .statistical import STAT_FORECASTERS, FitFailed, forecast_one

FUTURE_MEMBERS = ("naive", "seasonal_naive", "naive2", "mean", *STAT_FORECASTERS)


def future(name: str, season: int, y: np.ndarray, steps: int) -> np.ndarray:
    """The next ``steps`` values after ``y`` by baseline ``name``; raises
    :class:`~attn_forecast.forecasters.statistical.FitFailed` where it cannot run."""
    y = np.asarray(y, dtype=np.float64)
    k = np.arange(1, steps + 1)
    if name == "naive":
        return np.full(steps, y[-1])
    if name == "mean":
        return np.full(steps, y.mean())
    if name == "seasonal_naive":
        if season < 2 or len(y) < season:
            raise FitFailed(f"no season of {season} steps in {len(y)} values")
        return y[len(y) - 1 + k - season * np.ceil(k / season).astype(np.int64)]
    if name == "naive2":
        si = seasonal_indices(y, season)
        if si is None:
            return np.full(steps, y[-1])
        t = len(y) - 1
        return y[-1] / si[t % season] * si[(t + k) % season]
    if name in STAT_FORECASTERS:
        out, _ = forecast_one(name, season, y, len(y), np.array([len(y)]), steps)
        return out[0]
    raise ValueError(f"no future forecast for {name!r}: one of {', '.join(FUTURE_MEMBERS)}")
