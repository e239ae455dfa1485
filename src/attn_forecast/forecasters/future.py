"""The future of one whole series by a baseline refitted on all of it (the forecast command's
blend members): the same methods as the pipeline's baselines, fitted on every value known
now instead of a training part, with the same intervals (simple.py's formulas, StatsForecast's
own)."""
from __future__ import annotations

import numpy as np

from .names import FUTURE_MEMBERS, STAT_FORECASTERS
from .protocol import central_intervals, gaussian
from .simple import _sd, seasonal_indices
from .statistical import FitFailed, forecast_one


def future(name: str, season: int, y: np.ndarray, steps: int, taus: tuple = ()
           ) -> tuple[np.ndarray, np.ndarray | None]:
    """The next ``steps`` values after ``y`` by baseline ``name`` (steps,), and with levels
    ``taus`` their quantiles (steps, Q); raises
    :class:`~attn_forecast.forecasters.statistical.FitFailed` where it cannot run."""
    y = np.asarray(y, dtype=np.float64)
    k = np.arange(1, steps + 1)
    if name in STAT_FORECASTERS:
        pairs = central_intervals(taus)
        out, bands = forecast_one(name, season, y, len(y), np.array([len(y)]), steps,
                                  tuple(pct for _, _, pct in pairs))
        if not taus:
            return out[0], None
        q = np.repeat(out[0][:, None], len(taus), axis=1)
        for lo, hi, pct in pairs:
            q[:, lo], q[:, hi] = bands[pct][0][0], bands[pct][1][0]
        return out[0], np.sort(q, axis=1)
    if name == "naive":
        point, sd = np.full(steps, y[-1]), _sd(y) * np.sqrt(k)
    elif name == "mean":
        point = np.full(steps, y.mean())
        sd = np.full(steps, _sd(y, 0) * np.sqrt(1 + 1 / len(y)))
    elif name == "seasonal_naive":
        if season < 2 or len(y) < season:
            raise FitFailed(f"no season of {season} steps in {len(y)} values")
        seasons = np.ceil(k / season).astype(np.int64)
        point = y[len(y) - 1 + k - season * seasons]
        sd = _sd(y, season) * np.sqrt(seasons)
    elif name == "naive2":
        si = seasonal_indices(y, season)
        t = len(y) - 1
        if si is None:      # no season: naive's
            point, sd = np.full(steps, y[-1]), _sd(y) * np.sqrt(k)
        else:               # naive's on the seasonally adjusted series, the season put back
            point = y[-1] / si[t % season] * si[(t + k) % season]
            sd = _sd(y / si[np.arange(len(y)) % season]) * np.sqrt(k) * si[(t + k) % season]
    else:
        raise ValueError(f"no future forecast for {name!r}: one of "
                         f"{', '.join(FUTURE_MEMBERS)}")
    return point, (gaussian(point[None], sd[None], taus)[0] if taus else None)
