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
import sys

from attn_forecast import stage  # first: it pins the CPU before numpy loads
from attn_forecast.config.load import load_params
from attn_forecast.data.store_io import load, profile
from attn_forecast.evaluation.metrics import headline
from attn_forecast.evaluation.tables import tables
from attn_forecast.forecasters import saved
from attn_forecast.io import CSV_DIGITS, rounded, write_csv, write_json
from attn_forecast.pipeline.forecasting import baselines_record, check_data
from attn_forecast.pipeline.evaluate import blend_file, check_fresh, score

OUTPUTS = ("metrics", "detail", "by_series", "predictions", "predictions_plot", "horizon",
           "calibration", "fan", "blend", "intervals")


@stage.main
def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--params", default="params.yaml")
    for name in ("prepared", "forecasts", "baselines", *OUTPUTS):
        ap.add_argument(f"--{name.replace('_', '-')}", required=True)
    args = ap.parse_args(argv)
    params = load_params(args.params, profile(args.prepared))
    store = load(args.prepared)
    season = check_data(params, store)
    model, base = saved.load(args.forecasts), saved.load(args.baselines)
    check_fresh(model, base, baselines_record(params, store, season))
    ev = score(params, store, model, base, season)
    for line in ev.warnings:
        print(line, file=sys.stderr)
    out = tables(ev, store)
    for name in ("by_series", "predictions", "predictions_plot", "horizon", "calibration",
                 "fan"):
        write_csv(getattr(args, name), out[name], digits=CSV_DIGITS)
    write_json(args.blend, blend_file(params, store, season, ev))
    write_json(args.intervals, ev.intervals)
    write_json(args.detail, rounded(ev.metrics))
    top = {**headline({n: ev.metrics[n] for n in ev.forecasts}), "n_test": ev.metrics["n_test"]}
    write_json(args.metrics, rounded(top))
    key = "mase_mean" if ev.metrics["n_series"] > 1 else "rmse"
    scores = " | ".join(f"{n} {m[key]:.4g}" if m else f"{n} n/a"
                        for n, m in ((n, ev.metrics[n]) for n in ev.forecasts))
    print(f"evaluate: {ev.metrics['n_series']} series, {ev.metrics['n_test']} test windows, "
          f"{key} {scores} -> {args.metrics}")
    return ev.metrics


if __name__ == "__main__":
    stage.run(main)
