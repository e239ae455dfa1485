"""Stage backtest_train's step: the folds to train (those whose key changed) and how, each
trained in a worker process (its model and its forecasts of the fold's windows), the stale
files removed and the index written. Torch is imported only where a fold trains (off: none)."""
from __future__ import annotations

import multiprocessing
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from ..config.load import load_params
from ..config.schema import Params
from ..cpu import cores
from ..data import splits
from ..data.store_io import load, profile
from ..evaluation.backtest import fold_key
from ..forecasters.run import run
from ..forecasters.saved import save as save_forecasts
from ..io import read_json, sha256_file, sha256_tree, write_json
from ..training.settings import TrainSettings
from ..training.threads import choose_threads, set_threads, step_flops
from ..setup.folds import backtest_folds
from ..setup.forecasting import check_data, parts, levels_of


def train_fold(prepared_dir: str, cuts: dict, settings, train: TrainSettings, device: str,
               out: str, forecasts: str, key: str, threads: int, levels: tuple, parts: tuple,
               prior_path: str | None = None, season: int = 0, combine: str = "mean",
               losses: tuple = ()) -> dict:
    """Train one fold's model on its training parts (scalers refitted there), fine-tuning the
    prior at ``prior_path`` when given; save it and its forecasts of the fold's windows; run
    in a worker process, which imports torch itself."""
    import torch
    from ..forecasters.neural import ModelForecaster
    from ..model.checkpoint import save as save_checkpoint
    from ..training.batches import to_device
    from ..training.members import QUIET, train_model
    from ..setup.training import prior
    set_threads(threads)
    fold = load(prepared_dir).refit(splits.Cuts.from_dict(cuts))
    device = torch.device(device)
    data = to_device(fold, device)
    init = prior(prior_path, fold) if prior_path else None
    model, results = train_model(settings, data, train, QUIET, init=init, losses=losses,
                                 combine=combine)
    save_checkpoint(out, model, {"prepare": fold.meta(), "fold_key": key,
                                 "best_epoch": results[0].best_epoch,
                                 "history": results[0].history})
    save_forecasts(forecasts, run(fold, [ModelForecaster(model, device)], parts, levels,
                                  season=season))
    return {"seconds": sum(r.seconds for r in results), "epochs": len(results[0].history)}


def plan_folds(p: Params, prepared: str, out, before: dict, prior_path: str | None = None
               ) -> tuple[list, list, dict]:
    """The backtest's folds as index entries (fold, files, key, cuts), those to train (their
    key changed since ``before``, file -> key, or their forecasts are not in ``out``) and how
    to train them (settings, threads, jobs, device, the parts to forecast). Imports torch."""
    from ..training.batches import resolve_batch
    from ..setup.training import device, member_settings, model_settings, train_settings
    store = load(prepared)
    bt = p.backtest
    cuts = backtest_folds(p, store)
    season = check_data(p, store)
    settings = member_settings(p, model_settings(p, store, season, prior_path))
    n = splits.counts(cuts[-1], "train", store.window, store.horizon, store.offset)
    threads = choose_threads(p.train.threads, step_flops(
        settings[0], max(resolve_batch(p.train.batch_size, int(n.sum())), 1)))
    train = p.train.model_dump(exclude={"threads", "nproc", "device", "live"})
    if p.train.init == "pretrained":   # a new prior retrains every fold
        train["prior"] = sha256_file(prior_path)
    # so does an edit of the code (DVC reruns the stage for it; the folds' keys must see it)
    train["code"] = sha256_tree(Path(__file__).resolve().parents[1])
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


def step(params: str, prepared: str, out: str, pretrained: str | None) -> dict:
    """backtest_train: every fold whose key changed trained -> ``out`` (a checkpoint and
    forecasts per fold, ``folds.json``); returns how many folds there are and were trained."""
    method = "spawn" if "torch" in sys.modules else "fork"  # fork: before torch has run
    p = load_params(params, profile(prepared))
    out = Path(out)
    index = out / "folds.json"
    before = {f["file"]: f["key"] for f in (read_json(index)["folds"] if index.is_file() else [])}
    entries, todo, how = [], [], {}
    if p.backtest.folds:
        entries, todo, how = plan_folds(p, prepared, out, before, pretrained)
    out.mkdir(parents=True, exist_ok=True)  # after every check: a refusal leaves nothing
    t0 = time.perf_counter()
    if todo:
        ctx = multiprocessing.get_context(method)
        with ProcessPoolExecutor(max_workers=min(how["jobs"], len(todo)), mp_context=ctx) as pool:
            runs = [pool.submit(train_fold, prepared, e["cuts"], how["settings"], how["train"],
                                how["device"], str(out / e["file"]), str(out / e["forecasts"]),
                                e["key"], how["threads"], levels_of(p), how["parts"], how["prior"],
                                how["season"], how["combine"], how["losses"])
                    for e in todo]
            for r in runs:
                r.result()
    keep = {f for e in entries for f in (e["file"], e["forecasts"])}
    for stale in [*out.glob("*.pt"), *out.glob("*.npz")]:  # the folder is what DVC hashes
        if stale.name not in keep:
            stale.unlink()
    write_json(index, {"folds": entries})
    print(f"backtest_train: {len(entries)} folds, {len(todo)} trained "
          f"({len(entries) - len(todo)} unchanged) in {time.perf_counter() - t0:.1f} s -> {out}"
          if entries else f"backtest_train: off (backtest.folds 0) -> {out}")
    return {"folds": len(entries), "trained": len(todo)}
