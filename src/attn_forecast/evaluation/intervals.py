"""Probabilistic forecasts: the pinball loss, the field's scores, and split-conformal
calibration.

Quantile forecasts are arrays (N, H, Q) over increasing quantile ``levels`` (Q of them, 0.5 among
them). A central interval pairs level tau with 1 - tau: [0.1, 0.9] is the 80 % interval.

- pinball (quantile) loss of level tau: max(tau (y - q), (tau - 1) (y - q)), averaged;
- CRPS: 2 x the pinball loss integrated over every level, the quantiles interpolated onto a
  dense grid of levels (:func:`crps`);
- WQL, as Chronos and fev score a task: for each of the levels 0.1, ..., 0.9, 2 x the pinball
  loss summed over every target of the task over the sum of the targets' absolute values,
  then the mean over the levels (over the levels given, when they are not all nine);
- MSIS, as the M4 competition scored its 95 % intervals: per series, the mean over its targets
  of (U - L) + (2 / 0.05) x the distance by which the target falls outside [L, U], over the
  series' in-sample seasonal naive error (MASE's scale); then the mean over series;
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

from ..forecasters.names import FEW_WINDOWS, WQL_LEVELS
from ..forecasters.protocol import at_levels, central_intervals, nested

MSIS_PCT = 95                                                  # the M4 competition's interval


def pinball_terms(y: np.ndarray, q: np.ndarray, levels) -> np.ndarray:
    """The pinball loss of every target and level (N, H, Q); y (N, H), q (N, H, Q)."""
    diff = y[..., None] - q
    levels = np.asarray(levels)
    return np.maximum(levels * diff, (levels - 1) * diff)


def pinball(y: np.ndarray, q: np.ndarray, levels) -> float:
    """Mean pinball loss; y (N, H), q (N, H, Q)."""
    return float(np.mean(pinball_terms(y, q, levels)))


CRPS_GRID = 200      # levels of the dense grid CRPS integrates over: (k + 0.5) / 200


def crps(y: np.ndarray, q: np.ndarray, levels, chunk: int = 20_000) -> float:
    """CRPS, the integral over every level tau of 2 x the pinball loss: the quantiles read off
    on a dense grid of :data:`CRPS_GRID` levels (protocol.at_levels: linear in the normal
    score between the given levels, a normal tail past the outermost), then the midpoint
    rule. On a normal forecast it is within 0.1 % of the exact value (a test), where the
    mean pinball over 11 unevenly spaced levels reads 6 % low. ``chunk``: windows at a time.
    NaN (n/a, null in JSON) with fewer than two levels."""
    if len(levels) < 2:       # one level (the median alone) spans no distribution
        return float("nan")
    grid = (np.arange(CRPS_GRID) + 0.5) / CRPS_GRID
    total, n = 0.0, 0
    for i in range(0, len(y), chunk):
        dense = at_levels(q[i:i + chunk], levels, grid)
        total += float(np.sum(pinball_terms(y[i:i + chunk], dense, grid).mean(axis=-1)))
        n += y[i:i + chunk].size
    return 2 * total / n if n else float("nan")


def wql_levels(levels) -> list[int]:
    """The indices of the levels WQL averages over: fev's nine, or every one given when they
    are not all there."""
    rounded = [round(t, 6) for t in levels]
    if all(t in rounded for t in WQL_LEVELS):
        return [rounded.index(t) for t in WQL_LEVELS]
    return list(range(len(levels)))


def wql_parts(y: np.ndarray, q: np.ndarray, levels) -> tuple[np.ndarray, float]:
    """WQL's numerator per level (2 x the summed pinball loss, (L,)) and its denominator (the
    summed absolute targets): a task's WQL pools them over every target."""
    k = wql_levels(levels)
    terms = pinball_terms(y, q[..., k], np.asarray(levels)[k])
    return 2 * terms.reshape(-1, len(k)).sum(axis=0), float(np.abs(y).sum())


def wql(y: np.ndarray, q: np.ndarray, levels) -> float | None:
    """The weighted quantile loss of a task, as fev and Chronos compute it (the module
    docstring); None where the targets sum to 0."""
    num, den = wql_parts(y, q, levels)
    return float(np.mean(num / den)) if den > 0 else None


def interval_terms(y: np.ndarray, low: np.ndarray, high: np.ndarray, pct: int) -> np.ndarray:
    """The interval score of every target (N, H): width + (2 / alpha) x the miss."""
    miss = np.maximum(low - y, 0) + np.maximum(y - high, 0)
    return high - low + 2 / (1 - pct / 100) * miss


def msis_per_window(y: np.ndarray, q: np.ndarray, levels, scale: np.ndarray) -> np.ndarray | None:
    """Each window's mean 95 % interval score over its steps, over its series' ``scale`` (N,)
    (MASE's in-sample naive error); None without the 0.025 and 0.975 levels."""
    pair = [(lo, hi) for lo, hi, pct in central_intervals(levels) if pct == MSIS_PCT]
    if not pair:
        return None
    lo, hi = pair[0]
    return interval_terms(y, q[..., lo], q[..., hi], MSIS_PCT).mean(axis=1) / scale


def interval_scores(y: np.ndarray, q: np.ndarray, levels, scale: np.ndarray | None = None,
                    sid: np.ndarray | None = None) -> dict:
    """coverage_<p>, width_<p>, winkler_<p> for each central interval, pinball, crps, wql and,
    given each window's ``scale`` (N,) and series ``sid`` (N,), msis (the mean over series of
    each series' mean over its targets)."""
    out = {"pinball": pinball(y, q, levels), "crps": crps(y, q, levels), "wql": wql(y, q, levels)}
    for lo, hi, pct in central_intervals(levels):
        low, high = q[..., lo], q[..., hi]
        out[f"coverage_{pct}"] = float(np.mean((y >= low) & (y <= high)))
        out[f"width_{pct}"] = float(np.mean(high - low))
        out[f"winkler_{pct}"] = float(np.mean(interval_terms(y, low, high, pct)))
    per = msis_per_window(y, q, levels, scale) if scale is not None and len(y) else None
    if per is not None:
        sid = np.zeros(len(y), dtype=np.int64) if sid is None else np.asarray(sid)
        _, inv = np.unique(sid, return_inverse=True)
        out["msis"] = float(np.mean(np.bincount(inv, per) / np.bincount(inv)))
    return out


def needed(alpha: float) -> int:
    """The fewest calibration windows whose split-conformal quantile exists for miscoverage
    ``alpha``: ceil((n + 1)(1 - alpha)) <= n (80 %: 4, 95 %: 19)."""
    return math.ceil((1 - alpha) / alpha - 1e-9)


def conformal_margin(scores: np.ndarray, alpha: float) -> np.ndarray:
    """The split-conformal quantile of calibration scores (N, H) for miscoverage ``alpha``,
    one per step ahead (H,): later steps are harder, and get their own margin. With fewer
    windows than :func:`needed`, the rank ceil((n + 1)(1 - alpha)) lies past the largest
    score and the guarantee would need an unbounded interval: the largest score stands in
    (no calibration window falls outside it), and :func:`margins` reports the level."""
    scores = np.sort(np.asarray(scores, dtype=np.float64), axis=0)
    n = len(scores)
    if n == 0:
        return np.zeros(scores.shape[1:])
    k = math.ceil((n + 1) * (1 - alpha) - 1e-9)
    return scores[min(k, n) - 1]


def _unit(norm: np.ndarray | None, n: int) -> np.ndarray:
    """(N, 1, ...) per-window units: scores of series on other scales are pooled in units
    of each window's series (its naive error), then scaled back."""
    return np.ones((n, 1)) if norm is None else np.asarray(norm, dtype=np.float64)[:, None]


# how a level is calibrated where there are fewer windows than its split-conformal rank
# needs (:func:`needed`): ``gaussian`` (the default, chosen on bench/real.py's validation
# parts), the margin the normal distribution gives from the widest level the windows do
# calibrate (z(level) / z(that level) times its margin), or from the step's root mean square
# score where none is (a point forecast's absolute errors: exactly a normal interval);
# ``pooled``, every step's scores pooled in units of their step's root mean square (the
# windows times the steps), each step's margin that quantile times its scale, and the normal
# tail where even the pool is too small; ``largest``, the largest score stands in (two levels
# can then coincide)
FEW = FEW_WINDOWS


def _rms(scores: np.ndarray) -> np.ndarray:
    """Each step's scale (H,): the root mean square of its scores (a tiny positive where all
    are zero)."""
    return np.maximum(np.sqrt(np.mean(np.square(scores), axis=0)), 1e-12)


def _z(pct: float) -> float:
    from scipy.special import ndtri
    return float(ndtri(0.5 + pct / 200))


def margins(q_cal: np.ndarray, y_cal: np.ndarray, levels, norm_cal: np.ndarray | None = None,
            few: str = "gaussian") -> np.ndarray:
    """The conformal margin (H, P) each central pair of levels needs, per step, on the
    calibration windows (``q_cal`` (N, H, Q), ``y_cal`` (N, H)), in units of each window's
    ``norm_cal`` (N,) (see :func:`_unit`); P pairs in :func:`central_intervals`' order. A pair
    with fewer windows than its rank needs is calibrated by the rule ``few`` (:data:`FEW`),
    so every level keeps its own width."""
    u_cal = _unit(norm_cal, len(y_cal))
    pairs = central_intervals(levels)
    if not pairs:
        return np.zeros((y_cal.shape[1], 0))
    n, H = y_cal.shape
    out: list[np.ndarray | None] = []      # None: the normal tail, below
    scores = [np.maximum(q_cal[..., lo] - y_cal, y_cal - q_cal[..., hi]) / u_cal
              for lo, hi, _ in pairs]
    for s, (_, _, pct) in zip(scores, pairs):
        alpha = 1 - pct / 100
        if n >= needed(alpha) or few == "largest" or n == 0:
            out.append(conformal_margin(s, alpha))
        elif few == "pooled" and n * H >= needed(alpha):
            scale = _rms(s)
            out.append(conformal_margin((s / scale).reshape(-1, 1), alpha)[0] * scale)
        else:
            out.append(None)
    calibrated = [j for j, m in enumerate(out) if m is not None]
    for k, (s, (_, _, pct)) in enumerate(zip(scores, pairs)):
        if out[k] is None:
            ok = [j for j in calibrated if n >= needed(1 - pairs[j][2] / 100) or few == "pooled"]
            if ok:      # the widest level the windows calibrate, carried out to this one
                j = max(ok, key=lambda j: pairs[j][2])
                out[k] = out[j] * _z(pct) / _z(pairs[j][2])
            else:
                out[k] = _rms(s) * _z(pct)
    return np.stack(out, axis=-1)


def too_few(n: int, levels) -> list[int]:
    """The central intervals (nominal %) that ``n`` calibration windows cannot calibrate with
    the split-conformal guarantee (:func:`needed`)."""
    return [pct for _, _, pct in central_intervals(levels) if n < needed(1 - pct / 100)]


def widen(q: np.ndarray, m: np.ndarray, levels, norm: np.ndarray | None = None) -> np.ndarray:
    """``q`` (N, H, Q) with each central pair widened (or narrowed) by its margin ``m`` (H, P)
    times each window's unit ``norm`` (N,); the median stays, no bound crosses it, and each
    interval still holds the narrower ones (:func:`nested`: margins of nested pairs may
    cross)."""
    out = np.array(q, dtype=np.float64, copy=True)
    mid = list(levels).index(0.5)
    pairs = central_intervals(levels)
    if pairs:   # every pair at once: pair k's bounds move by m[:, k] times the unit
        lo, hi = [p[0] for p in pairs], [p[1] for p in pairs]
        mk = m[None, :, :len(pairs)] * _unit(norm, len(q))[..., None]     # (N, H, P)
        med = out[..., mid:mid + 1]
        out[..., lo] = np.minimum(q[..., lo] - mk, med)
        out[..., hi] = np.maximum(q[..., hi] + mk, med)
    return nested(out, levels)


def calibrate(q_cal: np.ndarray, y_cal: np.ndarray, q: np.ndarray, levels,
              norm_cal: np.ndarray | None = None, norm: np.ndarray | None = None,
              few: str = "gaussian") -> np.ndarray:
    """Widen (or narrow) each central interval of ``q`` (N, H, Q) by the conformal margin its
    pair of levels needs on the calibration windows (``q_cal``, ``y_cal``), per step; the
    median stays. ``norm_cal``, ``norm`` (N,): each window's unit (see :func:`_unit`). Each
    pair is calibrated on its own, and the result is kept non-crossing."""
    return widen(q, margins(q_cal, y_cal, levels, norm_cal, few), levels, norm)


def at_point(point: np.ndarray, n_levels: int) -> np.ndarray:
    """A point forecast's quantiles (N, H, Q) before calibration: the point at every level
    (calibration widens them by the conformal margin of its absolute residuals)."""
    return np.repeat(np.asarray(point, dtype=np.float64)[..., None], n_levels, axis=-1)


def from_residuals(point: np.ndarray, point_cal: np.ndarray, y_cal: np.ndarray, levels,
                   norm_cal: np.ndarray | None = None, norm: np.ndarray | None = None
                   ) -> np.ndarray:
    """Quantiles (N, H, Q) of a point forecast: the point forecast -+ the per-step conformal
    margin of its absolute residuals on the calibration windows, per central interval."""
    n = len(levels)
    return calibrate(at_point(point_cal, n), y_cal, at_point(point, n), levels, norm_cal, norm)
