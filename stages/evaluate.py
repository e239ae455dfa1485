"""Stage evaluate: score the model and the baselines (fitted by stage baselines) on the test
windows.

out: metrics JSON (model + every baseline, original units), test predictions CSV (first step
ahead; every test window, DVC-cached, and its last 1,000 windows, committed for ``dvc plots``),
RMSE by steps ahead CSV, attention-by-lag CSV, the attention weights (npz) the figures need,
and the metrics by series CSV (one row for a single series). A panel is scored per series and
over series (mean MASE is its headline); its plotted sample is the median series'.
"""
from __future__ import annotations

import attn_forecast  # noqa: F401, I001  (first: pins CPU code paths before numpy and torch load)
import argparse
import sys

import numpy as np

from attn_forecast.baselines import baseline_taus, check_matches, load_baselines
from attn_forecast.errors import run_cli
from attn_forecast.evaluation import (evaluate, evaluate_panel, panel_tables, plot_sample,
                                     single_row, tables)
from attn_forecast.io import write_csv, write_json, write_npz
from attn_forecast.metrics import CSV_DIGITS, rounded
from attn_forecast.model import load_checkpoint
from attn_forecast.preflight import check as preflight
from attn_forecast.preflight import season
from attn_forecast.params import load_params
from attn_forecast.runtime import choose_threads, set_threads, step_flops
from attn_forecast.panel import load_data


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--params", default="params.yaml")
    ap.add_argument("--prepared", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--baselines", required=True, help="npz written by the baselines stage")
    ap.add_argument("--metrics", required=True)
    ap.add_argument("--predictions", required=True,
                    help="every test window's predictions CSV (a DVC-cached output)")
    ap.add_argument("--predictions-plot", required=True,
                    help="the last test windows' predictions CSV (committed, plotted)")
    ap.add_argument("--horizon", required=True, help="RMSE by steps ahead CSV")
    ap.add_argument("--lags", required=True, help="attention by lag CSV")
    ap.add_argument("--attention", required=True, help="attention weights npz")
    ap.add_argument("--calibration", required=True,
                    help="nominal vs empirical interval coverage CSV")
    ap.add_argument("--by-series", required=True,
                    help="metrics by series CSV (one row for a single series)")
    args = ap.parse_args(argv)
    params = load_params(args.params)
    p = params.evaluate
    prep = load_data(args.prepared)
    preflight(params, prep)
    model, _ = load_checkpoint(args.model)  # CPU: small, and byte-stable metrics
    n_test = len(prep.split.ends("test"))  # forward only: a third of a training step's work
    set_threads(choose_threads(params.train.threads, step_flops(model.settings, n_test) / 3))
    base = load_baselines(args.baselines)
    check_matches(base, p.baselines, baseline_taus(model.settings.quantiles, p.conformal),
                  prep, p.ridge_alpha, season(params, prep))
    if getattr(prep, "is_panel", False):
        return _panel(args, params, prep, model, base)
    ev = evaluate(prep, model, baselines=base, ridge_alpha=p.ridge_alpha,
                  season=season(params, prep), noise_std=params.data.noise_std,
                  conformal=p.conformal)
    for line in ev.warnings:
        print(line, file=sys.stderr)

    out = tables(ev, model.settings)
    _write_weights(args.attention, ev, prep.split.window)
    for name in ("predictions", "horizon", "lags", "calibration"):
        write_csv(getattr(args, name), out[name], digits=CSV_DIGITS)
    write_csv(args.predictions_plot, plot_sample(out["predictions"]), digits=CSV_DIGITS)
    write_csv(args.by_series, single_row(ev.metrics, list(ev.forecasts)), digits=CSV_DIGITS)
    write_json(args.metrics, rounded(ev.metrics))
    m = ev.metrics
    scores = " | ".join(f"{name} {v['rmse']:.4f}" if v else f"{name} n/a"
                        for name, v in m.items() if name in ev.forecasts)
    print(f"evaluate: {m['n_test']} test windows, RMSE {scores} -> {args.metrics}")
    return m


def _write_weights(path: str, ev, window: int) -> None:
    empty = np.zeros((0, 0, window, window))
    write_npz(path, mean=ev.mean_weights if ev.mean_weights is not None else empty,
              example=ev.example_weights if ev.example_weights is not None else empty)


def _panel(args: argparse.Namespace, params, panel, model, base) -> dict:
    """One global model over many series: scores per series and over series."""
    ev = evaluate_panel(panel, model, baselines=base, noise_std=params.data.noise_std)
    for line in ev.warnings:
        print(line, file=sys.stderr)
    out = panel_tables(ev, panel, model.settings)
    _write_weights(args.attention, ev, panel.window)
    for name in ("predictions", "horizon", "lags", "calibration"):
        write_csv(getattr(args, name), out[name], digits=CSV_DIGITS)
    write_csv(args.predictions_plot, out["predictions_plot"], digits=CSV_DIGITS)
    write_csv(args.by_series, out["by_series"], digits=CSV_DIGITS)
    write_json(args.metrics, rounded(ev.metrics))
    m = ev.metrics
    scores = " | ".join(f"{name} {v['mase_mean']:.4f}" if v else f"{name} n/a"
                        for name, v in m.items() if name in ev.forecasts)
    print(f"evaluate: {m['n_series']} series, {m['n_test']} test windows, mean MASE {scores} "
          f"-> {args.metrics}")
    return m


if __name__ == "__main__":
    run_cli(main)
