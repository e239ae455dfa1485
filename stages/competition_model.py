"""Stage model@<subset> of the competition pipeline (competitions/dvc.yaml): the attention model
trained on one subset's series (one global model: the subset's settings, the competition
profile of ``auto``), and its forecast of every series' test part (or validation cut); and the
same model trained on every series up to its calibration cut (the horizon before the
validation cut), forecasting that cut, where its quantiles are calibrated.

out: the model's forecasts as the leaderboard scores them, and before calibration (a compact
ForecastSet npz, committed). Its first half is the run of `dvc exp run -S
data.kind=competition -S data.subset=<subset>` on the main pipeline.
"""
from __future__ import annotations

import argparse

from attn_forecast import stage  # first: it pins the CPU before numpy loads
from attn_forecast.pipeline.competition_model import step


@stage.main
def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--params", required=True, help="the competition pipeline's params")
    ap.add_argument("--subset", required=True)
    ap.add_argument("--out", required=True, help="the model's forecasts (npz)")
    ap.add_argument("--pretrained", required=True, help="the prior (train.init pretrained)")
    step(**vars(ap.parse_args(argv)))


if __name__ == "__main__":
    stage.run(main)
