"""Stage prepare: transform, split chronologically, fit the scaler on the train part.

out: ``series.npz`` (levels, signal, time, scaled model series; no pickle) and ``meta.json``
(window, horizon, split boundaries, scaler, transform). Windows are gathered on the fly later.
A panel is written as memory-mappable arrays with an offsets table instead (panel.py).
"""
from __future__ import annotations

import attn_forecast  # noqa: F401, I001  (first: pins CPU code paths before numpy and torch load)
import argparse
import sys

import numpy as np
import pandas as pd

from attn_forecast.data import FEATURE_PREFIX, source_settings
from attn_forecast.errors import UserInputError, run_cli
from attn_forecast.panel import (choose_panel_auto, prepare_panel, read_raw_features,
                                read_raw_panel, save_panel)
from attn_forecast.params import check_patches, load_params
from attn_forecast.windows import choose_auto, prepare, save_prepared


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--params", default="params.yaml")
    ap.add_argument("--series", required=True, help="raw series CSV from generate")
    ap.add_argument("--out", required=True, help="folder for series.npz and meta.json")
    args = ap.parse_args(argv)
    params = load_params(args.params)
    p = params.prepare
    if params.data.is_panel:
        return _panel(args, params)
    raw = pd.read_csv(args.series)
    t = raw["t"].to_numpy(np.float64 if raw["t"].dtype.kind in "iuf" else str)
    levels = raw["value"].to_numpy(np.float64)
    names = params.data.csv_feature_columns if params.data.kind == "csv" else []
    missing = [n for n in names if FEATURE_PREFIX + n not in raw.columns]
    if missing:  # a series CSV written before the features were asked for
        raise UserInputError(f"{args.series} has no column for feature {missing[0]!r}; run "
                             "the generate stage again (dvc repro)")
    features = {n: raw[FEATURE_PREFIX + n].to_numpy(np.float64) for n in names}
    auto = choose_auto(levels, p.test_frac, p.val_frac, p.window,  # the training part only
                       params.model.patch_len, params.model.patch_stride)
    window = auto["window"]["window"] if "window" in auto else p.window
    check_patches(window, params.model.patch_len, params.model.patch_stride)
    prep = prepare(levels, raw["signal"].to_numpy(np.float64), t, window=window,
                   horizon=p.horizon, test_frac=p.test_frac, val_frac=p.val_frac,
                   scaler=p.scaler, transform=p.transform, source=source_settings(params.data),
                   time_features=p.time_features, auto=auto, features=features,
                   feature_transforms=p.feature_transforms)
    save_prepared(args.out, prep)
    n = prep.meta()["n_windows"]
    print(f"prepare: {n['train']} train / {n['val']} val / {n['test']} test windows of "
          f"{window} -> {p.horizon}, scaler {p.scaler}, transform {p.transform}"
          + (f", features {', '.join(names)}" if names else "") + f" -> {args.out}")
    print(f"prepare: season of the training part: {auto['season']['season'] or 'none'} "
          f"({auto['season']['reason']})"
          + (f"; window {window} ({auto['window']['reason']})" if "window" in auto else ""))


def _panel(args: argparse.Namespace, params) -> None:
    """Many series: one flat, memory-mappable store with an offsets table (panel.py)."""
    p = params.prepare
    ids, offsets, t, levels, signal = read_raw_panel(args.series)
    names = params.data.csv_feature_columns
    raw = read_raw_features(args.series, names) if names else None
    m = params.model
    auto = choose_panel_auto(offsets, levels, p.test_frac, p.val_frac, p.window, m.patch_len,
                             m.patch_stride)             # the training parts only
    window = auto["window"]["window"] if "window" in auto else p.window
    check_patches(window, m.patch_len, m.patch_stride)
    panel = prepare_panel(ids, offsets, t, levels, signal, window=window, horizon=p.horizon,
                          test_frac=p.test_frac, val_frac=p.val_frac, scaler=p.scaler,
                          transform=p.transform, source=source_settings(params.data),
                          features=raw, feature_names=tuple(names),
                          feature_transforms=tuple(p.feature_transforms),
                          time_features=tuple(p.time_features), auto=auto)
    del t, levels, signal
    save_panel(args.out, panel)
    n = panel.meta()["n_windows"]
    left = panel.dropped.get("count", 0)
    print(f"prepare: a panel of {panel.n_series} series, {n['train']} train / {n['val']} val / "
          f"{n['test']} test windows of {window} -> {p.horizon}, scaler {p.scaler} per "
          f"series, transform {p.transform}"
          + (f", features {', '.join(names)}" if names else "") + f" -> {args.out}")
    print(f"prepare: season of the training parts: {auto['season']['season'] or 'none'} "
          f"({auto['season']['reason']})"
          + (f"; window {window} ({auto['window']['reason']})" if "window" in auto else ""))
    if left:
        print(f"prepare: warning: {left} series too short for a window in every part were "
              f"left out (first: {', '.join(panel.dropped['ids'])})", file=sys.stderr)


if __name__ == "__main__":
    run_cli(main)
