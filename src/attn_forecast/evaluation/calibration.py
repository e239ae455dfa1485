"""Every forecaster's intervals on the scored windows, and where they came from.

With a calibration set (windows no forecaster trained on and none was selected on: the
calibration part of the store, or a competition's calibration cut, the horizon before its
validation cut, forecast by a run that ends there), every forecaster's quantiles are
calibrated on it by split conformal (intervals.py): its own quantiles widened or narrowed, a
point forecast's widened from its absolute residuals (its quantiles before calibration are
its point at every level), each central pair by its own margin per step, in units of each
window's series (:data:`UNIT`: its training part's mean absolute level), so series of every
size pool; each forecaster on the windows it forecast itself (where the fallback stood in for
it there, those windows are the fallback's, not its).
Without one, each forecaster's own quantiles stand. Either way a forecaster that has none for
a window (a point forecaster without calibration, a calibration set it did not forecast)
takes the fallback's (:func:`~attn_forecast.forecasters.run.fallback_for`) spread around its
own point, and those series are counted (``n_interval_fallback``): an interval it did not
give never scores as one it did.

    calibration windows (N_cal, H) --> margins (H, P) per central pair --+
                                                                          v
    scored windows' quantiles (N, H, Q) ------------------------> widened (N, H, Q)
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..data.scaling import naive_scale
from ..data.store import Store
from ..forecasters.protocol import Forecast, central_intervals
from ..forecasters.saved import ForecastSet
from . import intervals as Q


UNITS = ("naive_error", "level")
# the unit calibration pools scores in, chosen on M3's validation cuts (bench/README.md, M3
# intervals: the coverage of the model's and model+comb's 80 % and 95 % intervals nearer
# nominal than in units of the in-sample naive error, and with each forecaster calibrated on
# its own windows only, the lower WQL); the test parts scored once after
UNIT = "level"


def scales(store: Store, unit: str = "naive_error") -> np.ndarray:
    """Each series' unit (S,) on its training part: its in-sample naive error (MASE's scale:
    lag 1, or its season), or its mean absolute level; a series without one (a constant
    training part) takes the others' mean."""
    if unit == "level":
        u = np.array([np.mean(np.abs(store.train_levels(i))) if len(store.train_levels(i))
                      else np.nan for i in range(store.n_series)], dtype=np.float64)
    else:
        u = np.array([naive_scale(store.train_levels(i), int(lag))
                      for i, lag in enumerate(store.lags())], dtype=np.float64)
    u = np.where(u > 0, u, np.nan)
    return np.where(np.isfinite(u), u, np.nanmean(u) if np.isfinite(u).any() else 1.0)


@dataclass
class CalibrationSet:
    """Windows no forecaster trained on and none was selected on: each forecaster's forecasts
    of them (name -> Forecast, None where it has none), their targets (N, H) and each
    window's unit (N,), and what they are (for the record)."""
    forecasts: dict[str, Forecast | None]
    actual: np.ndarray
    unit: np.ndarray
    what: str = "the calibration part"


def calibration_of(fs: ForecastSet, store: Store, part: str = "cal",
                   what: str = "the calibration part") -> CalibrationSet | None:
    """The windows of ``part`` of ``fs`` (forecasts of ``store``'s windows) as a calibration
    set: the store's calibration part, or the scored part of a run that ends where the
    calibration windows begin (a competition's calibration cut); None without a window."""
    ends = fs.ends.get(part)
    if ends is None or not len(ends):
        return None
    return CalibrationSet({n: p.get(part) for n, p in fs.forecasts.items()},
                          store.targets(ends), scales(store, UNIT)[store.series_of(ends)], what)


def with_point_quantiles(fs: ForecastSet) -> ForecastSet:
    """``fs`` with every forecast that has no quantiles given its point at every level (for
    calibration, which widens them; combinations then average them with their members')."""
    if not fs.taus:
        return fs
    for parts in fs.forecasts.values():
        for part, fc in parts.items():
            if fc is not None and fc.quantiles is None:
                parts[part] = Forecast(fc.point, Q.at_point(fc.point, len(fs.taus)),
                                       fc.members, fc.warnings, fc.failed)
    return fs


@dataclass
class Intervals:
    """Every forecaster's quantiles of the scored windows (name -> (N, H, Q)), how each came
    to be (``how``: calibrated, own or fallback), the calibrated margins (name -> (H, P), in
    units) and the series each took the fallback's spread for (name -> count)."""
    quantiles: dict[str, np.ndarray] = field(default_factory=dict)
    how: dict[str, str] = field(default_factory=dict)
    margins: dict[str, np.ndarray] = field(default_factory=dict)
    fallback: dict[str, int] = field(default_factory=dict)


def intervals(forecasts: dict[str, Forecast | None], taus: tuple, unit: np.ndarray,
              sid: np.ndarray, fallback: Forecast, calibration: CalibrationSet | None
              ) -> Intervals:
    """Every forecaster's quantiles of the scored windows (see the module docstring):
    ``forecasts`` name -> its forecast of them, ``unit`` (N,) each window's unit, ``sid``
    (N,) its series, ``fallback`` the fallback's forecast of them (with quantiles)."""
    out = Intervals()
    spread = fallback.spread()
    for name, fc in forecasts.items():
        if fc is None:
            continue
        q, how = None, "own"
        if calibration is not None:
            how = "calibrated"
            cal = calibration.forecasts.get(name)
            ok = np.zeros(0, dtype=bool) if cal is None or cal.quantiles is None else \
                np.isfinite(cal.quantiles).all(axis=(1, 2))
            if cal is not None and cal.failed is not None:    # the fallback's windows
                ok &= ~np.asarray(cal.failed, dtype=bool)
            if ok.any() and fc.quantiles is not None:
                m = Q.margins(cal.quantiles[ok], calibration.actual[ok], taus,
                              calibration.unit[ok])
                out.margins[name] = m
                q = Q.widen(fc.quantiles, m, taus, unit)
        elif fc.quantiles is not None:
            q = fc.quantiles
        bad = np.ones(len(fc.point), dtype=bool) if q is None else \
            ~np.isfinite(q).all(axis=(1, 2))
        if bad.any():
            q = np.zeros(fc.point.shape + (len(taus),)) if q is None else q.copy()
            q[bad] = fc.point[bad][..., None] + spread[bad]
            out.fallback[name] = int(len(np.unique(sid[bad])))
            how = "fallback" if bad.all() else f"{how}, fallback for some series"
        out.quantiles[name], out.how[name] = q, how
    return out


def margins_record(iv: Intervals, taus: tuple, calibration: CalibrationSet | None) -> dict:
    """What the forecast command needs to give a future forecast the same intervals: the
    levels, each central pair, and each forecaster's calibrated margins per step (in units of
    its series' in-sample naive error) and how its intervals were made."""
    return {"levels": [float(t) for t in taus],
            "pairs": [pct for _, _, pct in central_intervals(taus)],
            "calibrated_on": calibration.what if calibration is not None else None,
            "unit": "the series' mean absolute level" if UNIT == "level" else
                    "the series' in-sample naive error (lag 1, or its season)",
            "forecasters": {n: {"how": iv.how[n],
                                "margins": np.round(iv.margins[n], 8).tolist()
                                if n in iv.margins else None} for n in iv.quantiles}}


def future_quantiles(raw: np.ndarray, margins: np.ndarray, taus, unit: float) -> np.ndarray:
    """A future forecast's calibrated quantiles (steps, Q): ``raw`` (steps, Q) widened by the
    calibrated ``margins`` (H, P) in the series' ``unit``; a step k past the H calibrated
    ones takes step H's margin grown by sqrt(k / H) (a random walk's growth: those steps are
    recursive forecasts, and nothing calibrated them)."""
    steps, H = len(raw), len(margins)
    k = np.arange(1, steps + 1)
    m = margins[np.minimum(k, H) - 1] * np.sqrt(np.maximum(1.0, k / H))[:, None]
    return Q.widen(raw[None], m, taus, np.array([unit]))[0]
