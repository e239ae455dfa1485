"""Stage prepare: cut every series into its parts, transform it and fit its scaler on its
training part; choose ``auto`` window and season from the training parts.

out: the store folder (store.json, index.npz and one memory-mappable .npy per flat array: see
src/attn_forecast/data/store_io.py). Windows are gathered on the fly later.
"""
from __future__ import annotations

import argparse
import sys

from attn_forecast import stage  # first: it pins the CPU before numpy loads
from attn_forecast.config.load import load_with_choices
from attn_forecast.data.long_table import read_long
from attn_forecast.data.store_io import save
from attn_forecast.pipeline.data import prepare, report


@stage.main
def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--params", default="params.yaml")
    ap.add_argument("--series", required=True, help="long-format CSV from generate")
    ap.add_argument("--out", required=True, help="folder for the prepared store")
    args = ap.parse_args(argv)
    params, chosen, prof = load_with_choices(args.params)
    profile = {"name": prof["profile"], "resolved": prof}   # what every later stage resolves by
    d = params.data
    raw = read_long(args.series, d.csv_feature_columns if d.kind == "csv" else [])
    store = prepare(params, raw, profile, auto_keys=set(chosen))
    del raw
    save(args.out, store)
    lines, warnings = report(store, params, profile["name"], chosen)
    lines[0] += f" -> {args.out}"
    print("\n".join(lines))
    for line in warnings:
        print(line, file=sys.stderr)


if __name__ == "__main__":
    stage.run(main)
