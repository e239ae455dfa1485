"""Stage baselines: fit every baseline on each series' training part and forecast the test
(and calibration) windows, in levels, with their intervals when intervals are scored.

out: a ForecastSet npz (no pickles), the same kind of file the train stage writes for the
model. The baselines do not depend on the model: an experiment that changes only ``model``
or ``train`` settings reuses this stage's output. No torch here.
"""
from __future__ import annotations

import argparse

from attn_forecast import stage  # first: it pins the CPU before numpy loads
from attn_forecast.pipeline.baselines import step


@stage.main
def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--params", default="params.yaml")
    ap.add_argument("--prepared", required=True)
    ap.add_argument("--out", required=True, help="baselines' forecasts (npz) to write")
    ap.add_argument("--pretrained", help="the prior (zeroshot)")
    step(**vars(ap.parse_args(argv)))


if __name__ == "__main__":
    stage.run(main)
