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
import sys
import time

from attn_forecast import stage  # first: it pins the CPU before numpy loads
from attn_forecast.engine import where
from attn_forecast.forecasters.names import STAT_FORECASTERS
from attn_forecast.forecasters.saved import save
from attn_forecast.pipeline.competition import (field_store, on_both_cuts, reported,
                                                statistical_field)


@stage.main
def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--params", required=True, help="the competition pipeline's params")
    ap.add_argument("--subset", required=True)
    ap.add_argument("--out", required=True, help="the field's forecasts (npz)")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    fs, p, store = on_both_cuts(args.params, args.subset, field_store, statistical_field,
                                reported)
    for line in fs.warnings:
        print(line, file=sys.stderr)
    save(args.out, fs, compact=True)
    ran = bool(set(fs.names()) & set(STAT_FORECASTERS))
    print(f"field@{args.subset}: {', '.join(fs.names())} on {store.n_series} series "
          f"({p.data.holdout}, calibrated on its calibration cut) in "
          f"{time.perf_counter() - t0:.0f} s"
          f"{where(p.evaluate.engine, p.evaluate.engine_address, ran)} -> {args.out}")


if __name__ == "__main__":
    stage.run(main)
