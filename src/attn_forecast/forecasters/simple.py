"""The simple baselines, no torch: naive, seasonal naive, the M4 competition's Naive2, and
mean (each series' training mean), each with the standard error formulas' intervals
(Hyndman and Athanasopoulos, Forecasting: Principles and Practice, 5.5), normal with the
standard deviation of the training part's residuals, for step k of h:

- naive: sigma sqrt(k) (a random walk; sigma of the one-step changes);
- seasonal naive: sigma_m sqrt(ceil(k / m)) (sigma of the changes over one season m);
- Naive2: naive's on the seasonally adjusted series, seasonality put back (a series without a
  season: naive's);
- mean (the mean of every value before the origin): sigma sqrt(1 + 1 / T) (sigma of the
  training values, T the values averaged)."""
from __future__ import annotations

import numpy as np

from ..data.store import Store
from .protocol import Forecast, gaussian


def _sd(y: np.ndarray, lag: int = 1) -> float:
    """The standard deviation of a series' changes over ``lag`` steps (0 where too short)."""
    d = np.asarray(y, dtype=np.float64)
    d = d[lag:] - d[:-lag] if lag else d
    return float(np.std(d, ddof=1)) if len(d) > 1 else 0.0


class Naive:
    name = "naive"
    past_only = True     # each forecast reads only the values before its origin

    def fit(self, store: Store) -> list[str]:
        self.sigma = np.array([_sd(store.train_y(i)) for i in range(store.n_series)])
        return []

    def forecast(self, store, ends, levels=()):
        point = np.repeat(store.last(ends)[:, None], store.horizon, axis=1)
        if not levels:
            return Forecast(point)
        steps = np.sqrt(np.arange(1, store.horizon + 1))          # a random walk: sqrt(k)
        return Forecast(point, gaussian(point, self.sigma[store.series_of(ends)][:, None]
                                        * steps[None, :], levels))


class SeasonalNaive:
    """The value one season before each target, from the known past only: step k (1-based)
    takes v[T + k - season * ceil(k / season)], T = the last known row."""
    name = "seasonal_naive"
    past_only = True     # each forecast reads only the values before its origin

    def __init__(self, season: int) -> None:
        self.season = season

    def fit(self, store):
        self.sigma = np.array([_sd(store.train_y(i), self.season)
                               for i in range(store.n_series)])
        return []

    def forecast(self, store, ends, levels=()):
        k = np.arange(1, store.horizon + 1)
        seasons = np.ceil(k / self.season).astype(np.int64)
        rows = (ends - 1)[:, None] + k[None, :] - self.season * seasons[None, :]
        start = store.offsets[store.series_of(ends)][:, None]   # never before its series
        point = np.where(rows >= start, store.y[np.maximum(rows, start)], np.nan)
        if not levels:
            return Forecast(point)
        sd = self.sigma[store.series_of(ends)][:, None] * np.sqrt(seasons)[None, :]
        return Forecast(point, gaussian(point, sd, levels))


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
        self.si, self.sigma = [], np.zeros(store.n_series)
        for i in range(store.n_series):
            y = store.train_y(i)
            si = seasonal_indices(y, self.season)
            self.si.append(si)
            # the one-step changes of the seasonally adjusted training part
            self.sigma[i] = _sd(y if si is None else y / si[np.arange(len(y)) % self.season])
        return []

    def forecast(self, store, ends, levels=()):
        last = store.last(ends)
        sid = store.series_of(ends)
        k = np.arange(1, store.horizon + 1)
        # each target's seasonal index, and the last known value's (1 without a season)
        target, known = np.ones((len(ends), store.horizon)), np.ones(len(ends))
        for i in np.unique(sid):
            si = self.si[i]
            if si is None:
                continue
            r = np.flatnonzero(sid == i)
            t = ends[r] - 1 - store.offsets[i] - store.cuts.train_start[i]   # last known, own
            m = self.season
            target[r], known[r] = si[(t[:, None] + k) % m], si[t % m]
        adjusted = last / known                  # the last value of the adjusted series
        point = adjusted[:, None] * target
        if not levels:
            return Forecast(point)
        # naive's interval of the adjusted series, seasonality put back
        sd = self.sigma[sid][:, None] * np.sqrt(k)[None, :] * target
        return Forecast(point, gaussian(point, sd, levels))


def fallback_for(season: int) -> Naive2:
    """The forecaster that stands in wherever another cannot forecast (a series it cannot fit,
    an interval it cannot give), the one rule for every forecaster: Naive2 with the season
    (plain naive without one), as the M4 competition's rules had it."""
    return Naive2(season)


class Mean:
    """Each window's forecast is the mean of every value of its series before it (the
    historic average, as StatsForecast's ``HistoricAverage`` applies to a longer history); its
    intervals are normal with the training part's standard deviation times
    sqrt(1 + 1 / T), T the values it averages."""
    name = "mean"
    past_only = True     # each forecast reads only the values before its origin

    def fit(self, store):
        self.sigma = np.array([_sd(store.train_y(i), 0) for i in range(store.n_series)])
        return []

    def forecast(self, store, ends, levels=()):
        sid = store.series_of(ends)
        mean, count = np.empty(len(ends)), np.empty(len(ends))
        for i in np.unique(sid):          # each series' own running sums: no other's values
            r = sid == i
            s0 = int(store.offsets[i])
            a = s0 + int(store.cuts.train_start[i])
            run = np.r_[0.0, np.cumsum(np.asarray(store.y[s0:int(ends[r].max())],
                                                  dtype=np.float64))]
            # from the training part's start; an origin at (or before) it averages the
            # values before it from the series' start (never an empty mean)
            lo = np.where(ends[r] > a, a, s0)
            count[r] = ends[r] - lo
            mean[r] = (run[ends[r] - s0] - run[lo - s0]) / count[r]
        point = np.repeat(mean[:, None], store.horizon, axis=1)
        if not levels:
            return Forecast(point)
        sd = self.sigma[sid] * np.sqrt(1 + 1 / count)
        return Forecast(point, gaussian(point, np.repeat(sd[:, None], store.horizon, axis=1),
                                        levels))
