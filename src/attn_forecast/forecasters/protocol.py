"""A forecaster is a forecaster: the model, an ensemble and every baseline share one protocol.

``fit(store)`` learns from each series' training part only; ``forecast(store, ends, levels)``
gives the windows' forecasts in the series' units (N, H), and with quantile ``levels`` their
quantiles (N, H, Q) where it has them. Evaluation, the backtest, the significance tests, the
intervals and the figures loop over forecasters and series, never naming one.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from typing import Protocol

import numpy as np

from ..data.store import Store


@dataclass
class Forecast:
    point: np.ndarray                    # (N, H) levels; NaN rows: a series it could not fit
    quantiles: np.ndarray | None = None  # (N, H, Q) levels
    members: np.ndarray | None = None    # (M, N, H) an ensemble's members
    warnings: list[str] = field(default_factory=list)  # series it could not fit
    failed: np.ndarray | None = None     # (N,) bool: rows the fallback forecast (run)

    def spread(self) -> np.ndarray | None:
        """The quantiles' distances from the point forecast (N, H, Q), or None."""
        return None if self.quantiles is None else self.quantiles - self.point[..., None]


class Forecaster(Protocol):
    """Fit on each series' training part (returns warnings); forecast windows in the series'
    units."""
    name: str

    def fit(self, store: Store) -> list[str]: ...

    def forecast(self, store: Store, ends: np.ndarray, levels: tuple = ()) -> Forecast: ...


def level_name(tau: float) -> str:
    """A quantile level's column name: q10, q50, q2.5, q97.5."""
    return f"q{round(100 * tau, 4):g}"


def at_levels(q: np.ndarray, have, want) -> np.ndarray:
    """Quantiles (..., len(want)) at levels ``want`` from quantiles (..., len(have)) at the
    increasing levels ``have``: linear in the normal score between the two known levels
    around each one, and past the outermost along the line through the two nearest (the
    tail of a normal distribution of that spread); sorted, so they never cross."""
    have, want = tuple(float(t) for t in have), tuple(float(t) for t in want)
    if have == want:
        return q
    a, b, frac = _segments(have, want)
    return np.sort(q[..., a] + frac * (q[..., b] - q[..., a]), axis=-1)


@lru_cache(maxsize=64)
def _segments(have: tuple, want: tuple) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For each wanted level, the two known levels around it and its place between them in
    normal scores (computed once per pair of level sets)."""
    from scipy.special import ndtri   # the standard normal's quantile function
    zh, zw = ndtri(np.asarray(have)), ndtri(np.asarray(want))
    b = np.clip(np.searchsorted(zh, zw), 1, len(have) - 1)      # each level's segment
    a = b - 1
    out = a, b, (zw - zh[a]) / (zh[b] - zh[a])
    for x in out:
        x.setflags(write=False)     # shared by every call
    return out


def gaussian(point: np.ndarray, sd: np.ndarray, levels) -> np.ndarray:
    """Quantiles (N, H, Q) of normal distributions around ``point`` (N, H), std ``sd`` (N, H)."""
    from scipy.special import ndtri
    return point[..., None] + np.asarray(sd)[..., None] * ndtri(np.asarray(levels, dtype=float))


def central_intervals(levels) -> list[tuple[int, int, int]]:
    """(lower index, upper index, nominal %) of each central interval the levels hold, the
    widest first (0.025 and 0.975: 95; a fractional percentage rounds to the nearest)."""
    return list(_central(tuple(float(t) for t in levels)))


@lru_cache(maxsize=64)
def _central(levels: tuple) -> tuple[tuple[int, int, int], ...]:
    levels = [round(t, 6) for t in levels]
    out = []
    for i, t in enumerate(levels):
        j = levels.index(round(1 - t, 6)) if round(1 - t, 6) in levels else None
        if j is not None and t < 0.5:
            out.append((i, j, round(100 * (1 - 2 * t))))
    return tuple(out)


def nested(q: np.ndarray, levels) -> np.ndarray:
    """Quantiles (..., Q) made non-decreasing outward from the median, without reordering:
    each level below 0.5 at most the one inside it, each above at least the one inside it,
    so a wider interval always holds the narrower (a sort would swap nested bounds, and a
    scored "95 %" bound could be a widened 80 % one)."""
    out = np.array(q, dtype=np.float64, copy=True)
    mid = list(levels).index(0.5)
    if mid > 0:
        out[..., :mid + 1] = np.minimum.accumulate(out[..., mid::-1], axis=-1)[..., ::-1]
    out[..., mid:] = np.maximum.accumulate(out[..., mid:], axis=-1)
    return out
