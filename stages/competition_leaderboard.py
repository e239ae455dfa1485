"""Stage leaderboard of the competition pipeline (competitions/dvc.yaml): every subset's field
and model forecasts (and their combinations) scored on the same series, their intervals
calibrated on the subset's calibration cut (by each stage; model+comb here), then pooled: each
subset's column and "all" by the field's rule (the mean over all forecasts) beside the mean
over series; MASE, OWA, WQL, MSIS, coverage, the fev aggregate, the sign test against Theta.

out: the leaderboard (a DVC metrics file, so `dvc metrics diff` shows whether M3 moved), its
Markdown tables with the published figures (competitions/published/) beside, and each subset's
combinations across stages as scored (<subset>/combinations.npz: with the stages' files, every
scored forecast is committed, so the leaderboard can be recomputed from them alone).
"""
from __future__ import annotations

import argparse

from attn_forecast import stage  # first: it pins the CPU before numpy loads
from attn_forecast.pipeline.competition_leaderboard import step


@stage.main
def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--params", required=True, help="the competition pipeline's params")
    ap.add_argument("--forecasts", required=True, help="the folder of each subset's "
                    "<subset>/model.npz, field.npz and zeroshot.npz")
    ap.add_argument("--metrics", required=True, help="the leaderboard (json)")
    ap.add_argument("--table", required=True, help="the leaderboard (Markdown)")
    ap.add_argument("--published", required=True, help="the folder of the published figures")
    ap.add_argument("--test-runs", dest="test_runs_file", required=True,
                    help="the record of the runs that scored the test parts (csv)")
    return step(**vars(ap.parse_args(argv)))


if __name__ == "__main__":
    stage.run(main)
