"""Stage backtest_evaluate's step: every fold's model forecasts and the baselines, fitted on
the fold's training parts only, scored on the fold's test windows, then over the folds; the
metrics file and the per-fold CSV. No torch (but for the zero-shot prior)."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd

from ..config.load import load_params
from ..data.store_io import load as load_store, profile
from ..io import CSV_DIGITS, read_json, rounded, write_csv, write_json

from ..data import splits
from ..evaluation import significance
from ..evaluation.backtest import aggregate
from ..evaluation.scoring import evaluate, units
from ..forecasters.names import BLEND
from ..forecasters.run import run
from ..forecasters.saved import load
from .baselines import field_of
from ..setup.forecasting import check_data, parts, levels_of
from .evaluate import combined


def score_folds(params, store, entries: list[dict], folds_dir: Path, prior: str | None = None,
                extra: tuple = (), blends: dict | None = None
                ) -> tuple[dict, list[dict], list[str], list[str]]:
    """Score every fold: its model's forecasts (backtest_train's, in ``folds_dir``) and the
    baselines, fitted on the fold's training parts only, (and the forecasters ``extra``, a
    benchmark's peers, and ``blends``, its blends beside evaluate.blend's) on the fold's test
    windows. Returns backtest.json's content, one row per fold of the headline score, the
    forecasters' names and the warnings."""
    if not entries:
        return {"n_folds": 0}, [], [], []
    e = params.evaluate
    season = check_data(params, store)
    rows, fold_metrics, pooled, names, warnings = [], [], {}, [], []
    for entry in entries:
        fold = store.refit(splits.Cuts.from_dict(entry["cuts"]))
        chosen, _ = field_of(params, season, fold.n_features > 0, prior)
        base = run(fold, chosen + list(extra), parts(params, fold), levels_of(params),
                   season=season)
        model = load(Path(folds_dir) / entry["forecasts"])
        fs = combined(params, fold, model, base, e.conformal == "split", blends)
        ev = evaluate(fold, fs, noise_std=params.data.noise_std, season=season,
                      few=e.few_windows,
                      conformal=e.conformal)
        warnings += [f"fold {entry['fold']}: {line}" for line in ev.warnings]
        fold_metrics.append(ev.metrics)
        key = "mase_mean" if ev.metrics["n_series"] > 1 else "rmse"
        rows.append({"fold": entry["fold"], "origin": fold.t[ev.ends[0]],
                     **{n: (ev.metrics[n] or {}).get(key) for n in ev.forecasts}})
        names = list(ev.forecasts)
        unit = units(fold)[fold.series_of(ev.ends)]
        for n, f in {"actual": ev.actual, "unit": unit, **ev.forecasts}.items():
            pooled.setdefault(n, []).append(f)
    out = aggregate(fold_metrics, names)
    joined = {n: np.concatenate(v) for n, v in pooled.items() if all(x is not None for x in v)}
    actual, unit = joined.pop("actual"), joined.pop("unit")
    points = {n: joined.get(n) for n in names}
    out["significance"] = significance.compare(actual, points, store.horizon, unit=unit)
    if points.get(BLEND) is not None:
        out["significance_blend"] = significance.compare(actual, points, store.horizon,
                                                         BLEND, unit=unit)
    return out, rows, names, warnings


def step(params: str, prepared: str, folds: str, metrics: str, plot: str,
         pretrained: str | None) -> dict:
    """backtest_evaluate: the folds of ``folds`` (backtest_train's folder) scored ->
    ``metrics`` (json) and ``plot`` (the headline score per fold, csv)."""
    p = load_params(params, profile(prepared))
    entries = read_json(Path(folds) / "folds.json")["folds"]
    store = load_store(prepared) if entries else None
    out, rows, names, warnings = score_folds(p, store, entries, Path(folds), prior=pretrained)
    for line in warnings:
        print(line, file=sys.stderr)
    cols = ("fold", "origin", "model", "naive", "ridge")   # what dvc.yaml plots, always there
    write_csv(plot, pd.DataFrame(rows, columns=[*cols, *(n for n in names if n not in cols)]),
              digits=CSV_DIGITS)
    write_json(metrics, rounded(out))
    print(f"backtest_evaluate: {len(entries)} folds -> {metrics}" if entries else
          f"backtest_evaluate: off (backtest.folds 0) -> {metrics}")
    return out
