"""The model's side of the stages' wiring (see wiring.py): the model settings, the prior and
the training runs from ``params.yaml``, with the errors that name the keys."""
from __future__ import annotations

import torch

from . import splits
from .model import ModelSettings
from .params import Params, ParamsError


def prior(path: str, store=None, p: Params | None = None):
    """The prior (the pretrain stage's checkpoint) as a model for this data's horizon, with
    the errors that name the keys."""
    from . import checkpoint
    from .model import with_horizon
    model = checkpoint.model_from(checkpoint.read(path, "the prior (models/pretrained.pt)"))
    if store is None:
        return model
    s = model.settings
    if store.horizon > s.horizon:
        raise ParamsError(f"prepare.horizon ({store.horizon}) is longer than the prior's "
                          f"horizon ({s.horizon}); set train.init scratch, or pretrain one "
                          f"with pretrain.horizon >= {store.horizon}")
    if p is not None and p.model.quantiles and tuple(p.model.quantiles) != s.quantiles:
        raise ParamsError(f"model.quantiles with train.init pretrained must be [] or the "
                          f"prior's levels {list(s.quantiles)}, got {list(p.model.quantiles)}")
    if p is not None and p.model.lookbacks:
        raise ParamsError("model.lookbacks needs train.init scratch (the prior has one window, "
                          f"{s.window} steps), got {p.model.lookbacks}")
    return with_horizon(model, store.horizon)


def model_settings(p: Params, store, season: int, prior_path: str | None = None):
    """The ModelSettings of ``params.model`` on this prepared data; with ``train.init``
    pretrained, the prior's (``prior_path``) for this horizon (model.* is not used)."""
    if p.train.init == "pretrained":
        if prior_path is None:
            raise ParamsError("train.init pretrained needs the prior (--pretrained)")
        return prior(prior_path, store, p).settings
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
    windows = sorted(set(p.model.lookbacks), reverse=True)
    if base.instance_norm == "seasonal" and windows and windows[-1] < base.season:
        raise ParamsError(f"model.instance_norm seasonal needs a season of at most each "
                          f"window: model.lookbacks has {windows[-1]}, below evaluate.season "
                          f"{base.season}")
    return [replace(base, window=w) for w in windows] or [base]


def diverged(err, p: Params) -> ParamsError:
    """The one line for a training run whose loss stopped being finite."""
    return ParamsError(f"{err}; lower train.lr (now {p.train.lr}) or set train.grad_clip")


def train_fold(prepared_dir: str, cuts: dict, settings, p, device: str, out: str,
               forecasts: str, key: str, threads: int, taus: tuple, parts: tuple,
               prior_path: str | None = None) -> dict:
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
    init = prior(prior_path, fold) if p.init == "pretrained" else None
    model, results = train_model(settings, data["z"], data["train"], data["val"], p, device,
                                 progress=False, cal=data["side"], rows=data["rows"],
                                 init=init)
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


def train(p: Params, settings, store, dist, prior_path: str | None = None) -> tuple:
    """Build and fit the model on the store's training windows in this process of the run
    (``dist``), logging every epoch through DVCLive with ``train.live``; the process group is
    closed at the end. Returns the model and each member's FitResult."""
    from .errors import Diverged
    from .live import epoch_logger
    from .train import to_device, train_model
    data, live = to_device(store, dist.device), None
    init = prior(prior_path, store, p) if p.train.init == "pretrained" else None
    try:
        live = epoch_logger(p.train.live and dist.rank == 0)  # DVCLive: rank 0 only
        return train_model(member_settings(p, settings), data["z"], data["train"],
                           data["val"], p.train, dist.device, wrap=dist.wrapper(p.train.compile),
                           rank=dist.rank, world=dist.world, cal=data["side"], on_epoch=live,
                           rows=data["rows"], init=init)
    except Diverged as err:
        raise diverged(err, p) from None
    finally:
        dist.close()
        if live is not None:
            live.close()


def summary(settings, model, results: list, store, dist, threads: int,
            init: str = "scratch") -> str:
    """The train stage's line: model, size, epochs, where, how fast, the final loss."""
    from .model import n_parameters
    res = results[0]
    loss = " (pinball: model.quantiles; train.loss is for point forecasts)" \
        if settings.quantiles else ""
    members = f" x {len(results)} seeds" if len(results) > 1 else ""
    members += ", fine-tuned from the prior" if init == "pretrained" else ""
    where = f" x {dist.world} processes" if dist.world > 1 else f", {threads} thread(s)"
    return (f"{settings.kind} model{members}, {n_parameters(model) // len(results)} "
            f"parameters{' each' if len(results) > 1 else ''}, {len(res.history)} epochs on "
            f"{store.n_series} series on {dist.device}{where} in "
            f"{sum(r.seconds for r in results):.2f} s ({res.windows_per_s:,.0f} windows/s), "
            f"final loss {res.history[-1]['train_loss']:.5f}{loss}, best epoch "
            f"{res.best_epoch}"
            + (" (no epoch improved on the prior's validation loss: the prior kept)"
               if init == "pretrained" and res.best_epoch == 0 else ""))


def plan_folds(p: Params, prepared: str, out, before: dict, prior_path: str | None = None
               ) -> tuple[list, list, dict]:
    """The backtest's folds as index entries (fold, files, key, cuts), those to train (their
    key changed since ``before``, file -> key, or their forecasts are not in ``out``) and how
    to train them (settings, threads, jobs, device)."""
    from . import splits
    from . import store as S
    from .backtest import fold_key, folds
    from .cpu import cores
    from .runtime import choose_threads, step_flops
    from .train import resolve_batch
    from .wiring import check_data, device
    store = S.load(prepared)
    pp, bt = p.prepare, p.backtest
    cuts = folds(store, bt.folds, fold_size=bt.fold_size, train_size=bt.train_size, gap=bt.gap,
                 val_frac=pp.val_frac, cal_frac=pp.cal_frac,
                 wanted=("train", "test") + (("val",) if pp.val_frac else ())
                 + (("cal",) if pp.cal_frac else ()),
                 keys={"folds": "backtest.folds", "fold_size": "backtest.fold_size",
                       "gap": "backtest.gap", "window": "prepare.window"})
    settings = member_settings(p, model_settings(p, store, check_data(p, store), prior_path))
    n = splits.counts(cuts[-1], "train", store.window, store.horizon, store.offset)
    threads = choose_threads(p.train.threads, step_flops(
        settings[0], max(resolve_batch(p.train.batch_size, int(n.sum())), 1)))
    train = p.train.model_dump(exclude={"threads", "nproc", "device", "live"})
    if p.train.init == "pretrained":   # a new prior retrains every fold
        from .io import sha256_file
        train["prior"] = sha256_file(prior_path)
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
                           "device": str(device(p)), "prior": prior_path}

