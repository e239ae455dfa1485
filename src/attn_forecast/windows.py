"""Transforms, chronological splits, scaling and lean sliding windows.

The prepared data is the (transformed, scaled) series and its split boundaries; windows are
never stored. A window is named by its end ``e`` (exclusive): inputs ``z[e-W:e]``, targets
``z[e:e+H]``::

    levels: 0 ...................... L_val .......... L_test ........... N
            |<-------- train part ------->|<-- val part -->|<-- test part -->|
            [  inputs W ][tgt H]                   windows whose H targets lie
                     e-W        e   e+H            wholly inside one part belong to it

The parts are cut by **target time**, in the series' own (level) indices:
``L_test = floor(N * (1 - test_frac))`` and ``L_val = floor(N * (1 - test_frac - val_frac))``,
so the test targets are the last ``test_frac`` of the series whatever the window, the horizon
or the transform: any two settings (and any peer) are scored on the same time stamps. A window
belongs to the part holding all of its targets; the inputs may reach back into an earlier part
(that is the past, which a forecaster may see). The scaler is fitted on the train part only.

Transforms turn price-like levels ``v`` into what the model learns (``z``):
``none``: z[j] = v[j]; ``diff``: z[j] = v[j+1] - v[j]; ``log_return``: z[j] = log(v[j+1]/v[j]).
``offset`` (0 or 1) maps z-index j to level index j + offset, and the last level known before
the targets of window e is v[e + offset - 1].
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from .errors import UserInputError
from .io import read_json, read_npz, write_json, write_npz

# numpy arrays, or torch tensors (typed loosely: generate and prepare never import torch)
ArrayOrTensor = Any


# ---------------------------------------------------------------- transforms
def transform_offset(kind: str) -> int:
    return 0 if kind == "none" else 1


def to_model_series(levels: np.ndarray, kind: str) -> np.ndarray:
    if kind == "none":
        return levels.copy()
    if kind == "diff":
        return np.diff(levels)
    if kind == "log_return":
        if (levels <= 0).any():
            i = int(np.flatnonzero(levels <= 0)[0])
            raise UserInputError(f"prepare.transform log_return needs positive values, got "
                                 f"{float(levels[i])!r} at row {i + 1}; use diff or none")
        return np.diff(np.log(levels))
    raise ValueError(f"unknown transform {kind!r}")


def to_levels(z: np.ndarray, last_level: np.ndarray, kind: str) -> np.ndarray:
    """Rebuild levels from model-space steps ``z`` (N, H) given the last known level (N,)."""
    if kind == "none":
        return z
    steps = np.cumsum(z, axis=-1)
    if kind == "diff":
        return last_level[:, None] + steps
    return last_level[:, None] * np.exp(steps)


# ---------------------------------------------------------------- splits
@dataclass(frozen=True)
class Split:
    """Boundaries in model-series indices (see the module docstring): targets in
    ``[train_start, train_end)`` train, ``[train_end, val_end)`` validate and
    ``[val_end + gap, test_end)`` test. ``test_end`` 0 means the end of the series, ``n``.
    A backtest fold is a Split whose test part is one fold (see backtest.py)."""
    n: int
    window: int
    horizon: int
    train_end: int
    val_end: int
    train_start: int = 0
    test_end: int = 0
    gap: int = 0

    def bounds(self, part: str) -> tuple[int, int]:
        """The [first, end) target indices of one part."""
        return {"train": (self.train_start, self.train_end),
                "val": (self.train_end, self.val_end),
                "test": (self.val_end + self.gap, self.test_end or self.n)}[part]

    def ends(self, part: str) -> np.ndarray:
        """Window ends (exclusive input end = first target index) of one part."""
        lo, hi = self.bounds(part)
        first = max(lo, self.window)
        last = hi - self.horizon  # inclusive: targets e .. e+H-1 < hi
        return np.arange(first, last + 1, dtype=np.int64) if last >= first else \
            np.zeros(0, dtype=np.int64)


def _cut(n_levels: int, share: float) -> int:
    # floor with a tolerance: 1 - 0.3 - 0.2 is 0.49999999999999994 in floating point
    return math.floor(n_levels * share + 1e-9)


def _split(n: int, window: int, horizon: int, test_frac: float, val_frac: float,
           offset: int) -> Split:
    n_levels = n + offset
    test_start = _cut(n_levels, 1 - test_frac) - offset      # level -> model index
    val_start = _cut(n_levels, 1 - test_frac - val_frac) - offset if val_frac > 0 else test_start
    return Split(n, window, horizon, max(val_start, 0), max(test_start, 0))


def _usable(s: Split, val_frac: float) -> bool:
    parts = ("train", "test") + (("val",) if val_frac > 0 else ())
    return all(len(s.ends(p)) >= 1 for p in parts)


def make_split(n: int, window: int, horizon: int, test_frac: float, val_frac: float,
               offset: int = 0) -> Split:
    """Cut a model series of ``n`` values (``n + offset`` levels) by target time: the last
    ``test_frac`` of the levels are test targets, the ``val_frac`` before them validation
    targets, the rest training targets."""
    split = _split(n, window, horizon, test_frac, val_frac, offset)
    if not _usable(split, val_frac):
        need = next((m for m in range(window + horizon, 100 * (window + horizon) + 100_000)
                     if _usable(_split(m, window, horizon, test_frac, val_frac, offset),
                                val_frac)), None)
        counts = ", ".join(f"{len(split.ends(p))} {p}" for p in ("train", "val", "test"))
        need_text = f"need at least {need + offset} values" if need else "need more values"
        raise UserInputError(
            f"series too short: {n + offset} values give {counts} windows for window "
            f"{window} + horizon {horizon} with test_frac {test_frac} and val_frac {val_frac}; "
            f"{need_text} (or a smaller prepare.window, prepare.horizon or fractions)")
    return split


# ---------------------------------------------------------------- scaling
@dataclass(frozen=True)
class Scaler:
    """x_scaled = (x - center) / scale. zscore: mean/std; minmax: min/(max-min); none: 0/1."""
    kind: str
    center: float
    scale: float

    def transform(self, x: np.ndarray) -> np.ndarray:
        return (x - self.center) / self.scale

    def inverse(self, x: np.ndarray) -> np.ndarray:
        return x * self.scale + self.center

    def to_dict(self) -> dict:
        return asdict(self)


def fit_scaler(train_values: np.ndarray, kind: str) -> Scaler:
    if kind == "none":
        return Scaler("none", 0.0, 1.0)
    if kind == "zscore":
        center, scale = float(np.mean(train_values)), float(np.std(train_values))
    else:
        center = float(np.min(train_values))
        scale = float(np.max(train_values)) - center
    if not scale > 0:
        raise UserInputError(
            f"prepare.scaler {kind}: the training part of the series is constant "
            f"(value {center:g}), so it has no spread to scale by; use a series that varies "
            "or prepare.scaler none")
    return Scaler(kind, center, scale)


# ---------------------------------------------------------------- past covariates
def feature_series(raw: np.ndarray, kind: str, name: str) -> np.ndarray:
    """One feature column's transform, level-aligned: ``diff`` and ``log_return`` leave the
    first value NaN (no earlier value to difference with)."""
    raw = np.asarray(raw, dtype=np.float64)
    out = np.full(len(raw), np.nan)
    if kind == "none":
        return raw.copy()
    if kind == "log1p":
        if (raw <= -1).any():
            i = int(np.flatnonzero(raw <= -1)[0])
            raise UserInputError(f"prepare.feature_transforms log1p needs values > -1 in "
                                 f"feature {name!r}, got {float(raw[i])!r} at row {i + 1}")
        return np.log1p(raw)
    if kind == "diff":
        out[1:] = np.diff(raw)
        return out
    if kind == "log_return":
        if (raw <= 0).any():
            i = int(np.flatnonzero(raw <= 0)[0])
            raise UserInputError(f"prepare.feature_transforms log_return needs positive values "
                                 f"in feature {name!r}, got {float(raw[i])!r} at row {i + 1}; use "
                                 "diff, log1p or none")
        out[1:] = np.diff(np.log(raw))
        return out
    raise ValueError(f"unknown feature transform {kind!r}")


def fit_features(raw: np.ndarray, names: tuple, kinds: tuple, offset: int, train_end: int,
                 train_start: int = 0) -> tuple[list[Scaler], np.ndarray]:
    """Transform each raw feature column (n_levels, F), align it with the model series (row j
    is level j + ``offset``, the same step as z[j]) and z-score it on the rows of the training
    targets only (``[train_start, train_end)``). Returns the scalers and the (n, F) float32
    features; a value with no transform (a differenced column's first row) is 0, the training
    mean."""
    cols, scalers = [], []
    for k, name in enumerate(names):
        f = feature_series(raw[:, k], kinds[k], name)[offset:]
        part = f[train_start:train_end]
        train = part[np.isfinite(part)]
        center = float(np.mean(train)) if len(train) else 0.0
        scale = float(np.std(train)) if len(train) else 0.0
        if not scale > 0:
            raise UserInputError(
                f"data.csv_feature_columns: feature {name!r} is constant over the training "
                f"part (value {center:g} after its transform {kinds[k]}), so it tells the "
                "model nothing; drop it")
        scalers.append(Scaler("zscore", center, scale))
        cols.append(np.nan_to_num(scalers[-1].transform(f), nan=0.0))
    return scalers, np.stack(cols, axis=1).astype(np.float32)


def apply_features(raw: np.ndarray, meta: dict) -> np.ndarray:
    """A checkpoint's feature transforms and scalers on new raw columns (n_levels, F) ->
    (n_levels - offset, F) float32, as :func:`fit_features` made them in training."""
    off = transform_offset(meta["transform"])
    cols = []
    for k, (name, kind) in enumerate(zip(meta["features"], meta["feature_transforms"])):
        f = feature_series(raw[:, k], kind, name)[off:]
        cols.append(np.nan_to_num(Scaler(**meta["feature_scalers"][k]).transform(f), nan=0.0))
    return np.stack(cols, axis=1).astype(np.float32)


# ---------------------------------------------------------------- lean windows
def gather_windows(series: ArrayOrTensor, ends: ArrayOrTensor, window: int, horizon: int
                   ) -> tuple[ArrayOrTensor, ArrayOrTensor]:
    """Inputs (N, W) and targets (N, H) for window ends ``ends``, gathered from views.

    Works on numpy arrays and torch tensors alike; only the N requested windows are copied.
    """
    if isinstance(series, np.ndarray):
        view_x = np.lib.stride_tricks.sliding_window_view(series, window)
        view_y = np.lib.stride_tricks.sliding_window_view(series, horizon)
    else:
        view_x = series.unfold(0, window, 1)   # (n - W + 1, W) view
        view_y = series.unfold(0, horizon, 1)  # (n - H + 1, H) view
    return view_x[ends - window], view_y[ends]


def gather_calendar(cal: ArrayOrTensor | None, ends: ArrayOrTensor, window: int, horizon: int
                    ) -> tuple[ArrayOrTensor, ArrayOrTensor] | None:
    """Calendar features (N, W, C) of the input steps and (N, H, C) of the target steps of
    each window, from ``cal`` (n, C) aligned with the model series; None without features."""
    if cal is None or cal.shape[1] == 0:
        return None
    if isinstance(cal, np.ndarray):
        view_x = np.lib.stride_tricks.sliding_window_view(cal, window, axis=0)
        view_y = np.lib.stride_tricks.sliding_window_view(cal, horizon, axis=0)
        return view_x[ends - window].transpose(0, 2, 1), view_y[ends].transpose(0, 2, 1)
    view_x = cal.unfold(0, window, 1)   # (n - W + 1, C, W) view
    view_y = cal.unfold(0, horizon, 1)
    return view_x[ends - window].transpose(1, 2), view_y[ends].transpose(1, 2)


# ---------------------------------------------------------------- the prepare stage's data
@dataclass(frozen=True)
class Prepared:
    """What the prepare stage writes: levels, the scaled model series, and how to undo it."""
    levels: np.ndarray   # (n_levels,) float64, the series in its own units
    signal: np.ndarray   # (n_levels,) float64, noise-free value or NaN
    t: np.ndarray        # (n_levels,) time stamps (numbers, or ISO strings)
    z: np.ndarray        # (n,) float32, transformed and scaled: what the model sees
    split: Split
    scaler: Scaler
    transform: str
    source: dict = field(default_factory=dict)  # how the series was read (kind, CSV options)
    cal: np.ndarray | None = None   # (n, C) float32 calendar features, aligned with z
    time_features: tuple = ()       # their names (prepare.time_features)
    auto: dict = field(default_factory=dict)     # what `auto` chose, and why
    # past covariates (data.csv_feature_columns): raw (n_levels, F) and how they were made;
    # their scaled values are the last F columns of ``cal``, after the calendar's
    features: tuple = ()
    feature_transforms: tuple = ()
    feature_scalers: tuple = ()
    feature_raw: np.ndarray | None = None

    @property
    def offset(self) -> int:
        return transform_offset(self.transform)

    def first_target_level(self, ends: np.ndarray) -> np.ndarray:
        """Level index of each window's first target."""
        return ends + self.offset

    def spans(self) -> dict[str, tuple[int, int]]:
        """Level-index range (first, last) of each part's targets, for shading figures."""
        s, off = self.split, self.offset
        edges = {"train": (0, s.train_end + off - 1), "val": (s.train_end + off - 1,
                 s.val_end + off - 1), "test": (s.val_end + off - 1, s.n + off - 1)}
        if s.val_end == s.train_end:
            del edges["val"]
        return edges

    def meta(self) -> dict:
        return {"window": self.split.window, "horizon": self.split.horizon,
                "transform": self.transform, "scaler": self.scaler.to_dict(),
                "split": asdict(self.split),
                "n_windows": {p: int(len(self.split.ends(p))) for p in ("train", "val", "test")},
                "source": self.source, "time_features": list(self.time_features),
                "auto": self.auto, **({
                    "features": list(self.features),
                    "feature_transforms": list(self.feature_transforms),
                    "feature_scalers": [f.to_dict() for f in self.feature_scalers]}
                    if self.features else {})}

    @property
    def n_features(self) -> int:
        return len(self.features)

    @property
    def n_time_features(self) -> int:
        """Calendar columns of ``cal`` (the features' come after them)."""
        return 0 if self.cal is None else int(self.cal.shape[1]) - self.n_features


def prepare(levels: np.ndarray, signal: np.ndarray, t: np.ndarray, *, window: int,
            horizon: int, test_frac: float, val_frac: float, scaler: str,
            transform: str, source: dict | None = None, time_features: list[str] = (),
            auto: dict | None = None, features: dict[str, np.ndarray] | None = None,
            feature_transforms: list[str] = ()) -> Prepared:
    """``features``: raw past-covariate columns by name (level-aligned), with one transform
    each in ``feature_transforms`` ([] = none for all)."""
    from .calendar import time_features as calendar
    z = to_model_series(levels, transform)
    off = transform_offset(transform)
    split = make_split(len(z), window, horizon, test_frac, val_frac, off)
    fitted = fit_scaler(z[:split.train_end], scaler)  # the train part only
    cal = calendar(t, list(time_features))[off:] if time_features else None  # z-aligned
    names, kinds, scalers, raw = (), (), (), None
    if features:
        names = tuple(features)
        kinds = tuple(feature_transforms) or ("none",) * len(names)
        raw = np.stack([np.asarray(features[n], dtype=np.float64) for n in names], axis=1)
        scalers, feats = fit_features(raw, names, kinds, off, split.train_end)
        cal = feats if cal is None else np.concatenate([cal, feats], axis=1)
    return Prepared(levels, signal, t, fitted.transform(z).astype(np.float32), split, fitted,
                    transform, dict(source or {}), cal, tuple(time_features), dict(auto or {}),
                    names, kinds, tuple(scalers), raw)


def choose_auto(levels: np.ndarray, test_frac: float, val_frac: float, window: int | str,
                patch_len: int = 0, patch_stride: int = 0) -> dict:
    """The season the training part shows (always recorded; ``evaluate.season: auto`` uses
    it) and, for ``prepare.window: auto``, the window to match; each with its reason."""
    from .seasons import detect_season, window_for
    n_train = _cut(len(levels), 1 - test_frac - val_frac)       # training targets only
    out = {"season": detect_season(levels[:n_train])}
    if window == "auto":
        out["window"] = window_for(out["season"]["season"], n_train, patch_len, patch_stride)
    return out


def refit(prep: Prepared, split: Split) -> Prepared:
    """``prep`` with another split (a backtest fold) and its scaler refitted on that split's
    training part only: no statistic from after the fold's origin."""
    raw = to_model_series(prep.levels, prep.transform)
    lo, hi = split.bounds("train")
    fitted = fit_scaler(raw[lo:hi], prep.scaler.kind)
    cal, scalers = prep.cal, prep.feature_scalers
    if prep.n_features:  # the features' scalers too, on the fold's training rows only
        scalers, feats = fit_features(prep.feature_raw, prep.features,
                                      prep.feature_transforms, prep.offset, hi, lo)
        cal = np.concatenate([prep.cal[:, :prep.n_time_features], feats], axis=1)
    return replace(prep, z=fitted.transform(raw).astype(np.float32), split=split,
                   scaler=fitted, cal=cal, feature_scalers=tuple(scalers))


def save_prepared(out_dir: str | Path, prep: Prepared) -> None:
    out = Path(out_dir)
    cal = prep.cal if prep.cal is not None else np.zeros((len(prep.z), 0), dtype=np.float32)
    extra = {"feature_raw": prep.feature_raw} if prep.n_features else {}
    write_npz(out / "series.npz", levels=prep.levels, signal=prep.signal, t=prep.t, z=prep.z,
              cal=cal, **extra)
    write_json(out / "meta.json", prep.meta())
    for name in ("panel.json", "index.npz", "levels.npy", "signal.npy", "t.npy", "z.npy"):
        (out / name).unlink(missing_ok=True)  # a panel's files, if the folder held one


def load_prepared(in_dir: str | Path) -> Prepared:
    d = Path(in_dir)
    arr, meta = read_npz(d / "series.npz"), read_json(d / "meta.json")
    cal = arr.get("cal")
    names = tuple(meta.get("features", ()))
    return Prepared(arr["levels"], arr["signal"], arr["t"], arr["z"], Split(**meta["split"]),
                    Scaler(**meta["scaler"]), meta["transform"], meta.get("source", {}),
                    cal if cal is not None and cal.shape[1] else None,
                    tuple(meta.get("time_features", ())), meta.get("auto", {}), names,
                    tuple(meta.get("feature_transforms", ())),
                    tuple(Scaler(**f) for f in meta.get("feature_scalers", ())),
                    arr.get("feature_raw") if names else None)
