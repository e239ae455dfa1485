"""Is the difference real? The Diebold-Mariano test with the Harvey-Leybourne-Newbold
small-sample correction.

For two forecasters scored on the same T forecast origins, with a loss per origin ``L_a``,
``L_b`` (here the squared error averaged over the H steps of each window):

    d_t = L_a,t - L_b,t,   V = (gamma_0 + 2 sum_{k=1}^{h-1} gamma_k) / T
    DM  = mean(d) / sqrt(V),   DM* = DM * sqrt((T + 1 - 2h + h (h - 1) / T) / T)

where gamma_k is the lag-k autocovariance of d (windows of h steps overlap, so d is
autocorrelated up to lag h - 1), and the two-sided p-value is taken from Student's t with
T - 1 degrees of freedom (Harvey, Leybourne and Newbold, 1997). Negative statistics mean the
first forecaster has the smaller loss.
"""
from __future__ import annotations

import math

import numpy as np

ALPHA = 0.05  # the level the summary's sentences use


def diebold_mariano(loss_a: np.ndarray, loss_b: np.ndarray, h: int = 1) -> dict:
    """``statistic`` (DM*, HLN-corrected), two-sided ``p_value``, ``n`` origins and
    ``mean_loss_diff``; statistic and p-value are None when the test is undefined (fewer than
    three origins, no more origins than the horizon ``h``, or no variance in the loss
    difference)."""
    d = np.asarray(loss_a, dtype=np.float64) - np.asarray(loss_b, dtype=np.float64)
    T = len(d)
    out = {"statistic": None, "p_value": None, "n": int(T),
           "mean_loss_diff": float(d.mean()) if T else None}
    if T < 3:
        return {**out, "untestable": f"{T} window(s), fewer than the test's 3"}
    if T <= h:     # the h-step errors' autocovariances need more origins than lags
        return {**out, "untestable": f"{T} windows, no more than the horizon's {h} steps"}
    mean = d.mean()
    gammas = [float(np.sum((d[k:] - mean) * (d[:T - k] - mean)) / T) for k in range(h)]
    var = (gammas[0] + 2 * sum(gammas[1:])) / T
    if not var > 0:
        same = not np.any(d)
        return {**out, "untestable": f"its errors equal the model's on all {T} windows"
                + (" (the same forecasts)" if same else "")}
    hln = math.sqrt((T + 1 - 2 * h + h * (h - 1) / T) / T)
    stat = float(mean / math.sqrt(var) * hln)
    from scipy.special import stdtr  # Student's t CDF (scipy.stats costs 0.6 s to import)
    out.update(statistic=stat, p_value=float(2 * stdtr(T - 1, -abs(stat))))
    return out


def window_losses(actual: np.ndarray, forecast: np.ndarray, unit: np.ndarray | None = None
                  ) -> np.ndarray:
    """Squared error per forecast origin, averaged over its H steps: (N, H) -> (N,); with
    ``unit`` (N,) in units of each window's series (so that series on other scales can be
    pooled; for one series a constant, which leaves the test as it is)."""
    err = np.asarray(forecast) - np.asarray(actual)
    if unit is not None:
        err = err / np.asarray(unit, dtype=np.float64)[:, None]
    return np.mean(err ** 2, axis=1)


def compare(actual: np.ndarray, forecasts: dict[str, np.ndarray], h: int,
            against: str = "model", unit: np.ndarray | None = None) -> dict[str, dict]:
    """The DM test of ``against`` versus every other forecaster on the windows where both
    have a forecast (skipping missing ones); ``unit``: see :func:`window_losses`."""
    ref = window_losses(actual, forecasts[against], unit)
    out = {}
    for name, f in forecasts.items():
        if name == against or f is None:
            continue
        other = window_losses(actual, f, unit)
        ok = np.isfinite(ref) & np.isfinite(other)
        out[name] = diebold_mariano(ref[ok], other[ok], h)
    return out


def sentence(name: str, result: dict, alpha: float = ALPHA) -> str:
    """One line for the summary: "better than ridge, p = 0.01"."""
    p, stat = result.get("p_value"), result.get("statistic")
    if p is None:
        why = result.get("untestable") or f"{result.get('n', 0)} windows"
        return f"{name}: not testable: {why}"
    if p < alpha:
        verdict = "better than" if stat < 0 else "worse than"
        return f"{verdict} {name}, p = {p:.2g}"
    return f"no significant difference from {name}, p = {p:.2g}"
