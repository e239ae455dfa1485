"""Stage prepare: transform, split chronologically, fit the scaler on the train part.

out: ``series.npz`` (levels, signal, time, scaled model series; no pickle) and ``meta.json``
(window, horizon, split boundaries, scaler, transform). Windows are gathered on the fly later.
"""
from __future__ import annotations

import attn_forecast  # noqa: F401, I001  (first: pins CPU code paths before numpy and torch load)
import argparse

import numpy as np
import pandas as pd

from attn_forecast.data import FEATURE_PREFIX, source_settings
from attn_forecast.errors import UserInputError, run_cli
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


if __name__ == "__main__":
    run_cli(main)
