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

from attn_forecast import stage  # first: it pins the CPU before numpy loads
from attn_forecast.pipeline.backtest_evaluate import step


@stage.main
def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--params", default="params.yaml")
    for name in ("prepared", "folds", "metrics", "plot"):
        ap.add_argument(f"--{name}", required=True)
    ap.add_argument("--pretrained", help="the prior (zeroshot)")
    return step(**vars(ap.parse_args(argv)))


if __name__ == "__main__":
    stage.run(main)
