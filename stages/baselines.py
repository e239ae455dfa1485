"""Stage baselines: fit every baseline on the training part and forecast the test windows.

out: one npz (no pickles) of each baseline's forecasts in levels, their quantile forecasts when
intervals are scored (``model.quantiles``, or ``evaluate.conformal`` split), and the warnings
of those that could not be fitted. The baselines do not depend on the model: an experiment
that changes only ``model`` or ``train`` settings reuses this stage's output. No torch here.
"""
from __future__ import annotations

import attn_forecast  # noqa: F401, I001  (first: pins CPU code paths before numpy and torch load)
import argparse
import sys

from attn_forecast.baselines import (Baselines, baseline_taus, fit_baselines, fitted_settings,
                                    save_baselines)
from attn_forecast.errors import run_cli
from attn_forecast.params import load_params
from attn_forecast.preflight import check as preflight
from attn_forecast.preflight import season
from attn_forecast.panel import load_data, panel_baselines


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--params", default="params.yaml")
    ap.add_argument("--prepared", required=True)
    ap.add_argument("--out", required=True, help="baselines npz to write")
    args = ap.parse_args(argv)
    params = load_params(args.params)
    p = params.evaluate
    prep = load_data(args.prepared)
    preflight(params, prep)
    if getattr(prep, "is_panel", False):  # every series at once (panel.py)
        forecasts, warnings = panel_baselines(prep, p.baselines, ridge_alpha=p.ridge_alpha,
                                              season=season(params, prep))
        b = Baselines(forecasts, {}, (), warnings, list(p.baselines),
                      fitted_settings(prep, p.ridge_alpha, season(params, prep)))
    else:
        b = fit_baselines(prep, p.baselines, ridge_alpha=p.ridge_alpha,
                          season=season(params, prep),
                          taus=baseline_taus(params.model.quantiles, p.conformal))
    for line in b.warnings:
        print(line, file=sys.stderr)
    save_baselines(args.out, b)
    fitted = [n for n, f in b.forecasts.items() if f is not None]
    print(f"baselines: {', '.join(fitted) or 'none'} on {len(prep.split.ends('test'))} test "
          f"windows{' with intervals' if b.quantiles else ''} -> {args.out}")


if __name__ == "__main__":
    run_cli(main)
