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
import sys
from pathlib import Path

from attn_forecast import stage  # first: it pins the CPU before numpy loads
from attn_forecast.forecasters import saved
from attn_forecast.io import rounded, write_json, write_text
from attn_forecast.pipeline import leaderboard as L
from attn_forecast.pipeline.competition import SUBSETS, field_store, subset_params
from attn_forecast.report.leaderboard import markdown, test_runs

ROWS = ["model", "model+comb", "zeroshot", "comb", "m4_comb", "theta", "dot", "ets", "ces",
        "arima", "ses", "naive2", "naive", "seasonal_naive"]


@stage.main
def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--params", required=True, help="the competition pipeline's params")
    ap.add_argument("--forecasts", required=True, help="the folder of each subset's "
                    "<subset>/model.npz, field.npz and zeroshot.npz")
    ap.add_argument("--metrics", required=True, help="the leaderboard (json)")
    ap.add_argument("--table", required=True, help="the leaderboard (Markdown)")
    ap.add_argument("--published", required=True, help="the folder of the published figures")
    ap.add_argument("--test-runs", required=True,
                    help="the record of the runs that scored the test parts (csv)")
    args = ap.parse_args(argv)
    folder = Path(args.forecasts)
    subsets = [s for s in SUBSETS["m3"] if (folder / s / "model.npz").is_file()]
    evaluations, holdout = {}, "test"
    for s in subsets:
        p, prof = subset_params(args.params, s)
        holdout = p.data.holdout
        cp, cprof = subset_params(args.params, s, holdout="calibration")
        sets = {k: saved.load(folder / s / f"{k}.npz") for k in ("model", "field", "zeroshot")}
        store = field_store(p, prof)
        cut_store = field_store(cp, cprof)
        combos = L.combinations(p, store, sets, cut_store)
        ev = L.evaluated(p, store, sets, cut_store, combos=combos)
        for line in ev.warnings:
            print(f"{s}: {line}", file=sys.stderr)
        evaluations[s] = ev
        # every scored forecast is committed: the combinations across stages, scored as stored
        saved.save(folder / s / "combinations.npz", combos, compact=True)
    names = [n for n in ROWS if any(ev.metrics.get(n) for ev in evaluations.values())]
    board = L.leaderboard(evaluations, L.horizons_of(evaluations), names)
    write_json(args.metrics, rounded(board))
    command = "dvc repro competitions/dvc.yaml" + (
        " (with competitions/params.yaml holdout: validation)" if holdout != "test" else "")
    write_text(args.table, markdown(rounded(board), subsets, names, command, holdout,
                                    L.published(args.published), test_runs(args.test_runs)))
    a = board.get("all", {})
    print("leaderboard: " + ", ".join(f"{n} {a[n]['smape']:.2f} / {a[n].get('wql') or 0:.3f}"
                                      for n in ("model", "model+comb", "theta", "comb")
                                      if n in a)
          + f" (sMAPE / WQL, over all forecasts) -> {args.metrics}")
    return board


if __name__ == "__main__":
    stage.run(main)
