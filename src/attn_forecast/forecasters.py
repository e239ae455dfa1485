"""A forecaster is a forecaster: the model, an ensemble and every baseline share one protocol.

``fit(store)`` learns from each series' training part only; ``forecast(store, ends, taus)``
gives the windows' forecasts in levels (N, H), and with quantile levels ``taus`` their
quantiles (N, H, Q) where it has them. Evaluation, the backtest, the significance tests,
the intervals and the figures loop over forecasters and series, never naming one.

The baselines here need no torch (the model's forecaster lives in inference.py): naive (the
last value; intervals of a Gaussian random walk of the training part's steps), seasonal naive,
mean (each series' training mean), ridge (one global ridge on the scaled windows, as the model
sees them; with past covariates ``ridge_features`` too), and StatsForecast's ETS, Theta and
ARIMA fitted per series (stats.py). Their forecasts are computed once by the baselines stage
and saved as a :class:`ForecastSet`, the same file the model's training writes.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

import numpy as np

from .io import read_npz, write_npz
from .store import Store
from .windows import flat_inputs, gather, spread

RIDGE_WINDOWS = 200_000  # training windows the global ridge is fitted on, at most


@dataclass
class Forecast:
    point: np.ndarray                    # (N, H) levels; NaN rows: a series it could not fit
    quantiles: np.ndarray | None = None  # (N, H, Q) levels
    members: np.ndarray | None = None    # (M, N, H) an ensemble's members
    warnings: list[str] = field(default_factory=list)  # series it could not fit
    failed: np.ndarray | None = None     # (N,) bool: rows the fallback forecast (run)


class Forecaster(Protocol):
    name: str

    def fit(self, store: Store) -> list[str]: ...   # warnings

    def forecast(self, store: Store, ends: np.ndarray, taus: tuple = ()) -> Forecast: ...


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


class Combination:
    """The equal-weight mean of other forecasters' point forecasts (Comb: ARIMA, ETS, CES and
    Dynamic Optimized Theta; model+comb: the model and Comb)."""

    def __init__(self, name: str, members: list[str]) -> None:
        self.name, self.members = name, list(members)

    def combine(self, points: dict[str, np.ndarray]) -> np.ndarray:
        return np.mean([points[m] for m in self.members], axis=0)


class Mean:
    name = "mean"

    def fit(self, store):
        self.means = np.array([np.mean(store.train_levels(i)) for i in range(store.n_series)])
        return []

    def forecast(self, store, ends, taus=()):
        return Forecast(np.repeat(self.means[store.series_of(ends), None], store.horizon,
                                  axis=1))


class Ridge:
    """scikit-learn's Ridge on the scaled windows (the model's inputs), one global fit over
    every series' training windows (at most :data:`RIDGE_WINDOWS`, spread over them). Its
    quantiles are the per-step quantiles of its residuals on windows it was not fitted on:
    the calibration part, or else the last fifth of the training windows (from a fit on the
    rest)."""

    def __init__(self, alpha: float, features: bool = False) -> None:
        self.alpha, self.features = alpha, features
        self.name = "ridge_features" if features else "ridge"

    def _x(self, store: Store, ends: np.ndarray) -> np.ndarray:
        side = store.side if self.features else None
        return flat_inputs(np.asarray(store.z), side, ends, store.window, store.horizon,
                           store.n_time_features)

    def _fit(self, store: Store, ends: np.ndarray):
        from sklearn.linear_model import Ridge as SkRidge
        _, y = gather(np.asarray(store.z), ends, store.window, store.horizon)
        return SkRidge(alpha=self.alpha).fit(self._x(store, ends), y)

    def _predict(self, fit, store: Store, ends: np.ndarray) -> np.ndarray:
        out = [fit.predict(self._x(store, ends[i:i + 100_000])).reshape(-1, store.horizon)
               for i in range(0, len(ends), 100_000)]
        return np.concatenate(out) if out else np.zeros((0, store.horizon))

    def fit(self, store):
        train = spread(store.ends("train"), RIDGE_WINDOWS)
        self.model = self._fit(store, train)
        self.resid = None
        return []

    def _residuals(self, store: Store) -> np.ndarray:
        """(N, H) scaled residuals on windows the forecasting fit never saw."""
        cal = store.ends("cal")
        fit = self.model
        if not len(cal):
            train = spread(store.ends("train"), RIDGE_WINDOWS)
            head = max(1, len(train) * 4 // 5)
            fit, cal = self._fit(store, train[:head]), train[head:]
        _, y = gather(np.asarray(store.z), cal, store.window, store.horizon)
        return y - self._predict(fit, store, cal)

    def forecast(self, store, ends, taus=()):
        z = self._predict(self.model, store, ends)
        point = store.to_levels(z, ends)
        if not taus:
            return Forecast(point)
        if self.resid is None:
            self.resid = self._residuals(store)
        shift = np.quantile(self.resid, taus, axis=0).T if len(self.resid) else \
            np.zeros((store.horizon, len(taus)))                 # (H, Q)
        return Forecast(point, store.to_levels(z[..., None] + shift[None], ends))


# ---------------------------------------------------------------- saved forecasts
@dataclass
class ForecastSet:
    """Forecasts of several forecasters on the same windows: ``ends[part]`` (N,), and for
    every forecaster and part a Forecast (None: it could not be fitted at all)."""
    ends: dict[str, np.ndarray]
    forecasts: dict[str, dict[str, Forecast | None]]
    taus: tuple = ()
    warnings: list[str] = field(default_factory=list)
    record: dict = field(default_factory=dict)   # what they were made with

    def names(self) -> list[str]:
        return list(self.forecasts)


def _split(fc: Forecast, sizes: list[int]) -> list[Forecast]:
    """One forecast of consecutive groups of windows as one forecast per group."""
    cut = np.cumsum(sizes)[:-1]
    none = [None] * len(sizes)
    points = np.split(fc.point, cut)
    quants = np.split(fc.quantiles, cut) if fc.quantiles is not None else none
    members = np.split(fc.members, cut, axis=1) if fc.members is not None else none
    failed = np.split(fc.failed, cut) if fc.failed is not None else none
    return [Forecast(p, q, m, failed=f) for p, q, m, f in zip(points, quants, members, failed)]


def with_fallback(store: Store, fc: Forecast, ends: np.ndarray, fallback, name: str
                  ) -> tuple[Forecast, list[str]]:
    """``fc`` with the rows it could not forecast (any NaN) taken from ``fallback``'s forecast
    (its quantiles, if any, collapse onto that point: an interval it did not give scores as
    none), those rows marked in ``failed``; and the line that says so. A forecaster never
    scores better for a series it could not forecast: it is scored on the fallback's."""
    bad = ~np.isfinite(fc.point).all(axis=1)
    if not bad.any():
        return fc, []
    fb = fallback.forecast(store, ends[bad]).point
    point = fc.point.copy()
    point[bad] = fb
    quant = fc.quantiles
    if quant is not None:
        quant = quant.copy()
        quant[bad] = fb[..., None]
    series = np.unique(store.series_of(ends[bad]))
    line = (f"warning: {name} gave no forecast for {len(series)} of {store.n_series} series "
            f"(first: '{store.ids[series[0]]}'); {fallback.name}'s stands in for them "
            f"(counted in {name}.n_failed)")
    return Forecast(point, quant, fc.members, fc.warnings, bad), [line]


def run(store: Store, forecasters: list, parts: tuple[str, ...], taus: tuple = (),
        record: dict | None = None, fallback=None) -> ForecastSet:
    """Fit every forecaster on the training parts and forecast the windows of ``parts`` (all
    at once). A forecaster that fits no series at all is None (n/a); the series one could
    not forecast get ``fallback``'s forecasts (default: Naive2 without a season, i.e. naive;
    a competition passes Naive2 with its season, as the M4 rules did), counted and named."""
    ends = {part: store.ends(part) for part in parts}
    every = np.concatenate(list(ends.values()))
    out: dict[str, dict[str, Forecast | None]] = {}
    warnings: list[str] = []
    fallback = fallback if fallback is not None else Naive2(1)
    fitted = False
    for f in forecasters:
        if isinstance(f, Combination):
            out[f.name] = {part: combined(out, f, part) for part in ends}
            continue
        warnings += f.fit(store)
        fc = f.forecast(store, every, taus)
        warnings += fc.warnings
        if len(every) and np.isnan(fc.point).all():
            out[f.name] = dict.fromkeys(ends)
            continue
        if not np.isfinite(fc.point).all():
            if not fitted:
                fallback.fit(store)
                fitted = True
            fc, lines = with_fallback(store, fc, every, fallback, f.name)
            warnings += lines
        out[f.name] = dict(zip(ends, _split(fc, [len(e) for e in ends.values()])))
    return ForecastSet(ends, out, tuple(taus), warnings, dict(record or {}))


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


def save(path: str | Path, fs: ForecastSet) -> None:
    """One npz without pickles."""
    arrays = {f"ends:{p}": e for p, e in fs.ends.items()}
    for name, parts in fs.forecasts.items():
        for part, fc in parts.items():
            if fc is None:
                continue
            arrays[f"point:{name}:{part}"] = fc.point
            if fc.quantiles is not None:
                arrays[f"quantiles:{name}:{part}"] = fc.quantiles
            if fc.members is not None:
                arrays[f"members:{name}:{part}"] = fc.members
            if fc.failed is not None:
                arrays[f"failed:{name}:{part}"] = fc.failed
    write_npz(path, names=np.array(fs.names(), dtype=str),
              taus=np.asarray(fs.taus, dtype=np.float64),
              warnings=np.array(fs.warnings, dtype=str),
              record=np.array(json.dumps(fs.record, sort_keys=True)), **arrays)


def load(path: str | Path) -> ForecastSet:
    z = read_npz(path)
    parts = [k.split(":", 1)[1] for k in z if k.startswith("ends:")]
    forecasts = {}
    for name in (str(n) for n in z["names"]):
        forecasts[name] = {p: (Forecast(z[f"point:{name}:{p}"], z.get(f"quantiles:{name}:{p}"),
                                        z.get(f"members:{name}:{p}"),
                                        failed=z.get(f"failed:{name}:{p}"))
                               if f"point:{name}:{p}" in z else None) for p in parts}
    return ForecastSet({p: z[f"ends:{p}"] for p in parts}, forecasts,
                       tuple(float(t) for t in z["taus"]), [str(w) for w in z["warnings"]],
                       json.loads(str(z["record"])))


def merge(*sets: ForecastSet) -> ForecastSet:
    """Several sets on the same windows as one, in order (the model's first)."""
    first = sets[0]
    for s in sets[1:]:
        for part, e in first.ends.items():
            if part in s.ends and not np.array_equal(s.ends[part], e):
                raise ValueError(f"forecasts of different {part} windows")
    return ForecastSet(first.ends, {k: v for s in sets for k, v in s.forecasts.items()},
                       first.taus, [w for s in sets for w in s.warnings], first.record)
