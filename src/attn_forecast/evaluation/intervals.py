"""Probabilistic forecasts: the pinball loss, interval scores, and split-conformal calibration.

Quantile forecasts are arrays (N, H, Q) over increasing levels ``taus`` (Q of them, 0.5 among
them). A central interval pairs level tau with 1 - tau: [0.1, 0.9] is the 80 % interval.

- pinball (quantile) loss of level tau: max(tau (y - q), (tau - 1) (y - q)), averaged;
- CRPS estimated from the quantiles: 2 x the pinball loss averaged over the levels (exact in
  the limit of many evenly spaced levels; with [0.1, 0.5, 0.9] a coarse estimate);
- coverage of a central interval (the share of targets inside it), its mean width, and the
  Winkler score: width + (2 / alpha) x the distance by which the target falls outside;
- split conformal (Romano et al., conformalized quantile regression): on calibration windows
  the forecaster neither trained nor was selected on (the calibration part), for each step
  ahead, the scores E = max(lo - y, y - hi) give a margin Q = the ceil((n + 1)(1 - alpha)) / n
  empirical quantile of E, added on both sides, so the interval covers at least 1 - alpha of
  new targets whatever the error distribution. A point forecast gets its intervals the same
  way from its absolute residuals.
"""
from __future__ import annotations

import math

import numpy as np

from ..forecasters.protocol import central_intervals

DEFAULT_LEVELS = (0.1, 0.5, 0.9)  # conformal intervals of a point model: the 80 % interval


def pinball(y: np.ndarray, q: np.ndarray, taus) -> float:
    """Mean pinball loss; y (N, H), q (N, H, Q)."""
    diff = y[..., None] - q
    taus = np.asarray(taus)
    return float(np.mean(np.maximum(taus * diff, (taus - 1) * diff)))


def crps(y: np.ndarray, q: np.ndarray, taus) -> float:
    """CRPS estimated from the quantiles: twice the mean pinball loss over the levels."""
    return 2 * pinball(y, q, taus)


def interval_scores(y: np.ndarray, q: np.ndarray, taus) -> dict:
    """coverage_<p>, width_<p>, winkler_<p> for each central interval, pinball and crps."""
    out = {"pinball": pinball(y, q, taus), "crps": crps(y, q, taus)}
    for lo, hi, pct in central_intervals(taus):
        low, high = q[..., lo], q[..., hi]
        alpha = 1 - pct / 100
        out[f"coverage_{pct}"] = float(np.mean((y >= low) & (y <= high)))
        out[f"width_{pct}"] = float(np.mean(high - low))
        miss = np.maximum(low - y, 0) + np.maximum(y - high, 0)
        out[f"winkler_{pct}"] = float(np.mean(high - low + 2 / alpha * miss))
    return out


def conformal_margin(scores: np.ndarray, alpha: float) -> np.ndarray:
    """The split-conformal quantile of calibration scores (N, H) for miscoverage ``alpha``,
    one per step ahead (H,): later steps are harder, and get their own margin."""
    scores = np.sort(np.asarray(scores, dtype=np.float64), axis=0)
    n = len(scores)
    if n == 0:
        return np.zeros(scores.shape[1:])
    k = math.ceil((n + 1) * (1 - alpha))
    return scores[min(k, n) - 1]


def _unit(norm: np.ndarray | None, n: int) -> np.ndarray:
    """(N, 1, ...) per-window units: scores of series on other scales are pooled in units
    of each window's series (its naive error), then scaled back."""
    return np.ones((n, 1)) if norm is None else np.asarray(norm, dtype=np.float64)[:, None]


def calibrate(q_cal: np.ndarray, y_cal: np.ndarray, q: np.ndarray, taus,
              norm_cal: np.ndarray | None = None, norm: np.ndarray | None = None
              ) -> np.ndarray:
    """Widen (or narrow) each central interval of ``q`` (N, H, Q) by the conformal margin its
    pair of levels needs on the calibration windows (``q_cal``, ``y_cal``), per step; the
    median stays. ``norm_cal``, ``norm`` (N,): each window's unit (see :func:`_unit`). Each
    pair is calibrated on its own, and the result is kept non-crossing."""
    out = q.copy()
    mid = list(taus).index(0.5)
    u_cal, u = _unit(norm_cal, len(y_cal)), _unit(norm, len(q))
    for lo, hi, pct in central_intervals(taus):
        scores = np.maximum(q_cal[..., lo] - y_cal, y_cal - q_cal[..., hi]) / u_cal
        m = conformal_margin(scores, 1 - pct / 100)[None, :] * u        # (N, H)
        out[..., lo] = np.minimum(q[..., lo] - m, out[..., mid])
        out[..., hi] = np.maximum(q[..., hi] + m, out[..., mid])
    return np.sort(out, axis=-1)  # margins of nested pairs may cross: keep the order


def from_residuals(point: np.ndarray, point_cal: np.ndarray, y_cal: np.ndarray, taus,
                   norm_cal: np.ndarray | None = None, norm: np.ndarray | None = None
                   ) -> np.ndarray:
    """Quantiles (N, H, Q) of a point forecast: the point forecast -+ the per-step conformal
    margin of its absolute residuals on the calibration windows, per central interval."""
    q = np.repeat(point[..., None], len(taus), axis=-1).astype(np.float64)
    scores = np.abs(y_cal - point_cal) / _unit(norm_cal, len(y_cal))
    u = _unit(norm, len(point))
    for lo, hi, pct in central_intervals(taus):
        m = conformal_margin(scores, 1 - pct / 100)[None, :] * u
        q[..., lo] -= m
        q[..., hi] += m
    return q
