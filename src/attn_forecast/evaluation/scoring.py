"""Score every forecaster on every series' test windows, in the series' own units.

The forecasts come from the train stage (the model) and the baselines stage (the rest), as
forecasters.ForecastSet files; nothing here imports torch. Scores are per series
(``metrics_by_series.csv``: every metric, and the Diebold-Mariano test of the model against
each forecaster on that series' windows) and over series (for one series, its own; for many,
mean and median, mean MASE first). The same function scores the single split and every
backtest fold (a store with the fold's cuts and scalers).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ..data.store import Store
from ..data.windows import series_slices
from ..forecasters.names import BLEND
from ..forecasters.protocol import central_intervals
from ..forecasters.saved import ForecastSet
from ..forecasters.simple import fallback_for
from . import intervals as Q
from . import metrics as M
from . import significance
from .calibration import (UNIT, CalibrationSet, calibration_of, intervals, margins_record,
                          scales, short_lines)

@dataclass
class Evaluation:
    metrics: dict                  # every score (metrics_detail.json)
    by_series: pd.DataFrame        # one row per series
    ends: np.ndarray               # (N,) test window ends
    actual: np.ndarray             # (N, H) levels
    forecasts: dict[str, np.ndarray | None]   # name -> (N, H) levels; None: not fitted
    quantiles: dict[str, np.ndarray] = field(default_factory=dict)  # name -> (N, H, Q)
    levels: tuple = ()
    warnings: list[str] = field(default_factory=list)
    blend: dict | None = None      # the blend's members and weights (pipeline.evaluate)
    intervals: dict = field(default_factory=dict)   # how each was made, margins (calibration)


def units(store: Store) -> np.ndarray:
    """Each series' in-sample naive error relative to their mean (1 for one series): the
    unit that pools errors of series on other scales."""
    u = scales(store)
    return u / np.mean(u)


def _seeds(members: np.ndarray, table_for) -> dict:
    """The spread of an ensemble's members, by the headline score (RMSE for one series, mean
    MASE for many)."""
    scores = []
    for m in members:
        agg = M.aggregate(table_for(m), ["m"])["m"]
        key = "mase_mean" if "mase_mean" in agg else "rmse"
        scores.append(agg[key])
    return {"score": key, "mean": float(np.mean(scores)), "std": float(np.std(scores)),
            "values": [float(s) for s in scores]}


def by_step(y: np.ndarray, points: dict[str, np.ndarray], quantiles: dict[str, np.ndarray],
            levels, scale: np.ndarray, sid: np.ndarray) -> dict:
    """Every forecaster's scores at each step ahead (lists of H): MASE (each series' mean
    absolute error at that step over its in-sample seasonal naive error, then the mean over
    series), sMAPE, RMSE (over the windows), and with quantiles WQL (pooled over the windows),
    MSIS (as MASE, of the 95 % interval score) and each central interval's coverage."""
    _, inv = np.unique(sid, return_inverse=True)
    count = np.bincount(inv)

    def over_series(per_window: np.ndarray) -> list[float]:     # (N, H) -> (H,)
        return [float(np.mean(np.bincount(inv, per_window[:, k]) / count))
                for k in range(y.shape[1])]
    out: dict = {}
    for name, f in points.items():
        row = {"mase": over_series(np.abs(f - y) / scale[:, None]),
               "smape": [M.smape(y[:, k], f[:, k]) for k in range(y.shape[1])],
               "rmse": [M.rmse(y[:, k], f[:, k]) for k in range(y.shape[1])]}
        q = quantiles.get(name)
        if q is not None:
            row["wql"] = [Q.wql(y[:, k:k + 1], q[:, k:k + 1], levels) for k in range(y.shape[1])]
            pair = [(lo, hi) for lo, hi, pct in central_intervals(levels) if pct == Q.MSIS_PCT]
            if pair:
                lo, hi = pair[0]
                score = Q.interval_terms(y, q[..., lo], q[..., hi], Q.MSIS_PCT) / scale[:, None]
                row["msis"] = over_series(score)
            for lo, hi, pct in central_intervals(levels):
                inside = (y >= q[..., lo]) & (y <= q[..., hi])
                row[f"coverage_{pct}"] = inside.mean(axis=0).tolist()
        out[name] = row
    return out


def evaluate(store: Store, fs: ForecastSet, *, noise_std: float | None, season: int = 0,
             calibration: CalibrationSet | None = None, conformal: str = "none",
             few: str = "gaussian") -> Evaluation:
    """Score every forecaster of ``fs`` on the test windows (see the module docstring); with
    quantile levels, their intervals too (calibration.py): calibrated on ``calibration``, or
    with ``conformal`` split on the store's calibration part, or their own; ``season``: the
    fallback's (an interval a forecaster cannot give); ``few``: how a level with too few
    calibration windows is calibrated (intervals.FEW)."""
    ends = fs.ends["test"]
    H = store.horizon
    actual, last, sid = store.targets(ends), store.last(ends), store.series_of(ends)
    points = {n: (p["test"].point if p.get("test") is not None else None)
              for n, p in fs.forecasts.items()}
    fitted = {n: p for n, p in points.items() if p is not None}
    signal = store.signal[ends[:, None] + np.arange(H)[None, :]]
    signal = signal if np.isfinite(signal).all() and len(signal) else None
    noise_var = noise_std ** 2 if (signal is not None and noise_std) else None

    def table_for(forecasts: dict) -> pd.DataFrame:
        return M.per_series(store.ids, sid, actual, last, forecasts, store.train_y, signal,
                            noise_var, store.lags())
    table = table_for(fitted)
    metrics: dict = M.aggregate(table, list(points))
    for name, parts in fs.forecasts.items():   # series a fallback forecast for it (run)
        test = parts.get("test")
        if test is not None and metrics.get(name) is not None:
            metrics[name]["n_failed"] = 0 if test.failed is None else \
                int(len(np.unique(sid[np.asarray(test.failed, dtype=bool)])))
    unit = units(store)
    warnings: list[str] = []
    if "model" in fitted:
        metrics["significance"] = significance.compare(actual, points, H, unit=unit[sid])
        dm: dict[str, list] = {}
        for _, r in series_slices(sid):   # the table's rows, in the same order
            for name, res in significance.compare(actual[r], {n: p[r] for n, p in
                                                              fitted.items()}, H).items():
                dm.setdefault(f"{name}_dm_p", []).append(res["p_value"])
        for col, values in dm.items():
            table[col] = pd.array(values, dtype="Float64").to_numpy(dtype=float,
                                                                     na_value=np.nan)
        if store.n_series > 1:   # how often the model wins, series by series
            metrics["sign_test"] = M.sign_test(table)
        members = fs.forecasts["model"]["test"].members
        if members is not None and len(members) > 1:
            metrics["model_seeds"] = _seeds(members, lambda m: table_for({"m": m}))
    if BLEND in fitted:   # the blend against each forecaster, its members among them
        metrics["significance_blend"] = significance.compare(actual, points, H, BLEND,
                                                             unit=unit[sid])
    quant, record = {}, {}
    if fs.levels:
        if calibration is None and conformal == "split":
            calibration = calibration_of(fs, store)
        fb = fallback_for(season)
        fb.fit(store)
        scale = scales(store)                   # MSIS's (MASE's): the in-sample naive error
        unit_name = calibration.unit_name if calibration is not None else UNIT
        iv = intervals({n: p.get("test") for n, p in fs.forecasts.items()}, fs.levels,
                       scales(store, unit_name)[sid], sid, fb.forecast(store, ends, fs.levels),
                       calibration, few)
        quant, record = iv.quantiles, margins_record(iv, fs.levels, calibration)
        lags = store.lags()
        record.update(season=int(season), lags={str(i): int(g) for i, g in
                                                zip(store.ids, lags) if g != 1})
        for name, q in quant.items():
            if metrics.get(name) is None:
                continue
            metrics[name].update(Q.interval_scores(actual, q, fs.levels, scale[sid], sid),
                                 intervals=iv.how[name],
                                 n_interval_fallback=iv.fallback.get(name, 0))
            per = Q.msis_per_window(actual, q, fs.levels, scale[sid])
            if per is not None:     # each series' MSIS (the competition pools them)
                table[f"{name}_msis"] = [float(per[r].mean()) for _, r in series_slices(sid)]
            if signal is not None and noise_std:  # the truth's quantiles are known
                from scipy.special import ndtri
                q_true = signal[..., None] + noise_std * ndtri(np.asarray(fs.levels))
                metrics[name]["quantile_rmse"] = float(np.sqrt(np.mean((q - q_true) ** 2)))
        warnings += short_lines(iv)
        for n in iv.fallback:
            warnings.append(f"warning: {n} has no interval of its own for {iv.fallback[n]} of "
                            f"{store.n_series} series; {fb.name}'s spread around its forecast "
                            f"stands in (counted in {n}.n_interval_fallback)")
    if H > 1:
        metrics["by_step"] = by_step(actual, fitted, quant, fs.levels, scales(store)[sid], sid)
    if quant and signal is not None and noise_std:   # what a perfect interval would cover
        from scipy.special import ndtri
        for _, _, pct in central_intervals(fs.levels):
            half = noise_std * ndtri(0.5 + pct / 200)
            metrics[f"ideal_coverage_{pct}"] = float(np.mean(np.abs(actual - signal) <= half))
    metrics.update(n_test=int(len(ends)), n_series=int(store.n_series),
                   n_dropped=int(store.dropped.get("count", 0)))
    return Evaluation(metrics, table, ends, actual, points, quant, fs.levels,
                      list(fs.warnings) + warnings, intervals=record)
