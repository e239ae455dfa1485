"""The model's side of the stages' wiring (see wiring.py): the model settings and the training
device from ``params.yaml``, with the errors that name the keys."""
from __future__ import annotations

import shutil

import torch

from . import splits
from .model import ModelSettings
from .params import Params, ParamsError


def model_settings(p: Params, store, season: int):
    """The ModelSettings of ``params.model`` on this prepared data."""
    model = p.model.model_dump(exclude={"lookbacks"})
    if model["instance_norm"] == "seasonal" and not season:  # no season: the last value
        model["instance_norm"] = "last"
    model["quantiles"] = tuple(model["quantiles"])
    return ModelSettings(window=store.window, horizon=store.horizon,
                         n_time_features=store.n_time_features, n_features=store.n_features,
                         season=season if model["instance_norm"] == "seasonal" else 0,
                         **model)


def member_settings(p: Params, base: ModelSettings) -> list[ModelSettings]:
    """The settings of each window of an ensemble over ``model.lookbacks``, the longest
    first; [base] without lookbacks."""
    from dataclasses import replace
    return [replace(base, window=w) for w in sorted(set(p.model.lookbacks), reverse=True)] \
        or [base]


def device(p: Params):
    """``train.device`` on this machine, with the settings it cannot run caught first."""
    t = p.train
    if t.device == "cuda" and not torch.cuda.is_available():
        raise ParamsError("train.device is cuda but no CUDA device is available; use auto or "
                          "cpu")
    dev = torch.device("cuda" if t.device == "cuda" or (t.device == "auto" and
                                                         torch.cuda.is_available()) else "cpu")
    if dev.type == "cuda" and t.nproc > torch.cuda.device_count():
        raise ParamsError(f"train.nproc is {t.nproc} but only {torch.cuda.device_count()} CUDA "
                          "device(s) are visible; use at most one process per GPU")
    if t.compile and dev.type == "cpu" and not any(shutil.which(c) for c in
                                                   ("cc", "gcc", "clang")):
        raise ParamsError("train.compile on CPU needs a C/C++ compiler (cc, gcc or clang) on "
                          "PATH; install one or set train.compile false")
    return dev


def diverged(err, p: Params) -> ParamsError:
    """The one line for a training run whose loss stopped being finite."""
    return ParamsError(f"{err}; lower train.lr (now {p.train.lr}) or set train.grad_clip")


def train_fold(prepared_dir: str, cuts: dict, settings, p, device: str, out: str,
               forecasts: str, key: str, threads: int, taus: tuple, parts: tuple) -> dict:
    """Train one fold's model on its training parts (scalers refitted there), save it and its
    forecasts of the fold's windows; run in a worker process, which imports torch itself."""
    from . import checkpoint, forecasters
    from . import store as S
    from .runtime import set_threads
    from .train import ModelForecaster, train_model, to_device

    set_threads(threads)
    fold = S.load(prepared_dir).refit(splits.Cuts.from_dict(cuts))
    device = torch.device(device)
    data = to_device(fold, device)
    model, results = train_model(settings, data["z"], data["train"], data["val"], p, device,
                                 progress=False, cal=data["side"], rows=data["rows"])
    checkpoint.save(out, model, {"prepare": fold.meta(), "fold_key": key,
                                 "best_epoch": results[0].best_epoch,
                                 "history": results[0].history})
    fs = forecasters.run(fold, [ModelForecaster(model, device)], parts, taus)
    forecasters.save(forecasts, fs)
    return {"seconds": sum(r.seconds for r in results), "epochs": len(results[0].history)}


def threads_for(p: Params, settings, n_train: int, world: int) -> tuple[int, str | None]:
    """Set the torch threads ``train.threads`` asks for on this job (per process of
    ``world``); returns them and a warning for a full batch that will not fit, if any."""
    from .cpu import cores
    from .runtime import choose_threads, full_batch_warning, set_threads, step_flops
    from .train import resolve_batch
    batch = resolve_batch(p.train.batch_size, n_train)
    threads = choose_threads(p.train.threads, step_flops(settings, batch),
                             max(1, cores() // world))
    set_threads(threads)
    return threads, full_batch_warning(settings, n_train, batch)


def train(p: Params, settings, store, dist) -> tuple:
    """Build and fit the model on the store's training windows in this process of the run
    (``dist``), logging every epoch through DVCLive with ``train.live``; the process group is
    closed at the end. Returns the model and each member's FitResult."""
    from .errors import Diverged
    from .live import epoch_logger
    from .train import to_device, train_model
    data, live = to_device(store, dist.device), None
    try:
        live = epoch_logger(p.train.live and dist.rank == 0)  # DVCLive: rank 0 only
        return train_model(member_settings(p, settings), data["z"], data["train"],
                           data["val"], p.train, dist.device, wrap=dist.wrapper(p.train.compile),
                           rank=dist.rank, world=dist.world, cal=data["side"], on_epoch=live,
                           rows=data["rows"])
    except Diverged as err:
        raise diverged(err, p) from None
    finally:
        dist.close()
        if live is not None:
            live.close()


def summary(settings, model, results: list, store, dist, threads: int) -> str:
    """The train stage's line: model, size, epochs, where, how fast, the final loss."""
    from .model import n_parameters
    res = results[0]
    loss = " (pinball: model.quantiles; train.loss is for point forecasts)" \
        if settings.quantiles else ""
    members = f" x {len(results)} seeds" if len(results) > 1 else ""
    where = f" x {dist.world} processes" if dist.world > 1 else f", {threads} thread(s)"
    return (f"{settings.kind} model{members}, {n_parameters(model) // len(results)} "
            f"parameters{' each' if len(results) > 1 else ''}, {len(res.history)} epochs on "
            f"{store.n_series} series on {dist.device}{where} in "
            f"{sum(r.seconds for r in results):.2f} s ({res.windows_per_s:,.0f} windows/s), "
            f"final loss {res.history[-1]['train_loss']:.5f}{loss}, best epoch "
            f"{res.best_epoch}")


def plan_folds(p: Params, prepared: str, out, before: dict) -> tuple[list, list, dict]:
    """The backtest's folds as index entries (fold, files, key, cuts), those to train (their
    key changed since ``before``, file -> key, or their forecasts are not in ``out``) and how
    to train them (settings, threads, jobs, device)."""
    from . import splits
    from . import store as S
    from .backtest import fold_key, folds
    from .cpu import cores
    from .runtime import choose_threads, step_flops
    from .train import resolve_batch
    from .wiring import check_data
    store = S.load(prepared)
    pp, bt = p.prepare, p.backtest
    cuts = folds(store, bt.folds, fold_size=bt.fold_size, train_size=bt.train_size, gap=bt.gap,
                 val_frac=pp.val_frac, cal_frac=pp.cal_frac,
                 wanted=("train", "test") + (("val",) if pp.val_frac else ())
                 + (("cal",) if pp.cal_frac else ()),
                 keys={"folds": "backtest.folds", "fold_size": "backtest.fold_size",
                       "gap": "backtest.gap", "window": "prepare.window"})
    settings = member_settings(p, model_settings(p, store, check_data(p, store)))
    n = splits.counts(cuts[-1], "train", store.window, store.horizon, store.offset)
    threads = choose_threads(p.train.threads, step_flops(
        settings[0], max(resolve_batch(p.train.batch_size, int(n.sum())), 1)))
    train = p.train.model_dump(exclude={"threads", "nproc", "device", "live"})
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
                           "device": str(device(p))}
