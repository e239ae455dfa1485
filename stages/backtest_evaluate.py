"""Stage backtest_evaluate: score every fold's model (its forecasts from backtest_train) and
the baselines (fitted here on the fold's training parts only) on that fold's test windows,
then over all folds.

out: ``backtest.json`` (a DVC metrics file: per forecaster each score's mean over the folds
and the per-fold values, ``n_folds``, and the Diebold-Mariano tests of the model against each
baseline pooled over the windows of every fold) and a per-fold CSV of the headline score (RMSE
for one series, mean MASE for many) for ``dvc plots``. Off: both say so (``n_folds: 0``).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from attn_forecast import stage  # first: it pins the CPU before numpy loads

import pandas as pd  # (after the pin)

from attn_forecast.config.load import load_params
from attn_forecast.data.store_io import load, profile
from attn_forecast.io import CSV_DIGITS, read_json, rounded, write_csv, write_json
from attn_forecast.pipeline.backtest_evaluate import score_folds


@stage.main
def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--params", default="params.yaml")
    for name in ("prepared", "folds", "metrics", "plot"):
        ap.add_argument(f"--{name}", required=True)
    ap.add_argument("--pretrained", help="the prior (zeroshot)")
    args = ap.parse_args(argv)
    params = load_params(args.params, profile(args.prepared))
    entries = read_json(Path(args.folds) / "folds.json")["folds"]
    store = load(args.prepared) if entries else None
    out, rows, names, warnings = score_folds(params, store, entries, Path(args.folds),
                                             prior=args.pretrained)
    for line in warnings:
        print(line, file=sys.stderr)
    cols = ("fold", "origin", "model", "naive", "ridge")   # what dvc.yaml plots, always there
    write_csv(args.plot, pd.DataFrame(rows, columns=[*cols, *(n for n in names
                                                              if n not in cols)]),
              digits=CSV_DIGITS)
    write_json(args.metrics, rounded(out))
    print(f"backtest_evaluate: {len(entries)} folds -> {args.metrics}" if entries else
          f"backtest_evaluate: off (backtest.folds 0) -> {args.metrics}")
    return out


if __name__ == "__main__":
    stage.run(main)
