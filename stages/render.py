"""Stage render: the figures and the Markdown summary, from the evaluate and train outputs.

out: a folder of PNGs (overview: the source's 2x2 sheet on the median series by the model's
MASE, which for one series is the series; forecast: that series whole, and forecast_best /
forecast_worst when other series are best and worst; attention, attention_by_lag; horizon when
forecasting several steps; calibration with intervals; backtest with folds) and ``summary.md``.
No torch here: arrays and CSVs only.
"""
from __future__ import annotations

import argparse

from attn_forecast import stage  # first: it pins the CPU before numpy loads
from attn_forecast.pipeline.render import INPUTS, step


@stage.main
def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--params", default="params.yaml")
    for name in INPUTS:
        ap.add_argument(f"--{name.replace('_', '-')}", required=True)
    ap.add_argument("--figures", dest="figures_dir", required=True)
    ap.add_argument("--summary", required=True)
    step(**vars(ap.parse_args(argv)))


if __name__ == "__main__":
    stage.run(main)
