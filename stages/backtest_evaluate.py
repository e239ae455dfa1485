"""Stage backtest_evaluate: score every fold's model and the baselines on that fold's test
windows (baselines fitted on the fold's training part only), then over all folds.

out: ``backtest.json`` (a DVC metrics file: per forecaster ``rmse_mean``, ``rmse_std``,
``mae_mean``, ``mase_mean`` and the per-fold values; ``n_folds``; the Diebold-Mariano tests of
the model against each baseline, pooled over the windows of every fold) and a per-fold RMSE
CSV for ``dvc plots``. With the backtest off both say so (``n_folds: 0``).
"""
from __future__ import annotations

import attn_forecast  # noqa: F401, I001  (first: pins CPU code paths before numpy and torch load)
import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from attn_forecast.backtest import aggregate
from attn_forecast.errors import run_cli
from attn_forecast.io import read_json, write_csv, write_json
from attn_forecast.metrics import CSV_DIGITS, rounded
from attn_forecast.params import load_params
from attn_forecast.windows import Split, load_prepared, refit


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--params", default="params.yaml")
    ap.add_argument("--prepared", required=True, help="folder written by prepare")
    ap.add_argument("--folds", required=True, help="folder written by backtest_train")
    ap.add_argument("--metrics", required=True, help="backtest metrics JSON to write")
    ap.add_argument("--plot", required=True, help="per-fold RMSE CSV to write")
    args = ap.parse_args(argv)
    params = load_params(args.params)
    p = params.evaluate
    entries = read_json(Path(args.folds) / "folds.json")["folds"]
    if not entries:
        # the columns dvc.yaml plots are always there, so `dvc plots` has nothing to warn about
        write_csv(args.plot, pd.DataFrame({c: [] for c in ("fold", "origin", "model", "naive",
                                                           "ridge")}))
        write_json(args.metrics, {"n_folds": 0})
        print(f"backtest_evaluate: off (backtest.folds 0) -> {args.metrics}")
        return {"n_folds": 0}

    from attn_forecast import significance  # torch and StatsForecast: only with folds
    from attn_forecast.evaluation import evaluate
    from attn_forecast.model import load_checkpoint
    from attn_forecast.preflight import season
    from attn_forecast.runtime import choose_threads, set_threads, step_flops
    prep = load_prepared(args.prepared)
    fold_metrics, rows, actual, forecasts = [], [], [], {}
    for e in entries:
        fold = refit(prep, Split(**e["split"]))
        model, _ = load_checkpoint(Path(args.folds) / e["file"])
        set_threads(choose_threads(params.train.threads,
                                   step_flops(model.settings, len(fold.split.ends("test"))) / 3))
        ev = evaluate(fold, model, baselines=p.baselines, ridge_alpha=p.ridge_alpha,
                      season=season(params, prep), noise_std=params.data.noise_std,
                      weights=False, conformal=p.conformal)
        for line in ev.warnings:
            print(f"fold {e['fold']}: {line}", file=sys.stderr)
        fold_metrics.append(ev.metrics)
        rows.append({"fold": e["fold"], "origin": ev.t[0],
                     **{n: (m or {}).get("rmse") for n, m in ev.metrics.items()
                        if n in ev.forecasts}})
        actual.append(ev.actual)
        for name, f in ev.forecasts.items():
            forecasts.setdefault(name, []).append(f)
    names = list(forecasts)
    out = aggregate(fold_metrics, names)
    # pooled over the windows of every fold; a baseline that failed in a fold is left out
    pooled = {n: np.concatenate(fs) for n, fs in forecasts.items()
              if all(f is not None for f in fs)}
    out["significance"] = significance.compare(np.concatenate(actual), pooled,
                                               prep.split.horizon)
    write_csv(args.plot, pd.DataFrame(rows), digits=CSV_DIGITS)
    write_json(args.metrics, rounded(out))
    model = out["model"]
    print(f"backtest_evaluate: {len(entries)} folds, model RMSE {model['rmse_mean']:.4f} +- "
          f"{model['rmse_std']:.4f} | " + " | ".join(
              f"{n} {out[n]['rmse_mean']:.4f}" if out[n] else f"{n} n/a" for n in names[1:])
          + f" -> {args.metrics}")
    return out


if __name__ == "__main__":
    run_cli(main)
