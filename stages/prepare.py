"""Stage prepare: cut every series into its parts, transform it and fit its scaler on its
training part; choose ``auto`` window and season from the training parts.

out: the store folder (store.json, index.npz and one memory-mappable .npy per flat array: see
src/attn_forecast/store.py). Windows are gathered on the fly later.
"""
from __future__ import annotations

import attn_forecast.cpu as _cpu  # noqa: I001
_cpu.pin()  # before numpy and torch load: the same kernels on every x86-64 CPU with AVX2
import argparse  # noqa: E402
import sys  # noqa: E402

import numpy as np  # noqa: E402

from attn_forecast import seasons, splits  # noqa: E402
from attn_forecast import store as S  # noqa: E402
from attn_forecast.errors import run_cli  # noqa: E402
from attn_forecast.params import ParamsError, chosen, load_params, profile_of  # noqa: E402
from attn_forecast.rules import check_patches  # noqa: E402
from attn_forecast.table import read_long  # noqa: E402
from attn_forecast.wiring import PREPARE_KEYS, fracs, source_record  # noqa: E402


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--params", default="params.yaml")
    ap.add_argument("--series", required=True, help="long-format CSV from generate")
    ap.add_argument("--out", required=True, help="folder for the prepared store")
    args = ap.parse_args(argv)
    params = load_params(args.params)
    p, m, d = params.prepare, params.model, params.data
    profile = {"name": profile_of(d.kind), "chosen": chosen(args.params, profile_of(d.kind))}
    raw = read_long(args.series, d.csv_feature_columns if d.kind == "csv" else [])
    if p.time_features and raw.t.dtype.kind != "M":
        raise ParamsError("prepare.time_features needs dates in the time column "
                          "(data.csv_time_column), but this data is indexed by step numbers; "
                          "set prepare.time_features to [] or read a CSV with a date column")
    if raw.horizons is not None and (raw.horizons != p.horizon).any():
        raise ParamsError(f"data.kind competition forecasts each series' whole test part at "
                          f"once: set prepare.horizon to {int(raw.horizons.max())} (the "
                          f"{d.subset} horizon), got {p.horizon}")
    n_train = splits.cut(np.diff(raw.offsets), p.test_frac, p.val_frac, p.cal_frac,
                         raw.horizons).val_start
    auto = seasons.choose(raw.levels, raw.offsets, n_train, p.window, m.patch_len,
                          m.patch_stride, periods=raw.periods)  # the training parts only
    auto["profile"] = profile
    window = auto["window"]["window"] if "window" in auto else p.window
    check_patches(window, m.patch_len, m.patch_stride)
    store = S.build(raw, window=window, horizon=p.horizon, fracs=fracs(params),
                    scaler=p.scaler, transform=p.transform, time_features=p.time_features,
                    feature_transforms=p.feature_transforms, source=source_record(d),
                    auto=auto, test_size=raw.horizons, context=p.min_context,
                    keys=PREPARE_KEYS)
    del raw
    S.save(args.out, store)
    n = store.meta()["n_windows"]
    feats = f", features {', '.join(store.features)}" if store.features else ""
    print(f"prepare: {store.n_series} series, {n['train']} train / {n['val']} val / {n['cal']} "
          f"cal / {n['test']} test windows of {window} -> {p.horizon}, scaler {p.scaler}, "
          f"transform {p.transform}{feats} -> {args.out}")
    if profile["chosen"]:
        print(f"prepare: auto for {profile['name']} data (data.kind {d.kind}): "
              + ", ".join(f"{k} {v}" for k, v in profile["chosen"].items()))
    print(f"prepare: season of the training parts: {auto['season']['season'] or 'none'} "
          f"({auto['season']['reason']})"
          + (f"; window {window} ({auto['window']['reason']})" if "window" in auto else ""))
    if store.dropped["count"]:
        print(f"prepare: warning: {store.dropped['count']} series too short for a window in "
              f"every part were left out (first: {', '.join(store.dropped['ids'])})",
              file=sys.stderr)


if __name__ == "__main__":
    run_cli(main)
