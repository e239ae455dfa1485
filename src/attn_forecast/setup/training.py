"""The training setup, written once for the stages, the search and the benchmarks
(:func:`fit`): the model's settings from params (or the prior's), the device, the threads,
training it, and the line that says what ran. Needs torch."""
from __future__ import annotations

import shutil
import sys
from dataclasses import dataclass

import torch

from ..config.schema import Params
from ..cpu import cores
from ..errors import ParamsError
from ..forecasters.zeroshot import load_prior
from ..model.networks import n_parameters, with_horizon
from ..model.settings import ModelSettings
from ..training.batches import resolve_batch, to_device
from ..training.members import Job, train_model
from ..training.distributed import Distributed
from ..training.settings import TrainSettings
from ..training.threads import choose_threads, full_batch_warning, set_threads, step_flops
from .forecasting import check_norm


def prior(path: str, store=None, p: Params | None = None):
    """The prior (the pretrain stage's checkpoint) as a model for this data's horizon (a longer
    one than its own extends its head: networks.with_horizon), with the errors that name the
    keys."""
    if store is None:
        return load_prior(path)
    model = load_prior(path)
    s = model.settings
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
    norm = p.model.instance_norm
    if norm == "seasonal" and not season:  # no season: the last value
        norm = "last"
    check_norm(norm, season, store.window)
    return ModelSettings.of(p.model.model_dump(), instance_norm=norm, window=store.window,
                            horizon=store.horizon, n_time_features=store.n_time_features,
                            n_features=store.n_features,
                            season=season if norm == "seasonal" else 0)


def train_settings(p: Params) -> TrainSettings:
    """``params.train`` as the library's training settings (what the loop reads)."""
    return TrainSettings.of(p.train.model_dump())


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


def device(t, name: str = "train") -> torch.device:
    """The device of the training settings ``t`` (params.yaml's ``name`` section: train, or
    pretrain.train) on this machine, with the settings it cannot run caught first."""
    if t.device == "cuda" and not torch.cuda.is_available():
        raise ParamsError(f"{name}.device is cuda but no CUDA device is available; use auto "
                          "or cpu")
    dev = torch.device("cuda" if t.device == "cuda" or (t.device == "auto" and
                                                         torch.cuda.is_available()) else "cpu")
    if dev.type == "cuda" and t.nproc > torch.cuda.device_count():
        raise ParamsError(f"{name}.nproc is {t.nproc} but only {torch.cuda.device_count()} CUDA "
                          "device(s) are visible; use at most one process per GPU")
    if t.compile and dev.type == "cpu" and not any(shutil.which(c) for c in
                                                   ("cc", "gcc", "clang")):
        raise ParamsError(f"{name}.compile on CPU needs a C/C++ compiler (cc, gcc or clang) "
                          f"on PATH; install one or set {name}.compile false")
    return dev


def threads_for(p: Params, settings, n_train: int, world: int) -> tuple[int, str | None]:
    """Set the torch threads ``train.threads`` asks for on this job (per process of
    ``world``); returns them and a warning for a full batch that will not fit, if any."""
    batch = resolve_batch(p.train.batch_size, n_train)
    threads = choose_threads(p.train.threads, step_flops(settings, batch),
                             max(1, cores() // world))
    set_threads(threads)
    return threads, full_batch_warning(settings, n_train, batch)


def train(p: Params, settings, store, dist, prior_path: str | None = None,
          watch=None) -> tuple:
    """Build and fit the model on the store's training windows in this process of the run
    (``dist``), logging every epoch through DVCLive with ``train.live``; the process group is
    closed at the end. Returns the model and each member's FitResult. ``watch(row, member)``:
    see :class:`~attn_forecast.training.members.Job`."""
    from ..training.live import epoch_logger
    data, live = to_device(store, dist.device), None
    init = prior(prior_path, store, p) if p.train.init == "pretrained" else None
    try:
        live = epoch_logger(p.train.live and dist.rank == 0)  # DVCLive: rank 0 only
        job = Job(wrap=dist.wrapper(p.train.compile), rank=dist.rank, world=dist.world,
                  on_epoch=live, watch=watch)
        return train_model(member_settings(p, settings), data, train_settings(p), job,
                           init=init, losses=tuple(p.train.losses), combine=p.model.combine)
    finally:
        dist.close()
        if live is not None:
            live.close()


def summary(settings, model, results: list, store, dist, threads: int,
            init: str = "scratch") -> str:
    """The train stage's line: model, size, epochs, where, how fast, the final loss."""
    res = results[0]
    loss = "" if not settings.quantiles else \
        " (the pinball loss of the prior's quantile head)" if init == "pretrained" else \
        " (the pinball loss of model.quantiles; train.loss is for point forecasts)"
    windows = sorted({r.window for r in results}, reverse=True)
    losses = list(dict.fromkeys(r.loss for r in results))
    seeds = len(results) // len(windows) // len(losses)
    members = (f" x {seeds} seeds" if seeds > 1 else "") + \
        (f" x {len(losses)} losses ({', '.join(losses)})" if len(losses) > 1 else "") + \
        (f" x {len(windows)} lookbacks ({', '.join(map(str, windows))} steps)"
         if len(windows) > 1 else "")
    members += f", their {getattr(model, 'combine', 'mean')}" if len(results) > 1 else ""
    members += ", fine-tuned from the prior" if init == "pretrained" else ""
    where = f" x {dist.world} processes" if dist.world > 1 else f", {threads} thread(s)"
    size = f"{n_parameters(model) // len(results)} parameters each" if len(windows) == 1 \
        and len(results) > 1 else f"{n_parameters(model)} parameters"
    return (f"{settings.kind} model{members}, {size}, {len(res.history)} epochs on "
            f"{store.n_series} series on {dist.device}{where} in "
            f"{sum(r.seconds for r in results):.2f} s ({res.windows_per_s:,.0f} windows/s), "
            f"final loss {res.history[-1]['train_loss']:.5f}{loss}, best epoch "
            f"{res.best_epoch}"
            + (" (no epoch improved on the prior's validation loss: the prior kept)"
               if init == "pretrained" and res.best_epoch == 0 else ""))


def run_record(settings, model, results: list, p: Params, n_train: int, init: str) -> dict:
    """What the train stage ran, as plain data (the summary's model and training rows): the
    model's own settings (a fine-tuned prior's, not model.*), its size, its members, the
    epochs it took and the batch it used (auto resolved)."""
    windows = sorted({r.window for r in results}, reverse=True)
    losses = list(dict.fromkeys(r.loss for r in results))
    s = settings.to_dict()
    return {"kind": s["kind"], "parameters": n_parameters(model), "init": init,
            "members": len(results), "seeds": len(results) // len(windows) // len(losses),
            "losses": losses, "combine": getattr(model, "combine", "mean"),
            "windows": windows, "epochs": len(results[0].history),
            "best_epoch": results[0].best_epoch,
            "batch": resolve_batch(p.train.batch_size, n_train),
            "settings": {k: s[k] for k in (
                "d_model", "ffn_dim", "n_layers", "n_heads", "positional", "pooling",
                "residual", "dropout", "instance_norm", "patch_len", "patch_stride",
                "quantiles", "horizon")}}


@dataclass
class Fitted:
    """A trained model with what ran: each member's FitResult, its settings, the run's
    processes (``dist``) and the threads of each."""
    model: object
    results: list
    settings: ModelSettings
    dist: Distributed
    threads: int

    def line(self, store, init: str = "scratch") -> str:
        return summary(self.settings, self.model, self.results, store, self.dist,
                       self.threads, init)


def fit(p: Params, store, season: int, prior_path: str | None = None,
        dist: Distributed | None = None, watch=None) -> Fitted:
    """Train the model of ``p`` on the store's training windows: its settings (the prior's
    with ``train.init`` pretrained), the threads of this job (a full batch that will not fit
    warned on stderr), then :func:`train`. ``dist``: the run's processes (default: this one,
    on ``train.device``)."""
    dist = dist if dist is not None else Distributed(0, 1, device(p.train))
    settings = model_settings(p, store, season, prior_path)
    threads, warning = threads_for(p, settings, int(store.counts("train").sum()), dist.world)
    if warning and dist.rank == 0:
        print(warning, file=sys.stderr)
    model, results = train(p, settings, store, dist, prior_path, watch=watch)
    return Fitted(model, results, settings, dist, threads)
