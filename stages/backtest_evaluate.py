"""Stage backtest_evaluate: score every fold's model (its forecasts from backtest_train) and
the baselines (fitted here on the fold's training parts only) on that fold's test windows,
then over all folds.

out: ``backtest.json`` (a DVC metrics file: per forecaster each score's mean over the folds
and the per-fold values, ``n_folds``, and the Diebold-Mariano tests of the model against each
baseline pooled over the windows of every fold) and a per-fold CSV of the headline score (RMSE
for one series, mean MASE for many) for ``dvc plots``. Off: both say so (``n_folds: 0``).
"""
from __future__ import annotations

import attn_forecast.cpu as _cpu  # noqa: I001
_cpu.pin()  # before numpy and torch load: the same kernels on every x86-64 CPU with AVX2
import argparse  # noqa: E402
import sys  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from attn_forecast import forecasters, significance, splits, wiring  # noqa: E402
from attn_forecast import store as S  # noqa: E402
from attn_forecast.backtest import aggregate  # noqa: E402
from attn_forecast.baselines import baselines  # noqa: E402
from attn_forecast.cpu import cores  # noqa: E402
from attn_forecast.errors import run_cli  # noqa: E402
from attn_forecast.evaluation import evaluate, units  # noqa: E402
from attn_forecast.io import read_json, write_csv, write_json  # noqa: E402
from attn_forecast.metrics import CSV_DIGITS, rounded  # noqa: E402
from attn_forecast.params import load_params  # noqa: E402


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--params", default="params.yaml")
    for name in ("prepared", "folds", "metrics", "plot"):
        ap.add_argument(f"--{name}", required=True)
    args = ap.parse_args(argv)
    params = load_params(args.params)
    e = params.evaluate
    entries = read_json(Path(args.folds) / "folds.json")["folds"]
    cols = ("fold", "origin", "model", "naive", "ridge")   # what dvc.yaml plots, always there
    rows, fold_metrics, pooled, names = [], [], {}, []
    if entries:
        store = S.load(args.prepared)
        season = wiring.check_data(params, store)
    for entry in entries:
        fold = store.refit(splits.Cuts.from_dict(entry["cuts"]))
        chosen, _ = baselines(e.baselines, season=season, ridge_alpha=e.ridge_alpha,
                                          features=fold.n_features > 0, jobs=cores())
        base = forecasters.run(fold, chosen, wiring.parts(params), wiring.taus(params))
        model = forecasters.load(Path(args.folds) / entry["forecasts"])
        fs = forecasters.with_combinations(forecasters.merge(model, base), e.combinations)
        ev = evaluate(fold, fs, noise_std=params.data.noise_std, conformal=e.conformal)
        for line in ev.warnings:
            print(f"fold {entry['fold']}: {line}", file=sys.stderr)
        fold_metrics.append(ev.metrics)
        key = "mase_mean" if ev.metrics["n_series"] > 1 else "rmse"
        rows.append({"fold": entry["fold"], "origin": fold.t[ev.ends[0]],
                     **{n: (ev.metrics[n] or {}).get(key) for n in ev.forecasts}})
        names = list(ev.forecasts)
        unit = units(fold)[fold.series_of(ev.ends)]
        for n, f in {"actual": ev.actual, "unit": unit, **ev.forecasts}.items():
            pooled.setdefault(n, []).append(f)
    out = aggregate(fold_metrics, names) if entries else {"n_folds": 0}
    if entries:
        joined = {n: np.concatenate(v) for n, v in pooled.items() if all(x is not None
                                                                        for x in v)}
        out["significance"] = significance.compare(
            joined.pop("actual"), {n: joined.get(n) for n in names}, store.horizon,
            unit=joined.pop("unit"))
    write_csv(args.plot, pd.DataFrame(rows, columns=[*cols, *(n for n in names
                                                              if n not in cols)]),
              digits=CSV_DIGITS)
    write_json(args.metrics, rounded(out))
    print(f"backtest_evaluate: {len(entries)} folds -> {args.metrics}" if entries else
          f"backtest_evaluate: off (backtest.folds 0) -> {args.metrics}")
    return out


if __name__ == "__main__":
    run_cli(main)
