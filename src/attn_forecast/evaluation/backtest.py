"""Rolling-origin backtest: K folds inside every series' test part (splits.folds), each a
store of its own (the scalers refitted on the fold's training parts), their keys (what a
fold's model depends on) and the scores over the folds. The backtest stages train and score
them (pipeline/backtest_evaluate.py)."""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np

from ..data import splits


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
                           or k in ("pinball", "crps", "wql", "msis")}):
            entry[f"{key}_mean"] = mean([r.get(key) for r in rows])
        out[name] = entry
    return out
