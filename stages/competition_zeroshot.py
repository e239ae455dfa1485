"""Stage zeroshot@<subset> of the competition pipeline (competitions/dvc.yaml): the prior
(models/pretrained.pt, never trained on the competition) forecasting every series of one
subset zero-shot, for the field's seat that needs torch; and its calibration cut, where its
quantiles are calibrated.

out: its forecasts as the leaderboard scores them (a compact ForecastSet npz, committed).
"""
from __future__ import annotations

import argparse

from attn_forecast import stage  # first: it pins the CPU before numpy loads
from attn_forecast.pipeline.competition_zeroshot import step


@stage.main
def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--params", required=True, help="the competition pipeline's params")
    ap.add_argument("--subset", required=True)
    ap.add_argument("--out", required=True, help="the prior's forecasts (npz)")
    ap.add_argument("--pretrained", required=True, help="the prior")
    step(**vars(ap.parse_args(argv)))


if __name__ == "__main__":
    stage.run(main)
