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

from ..data.scaling import naive_scale
from ..data.store import Store
from ..data.windows import series_slices
from ..forecasters.protocol import central_intervals
from ..forecasters.saved import ForecastSet
from . import intervals as Q
from . import metrics as M
from . import significance

@dataclass
class Evaluation:
    metrics: dict                  # every score (metrics_detail.json)
    by_series: pd.DataFrame        # one row per series
    ends: np.ndarray               # (N,) test window ends
    actual: np.ndarray             # (N, H) levels
    forecasts: dict[str, np.ndarray | None]   # name -> (N, H) levels; None: not fitted
    quantiles: dict[str, np.ndarray] = field(default_factory=dict)  # name -> (N, H, Q)
    taus: tuple = ()
    warnings: list[str] = field(default_factory=list)
    blend: dict | None = None      # the blend's members and weights (pipeline.scoring)


def units(store: Store) -> np.ndarray:
    """Each series' in-sample naive error relative to their mean (1 for one series): the
    unit that pools errors of series on other scales."""
    u = np.array([naive_scale(store.train_levels(i), int(lag))
                  for i, lag in enumerate(store.lags())])
    u = np.where(u > 0, u, np.nan)
    u = np.where(np.isfinite(u), u, np.nanmean(u) if np.isfinite(u).any() else 1.0)
    return u / np.mean(u)


def model_intervals(fs: ForecastSet, store: Store, conformal: str, unit: np.ndarray
                    ) -> dict[str, np.ndarray]:
    """Every forecaster's quantiles (N, H, Q) on the test windows: its own, or with
    ``conformal`` split, calibrated on the calibration windows (its quantiles widened, or its
    point forecast's residuals), each step with its own margin."""
    out = {}
    cal_ends = fs.ends.get("cal")
    for name, parts in fs.forecasts.items():
        test = parts.get("test")
        if test is None:
            continue
        if conformal != "split":
            if test.quantiles is not None:
                out[name] = test.quantiles
            continue
        cal = parts.get("cal")
        if cal is None or cal_ends is None or not len(cal_ends):
            continue
        y_cal = store.targets(cal_ends)
        ok = np.isfinite(cal.point).all(axis=1)
        u_cal, u = unit[store.series_of(cal_ends)][ok], unit[store.series_of(fs.ends["test"])]
        if test.quantiles is not None and cal.quantiles is not None:
            out[name] = Q.calibrate(cal.quantiles[ok], y_cal[ok], test.quantiles, fs.taus,
                                    u_cal, u)
        else:
            out[name] = Q.from_residuals(test.point, cal.point[ok], y_cal[ok], fs.taus, u_cal,
                                         u)
    return out


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


def evaluate(store: Store, fs: ForecastSet, *, noise_std: float | None, conformal: str = "none"
             ) -> Evaluation:
    """Score every forecaster of ``fs`` on the test windows (see the module docstring)."""
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
        return M.per_series(store.ids, sid, actual, last, forecasts, store.train_levels, signal,
                            noise_var, store.lags())
    table = table_for(fitted)
    metrics: dict = M.aggregate(table, list(points))
    for name, parts in fs.forecasts.items():   # series a fallback forecast for it (run)
        test = parts.get("test")
        if test is not None and metrics.get(name) is not None:
            metrics[name]["n_failed"] = 0 if test.failed is None else \
                int(len(np.unique(sid[np.asarray(test.failed, dtype=bool)])))
    unit = units(store)
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
    if "blend" in fitted:   # the blend against each forecaster, its members among them
        metrics["significance_blend"] = significance.compare(actual, points, H, "blend",
                                                             unit=unit[sid])
    quant = model_intervals(fs, store, conformal, unit) if fs.taus else {}
    for name, q in quant.items():
        if metrics.get(name) is None:
            continue
        ok = np.isfinite(q).all(axis=(1, 2))
        metrics[name].update(Q.interval_scores(actual[ok], q[ok], fs.taus))
        if signal is not None and noise_std:  # the truth's quantiles are known
            from scipy.special import ndtri
            q_true = signal[..., None] + noise_std * ndtri(np.asarray(fs.taus))
            metrics[name]["quantile_rmse"] = float(np.sqrt(np.mean((q - q_true) ** 2)))
    if quant and signal is not None and noise_std:   # what a perfect interval would cover
        from scipy.special import ndtri
        for _, _, pct in central_intervals(fs.taus):
            half = noise_std * ndtri(0.5 + pct / 200)
            metrics[f"ideal_coverage_{pct}"] = float(np.mean(np.abs(actual - signal) <= half))
    metrics.update(n_test=int(len(ends)), n_series=int(store.n_series),
                   n_dropped=int(store.dropped.get("count", 0)))
    return Evaluation(metrics, table, ends, actual, points, quant, fs.taus, list(fs.warnings))
