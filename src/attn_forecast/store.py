"""The prepared dataset: 1..N series in one flat, memory-mappable layout.

Series ``i`` is rows ``offsets[i]:offsets[i + 1]`` of every flat array: ``levels`` (its own
units), ``signal`` (a synthetic series' noise-free value, else NaN), ``t`` (numbers or
datetime64) and ``z`` (the transformed, scaled model series, level-aligned: see
transforms.py), and optionally ``side`` (calendar inputs, then the scaled past covariates).
Each series has its own parts (splits.Cuts) and its own scaler, fitted on its training part.
A single series is the case N = 1: there is no other layout.

On disk (the prepare stage's folder): ``store.json`` (settings and what ``auto`` chose),
``index.npz`` (ids, offsets, cuts, scalers) and one ``.npy`` per flat array, which the later
stages memory-map (copy-on-write: a process reads only the pages its windows touch).
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from . import scaling, splits, transforms
from .errors import UserInputError
from .io import read_json, read_npz, replace_files, write_json
from .windows import concat_ranges

STORE_FILE = "store.json"
ARRAYS = ("levels", "signal", "t", "z")


@dataclass(frozen=True)
class Store:
    ids: np.ndarray            # (S,) str
    offsets: np.ndarray        # (S + 1,) int64
    cuts: splits.Cuts          # each series' parts, in its own rows
    scalers: scaling.Scalers   # each series' scaler of the model series
    levels: np.ndarray         # (R,) float64
    signal: np.ndarray         # (R,) float64, NaN where there is none
    t: np.ndarray              # (R,) float64 steps or datetime64[s] times
    z: np.ndarray              # (R,) float32, level-aligned, scaled
    window: int
    horizon: int
    transform: str
    side: np.ndarray | None = None       # (R, C + F) float32: calendar, then past covariates
    time_features: tuple = ()            # the calendar's names (C = 2 columns each)
    features: tuple = ()                 # past covariates' names (F)
    feature_transforms: tuple = ()
    feature_cols: np.ndarray | None = None    # (R, F) transformed, unscaled (for refits)
    feature_center: np.ndarray | None = None  # (S, F)
    feature_scale: np.ndarray | None = None
    source: dict = field(default_factory=dict)   # how the data was read
    dropped: dict = field(default_factory=dict)  # series too short: {"count", "ids"}
    auto: dict = field(default_factory=dict)     # what `auto` chose, and why
    context: int = 0                     # input values a window needs (0: all; fewer: padded)
    periods: np.ndarray | None = None    # (S,) each series' seasonal period, where known

    # ------------------------------------------------------------ shape
    @property
    def offset(self) -> int:
        return transforms.offset(self.transform)

    @property
    def n_series(self) -> int:
        return len(self.ids)

    @property
    def lengths(self) -> np.ndarray:
        return np.diff(self.offsets)

    @property
    def n_features(self) -> int:
        return len(self.features)

    @property
    def n_time_features(self) -> int:
        return 2 * len(self.time_features)

    # ------------------------------------------------------------ windows
    def ends(self, part: str) -> np.ndarray:
        return splits.ends(self.offsets, self.cuts, part, self.window, self.horizon,
                           self.offset, self.context)

    def counts(self, part: str) -> np.ndarray:
        return splits.counts(self.cuts, part, self.window, self.horizon, self.offset,
                             self.context)

    def first_rows(self, ends: np.ndarray) -> np.ndarray | None:
        """Each window's first row with a model value, where windows may be padded (a
        ``context`` below the window); None where every window is whole."""
        if not self.context or self.context >= self.window:
            return None
        return self.offsets[self.series_of(ends)] + self.offset

    def lags(self) -> np.ndarray:
        """(S,) the lag of each series' in-sample naive error (MASE's scale): its period, where
        the data gives one, else 1."""
        p = self.periods if self.periods is not None else np.ones(self.n_series, np.int64)
        return np.maximum(p, 1)

    def series_of(self, ends: np.ndarray) -> np.ndarray:
        return np.searchsorted(self.offsets, ends, side="right") - 1

    def targets(self, ends: np.ndarray) -> np.ndarray:
        """(N, H) levels of each window's targets."""
        return self.levels[ends[:, None] + np.arange(self.horizon)[None, :]]

    def last(self, ends: np.ndarray) -> np.ndarray:
        """(N,) the last level known before each window's targets."""
        return self.levels[ends - 1]

    def to_levels(self, z_pred: np.ndarray, ends: np.ndarray) -> np.ndarray:
        """Model-space forecasts (N, H) (or quantiles (N, H, Q)) back in levels."""
        if z_pred.ndim == 3:
            return np.stack([self.to_levels(z_pred[..., k], ends)
                             for k in range(z_pred.shape[-1])], axis=-1)
        sid = self.series_of(ends)
        unscaled = self.scalers.invert(z_pred.astype(np.float64), sid[:, None])
        return transforms.to_levels(unscaled, self.last(ends), self.transform)

    def rows(self, i: int) -> slice:
        return slice(int(self.offsets[i]), int(self.offsets[i + 1]))

    def train_levels(self, i: int) -> np.ndarray:
        """Series ``i``'s training part in levels (its in-sample part)."""
        a = int(self.offsets[i])
        return self.levels[a + int(self.cuts.train_start[i]):a + int(self.cuts.val_start[i])]

    # ------------------------------------------------------------ records
    def meta(self) -> dict:
        """What a checkpoint keeps of the data: settings, sizes and every series' scalers (the
        forecast command scales each id as training did)."""
        series = {"ids": [str(i) for i in self.ids], **self.scalers.to_dict()}
        if self.n_features:
            series.update(feature_center=self.feature_center.tolist(),
                          feature_scale=self.feature_scale.tolist())
        return {"window": self.window, "horizon": self.horizon, "transform": self.transform,
                "scaler": self.scalers.kind, "n_series": self.n_series,
                "n_windows": {p: int(self.counts(p).sum()) for p in splits.PARTS},
                "time_features": list(self.time_features), "features": list(self.features),
                "feature_transforms": list(self.feature_transforms), "source": self.source,
                "dropped": self.dropped, "auto": self.auto, "context": self.context,
                "series": series}

    def key(self) -> str:
        """A short hash of the data (its model series, parts and metadata)."""
        import hashlib
        import json
        h = hashlib.sha256(np.ascontiguousarray(self.z).tobytes())
        h.update(json.dumps([self.meta(), self.cuts.to_dict()], sort_keys=True,
                            default=str).encode())
        return h.hexdigest()[:16]

    def refit(self, cuts: splits.Cuts) -> Store:
        """The same data cut by ``cuts`` (a backtest fold), every scaler refitted on the new
        training parts only: no statistic from after a fold's origin."""
        raw = model_values(self.levels, self.offsets, self.transform, self.ids)
        s = scaling.fit(raw, self.offsets, cuts.train_start, cuts.val_start, self.offset,
                        self.scalers.kind)
        z = scaling.scale_series(raw, self.offsets, s, self.offset)
        side, fc, fs = self.side, self.feature_center, self.feature_scale
        if self.n_features:
            scaled, fc, fs = scaling.fit_columns(self.feature_cols, self.offsets,
                                                 cuts.train_start, cuts.val_start, self.offset)
            side = np.concatenate([self.side[:, :self.n_time_features], scaled], axis=1)
        return replace(self, cuts=cuts, scalers=s, z=z, side=side, feature_center=fc,
                       feature_scale=fs)


def model_values(levels: np.ndarray, offsets: np.ndarray, transform: str, ids: np.ndarray,
                 what: str = "transform") -> np.ndarray:
    """The unscaled, level-aligned model series of every series (float64)."""
    out = np.empty(len(levels))
    for i in range(len(offsets) - 1):
        a, b = int(offsets[i]), int(offsets[i + 1])
        try:
            out[a:b] = transforms.model_series(levels[a:b], transform, what)
        except UserInputError as err:
            raise UserInputError(f"series '{ids[i]}': {err}" if len(ids) > 1 else str(err)) \
                from None
    bad = ~np.isfinite(out)
    if bad.any():
        i = int(np.searchsorted(offsets, np.flatnonzero(bad)[0], side="right") - 1)
        raise UserInputError(f"series '{ids[i]}': {what} {transform} gives a value that is not "
                             "finite; use diff or none")
    return out


def save(folder: str | Path, s: Store) -> None:
    """Write the store, replacing whatever the folder held."""
    with replace_files(folder) as tmp:
        arrays = {name: getattr(s, name) for name in ARRAYS}
        if s.side is not None:
            arrays["side"] = s.side
        if s.feature_cols is not None:
            arrays["feature_cols"] = s.feature_cols
        for name, a in arrays.items():
            np.save(tmp / f"{name}.npy", np.ascontiguousarray(a), allow_pickle=False)
        index = {"ids": s.ids.astype(str), "offsets": s.offsets, "center": s.scalers.center,
                 "scale": s.scalers.scale,
                 **dict(zip(("train_start", "val_start", "cal_start", "test_start", "test_end"),
                            s.cuts.arrays()))}
        if s.n_features:
            index.update(feature_center=s.feature_center, feature_scale=s.feature_scale)
        if s.periods is not None:
            index["periods"] = s.periods
        with open(tmp / "index.npz", "wb") as fh:
            np.savez(fh, **index)
        meta = {k: v for k, v in s.meta().items() if k != "series"}
        write_json(tmp / STORE_FILE, meta)


def profile(folder: str | Path) -> str | None:
    """The profile (synthetic, real) the prepared data's ``auto`` values were chosen for, so
    that every later stage resolves ``auto`` as prepare did; None without prepared data (the
    stage then gives its own error)."""
    path = Path(folder) / STORE_FILE
    if not path.is_file():
        return None
    return (read_json(path).get("auto", {}).get("profile") or {}).get("name")


def load(folder: str | Path, mmap: bool = True) -> Store:
    """The prepared store; the flat arrays memory-mapped."""
    d = Path(folder)
    if not (d / STORE_FILE).is_file():
        raise UserInputError(f"{d} holds no prepared data; run the prepare stage (dvc repro)")
    meta, idx = read_json(d / STORE_FILE), read_npz(d / "index.npz")

    def arr(name: str):
        path = d / f"{name}.npy"
        return np.load(path, mmap_mode="c" if mmap else None, allow_pickle=False) \
            if path.is_file() else None
    cuts = splits.Cuts(*(idx[k] for k in ("train_start", "val_start", "cal_start",
                                          "test_start", "test_end")))
    return Store(idx["ids"], idx["offsets"], cuts,
                 scaling.Scalers(meta["scaler"], idx["center"], idx["scale"]),
                 *(arr(name) for name in ARRAYS), meta["window"], meta["horizon"],
                 meta["transform"], side=arr("side"),
                 time_features=tuple(meta["time_features"]), features=tuple(meta["features"]),
                 feature_transforms=tuple(meta["feature_transforms"]),
                 feature_cols=arr("feature_cols"), feature_center=idx.get("feature_center"),
                 feature_scale=idx.get("feature_scale"), source=meta["source"],
                 dropped=meta["dropped"], auto=meta["auto"], context=meta.get("context", 0),
                 periods=idx.get("periods"))


@dataclass(frozen=True)
class Raw:
    """The generate stage's long table as flat arrays (rows grouped by id, in time order)."""
    ids: np.ndarray                   # (S,) str
    offsets: np.ndarray               # (S + 1,) int64
    t: np.ndarray                     # (R,) float64 or datetime64[s]
    levels: np.ndarray                # (R,) float64
    signal: np.ndarray                # (R,) float64
    features: np.ndarray | None = None   # (R, F) raw past covariates
    feature_names: tuple = ()
    horizons: np.ndarray | None = None   # (S,) a competition's test length of each series
    periods: np.ndarray | None = None    # (S,) each series' seasonal period, where known

    def take(self, keep: np.ndarray) -> Raw:
        """Only the series ``keep`` (indices)."""
        rows = concat_ranges(self.offsets[keep], self.offsets[keep + 1])
        n = np.diff(self.offsets)[keep]
        per = (lambda a: None if a is None else a[keep])  # noqa: E731
        return Raw(self.ids[keep], np.concatenate([[0], np.cumsum(n)]).astype(np.int64),
                   self.t[rows], self.levels[rows], self.signal[rows],
                   None if self.features is None else self.features[rows], self.feature_names,
                   per(self.horizons), per(self.periods))


def build(raw: Raw, *, window: int, horizon: int, fracs: dict, scaler: str, transform: str,
          time_features: tuple = (), feature_transforms: tuple = (),
          test_size: np.ndarray | None = None, source: dict | None = None,
          auto: dict | None = None, context: int = 0, keys: dict) -> Store:
    """Cut, transform and scale every series by its own training part. ``fracs``: the
    ``test``, ``val`` and ``cal`` shares; ``test_size``: each series' test length instead of
    the test share; ``context``: the input values a window needs (0: all of them). Series
    without a window in every scored part asked for (test, validation, calibration) are left
    out (counted,
    the first named); none left is an error. ``keys`` name the settings in errors
    (``window``, ``horizon``, ``transform``)."""
    off = transforms.offset(transform)
    n = np.diff(raw.offsets)
    if not len(n):
        raise UserInputError("the data holds no series")
    cuts = splits.cut(n, fracs["test"], fracs["val"], fracs["cal"], test_size)
    parts = ("train", "test") + tuple(p for p in ("val", "cal") if fracs[p] > 0)
    # a series is kept with a window in every scored part; the model is global, so one
    # without training windows of its own is still forecast (a competition's shortest)
    ok = splits.usable(cuts, window, horizon, off, parts[1:], context)
    if not (ok & splits.usable(cuts, window, horizon, off, ("train",), context)).any():
        i = int(np.argmax(n))
        got = ", ".join(f"{int(splits.counts(cuts.take([i]), p, window, horizon, off, context)[0])}"
                        f" {p}" for p in parts)
        need = splits.min_length(window, horizon, off, parts, fracs, int(n[i]), context)
        longest = f" (the longest of {len(n)} series)" if len(n) > 1 else ""
        fr = ", ".join(f"{p}_frac {fracs[p]}" for p in ("test", "val", "cal"))
        raise UserInputError(
            f"series too short: {int(n[i])} values{longest} give {got} windows for window "
            f"{window} + horizon {horizon} with {fr}; "
            + (f"need at least {need} values" if need and test_size is None else
               "need more values")
            + f" (or a smaller {keys['window']}, {keys['horizon']} or fractions)")
    dropped = {"count": int((~ok).sum()), "ids": [str(x) for x in raw.ids[~ok][:5]]}
    if not ok.all():
        keep = np.flatnonzero(ok)
        raw, cuts = raw.take(keep), cuts.take(keep)
    values = model_values(raw.levels, raw.offsets, transform, raw.ids, keys["transform"])
    s = scaling.fit(values, raw.offsets, cuts.train_start, cuts.val_start, off, scaler)
    z = scaling.scale_series(values, raw.offsets, s, off)
    del values
    side, extra = [], {}
    if time_features:
        from .calendar import time_features as calendar
        side.append(calendar(raw.t, list(time_features)))
    if raw.feature_names:
        names = tuple(raw.feature_names)
        kinds = tuple(feature_transforms) or ("none",) * len(names)
        cols = np.empty(raw.features.shape)
        for i in range(len(raw.ids)):
            a, b = int(raw.offsets[i]), int(raw.offsets[i + 1])
            for k, name in enumerate(names):
                where = f"feature {name!r}" + (f" of series '{raw.ids[i]}'"
                                                if len(raw.ids) > 1 else "")
                cols[a:b, k] = transforms.feature_series(raw.features[a:b, k], kinds[k], where)
        scaled, fc, fs = scaling.fit_columns(cols, raw.offsets, cuts.train_start,
                                             cuts.val_start, off)
        side.append(scaled)
        extra = {"features": names, "feature_transforms": kinds, "feature_cols": cols,
                 "feature_center": fc, "feature_scale": fs}
    return Store(raw.ids, raw.offsets, cuts, s, raw.levels, raw.signal, raw.t, z, window,
                 horizon, transform,
                 side=np.concatenate(side, axis=1) if side else None,
                 time_features=tuple(time_features), source=dict(source or {}),
                 dropped=dropped, auto=dict(auto or {}), context=context,
                 periods=raw.periods, **extra)
