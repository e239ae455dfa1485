"""Forecast metrics and the honest baselines every score is read against.

All functions take level-space arrays (the series' own units). ``y`` and ``p`` are (N, H):
N test windows, H steps ahead; ``last`` (N,) is the last value known before the targets.
"""
from __future__ import annotations

import math

import numpy as np


# Committed files hold numbers at these precisions (significant digits): CPUs of different
# vendors train to weights that differ in the last bits (see cpu.py), which moves metrics in
# about the 7th digit; 4 digits keep `dvc metrics diff` quiet across machines and are well
# below the spread of one seed (~1e-2).
METRIC_DIGITS = 4
CSV_DIGITS = 6


def rounded(obj, digits: int = METRIC_DIGITS):
    """``obj`` (nested dicts and lists) with every float at ``digits`` significant digits."""
    if isinstance(obj, dict):
        return {k: rounded(v, digits) for k, v in obj.items()}
    if isinstance(obj, list):
        return [rounded(v, digits) for v in obj]
    if isinstance(obj, float) and math.isfinite(obj):
        return float(f"{obj:.{digits}g}")
    return obj


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
    """Symmetric MAPE in percent (0..200); a term where both are zero counts as 0."""
    y, p = np.ravel(y), np.ravel(p)
    den = np.abs(y) + np.abs(p)
    terms = np.divide(2 * np.abs(p - y), den, out=np.zeros_like(den), where=den > 0)
    return float(100 * np.mean(terms))


def naive_scale(train_levels: np.ndarray) -> float:
    """In-sample one-step naive MAE on the training part: MASE's denominator."""
    return float(np.mean(np.abs(np.diff(train_levels)))) if len(train_levels) > 1 else 0.0


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


def score(y: np.ndarray, p: np.ndarray, last: np.ndarray, *, train_levels: np.ndarray,
          signal: np.ndarray | None, noise_var: float | None,
          naive_rmse: float | None) -> dict:
    """All metrics of one forecaster; keys are ``dvc exp show`` columns (``model.rmse``)."""
    out = {
        "mse": mse(y, p), "rmse": rmse(y, p), "mae": mae(y, p), "mape": mape(y, p),
        "smape": smape(y, p), "mase": mase(y, p, naive_scale(train_levels)), "r2": r2(y, p),
        "directional_accuracy": directional_accuracy(y, p, last),
        "skill_vs_naive": (1 - rmse(y, p) / naive_rmse) if naive_rmse else None,
        "signal_rmse": rmse(signal, p) if signal is not None else None,
        "noise_floor_ratio": mse(y, p) / noise_var if signal is not None and noise_var else None,
    }
    if y.shape[1] > 1:
        for k in range(y.shape[1]):
            out[f"rmse_step{k + 1}"] = rmse(y[:, k], p[:, k])
    return {k: (_f(v) if v is not None else None) for k, v in out.items()}


# ---------------------------------------------------------------- baselines
def naive_forecast(last: np.ndarray, horizon: int) -> np.ndarray:
    """Repeat the last known value for every step ahead."""
    return np.repeat(last[:, None], horizon, axis=1)


def seasonal_naive_forecast(levels: np.ndarray, first_target: np.ndarray, horizon: int,
                            season: int) -> np.ndarray:
    """The value one season before each target, from the known past only:
    step k (1-based) takes v[T + k - season * ceil(k / season)], T = last known index."""
    last_known = first_target - 1
    k = np.arange(1, horizon + 1)
    back = season * np.ceil(k / season).astype(np.int64)
    return levels[last_known[:, None] + k[None, :] - back[None, :]]


def mean_forecast(train_levels: np.ndarray, n: int, horizon: int) -> np.ndarray:
    return np.full((n, horizon), float(np.mean(train_levels)))


def ridge_model(x_train: np.ndarray, y_train: np.ndarray, alpha: float):
    """scikit-learn Ridge fitted on the same scaled windows the model sees (model space)."""
    from sklearn.linear_model import Ridge
    return Ridge(alpha=alpha).fit(x_train, y_train)


def ridge_predict(fit, x: np.ndarray) -> np.ndarray:
    return fit.predict(x).reshape(len(x), -1)
