"""Stage evaluate: score the model (forecasts from the train stage) and the baselines (from
the baselines stage) on every series' test windows. No torch here.

out: the headline metrics (a DVC metrics file: each forecaster's main scores), every score
(metrics_detail.json, committed, not a DVC metric), one row per series (DVC-cached), every
test window's first-step forecasts (DVC-cached) and the median series' last 1,000 of them
(committed, plotted), the error by steps ahead and the intervals' coverage.
"""
from __future__ import annotations

import attn_forecast.cpu as _cpu  # noqa: I001
_cpu.pin()  # before numpy and torch load: the same kernels on every x86-64 CPU with AVX2
import argparse  # noqa: E402
import sys  # noqa: E402

from attn_forecast import forecasters, wiring  # noqa: E402
from attn_forecast import store as S  # noqa: E402
from attn_forecast.errors import UserInputError, run_cli  # noqa: E402
from attn_forecast.evaluation import evaluate, tables  # noqa: E402
from attn_forecast.io import write_csv, write_json  # noqa: E402
from attn_forecast.metrics import CSV_DIGITS, headline, rounded  # noqa: E402
from attn_forecast.params import load_params  # noqa: E402

OUTPUTS = ("metrics", "detail", "by_series", "predictions", "predictions_plot", "horizon",
           "calibration")


def check_fresh(fs: forecasters.ForecastSet, base: forecasters.ForecastSet, now: dict) -> None:
    """The saved forecasts were made for these params and this prepared data (a stage run by
    hand, or `dvc repro -s evaluate`, could otherwise score stale ones)."""
    stale = [f"{k} {base.record.get(k)!r} (now {v!r})" for k, v in now.items()
             if base.record.get(k) != v]
    if fs.record.get("data") != now["data"]:
        stale.append("the model's forecasts are of other prepared data")
    if stale:
        raise UserInputError(f"the saved forecasts were made with other settings: "
                             f"{', '.join(stale)}; run `dvc repro` so they are made again")


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--params", default="params.yaml")
    for name in ("prepared", "forecasts", "baselines", *OUTPUTS):
        ap.add_argument(f"--{name.replace('_', '-')}", required=True)
    args = ap.parse_args(argv)
    params = load_params(args.params, S.profile(args.prepared))
    store = S.load(args.prepared)
    season = wiring.check_data(params, store)
    model, base = forecasters.load(args.forecasts), forecasters.load(args.baselines)
    check_fresh(model, base, wiring.baselines_record(params, store, season))
    fs = forecasters.with_combinations(forecasters.merge(model, base),
                                       params.evaluate.combinations)
    ev = evaluate(store, fs, noise_std=params.data.noise_std,
                  conformal=params.evaluate.conformal)
    for line in ev.warnings:
        print(line, file=sys.stderr)
    ev.metrics["unavailable"] = base.record.get("unavailable", {})
    out = tables(ev, store)
    for name in ("by_series", "predictions", "predictions_plot", "horizon", "calibration"):
        write_csv(getattr(args, name), out[name], digits=CSV_DIGITS)
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
    run_cli(main)
