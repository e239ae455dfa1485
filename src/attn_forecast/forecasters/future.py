"""The future of one whole series by a baseline refitted on all of it (the forecast command's
and the service's blend members): the pipeline's own forecasters, fitted on every value known
now instead of a training part, with the same intervals (simple.py's classes on the series as
one whole history; StatsForecast's through statistical.py, as ``Stat`` runs it)."""
from __future__ import annotations

import numpy as np

from .names import FUTURE_MEMBERS, STAT_FORECASTERS
from .protocol import central_intervals
from .simple import Mean, Naive, Naive2, SeasonalNaive
from .statistical import FitFailed, forecast_one

SIMPLE = {"naive": lambda season: Naive(), "mean": lambda season: Mean(),
          "seasonal_naive": SeasonalNaive, "naive2": Naive2}


class WholeHistory:
    """One series whose every value is known, as the simple forecasters read a store: its
    training part is the whole history, and the one forecast's origin is its end."""
    n_series = 1

    def __init__(self, y: np.ndarray, steps: int) -> None:
        self.y, self.horizon = y, steps
        self.offsets = np.array([0, len(y)])
        self.cuts = type("Cuts", (), {"train_start": np.array([0])})
        self.ends = np.array([len(y)])

    def train_y(self, i: int) -> np.ndarray:
        return self.y

    def last(self, ends: np.ndarray) -> np.ndarray:
        return self.y[ends - 1]

    def series_of(self, ends: np.ndarray) -> np.ndarray:
        return np.zeros(len(ends), dtype=np.int64)


def future(name: str, season: int, y: np.ndarray, steps: int, levels: tuple = ()
           ) -> tuple[np.ndarray, np.ndarray | None]:
    """The next ``steps`` values after ``y`` by baseline ``name`` (steps,), and with levels
    ``levels`` their quantiles (steps, Q); raises
    :class:`~attn_forecast.forecasters.statistical.FitFailed` where it cannot run."""
    y = np.asarray(y, dtype=np.float64)
    if name in STAT_FORECASTERS:
        pairs = central_intervals(levels)
        out, bands = forecast_one(name, season, y, len(y), np.array([len(y)]), steps,
                                  tuple(pct for _, _, pct in pairs))
        if not levels:
            return out[0], None
        q = np.repeat(out[0][:, None], len(levels), axis=1)
        for lo, hi, pct in pairs:
            q[:, lo], q[:, hi] = bands[pct][0][0], bands[pct][1][0]
        return out[0], np.sort(q, axis=1)
    if name not in SIMPLE:
        raise ValueError(f"no future forecast for {name!r}: one of "
                         f"{', '.join(FUTURE_MEMBERS)}")
    if name == "seasonal_naive" and (season < 2 or len(y) < season):
        raise FitFailed(f"no season of {season} steps in {len(y)} values")
    whole = WholeHistory(y, steps)
    forecaster = SIMPLE[name](season)
    forecaster.fit(whole)
    fc = forecaster.forecast(whole, whole.ends, levels)
    return fc.point[0], (fc.quantiles[0] if levels else None)
