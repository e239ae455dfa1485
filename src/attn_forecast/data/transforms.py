"""What the model learns from a series of levels ``v``, and the way back.

``none``: z[r] = v[r]; ``diff``: z[r] = v[r] - v[r-1]; ``log_return``: z[r] = log(v[r] / v[r-1]).
The model series is **level-aligned**: row r holds the step that ends at level r, so a
differenced series' first row has no value (it holds 0, and no window reads it). ``offset`` is
that number of leading rows (0 or 1). Past covariates get their own transforms (``log1p`` for
volumes), aligned the same way.
"""
from __future__ import annotations

import numpy as np

from ..errors import SettingError


def offset(kind: str) -> int:
    """Leading rows without a model value: 0 for ``none``, 1 for the differenced kinds."""
    return 0 if kind == "none" else 1


def _first(mask: np.ndarray) -> int:
    return int(np.flatnonzero(mask)[0])


def model_series(y: np.ndarray, kind: str, what: str = "<transform>") -> np.ndarray:
    """Level-aligned model values (float64) of one series; row 0 is 0 for diff and
    log_return. ``what`` names the setting in errors."""
    v = np.asarray(y, dtype=np.float64)
    if kind == "none":
        return v.copy()
    out = np.zeros(len(v))
    if kind == "log_return":
        if (v <= 0).any():
            i = _first(v <= 0)
            raise SettingError(f"{what} log_return needs positive values, got {float(v[i])!r} "
                                 f"at row {i + 1}; use diff or none")
        np.subtract(np.log(v[1:]), np.log(v[:-1]), out=out[1:])
    elif kind == "diff":
        np.subtract(v[1:], v[:-1], out=out[1:])
    else:
        raise ValueError(f"unknown transform {kind!r}")
    return out


def to_y(z: np.ndarray, last_y: np.ndarray, kind: str) -> np.ndarray:
    """Values in the series' units from model-space steps ``z`` (N, H) given the last known
    value (N,)."""
    if kind == "none":
        return z
    steps = np.cumsum(z, axis=-1)
    if kind == "diff":
        return last_y[:, None] + steps
    return last_y[:, None] * np.exp(steps)


def feature_series(raw: np.ndarray, kind: str, what: str) -> np.ndarray:
    """One past covariate's transform, level-aligned; ``diff`` and ``log_return`` leave row 0
    NaN (no earlier value). ``what`` names the column in errors."""
    raw = np.asarray(raw, dtype=np.float64)
    if kind == "none":
        return raw.copy()
    if kind == "log1p":
        if (raw <= -1).any():
            i = _first(raw <= -1)
            raise SettingError(f"feature transform log1p needs values > -1 in {what}, got "
                                 f"{float(raw[i])!r} at row {i + 1}")
        return np.log1p(raw)
    out = np.full(len(raw), np.nan)
    if kind == "diff":
        out[1:] = np.diff(raw)
    elif kind == "log_return":
        if (raw <= 0).any():
            i = _first(raw <= 0)
            raise SettingError(f"feature transform log_return needs positive values in "
                                 f"{what}, got {float(raw[i])!r} at row {i + 1}; use diff, "
                                 "log1p or none")
        out[1:] = np.diff(np.log(raw))
    else:
        raise ValueError(f"unknown feature transform {kind!r}")
    return out
