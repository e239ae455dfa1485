"""Stage backtest_train: train the model once per rolling-origin fold (backtest.folds > 0).

The folds lie inside every series' test part; fold k trains on the data before its origins
only (every scaler refitted there). out: a folder with each fold's checkpoint and forecasts
(``origin_<t>.pt`` and ``.npz``, t = the first series' first test target) and ``folds.json``
(fold, files, cuts, and the key of what its model depends on: the prepared data, the fold's
cuts, the settings, the prior and the package's code). Folds whose key did not change are not
retrained (the folder is a persistent DVC output), so `dvc exp run -S
backtest.folds=...` with a fixed ``backtest.fold_size`` trains only the new folds. Folds train
in parallel worker processes (``backtest.jobs``). Off (``folds: 0``): an empty index, no torch.
"""
from __future__ import annotations

import argparse

from attn_forecast import stage  # first: it pins the CPU before numpy loads
from attn_forecast.pipeline.backtest_train import step


@stage.main
def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--params", default="params.yaml")
    ap.add_argument("--prepared", required=True, help="folder written by prepare")
    ap.add_argument("--out", required=True, help="folder for the folds' models and forecasts")
    ap.add_argument("--pretrained", help="the prior (train.init pretrained)")
    return step(**vars(ap.parse_args(argv)))


if __name__ == "__main__":
    stage.run(main)
