"""The prepared dataset: 1..N series in one flat, memory-mappable layout.

Series ``i`` is rows ``offsets[i]:offsets[i + 1]`` of every flat array: ``y`` (its values in
its own units), ``signal`` (a synthetic series' noise-free value, else NaN), ``t`` (numbers or
datetime64) and ``z`` (the transformed, scaled model series, row-aligned with ``y``: see
transforms.py), and optionally ``side`` (calendar inputs, then the scaled past covariates).
Each series has its own parts (splits.Cuts) and its own scaler, fitted on its training part.
A single series is the case N = 1: there is no other layout.

Built by build.py from the generate stage's table; written and read by store_io.py.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from ..errors import SettingError
from . import scaling, splits, transforms


@dataclass(frozen=True)
class Store:
    ids: np.ndarray            # (S,) str
    offsets: np.ndarray        # (S + 1,) int64
    cuts: splits.Cuts          # each series' parts, in its own rows
    scalers: scaling.Scalers   # each series' scaler of the model series
    y: np.ndarray              # (R,) float64, in the series' own units
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
        """(S,) the lag of each series' in-sample naive error (MASE's and MSIS's scale, as the
        M4 competition set it): its period, where the data gives one (a competition's), else
        the season prepare chose (evaluate.season), else 1."""
        p = self.periods if self.periods is not None else np.ones(self.n_series, np.int64)
        return np.maximum(p, 1)

    def series_of(self, ends: np.ndarray) -> np.ndarray:
        return np.searchsorted(self.offsets, ends, side="right") - 1

    def targets(self, ends: np.ndarray) -> np.ndarray:
        """(N, H) values (``y``) of each window's targets."""
        return self.y[ends[:, None] + np.arange(self.horizon)[None, :]]

    def last(self, ends: np.ndarray) -> np.ndarray:
        """(N,) the last level known before each window's targets."""
        return self.y[ends - 1]

    def to_y(self, z_pred: np.ndarray, ends: np.ndarray) -> np.ndarray:
        """Model-space forecasts (N, H) (or quantiles (N, H, Q)) back in the series' units."""
        if z_pred.ndim == 3:
            return np.stack([self.to_y(z_pred[..., k], ends)
                             for k in range(z_pred.shape[-1])], axis=-1)
        sid = self.series_of(ends)
        unscaled = self.scalers.invert(z_pred.astype(np.float64), sid[:, None])
        return transforms.to_y(unscaled, self.last(ends), self.transform)

    def rows(self, i: int) -> slice:
        return slice(int(self.offsets[i]), int(self.offsets[i + 1]))

    def train_y(self, i: int) -> np.ndarray:
        """Series ``i``'s training part in its own units (its in-sample part)."""
        a = int(self.offsets[i])
        return self.y[a + int(self.cuts.train_start[i]):a + int(self.cuts.val_start[i])]

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
        raw = model_values(self.y, self.offsets, self.transform, self.ids)
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


def model_values(y: np.ndarray, offsets: np.ndarray, transform: str, ids: np.ndarray,
                 what: str = "<transform>") -> np.ndarray:
    """The unscaled, level-aligned model series of every series (float64)."""
    out = np.empty(len(y))
    for i in range(len(offsets) - 1):
        a, b = int(offsets[i]), int(offsets[i + 1])
        try:
            out[a:b] = transforms.model_series(y[a:b], transform, what)
        except SettingError as err:
            raise SettingError(f"series '{ids[i]}': {err.template}" if len(ids) > 1
                               else err.template) from None
    bad = ~np.isfinite(out)
    if bad.any():
        i = int(np.searchsorted(offsets, np.flatnonzero(bad)[0], side="right") - 1)
        raise SettingError(f"series '{ids[i]}': {what} {transform} gives a value that is not "
                           "finite; use diff or none")
    return out
