"""Combinations: the equal-weight mean of other forecasters' point forecasts (Comb: ARIMA,
ETS, CES and Dynamic Optimized Theta; model+comb: the model and Comb), with the series any
member could not forecast marked as the combination's."""
from __future__ import annotations

import numpy as np

from .protocol import Forecast
from .saved import ForecastSet


class Combination:
    """The equal-weight mean of other forecasters' point forecasts (Comb: ARIMA, ETS, CES and
    Dynamic Optimized Theta; model+comb: the model and Comb)."""

    def __init__(self, name: str, members: list[str]) -> None:
        self.name, self.members = name, list(members)

    def combine(self, points: dict[str, np.ndarray]) -> np.ndarray:
        return np.mean([points[m] for m in self.members], axis=0)


def combined(forecasts: dict, c: Combination, part: str) -> Forecast | None:
    """The combination's forecast of one part, from its members' (None if one is missing)."""
    got = {m: forecasts.get(m, {}).get(part) for m in c.members}
    if any(f is None for f in got.values()):
        return None
    failed = [f.failed for f in got.values() if f.failed is not None]
    return Forecast(c.combine({m: f.point for m, f in got.items()}),
                    failed=np.any(failed, axis=0) if failed else None)


def with_combinations(fs: ForecastSet, names: list[str]) -> ForecastSet:
    """``fs`` with each of ``names`` (``model+comb``: forecasters joined by +) added, the
    equal-weight mean of those forecasters."""
    for name in names:
        c = Combination(name, name.split("+"))
        fs.forecasts[name] = {part: combined(fs.forecasts, c, part) for part in fs.ends}
    return fs
