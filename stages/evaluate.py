"""Stage evaluate: score the model (forecasts from the train stage) and the baselines (from
the baselines stage) on every series' test windows. No torch here.

out: the headline metrics (a DVC metrics file: each forecaster's main scores), every score
(metrics_detail.json, committed, not a DVC metric), one row per series (DVC-cached), every
test window's first-step forecasts (DVC-cached) and the median series' last 1,000 of them
(committed, plotted), the error by steps ahead, the intervals' coverage and the fan chart's
forecasts (the forecast to use's whole horizon from the median series' last origins); and the
blend's members and each series' weights (models/blend.json: what `attn-forecast forecast`
blends), and each forecaster's calibrated interval margins (models/intervals.json: what it
widens by).
"""
from __future__ import annotations

import argparse

from attn_forecast import stage  # first: it pins the CPU before numpy loads
from attn_forecast.pipeline.evaluate import OUTPUTS, step


@stage.main
def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--params", default="params.yaml")
    for name in ("prepared", "forecasts", "baselines", *OUTPUTS):
        ap.add_argument(f"--{name.replace('_', '-')}", required=True)
    return step(**vars(ap.parse_args(argv)))


if __name__ == "__main__":
    stage.run(main)
