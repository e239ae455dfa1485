"""The simple baselines, no torch: naive (the last value; intervals of a Gaussian random walk
of the training part's steps), seasonal naive, the M4 competition's Naive2, and mean (each
series' training mean)."""
from __future__ import annotations

import numpy as np

from ..data.store import Store
from .protocol import Forecast


class Naive:
    name = "naive"

    def fit(self, store: Store) -> list[str]:
        self.sigma = np.array([np.std(np.diff(store.train_levels(i)), ddof=1)
                               if len(store.train_levels(i)) > 2 else 0.0
                               for i in range(store.n_series)])
        return []

    def forecast(self, store, ends, taus=()):
        point = np.repeat(store.last(ends)[:, None], store.horizon, axis=1)
        if not taus:
            return Forecast(point)
        from scipy.special import ndtri  # the standard normal's quantile function
        steps = np.sqrt(np.arange(1, store.horizon + 1))          # a random walk: sqrt(h)
        spread_ = self.sigma[store.series_of(ends)][:, None, None] * steps[None, :, None]
        return Forecast(point, point[..., None] + spread_ * ndtri(np.asarray(taus)))


class SeasonalNaive:
    """The value one season before each target, from the known past only: step k (1-based)
    takes v[T + k - season * ceil(k / season)], T = the last known row."""
    name = "seasonal_naive"

    def __init__(self, season: int) -> None:
        self.season = season

    def fit(self, store):
        return []

    def forecast(self, store, ends, taus=()):
        k = np.arange(1, store.horizon + 1)
        back = self.season * np.ceil(k / self.season).astype(np.int64)
        rows = (ends - 1)[:, None] + k[None, :] - back[None, :]
        start = store.offsets[store.series_of(ends)][:, None]   # never before its series
        return Forecast(np.where(rows >= start, store.levels[np.maximum(rows, start)], np.nan))


def seasonal_indices(y: np.ndarray, m: int) -> np.ndarray | None:
    """The multiplicative seasonal indices (m,) of ``y`` by classical decomposition (a
    centered moving average, 2 x m for an even m), or None where the M4 competition's 90 %
    autocorrelation test at lag m finds no season (or there are fewer than 3 m values)."""
    y = np.asarray(y, dtype=np.float64)
    n = len(y)
    if m < 2 or n < 3 * m or (y <= 0).any():
        return None
    d = y - y.mean()
    acf = np.array([np.sum(d[k:] * d[:n - k]) for k in range(1, m + 1)]) / np.sum(d * d)
    limit = 1.645 / np.sqrt(n) * np.sqrt(1 + 2 * np.sum(acf[:m - 1] ** 2))
    if not abs(acf[m - 1]) > limit:
        return None
    w = np.r_[0.5, np.ones(m - 1), 0.5] / m if m % 2 == 0 else np.ones(m) / m
    trend = np.convolve(y, w, mode="valid")
    start = len(w) // 2
    ratio = y[start:start + len(trend)] / trend
    pos = np.arange(start, start + len(trend)) % m
    si = np.array([ratio[pos == k].mean() for k in range(m)])
    return si / si.mean()


class Naive2:
    """The M4 competition's Naive2: the last value of the seasonally adjusted series (its
    multiplicative seasonal indices from the training part, where the 90 % test finds a
    season), seasonality put back; plain naive otherwise. OWA is relative to it."""
    name = "naive2"

    def __init__(self, season: int) -> None:
        self.season = season

    def fit(self, store):
        self.si = [seasonal_indices(store.train_levels(i), self.season)
                   for i in range(store.n_series)]
        return []

    def forecast(self, store, ends, taus=()):
        point = np.repeat(store.last(ends)[:, None], store.horizon, axis=1)
        sid = store.series_of(ends)
        k = np.arange(1, store.horizon + 1)
        for i in np.unique(sid):
            si = self.si[i]
            if si is None:
                continue
            r = np.flatnonzero(sid == i)
            t = ends[r] - 1 - store.offsets[i] - store.cuts.train_start[i]   # last known, own
            m = self.season
            point[r] = (store.last(ends[r]) / si[t % m])[:, None] * si[(t[:, None] + k) % m]
        return Forecast(point)


class Mean:
    name = "mean"

    def fit(self, store):
        self.means = np.array([np.mean(store.train_levels(i)) for i in range(store.n_series)])
        return []

    def forecast(self, store, ends, taus=()):
        return Forecast(np.repeat(self.means[store.series_of(ends), None], store.horizon,
                                  axis=1))
