"""Statistical forecasters from StatsForecast, fitted per series (in parallel over series).

Each is fitted once on a series' training part (its own units), then forecasts every window
of that series from the known history before it without refitting, as the model does:
``forward(y[:origin], h)`` applies the fitted parameters to the longer history. This is what
StatsForecast's own ``cross_validation(refit=False)`` does, and a test checks the two agree.
The Theta methods and ARIMA, whose ``forward`` re-estimates the decomposition and drift (or
restarts the filter) on all the history it is given, read the last :data:`HISTORY` values of
it: on an 8,000-point daily series Theta took 72 s for 1,600 origins with the whole history.
(One pass of a fitted filter would give every one-step forecast at once, but StatsForecast's
fitted values are ``y - residual``: each origin's forecast would pass through its own target
in the last bits.)

- ``ets``: ``AutoETS`` (the error, trend and season types chosen by AICc; additive or
  multiplicative), seasonal with period ``season`` when it is > 1.
- ``theta``: the standard Theta method, deseasonalized with that period.
- ``arima``: ``AutoARIMA``; seasonal only for periods up to :data:`MAX_ARIMA_SEASON` (a
  seasonal fit with a long period did not finish on a long series), with seasonal
  orders P, Q of at most 1 (StatsForecast's default search goes to 2): the seasonal terms were
  most of the M3 benchmark's time, for a validation sMAPE barely better (the figures:
  bench/README.md, "Figures the code's choices rest on"); its order search reads the last
  :data:`FIT_HISTORY` values of the training part.
- ``ses``: simple exponential smoothing (``AutoETS`` with model ANN); ``dot``: the Dynamic
  Optimized Theta method; ``ces``: ``AutoCES``, complex exponential smoothing.
- ``m4_ses``, ``m4_holt``, ``m4_damped``: the M4 competition's benchmarks, SES, Holt's linear
  trend and the damped trend (``AutoETS`` ANN, AAN, AAdN) on the seasonally adjusted series
  (the multiplicative indices of Naive2: where the 90 % test finds a season), seasonality put
  back into the forecasts and their intervals; their mean is the M4 competition's Comb.

StatsForecast is imported only when one of these is asked for.
"""
from __future__ import annotations

import os

import numpy as np

from ..engine import Engine

from .names import STAT_FORECASTERS  # noqa: F401  (re-exported: statistical names)
from .names import STATISTICAL
from .protocol import Forecast, central_intervals, nested

# StatsForecast compiles its models with numba on first use (AutoCES: about a minute); with
# this set the compiled code is cached on disk, so later processes and pool workers reuse it
os.environ.setdefault("NIXTLA_NUMBA_CACHE", "1")

M4 = tuple(n for n, spec in STATISTICAL.items() if spec["adjusted"])
MAX_ARIMA_SEASON = STATISTICAL["arima"]["season"]
# forward() of the Theta methods re-estimates the decomposition and drift on the history it is
# given, and ARIMA's runs its filter afresh over it, at a cost that grows with its length:
# each origin's forecast reads the last this many values (ETS's filter starts from its fitted
# initial states: it reads the whole history)
HISTORY = {"theta": 1000, "dot": 1000, "arima": 1000}
# AutoARIMA's order search grows with the series: fitted on the last this many values of the
# training part (the time it saves: bench/README.md, "Figures the code's choices rest on"; the
# accuracy on the real series' validation parts beside it)
FIT_HISTORY = {"arima": 1000}
MIN_ORIGINS = 200   # a series' origins are split among processes in parts of at least this many


class FitFailed(Exception):
    """A statistical model could not be fitted or applied (series too short, constant...)."""


def _models():
    """StatsForecast's models module. Its helper library (utilsforecast) imports
    dask.dataframe whenever Dask is installed, as it is for ``evaluate.engine: dask``: 0.8 s of
    every stage that fits one of these, for frames this project never hands it (the engine
    sends arrays). The import is made with that module marked absent, and the mark removed
    after, so Dask itself imports as usual."""
    import sys
    if "statsforecast.models" not in sys.modules and "dask.dataframe" not in sys.modules:
        sys.modules["dask.dataframe"] = None       # `import dask.dataframe` fails at once
        try:
            import statsforecast.models
        finally:
            del sys.modules["dask.dataframe"]
    import statsforecast.models
    return statsforecast.models


def make(name: str, season: int):
    """StatsForecast's model ``name`` as :data:`~.names.STATISTICAL` states it, for data of
    period ``season`` (0 or 1: none)."""
    spec = STATISTICAL[name]
    m = season if season > 1 else 1
    longest = spec["season"]
    return getattr(_models(), spec["cls"])(
        season_length=m if longest is None or m <= longest else 1, **spec["args"])


def forecast_one(name: str, season: int, y: np.ndarray, fit_end: int, origins: np.ndarray,
                 horizon: int, pcts: tuple[int, ...] = ()) -> tuple[np.ndarray, dict]:
    """(N, H) forecasts from each origin (the row of a window's first target in ``y``), with
    parameters fitted on ``y[:fit_end]``; with ``pcts`` (e.g. (80,)) also the library's own
    intervals ``{80: (lo, hi)}``. Raises :class:`FitFailed`."""
    y = np.asarray(y, dtype=np.float64)
    model = make(name, season)
    bands: dict = {pct: ([], []) for pct in pcts}
    index = _season_index(name, y, fit_end, season, horizon)    # 1 without a season
    y = y / index[:len(y)]
    try:
        model.fit(y[max(0, fit_end - FIT_HISTORY.get(name, fit_end)):fit_end])
        rows = []
        for o in origins:
            past = y[max(0, o - HISTORY[name]):o] if name in HISTORY else y[:o]
            f = model.forward(past, h=horizon, **({"level": list(pcts)} if pcts else {}))
            back = index[o:o + horizon]            # each target's seasonal index
            rows.append(np.asarray(f["mean"], dtype=np.float64) * back)
            for pct in pcts:
                bands[pct][0].append(np.asarray(f[f"lo-{pct}"], dtype=np.float64) * back)
                bands[pct][1].append(np.asarray(f[f"hi-{pct}"], dtype=np.float64) * back)
        out = np.stack(rows) if rows else np.zeros((0, horizon))
    # StatsForecast signals an unusable series in many ways (NotImplementedError for tiny
    # series, ValueError, numerical errors): each means "this forecaster cannot run here"
    except Exception as err:  # noqa: BLE001
        raise FitFailed(f"{type(err).__name__}: {str(err).splitlines()[0][:120]}") from None
    if not np.isfinite(out).all():
        raise FitFailed("non-finite forecasts")
    return out, {pct: (np.stack(lo), np.stack(hi)) for pct, (lo, hi) in bands.items()}


def around_point(mean: np.ndarray, bands: dict, levels) -> np.ndarray:
    """Quantiles (N, H, Q) at ``levels`` from a library's point forecasts ``mean`` (N, H) and
    its central bands ``{pct: (lo, hi)}``: the median is the point (so WQL's 0.5 level scores
    the forecast sMAPE and MASE score), and every band keeps its distances from the innermost
    band's middle, moved onto the point (a library's bands need not be centred on its mean:
    StatsForecast's Theta on M3's yearly N0502 forecasts 417 five steps ahead with bands
    centred on 6.5), then nested outward from it."""
    q = np.repeat(np.asarray(mean, dtype=np.float64)[..., None], len(levels), axis=-1)
    pairs = central_intervals(levels)
    if not pairs:
        return q
    for lo_i, hi_i, pct in pairs:
        q[..., lo_i], q[..., hi_i] = bands[pct]
    lo_i, hi_i, _ = pairs[-1]
    q += (mean - (q[..., lo_i] + q[..., hi_i]) / 2)[..., None]
    q[..., list(levels).index(0.5)] = mean
    return nested(q, levels)


def _season_index(name: str, y: np.ndarray, fit_end: int, season: int, horizon: int
                  ) -> np.ndarray:
    """Each row's multiplicative seasonal index (len(y) + horizon,) for the M4 benchmarks,
    from the fitted part (Naive2's indices, where the M4 rule finds a season); ones for
    every other forecaster and every series without a season."""
    from .simple import seasonal_indices
    n = len(y) + horizon
    si = seasonal_indices(y[:fit_end], season) if name in M4 else None
    return np.ones(n) if si is None else si[np.arange(n) % season]


def _task(args: tuple) -> tuple[np.ndarray | None, dict, str | None]:
    try:
        return (*forecast_one(*args), None)
    except FitFailed as err:
        return None, {}, str(err)


class Stat:
    """A StatsForecast model fitted on every series' training part, its tasks run by
    ``engine`` (this machine's processes, or a Dask cluster: engine.py); ``jobs``: a local
    engine's processes, where no engine is given."""

    def __init__(self, name: str, season: int, jobs: int = 1,
                 engine: Engine | None = None) -> None:
        self.name, self.season = name, season
        self.engine = engine if engine is not None else Engine(jobs=jobs)
        self.jobs = self.engine.jobs

    def fit(self, store):
        return []

    def forecast(self, store, ends, levels=()):
        H = store.horizon
        pcts = tuple(pct for _, _, pct in central_intervals(levels))
        sid = store.series_of(ends)
        point = np.full((len(ends), H), np.nan)
        quant = np.full((len(ends), H, len(levels)), np.nan) if levels else None
        series = np.unique(sid)
        # fewer series than processes (one long series): each series' origins split among
        # them, every part fitting the same parameters (the fit is deterministic)
        split = self.jobs // len(series) if 0 < len(series) < self.jobs else 1
        tasks, rows, owner = [], [], []
        for i in series:
            a = int(store.offsets[i]) + int(store.cuts.train_start[i])
            b = int(store.offsets[i + 1])
            r = np.flatnonzero(sid == i)
            fit_end = int(store.offsets[i]) + int(store.cuts.val_start[i]) - a
            for part in np.array_split(r, max(1, min(split, len(r) // MIN_ORIGINS))):
                tasks.append((self.name, self.season, np.asarray(store.y[a:b]), fit_end,
                              ends[part] - a, H, pcts))
                rows.append(part)
                owner.append(i)
        results = self.engine.map(_task, tasks)
        failed = {}
        for r, i, (mean, bands, err) in zip(rows, owner, results):
            if err is not None:
                failed.setdefault(i, f"'{store.ids[i]}' ({err})")
                continue
            point[r] = mean
            if levels:
                quant[r] = around_point(mean, bands, levels)
        for i in failed:     # a series fails as a whole, whichever of its parts failed
            point[sid == i] = np.nan
            if levels:
                quant[sid == i] = np.nan
        notes = [f"warning: {self.name} could not be fitted on {len(failed)} of "
                 f"{len(series)} series (first: {next(iter(failed.values()))})"] \
            if failed else []
        return Forecast(point, quant, warnings=notes)
