"""Stage baselines: fit every baseline on each series' training part and forecast the test
(and calibration) windows, in levels, with their intervals when intervals are scored.

out: a ForecastSet npz (no pickles), the same kind of file the train stage writes for the
model. The baselines do not depend on the model: an experiment that changes only ``model``
or ``train`` settings reuses this stage's output. No torch here.
"""
from __future__ import annotations

import argparse
import sys

from attn_forecast import stage  # first: it pins the CPU before numpy loads
from attn_forecast.config.load import load_params
from attn_forecast.data.store_io import load, profile
from attn_forecast.engine import where
from attn_forecast.forecasters.names import STAT_FORECASTERS
from attn_forecast.forecasters.saved import save
from attn_forecast.pipeline.field import field
from attn_forecast.pipeline.forecasting import check_data


@stage.main
def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--params", default="params.yaml")
    ap.add_argument("--prepared", required=True)
    ap.add_argument("--out", required=True, help="baselines' forecasts (npz) to write")
    ap.add_argument("--pretrained", help="the prior (zeroshot)")
    args = ap.parse_args(argv)
    params = load_params(args.params, profile(args.prepared))
    store = load(args.prepared)
    season = check_data(params, store)
    fs = field(params, store, season, args.pretrained)
    for line in fs.warnings:
        print(line, file=sys.stderr)
    found = (store.auto.get("season") or {}).get("season") or 0
    if params.evaluate.season == 0 and found > 1:
        print(f"baselines: note: evaluate.season is 0, so they fit no season; the training "
              f"parts' season is {found} (prepare): set evaluate.season to auto to use it",
              file=sys.stderr)
    save(args.out, fs)
    fitted = [n for n, parts in fs.forecasts.items() if parts.get("test") is not None]
    ran = bool(set(fitted) & set(STAT_FORECASTERS))
    print(f"baselines: {', '.join(fitted) or 'none'} on {len(fs.ends['test'])} test windows of "
          f"{store.n_series} series{' with intervals' if fs.taus else ''}"
          f"{where(params.evaluate.engine, params.evaluate.engine_address, ran)} -> "
          f"{args.out}")


if __name__ == "__main__":
    stage.run(main)
