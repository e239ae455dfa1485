"""A forecaster is a forecaster: the model, an ensemble and every baseline share one protocol.

``fit(store)`` learns from each series' training part only; ``forecast(store, ends, taus)``
gives the windows' forecasts in levels (N, H), and with quantile levels ``taus`` their
quantiles (N, H, Q) where it has them. Evaluation, the backtest, the significance tests, the
intervals and the figures loop over forecasters and series, never naming one.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from ..data.store import Store


@dataclass
class Forecast:
    point: np.ndarray                    # (N, H) levels; NaN rows: a series it could not fit
    quantiles: np.ndarray | None = None  # (N, H, Q) levels
    members: np.ndarray | None = None    # (M, N, H) an ensemble's members
    warnings: list[str] = field(default_factory=list)  # series it could not fit
    failed: np.ndarray | None = None     # (N,) bool: rows the fallback forecast (run)


class Forecaster(Protocol):
    """Fit on each series' training part (returns warnings); forecast windows in levels."""
    name: str

    def fit(self, store: Store) -> list[str]: ...

    def forecast(self, store: Store, ends: np.ndarray, taus: tuple = ()) -> Forecast: ...


def central_intervals(taus) -> list[tuple[int, int, int]]:
    """(lower index, upper index, nominal %) of each central interval the levels hold."""
    taus = [round(t, 6) for t in taus]
    out = []
    for i, t in enumerate(taus):
        j = taus.index(round(1 - t, 6)) if round(1 - t, 6) in taus else None
        if j is not None and t < 0.5:
            out.append((i, j, round(100 * (1 - 2 * t))))
    return out
