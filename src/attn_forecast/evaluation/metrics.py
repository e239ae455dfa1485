"""Forecast metrics: per window, per series, and over series.

All functions take level-space arrays (the series' own units). ``y`` and ``p`` are (N, H):
N test windows, H steps ahead; ``last`` (N,) is the last value known before the targets.
Scores are computed per series, then aggregated over series (for one series, its own).
"""
from __future__ import annotations

import math
import re

import numpy as np

from ..data.scaling import naive_scale
from ..forecasters.names import to_use
from ..data.windows import series_slices


def _f(x) -> float | None:
    x = float(x)
    return x if math.isfinite(x) else None


def mse(y: np.ndarray, p: np.ndarray) -> float:
    return float(np.mean((p - y) ** 2))


def rmse(y: np.ndarray, p: np.ndarray) -> float:
    return math.sqrt(mse(y, p))


def mae(y: np.ndarray, p: np.ndarray) -> float:
    return float(np.mean(np.abs(p - y)))


def r2(y: np.ndarray, p: np.ndarray) -> float:
    """1 - SS_res / SS_tot over all entries (sklearn's r2_score on the flattened arrays)."""
    y, p = np.ravel(y), np.ravel(p)
    ss_tot = float(np.sum((y - y.mean()) ** 2))
    ss_res = float(np.sum((y - p) ** 2))
    if ss_tot == 0:
        return 1.0 if ss_res == 0 else 0.0
    return 1.0 - ss_res / ss_tot


def mape(y: np.ndarray, p: np.ndarray) -> float | None:
    """Mean absolute percentage error, in percent, over non-zero targets; None if none."""
    y, p = np.ravel(y), np.ravel(p)
    nz = y != 0
    if not nz.any():
        return None
    return float(100 * np.mean(np.abs((p[nz] - y[nz]) / y[nz])))


def smape(y: np.ndarray, p: np.ndarray) -> float:
    """Symmetric MAPE in percent (0..200); a term where both are zero counts as 0. A missing
    forecast (NaN) makes it NaN, never 0: a forecaster never scores better for failing."""
    y, p = np.ravel(y).astype(np.float64), np.ravel(p).astype(np.float64)
    den = np.abs(y) + np.abs(p)
    terms = np.divide(2 * np.abs(p - y), den, out=np.zeros_like(den), where=den > 0)
    terms[np.isnan(den)] = np.nan
    return float(100 * np.mean(terms))


def mase(y: np.ndarray, p: np.ndarray, scale: float) -> float | None:
    return mae(y, p) / scale if scale > 0 else None


def directional_accuracy(y: np.ndarray, p: np.ndarray, last: np.ndarray) -> float | None:
    """Share of windows where the predicted first-step move from ``last`` has the sign of the
    actual move (a flat move matches only a flat prediction). None for a forecaster that never
    predicts a move (the naive one): it has no direction to be right or wrong about."""
    moves = p[:, 0] - last
    if not np.any(moves != 0):
        return None
    return float(np.mean(np.sign(moves) == np.sign(y[:, 0] - last)))


def score(y: np.ndarray, p: np.ndarray, last: np.ndarray, *, train_y: np.ndarray,
          signal: np.ndarray | None, noise_var: float | None,
          naive_rmse: float | None, lag: int = 1) -> dict:
    """All metrics of one forecaster; keys are ``dvc exp show`` columns (``model.rmse``).
    ``lag``: of the in-sample naive error MASE is scaled by (1, or the seasonal period)."""
    out = {
        "mse": mse(y, p), "rmse": rmse(y, p), "mae": mae(y, p), "mape": mape(y, p),
        "smape": smape(y, p), "mase": mase(y, p, naive_scale(train_y, lag)), "r2": r2(y, p),
        "directional_accuracy": directional_accuracy(y, p, last),
        "skill_vs_naive": (1 - rmse(y, p) / naive_rmse) if naive_rmse else None,
        "signal_rmse": rmse(signal, p) if signal is not None else None,
        "noise_floor_ratio": mse(y, p) / noise_var if signal is not None and noise_var else None,
    }
    if y.shape[1] > 1:
        for k in range(y.shape[1]):
            out[f"rmse_step{k + 1}"] = rmse(y[:, k], p[:, k])
    return {k: (_f(v) if v is not None else None) for k, v in out.items()}


# ---------------------------------------------------------------- per series, over series
AGGREGATED = ("mase", "rmse", "mae", "smape", "signal_rmse")
# the per-series columns of one forecaster's scores (``model_rmse``, ``model_rmse_step2``...)
SCORES = (r"mse|rmse|mae|mape|smape|mase|r2|directional_accuracy|skill_vs_naive|signal_rmse|"
          r"noise_floor_ratio|rmse_step\d+")


def per_series(ids: np.ndarray, sid: np.ndarray, actual: np.ndarray, last: np.ndarray,
               forecasts: dict[str, np.ndarray], train_y, signal: np.ndarray | None,
               noise_var: float | None, lags: np.ndarray | None = None):
    """A DataFrame of one row per series with test windows: ``id, n_test`` and every
    forecaster's :func:`score` over that series' windows (``model_rmse``, ``naive_mase``...).
    ``train_y(i)``: series i's training part and ``lags[i]`` its naive lag (MASE's
    scale); ``signal``: the noise-free targets (N, H), if known."""
    import pandas as pd
    rows = []
    for i, r in series_slices(sid):
        y = actual[r]
        naive = rmse(y, np.repeat(last[r][:, None], y.shape[1], axis=1))
        row = {"id": str(ids[i]), "n_test": r.stop - r.start}
        for name, f in forecasts.items():
            sc = score(y, f[r], last[r], train_y=train_y(i),
                       signal=None if signal is None else signal[r], noise_var=noise_var,
                       naive_rmse=naive, lag=int(lags[i]) if lags is not None else 1)
            row.update({f"{name}_{k}": v for k, v in sc.items()})
        rows.append(row)
    return pd.DataFrame(rows)


def aggregate(table, names: list[str]) -> dict:
    """Each forecaster's scores over the series: for one series, the series' own; for many,
    the mean and median over series of :data:`AGGREGATED` (mean MASE is the headline: it is
    scale-free, so every series counts alike), ``n_series`` (those with a MASE) and
    ``beats_naive`` (the share of series where its MASE is below naive's).

    Every forecaster is averaged over the same series: those where the score is defined for
    some forecaster (MASE is not for a series whose training part never moves). A forecaster
    without a score on one of them (no forecast: NaN) gets no mean at all (None), so failing
    on a hard series can never lower its mean; the forecasters fill such series with a named
    fallback before they are scored (forecasters.run), so this is the last guard."""
    out: dict = {}
    present = [n for n in names if f"{n}_rmse" in table and not table[f"{n}_rmse"].isna().all()]
    defined = {}
    for metric in AGGREGATED:
        cols = [table[f"{n}_{metric}"].to_numpy(dtype=float) for n in present
                if f"{n}_{metric}" in table]
        defined[metric] = np.any([np.isfinite(c) for c in cols], axis=0) if cols else \
            np.zeros(len(table), dtype=bool)
    for name in names:
        cols = [c for c in table.columns if c.startswith(f"{name}_")
                and re.fullmatch(SCORES, c[len(name) + 1:])]
        if not cols or name not in present:
            out[name] = None
            continue
        if len(table) == 1:
            out[name] = {c[len(name) + 1:]: _none(table[c].iloc[0]) for c in cols}
            continue
        m = {}
        for metric in AGGREGATED:
            v = table.get(f"{name}_{metric}")
            v = v.to_numpy(dtype=float)[defined[metric]] if v is not None else np.zeros(0)
            ok = len(v) and np.isfinite(v).all()
            m[f"{metric}_mean"] = float(np.mean(v)) if ok else None
            m[f"{metric}_median"] = float(np.median(v)) if ok else None
        mase_ = table[f"{name}_mase"].to_numpy(dtype=float)
        m["n_series"] = int(defined["mase"].sum())   # the same for every forecaster
        if name != "naive" and "naive_mase" in table:
            naive = table["naive_mase"].to_numpy(dtype=float)
            both = np.isfinite(mase_) & np.isfinite(naive)
            m["beats_naive"] = float(np.mean(mase_[both] < naive[both])) if both.any() else None
        out[name] = m
    for name, m in out.items():   # OWA: relative to Naive2, as the M4 competition scores it
        two = out.get("naive2")
        if isinstance(m, dict) and isinstance(two, dict):
            keys = ("smape_mean", "mase_mean") if "smape_mean" in m else ("smape", "mase")
            if all(m.get(k) is not None and two.get(k) for k in keys):
                m["owa"] = 0.5 * (m[keys[0]] / two[keys[0]] + m[keys[1]] / two[keys[1]])
    return out


def pooled(tables: list, horizons: list[int], names: list[str]) -> dict:
    """Per-series tables of several subsets (each forecasting ``horizons[k]`` steps) as one
    column, the way the field reports a competition's "all": each forecaster's mean sMAPE and
    MASE over every forecast (series x step: a series weighs its windows x its horizon, so
    M3 monthly's 18 steps weigh 69 %), ``smape``, ``mase``, and beside them the mean over
    series (every series alike) ``smape_series``, ``mase_series``; OWA from each pair
    relative to Naive2's (``owa``, ``owa_series``); MSIS the same way as MASE where the tables
    hold it (``msis``, ``msis_series``). A forecaster missing from a subset
    (seasonal naive without a season), or without a score on one of its series, has none."""
    out: dict = {}
    for name in names:
        cols = [f"{name}_smape", f"{name}_mase"]
        if not all(c in t for t in tables for c in cols):
            continue
        w = np.concatenate([t["n_test"].to_numpy(float) * h for t, h in zip(tables, horizons)])
        row = {}
        for metric in ("smape", "mase"):
            v = np.concatenate([t[f"{name}_{metric}"].to_numpy(float) for t in tables])
            ok = np.isfinite(v).all()
            row[metric] = float(np.sum(v * w) / np.sum(w)) if ok else None
            row[f"{metric}_series"] = float(np.mean(v)) if ok else None
        row["n_series"] = int(len(w))
        row["n_forecasts"] = int(np.sum(w))
        if not all(v is not None for v in row.values()):
            continue
        if all(f"{name}_msis" in t for t in tables):   # MSIS pooled as MASE is
            v = np.concatenate([t[f"{name}_msis"].to_numpy(float) for t in tables])
            if np.isfinite(v).all():
                row["msis"] = float(np.sum(v * w) / np.sum(w))
                row["msis_series"] = float(np.mean(v))
        out[name] = row
    two = out.get("naive2")
    for m in out.values():
        if two:
            for suffix in ("", "_series"):
                m[f"owa{suffix}"] = 0.5 * (m[f"smape{suffix}"] / two[f"smape{suffix}"]
                                           + m[f"mase{suffix}"] / two[f"mase{suffix}"])
    return out


def _none(v):
    return None if v is None or (isinstance(v, float) and not math.isfinite(v)) else \
        (float(v) if isinstance(v, (float, np.floating)) else v)


# the quantiles' headline score, the one the field ranks by; MSIS and the coverages are in the
# detail file (and the calibration plot), so that `dvc exp show --only-changed` fits a terminal
INTERVAL_HEADLINE = ("wql",)
HEADLINE_ONE = ("rmse", "mase", "signal_rmse", "owa") + INTERVAL_HEADLINE
HEADLINE_MANY = ("mase_mean", "smape_mean", "owa") + INTERVAL_HEADLINE


def headline(agg: dict) -> dict:
    """The few scores `dvc exp show` compares runs by: RMSE, MASE (and the signal RMSE of
    synthetic data) for one series; mean MASE and sMAPE over series (and OWA) for many; and
    WQL (MSIS and the intervals' coverage in the detail). The blend first: the forecast to
    use (`dvc exp show` lists the columns in this order)."""
    out = {}
    first = to_use([n for n, m in agg.items() if m])
    for name, m in sorted(agg.items(), key=lambda kv: kv[0] != first):
        if not isinstance(m, dict):
            out[name] = m
            continue
        keys = HEADLINE_MANY if "mase_mean" in m else HEADLINE_ONE
        out[name] = {k: m[k] for k in keys if m.get(k) is not None}
    return out


def sign_test(table, against: str = "model", metric: str = "smape") -> dict:
    """Series by series, how often ``against`` scores below each other forecaster on
    ``metric``, and the two-sided sign test of that share (ties left out): ``{name: {"share",
    "wins", "n", "p_value"}}``."""
    from scipy.special import bdtr   # the binomial CDF
    if f"{against}_{metric}" not in table:
        return {}
    a = table[f"{against}_{metric}"].to_numpy(float)
    out = {}
    for name in (c[:-len(metric) - 1] for c in table.columns if c.endswith(f"_{metric}")):
        if name == against:
            continue
        b = table[f"{name}_{metric}"].to_numpy(float)
        ok = np.isfinite(a) & np.isfinite(b) & (a != b)
        n, wins = int(ok.sum()), int((a[ok] < b[ok]).sum())
        p = float(min(1.0, 2 * bdtr(min(wins, n - wins), n, 0.5))) if n else None
        out[name] = {"share": wins / n if n else None, "wins": wins, "n": n, "p_value": p}
    return out


def ranked(table, column: str = "model_mase") -> dict[str, int]:
    """Row of the best, median and worst series by ``column`` (ties: the first)."""
    v = table[column].to_numpy(dtype=float) if column in table else np.zeros(len(table))
    order = np.argsort(np.where(np.isfinite(v), v, np.inf), kind="stable")
    finite = int(np.isfinite(v).sum()) or len(v)
    return {"best": int(order[0]), "median": int(order[(finite - 1) // 2]),
            "worst": int(order[finite - 1])}
