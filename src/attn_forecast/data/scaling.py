"""Per-series scaling, fitted on each series' training rows only: one policy for 1..N series.

``x_scaled = (x - center) / scale``: ``zscore`` (mean, std), ``minmax`` (min, max - min) or
``none`` (0, 1). A training part without spread (a constant series) is scaled by 1 around its
center, so that it still passes through (a model sees a flat 0, a baseline its level). Past
covariates are z-scored the same way, each column on its own.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

SCALERS = ("zscore", "minmax", "none")


@dataclass(frozen=True)
class Scalers:
    """One scaler per series (S,)."""
    kind: str
    center: np.ndarray
    scale: np.ndarray

    def apply(self, x: np.ndarray, sid: np.ndarray | int) -> np.ndarray:
        return (x - self.center[sid]) / self.scale[sid]

    def invert(self, x: np.ndarray, sid: np.ndarray | int) -> np.ndarray:
        return x * self.scale[sid] + self.center[sid]

    def take(self, keep: np.ndarray) -> Scalers:
        return Scalers(self.kind, self.center[keep], self.scale[keep])

    def to_dict(self) -> dict:
        return {"kind": self.kind, "center": self.center.tolist(), "scale": self.scale.tolist()}

    @staticmethod
    def from_dict(d: dict) -> Scalers:
        return Scalers(d["kind"], np.asarray(d["center"], np.float64),
                       np.asarray(d["scale"], np.float64))


def fit_one(values: np.ndarray, kind: str) -> tuple[float, float]:
    """(center, scale) of one training part; without spread, scale 1."""
    values = np.asarray(values, dtype=np.float64)
    if kind == "none" or not len(values):
        return 0.0, 1.0
    if kind == "zscore":
        center, scale = float(np.mean(values)), float(np.std(values))
    else:
        center = float(np.min(values))
        scale = float(np.max(values)) - center
    return center, (scale if scale > 0 and math.isfinite(scale) else 1.0)


def train_rows(offsets: np.ndarray, train_start: np.ndarray, val_start: np.ndarray, off: int,
               i: int) -> slice:
    """Global rows of series ``i``'s training targets that have a model value."""
    a = int(offsets[i])
    return slice(a + max(int(train_start[i]), off), a + int(val_start[i]))


def fit(z: np.ndarray, offsets: np.ndarray, train_start: np.ndarray, val_start: np.ndarray,
        off: int, kind: str) -> Scalers:
    """Each series' scaler on its training rows of the (level-aligned, unscaled) model
    series ``z``."""
    S = len(offsets) - 1
    center, scale = np.zeros(S), np.ones(S)
    for i in range(S):
        center[i], scale[i] = fit_one(z[train_rows(offsets, train_start, val_start, off, i)],
                                      kind)
    return Scalers(kind, center, scale)


def scale_series(z: np.ndarray, offsets: np.ndarray, s: Scalers, off: int) -> np.ndarray:
    """The scaled model series, float32; each series' first ``off`` rows stay 0."""
    out = np.zeros(len(z), dtype=np.float32)
    for i in range(len(offsets) - 1):
        a, b = int(offsets[i]) + off, int(offsets[i + 1])
        out[a:b] = (z[a:b] - s.center[i]) / s.scale[i]
    return out


def fit_columns(cols: np.ndarray, offsets: np.ndarray, train_start: np.ndarray,
                val_start: np.ndarray, off: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Transformed past covariates (R, F) z-scored per series and column on its training
    rows: the scaled (R, F) float32 (a value the transform leaves undefined is 0, the
    training mean) and the (S, F) centers and scales."""
    S, F = len(offsets) - 1, cols.shape[1]
    center, scale = np.zeros((S, F)), np.ones((S, F))
    out = np.zeros(cols.shape, dtype=np.float32)
    for i in range(S):
        rows = train_rows(offsets, train_start, val_start, off, i)
        a, b = int(offsets[i]), int(offsets[i + 1])
        for k in range(F):
            part = cols[rows, k]
            center[i, k], scale[i, k] = fit_one(part[np.isfinite(part)], "zscore")
            out[a:b, k] = np.nan_to_num((cols[a:b, k] - center[i, k]) / scale[i, k], nan=0.0)
    return out, center, scale


def naive_scale(train_y: np.ndarray, lag: int = 1) -> float:
    """In-sample naive MAE of the training part at ``lag`` (1, or the seasonal period: the
    M4 definition): MASE's denominator, and the unit of a loss of the values."""
    v = np.asarray(train_y)
    if len(v) <= lag and lag > 1:      # too short for one season: the lag-1 error
        lag = 1
    return float(np.mean(np.abs(v[lag:] - v[:-lag]))) if len(v) > lag else 0.0
