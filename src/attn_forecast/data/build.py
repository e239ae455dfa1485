"""The prepared store from the generate stage's table (a Raw): each series cut into its parts,
transformed and scaled by its own training part, with its calendar and past covariates; a
series without a window in every scored part is left out (counted), none left is an error.

    build = cut -> keep the usable series -> model series -> scalers -> side inputs
"""
from __future__ import annotations

import numpy as np

from ..errors import SettingError
from . import scaling, splits, transforms
from .long_table import Raw
from .store import Store, model_values


def build(raw: Raw, *, window: int, horizon: int, fracs: dict, scaler: str, transform: str,
          time_features: tuple = (), feature_transforms: tuple = (),
          test_size: np.ndarray | None = None, source: dict | None = None,
          auto: dict | None = None, context: int = 0) -> Store:
    """Cut, transform and scale every series by its own training part. ``fracs``: the
    ``test``, ``val`` and ``cal`` shares (and ``blend``: whether the validation part's second
    half is the blend's); ``test_size``: each series' test length instead of
    the test share; ``context``: the input values a window needs (0: all of them)."""
    off = transforms.offset(transform)
    cuts = splits.cut(np.diff(raw.offsets), fracs["test"], fracs["val"], fracs["cal"],
                      test_size, blend=bool(fracs.get("blend")) and fracs["val"] > 0)
    raw, cuts, dropped = usable(raw, cuts, window, horizon, off, fracs, context,
                                test_size is not None)
    values = model_values(raw.y, raw.offsets, transform, raw.ids, "<transform>")
    s = scaling.fit(values, raw.offsets, cuts.train_start, cuts.val_start, off, scaler)
    z = scaling.scale_series(values, raw.offsets, s, off)
    del values
    side, extra = side_inputs(raw, cuts, off, time_features, feature_transforms)
    return Store(raw.ids, raw.offsets, cuts, s, raw.y, raw.signal, raw.t, z, window,
                 horizon, transform, side=side, time_features=tuple(time_features),
                 source=dict(source or {}), dropped=dropped, auto=dict(auto or {}),
                 context=context, periods=raw.periods, **extra)


def usable(raw: Raw, cuts: splits.Cuts, window: int, horizon: int, off: int, fracs: dict,
           context: int, fixed_test: bool) -> tuple[Raw, splits.Cuts, dict]:
    """The series with a window in every scored part asked for (test, validation,
    calibration), their cuts, and the others counted (the first named). The model is global,
    so a series without training windows of its own is still forecast (a competition's
    shortest); no series with training windows at all is an error naming the longest."""
    n = np.diff(raw.offsets)
    if not len(n):
        raise SettingError("the data holds no series")
    parts = ("train", "test") + tuple(p for p in ("val", "cal") if fracs[p] > 0) \
        + (("blend",) if fracs.get("blend") and fracs["val"] > 0 else ())
    ok = splits.usable(cuts, window, horizon, off, parts[1:], context)
    if not (ok & splits.usable(cuts, window, horizon, off, ("train",), context)).any():
        i = int(np.argmax(n))
        got = ", ".join(f"{int(splits.counts(cuts.take([i]), p, window, horizon, off, context)[0])}"
                        f" {p}" for p in parts)
        need = splits.min_length(window, horizon, off, parts, fracs, int(n[i]), context)
        longest = f" (the longest of {len(n)} series)" if len(n) > 1 else ""
        fr = ", ".join(f"{p}_frac {fracs[p]}" for p in ("test", "val", "cal"))
        raise SettingError(
            f"series too short: {int(n[i])} values{longest} give {got} windows for window "
            f"{window} + horizon {horizon} with {fr}; "
            + (f"need at least {need} values" if need and not fixed_test else
               "need more values") + " (or a smaller <window>, <horizon> or fractions)")
    dropped = {"count": int((~ok).sum()), "ids": [str(x) for x in raw.ids[~ok][:5]]}
    if not ok.all():
        keep = np.flatnonzero(ok)
        raw, cuts = raw.take(keep), cuts.take(keep)
    return raw, cuts, dropped


def side_inputs(raw: Raw, cuts: splits.Cuts, off: int, time_features: tuple,
                feature_transforms: tuple) -> tuple[np.ndarray | None, dict]:
    """The side inputs (R, C + F): the calendar's columns, then the past covariates,
    transformed and scaled per series by its training part; and the store's feature fields."""
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
    return (np.concatenate(side, axis=1) if side else None), extra
