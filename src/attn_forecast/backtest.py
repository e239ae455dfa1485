"""Rolling-origin backtest: K folds inside every series' test part (splits.folds), each a
store of its own (the scalers refitted on the fold's training parts), the model trained on it
by the backtest_train stage (wiring_torch.train_fold) and scored with every baseline by
backtest_evaluate."""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np

from . import splits
from .errors import UserInputError


def fold_key(prepared_dir: str | Path, cuts: splits.Cuts, settings: list) -> str:
    """What a fold's model depends on: the prepared data, the fold's cuts and ``settings``
    (the model and training settings, and anything else the model reads, plain data). Equal
    keys, equal checkpoints."""
    h = hashlib.sha256()
    for f in sorted(Path(prepared_dir).iterdir()):
        if f.is_file():
            h.update(f.name.encode())
            with open(f, "rb") as fh:
                while block := fh.read(1 << 24):
                    h.update(block)
    h.update(json.dumps([cuts.to_dict(), settings], sort_keys=True).encode())
    return h.hexdigest()


def folds(store, k: int, *, fold_size: int, train_size: int, gap: int, val_frac: float,
          cal_frac: float, wanted: tuple, keys: dict) -> list[splits.Cuts]:
    """``k`` folds of the store's series (splits.folds), each with windows in every part of
    ``wanted`` (else an error naming ``keys``: folds, fold_size, gap, window)."""
    n = store.lengths
    cuts = splits.folds(store.cuts, k, fold_size=fold_size, train_size=train_size, gap=gap,
                        val_size=splits.cut_at(n, val_frac), cal_size=splits.cut_at(n, cal_frac),
                        horizon=store.horizon, keys=keys)
    for j, c in enumerate(cuts, 1):
        got = {part: int(splits.counts(c, part, store.window, store.horizon,
                                       store.offset).sum()) for part in splits.PARTS}
        if any(got[part] < 1 for part in wanted):
            raise UserInputError(
                f"backtest fold {j} of {len(cuts)} has " + ", ".join(
                    f"{v} {part}" for part, v in got.items()) + f" windows; use fewer "
                f"{keys['folds']}, a smaller {keys['gap']} or {keys['window']}, or a longer "
                "series")
    return cuts


SCORES = ("rmse", "mae", "mase", "smape", "mase_mean", "smape_mean", "rmse_mean")


def aggregate(fold_metrics: list[dict], names: list[str]) -> dict:
    """backtest.json: per forecaster the mean of each per-fold score over the folds (and the
    spread of the first), and the per-fold values (None where it could not be fitted; means
    over the folds where it was)."""
    out: dict = {"n_folds": len(fold_metrics)}

    def mean(vals):
        vals = [v for v in vals if v is not None]
        return float(sum(vals) / len(vals)) if vals else None
    for name in names:
        rows = [m.get(name) or {} for m in fold_metrics]
        keys = [k for k in SCORES if any(k in r for r in rows)]
        if not keys:
            out[name] = None
            continue
        per = {k: [r.get(k) for r in rows] for k in keys}
        entry: dict = {}
        for k, v in per.items():   # rmse -> rmse_mean and the folds' rmse; mase_mean (over
            mean_key = k if k.endswith("_mean") else f"{k}_mean"    # series) -> its mean
            entry[mean_key] = mean(v)                                # and mase_mean_folds
            if k == keys[0]:
                done = [x for x in v if x is not None]
                entry[f"{k}_std"] = float(np.std(done)) if done else None
            entry[f"{k}_folds" if k.endswith("_mean") else k] = v
        for key in sorted({k for r in rows for k in r
                           if k.startswith(("coverage_", "width_", "winkler_"))
                           or k in ("pinball", "crps")}):
            entry[f"{key}_mean"] = mean([r.get(key) for r in rows])
        out[name] = entry
    return out


def score_folds(params, store, entries: list[dict], folds_dir: Path, prior: str | None = None,
                extra: tuple = ()) -> tuple[dict, list[dict], list[str], list[str]]:
    """Score every fold: its model's forecasts (backtest_train's, in ``folds_dir``) and the
    baselines, fitted on the fold's training parts only, (and the forecasters ``extra``, a
    benchmark's peers) on the fold's test windows. Returns backtest.json's content, one row
    per fold of the headline score, the forecasters' names and the warnings."""
    from . import forecasters, significance, wiring
    from .baselines import baselines
    from .cpu import cores
    from .evaluation import evaluate, units
    if not entries:
        return {"n_folds": 0}, [], [], []
    e = params.evaluate
    season = wiring.check_data(params, store)
    rows, fold_metrics, pooled, names, warnings = [], [], {}, [], []
    for entry in entries:
        fold = store.refit(splits.Cuts.from_dict(entry["cuts"]))
        chosen, _ = baselines(e.baselines, season=season, ridge_alpha=e.ridge_alpha,
                              features=fold.n_features > 0, jobs=cores(), prior=prior)
        base = forecasters.run(fold, chosen + list(extra), wiring.parts(params),
                               wiring.taus(params), fallback=forecasters.Naive2(season))
        model = forecasters.load(Path(folds_dir) / entry["forecasts"])
        fs = forecasters.with_combinations(forecasters.merge(model, base), e.combinations)
        ev = evaluate(fold, fs, noise_std=params.data.noise_std, conformal=e.conformal)
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
    out["significance"] = significance.compare(
        joined.pop("actual"), {n: joined.get(n) for n in names}, store.horizon,
        unit=joined.pop("unit"))
    return out, rows, names, warnings

