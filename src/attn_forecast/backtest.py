"""Rolling-origin backtest: K folds over the end of the series, each a Split of its own.

The folds share the single split's test part (the last ``test_frac`` of the series' time
stamps; ``fold_size`` 0 divides it evenly), so fold k tests the k-th block of those targets;
fold k trains on the targets before its origin only (the scaler, the model and every baseline
are fitted there afresh)::

    targets: 0 ..................................... L_test ............................ N
    fold 1:  [========== train ==========][val][gap] [test 1]
    fold 2:  [============== train ==============][val][gap] [test 2]
    ...                                                                          [test K]
    sliding: (train_size N)   [=== train ===]...

``train_size`` > 0 keeps only the last N training targets (a sliding window) instead of all
(expanding); ``gap`` targets between the training (and validation) part and the origin are
neither trained on nor tested. With ``prepare.val_frac`` > 0 each fold has a validation part
of the single split's length right before its gap.
"""
from __future__ import annotations

import hashlib
import json
import math
from dataclasses import asdict
from pathlib import Path

from .errors import UserInputError
from .params import BacktestParams, Params
from .windows import Split


def fold_splits(n: int, window: int, horizon: int, test_frac: float, val_frac: float,
                spec: BacktestParams, offset: int = 0) -> list[Split]:
    """The folds for a model series of ``n`` values (``n + offset`` levels); [] when off."""
    if spec.folds == 0:
        return []
    n_levels = n + offset
    test_start = math.floor(n_levels * (1 - test_frac) + 1e-9)
    size = spec.fold_size or (n_levels - test_start) // spec.folds
    first_origin = n_levels - spec.folds * size
    val_size = math.floor(n_levels * val_frac + 1e-9)
    if size < horizon:
        raise UserInputError(
            f"backtest.folds ({spec.folds}) leaves {size} test target(s) per fold, fewer than "
            f"prepare.horizon ({horizon}); use fewer folds or set backtest.fold_size")
    folds = []
    for k in range(spec.folds):
        origin = first_origin + k * size                  # level index of the fold's 1st target
        val_end = origin - spec.gap
        train_end = val_end - val_size
        train_start = max(0, train_end - spec.train_size) if spec.train_size else 0
        z = lambda level: max(level - offset, 0)  # noqa: E731  (level -> model index)
        folds.append(Split(n, window, horizon, train_end=z(train_end), val_end=z(val_end),
                           train_start=z(train_start), test_end=z(origin + size),
                           gap=spec.gap))
    return folds


def check_folds(folds: list[Split], val_frac: float) -> None:
    """Every fold needs a training window, a test window (and a validation one if asked)."""
    for k, s in enumerate(folds, 1):
        counts = {p: len(s.ends(p)) for p in ("train", "val", "test")}
        if counts["train"] < 1 or counts["test"] < 1 or (val_frac > 0 and counts["val"] < 1):
            raise UserInputError(
                f"backtest fold {k} of {len(folds)} has {counts['train']} train, {counts['val']}"
                f" val and {counts['test']} test windows; use fewer backtest.folds, a smaller "
                "backtest.gap or prepare.window, or a longer series")


# ---------------------------------------------------------------- training the folds
def fold_key(prepared_dir: str | Path, split: Split, params: Params) -> str:
    """What a fold's model depends on: the prepared data, the fold's boundaries and the model
    and training params (not how the run executes). Equal keys, equal checkpoints."""
    h = hashlib.sha256()
    for name in ("series.npz", "meta.json"):
        h.update((Path(prepared_dir) / name).read_bytes())
    train = params.train.model_dump(exclude={"threads", "nproc", "device", "live"})
    h.update(json.dumps([asdict(split), params.model.model_dump(), train],
                        sort_keys=True).encode())
    return h.hexdigest()


def train_fold(prepared_dir: str, split_dict: dict, params_dict: dict, out: str, key: str,
               threads: int) -> dict:
    """Train one fold's model on its training part (scaler refitted there) and save it; run
    in a worker process, which imports torch itself."""
    import torch

    from .model import save_checkpoint
    from .preflight import model_settings
    from .runtime import set_threads
    from .train import select_device, train_model
    from .windows import load_prepared, refit

    params = Params.model_validate(params_dict)
    p = params.train
    set_threads(threads)
    prep = refit(load_prepared(prepared_dir), Split(**split_dict))
    device = select_device(p.device)
    settings = model_settings(params, prep)
    z = torch.from_numpy(prep.z).to(device)
    cal = torch.from_numpy(prep.cal).to(device) if prep.cal is not None else None
    ends = {part: torch.from_numpy(prep.split.ends(part)).to(device) for part in ("train", "val")}
    model, results = train_model(settings, z, ends["train"], ends["val"], p, device,
                                 progress=False, cal=cal)
    save_checkpoint(out, model, {"prepare": prep.meta(), "fold_key": key,
                                 "best_epoch": results[0].best_epoch,
                                 "history": results[0].history})
    return {"seconds": sum(r.seconds for r in results), "epochs": len(results[0].history)}


# ---------------------------------------------------------------- scores over the folds
def aggregate(fold_metrics: list[dict], names: list[str]) -> dict:
    """backtest.json: per forecaster the mean and spread of its per-fold scores, and the
    per-fold values (None where it could not be fitted; means over the folds it was)."""
    out: dict = {"n_folds": len(fold_metrics)}
    for name in names:
        per = {k: [(m.get(name) or {}).get(k) for m in fold_metrics]
               for k in ("rmse", "mae", "mase")}
        fitted = [v for v in per["rmse"] if v is not None]
        if not fitted:
            out[name] = None
            continue

        def mean(vals):
            vals = [v for v in vals if v is not None]
            return float(sum(vals) / len(vals)) if vals else None
        m = mean(fitted)
        out[name] = {"rmse_mean": m,
                     "rmse_std": float((sum((v - m) ** 2 for v in fitted) / len(fitted)) ** 0.5),
                     "mae_mean": mean(per["mae"]), "mase_mean": mean(per["mase"]), **per}
        # interval scores, where the forecaster has intervals
        for key in sorted({k for f in fold_metrics for k in (f.get(name) or {})
                           if k.startswith(("coverage_", "width_", "winkler_"))
                           or k in ("pinball", "crps")}):
            out[name][f"{key}_mean"] = mean([(f.get(name) or {}).get(key) for f in fold_metrics])
    return out
