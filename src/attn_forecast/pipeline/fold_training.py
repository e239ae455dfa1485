"""The backtest_train stage's steps: the folds to train (those whose key changed) and how, and
training one fold's model in a worker process. Needs torch."""
from __future__ import annotations

import torch

from ..config.schema import Params
from ..cpu import cores
from ..data import splits
from ..data.store_io import load
from ..evaluation.backtest import fold_key, folds
from ..forecasters.neural import ModelForecaster
from ..forecasters.run import run
from ..forecasters.saved import save as save_forecasts
from ..io import sha256_file
from ..model.checkpoint import save as save_checkpoint
from ..training.batches import resolve_batch, to_device
from ..training.members import train_model
from ..training.threads import choose_threads, set_threads, step_flops
from ..training.settings import TrainSettings
from .model import device, member_settings, model_settings, prior, train_settings
from .forecasting import check_data, parts


def train_fold(prepared_dir: str, cuts: dict, settings, train: TrainSettings, device: str,
               out: str, forecasts: str, key: str, threads: int, taus: tuple, parts: tuple,
               prior_path: str | None = None, season: int = 0, combine: str = "mean",
               losses: tuple = ()) -> dict:
    """Train one fold's model on its training parts (scalers refitted there), fine-tuning the
    prior at ``prior_path`` when given; save it and its forecasts of the fold's windows; run
    in a worker process, which imports torch itself."""
    set_threads(threads)
    fold = load(prepared_dir).refit(splits.Cuts.from_dict(cuts))
    device = torch.device(device)
    data = to_device(fold, device)
    init = prior(prior_path, fold) if prior_path else None
    model, results = train_model(settings, data["z"], data["train"], data["val"], train,
                                 device, progress=False, cal=data["side"], rows=data["rows"],
                                 init=init, losses=losses, combine=combine)
    save_checkpoint(out, model, {"prepare": fold.meta(), "fold_key": key,
                                 "best_epoch": results[0].best_epoch,
                                 "history": results[0].history})
    save_forecasts(forecasts, run(fold, [ModelForecaster(model, device)], parts, taus,
                                  season=season))
    return {"seconds": sum(r.seconds for r in results), "epochs": len(results[0].history)}


def plan_folds(p: Params, prepared: str, out, before: dict, prior_path: str | None = None
               ) -> tuple[list, list, dict]:
    """The backtest's folds as index entries (fold, files, key, cuts), those to train (their
    key changed since ``before``, file -> key, or their forecasts are not in ``out``) and how
    to train them (settings, threads, jobs, device, the parts to forecast)."""
    store = load(prepared)
    pp, bt = p.prepare, p.backtest
    cuts = folds(store, bt.folds, fold_size=bt.fold_size, train_size=bt.train_size, gap=bt.gap,
                 val_frac=pp.val_frac, cal_frac=pp.cal_frac,
                 wanted=("train", "test") + (("val",) if pp.val_frac else ())
                 + (("blend",) if pp.val_frac and p.evaluate.blend else ())
                 + (("cal",) if pp.cal_frac else ()))
    season = check_data(p, store)
    settings = member_settings(p, model_settings(p, store, season, prior_path))
    n = splits.counts(cuts[-1], "train", store.window, store.horizon, store.offset)
    threads = choose_threads(p.train.threads, step_flops(
        settings[0], max(resolve_batch(p.train.batch_size, int(n.sum())), 1)))
    train = p.train.model_dump(exclude={"threads", "nproc", "device", "live"})
    if p.train.init == "pretrained":   # a new prior retrains every fold
        train["prior"] = sha256_file(prior_path)
    train["parts"] = list(parts(p, store))   # the windows each fold's model forecasts
    train["combine"] = p.model.combine
    entries = []
    for k, c in enumerate(cuts, 1):
        name = f"origin_{int(c.test_start[0])}"
        entries.append({"fold": k, "file": f"{name}.pt", "forecasts": f"{name}.npz",
                        "key": fold_key(prepared, c, [[m.to_dict() for m in settings], train]),
                        "cuts": c.to_dict()})
    todo = [e for e in entries if before.get(e["file"]) != e["key"]
            or not (out / e["forecasts"]).is_file()]
    jobs = max(1, cores() // threads) if bt.jobs == "auto" else bt.jobs
    return entries, todo, {"settings": settings, "threads": threads, "jobs": jobs,
                           "device": str(device(p.train)), "train": train_settings(p),
                           "losses": tuple(p.train.losses),
                           "prior": prior_path if p.train.init == "pretrained" else None,
                           "parts": train["parts"], "season": season,
                           "combine": p.model.combine}
