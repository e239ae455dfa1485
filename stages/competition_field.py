"""Stage field@<subset> of the competition pipeline (competitions/dvc.yaml): the statistical
field on one subset, each series forecast over its test part (or, ``holdout: validation``,
over the last horizon of its train part), Naive2 where a member cannot be fitted; and again,
fitted on every series up to its calibration cut (the horizon before the validation cut), of
that cut, where every forecaster's quantiles are calibrated. No torch.

out: the field's forecasts as the leaderboard scores them (a compact ForecastSet npz,
committed, so a clone's `dvc status` is clean), Comb's before calibration too (model+comb is
calibrated by the leaderboard). It reads only the field's settings and code: a change of the
model's never refits ARIMA.
"""
from __future__ import annotations

import argparse

from attn_forecast import stage  # first: it pins the CPU before numpy loads
from attn_forecast.pipeline.competition_field import step


@stage.main
def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--params", required=True, help="the competition pipeline's params")
    ap.add_argument("--subset", required=True)
    ap.add_argument("--out", required=True, help="the field's forecasts (npz)")
    step(**vars(ap.parse_args(argv)))


if __name__ == "__main__":
    stage.run(main)
