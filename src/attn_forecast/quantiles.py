"""Probabilistic forecasts: the pinball loss, interval scores, and split-conformal calibration.

Quantile forecasts are arrays (N, H, Q) over increasing levels ``taus`` (Q of them, 0.5 among
them). A central interval pairs level tau with 1 - tau: [0.1, 0.9] is the 80 % interval.

- pinball (quantile) loss of level tau: max(tau (y - q), (tau - 1) (y - q)), averaged;
- CRPS estimated from the quantiles: 2 x the pinball loss averaged over the levels (exact in
  the limit of many evenly spaced levels; with [0.1, 0.5, 0.9] a coarse estimate);
- coverage of a central interval (the share of targets inside it), its mean width, and the
  Winkler score: width + (2 / alpha) x the distance by which the target falls outside;
- split conformal (Romano et al., conformalized quantile regression): on calibration windows
  the model never trained on, the scores E = max(lo - y, y - hi) give a margin
  Q = the ceil((n + 1)(1 - alpha)) / n empirical quantile of E, added on both sides, so the
  interval covers at least 1 - alpha of new targets whatever the error distribution. A point
  forecast gets its intervals the same way from its absolute residuals.
"""
from __future__ import annotations

import math

import numpy as np

DEFAULT_LEVELS = (0.1, 0.5, 0.9)  # conformal intervals of a point model: the 80 % interval


def pinball(y: np.ndarray, q: np.ndarray, taus) -> float:
    """Mean pinball loss; y (N, H), q (N, H, Q)."""
    diff = y[..., None] - q
    taus = np.asarray(taus)
    return float(np.mean(np.maximum(taus * diff, (taus - 1) * diff)))


def crps(y: np.ndarray, q: np.ndarray, taus) -> float:
    """CRPS estimated from the quantiles: twice the mean pinball loss over the levels."""
    return 2 * pinball(y, q, taus)


def intervals(taus) -> list[tuple[int, int, int]]:
    """(lower index, upper index, nominal %) of each central interval the levels hold."""
    taus = [round(t, 6) for t in taus]
    out = []
    for i, t in enumerate(taus):
        j = taus.index(round(1 - t, 6)) if round(1 - t, 6) in taus else None
        if j is not None and t < 0.5:
            out.append((i, j, round(100 * (1 - 2 * t))))
    return out


def interval_scores(y: np.ndarray, q: np.ndarray, taus) -> dict:
    """coverage_<p>, width_<p>, winkler_<p> for each central interval, pinball and crps."""
    out = {"pinball": pinball(y, q, taus), "crps": crps(y, q, taus)}
    for lo, hi, pct in intervals(taus):
        low, high = q[..., lo], q[..., hi]
        alpha = 1 - pct / 100
        out[f"coverage_{pct}"] = float(np.mean((y >= low) & (y <= high)))
        out[f"width_{pct}"] = float(np.mean(high - low))
        miss = np.maximum(low - y, 0) + np.maximum(y - high, 0)
        out[f"winkler_{pct}"] = float(np.mean(high - low + 2 / alpha * miss))
    return out


def conformal_margin(scores: np.ndarray, alpha: float) -> float:
    """The split-conformal quantile of calibration scores for miscoverage ``alpha``."""
    scores = np.sort(np.ravel(scores))
    n = len(scores)
    if n == 0:
        return 0.0
    k = math.ceil((n + 1) * (1 - alpha))
    return float(scores[min(k, n) - 1])


def calibrate(q_cal: np.ndarray, y_cal: np.ndarray, q: np.ndarray, taus) -> np.ndarray:
    """Widen (or narrow) each central interval of ``q`` (N, H, Q) by the conformal margin its
    pair of levels needs on the calibration windows (``q_cal``, ``y_cal``); the median stays.
    Each pair is calibrated on its own, and the result is kept non-crossing."""
    out = q.copy()
    mid = list(taus).index(0.5)
    for lo, hi, pct in intervals(taus):
        scores = np.maximum(q_cal[..., lo] - y_cal, y_cal - q_cal[..., hi])
        m = conformal_margin(scores, 1 - pct / 100)
        out[..., lo] = np.minimum(q[..., lo] - m, out[..., mid])
        out[..., hi] = np.maximum(q[..., hi] + m, out[..., mid])
    return np.sort(out, axis=-1)  # margins of nested pairs may cross: keep the order


def from_residuals(point: np.ndarray, point_cal: np.ndarray, y_cal: np.ndarray, taus
                   ) -> np.ndarray:
    """Quantiles (N, H, Q) of a point forecast: the point forecast -+ the conformal margin of
    its absolute residuals on the calibration windows, per central interval."""
    q = np.repeat(point[..., None], len(taus), axis=-1).astype(np.float64)
    scores = np.abs(y_cal - point_cal)
    for lo, hi, pct in intervals(taus):
        m = conformal_margin(scores, 1 - pct / 100)
        q[..., lo] -= m
        q[..., hi] += m
    return q
