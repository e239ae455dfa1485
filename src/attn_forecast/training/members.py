"""An ensemble's members, built and trained: ``p.ensemble`` seeds of each settings (an
ensemble over lookbacks: the longest window first) and each training loss of ``losses``
(``[]``: ``p.loss``), every member through the one training loop (loop.fit), one after
another, each with its own seed's batch order and input noise and its own early stop.

The members that share a shape can instead be trained as one batched network (stacked.py),
but only when asked for (``stack=True``; ``"auto"`` is the loop, on every device), because it
trains a different ensemble: every member takes the first member's batch order and input
noise, and one early stop (the best epoch, patience) is taken for all of them on the sum of
their validation losses, losses of different scales when the members' losses differ
(sMAPE's percent against MASE's ratio). It has never been measured on a GPU; on a CPU it is no
faster (torch.func.vmap's batched matmuls and the explicit attention path it needs against the
loop: bench/members.py, its figures in bench/README.md)."""
from __future__ import annotations

import copy
import time
from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np
import torch
from torch import nn

from ..model.networks import Ensemble, build_model
from ..model.settings import ModelSettings
from .batches import TrainData
from .loop import FitResult, fit_windows
from .losses import make_loss
from .settings import TrainSettings
from .stacked import Stacked, StackedLoss


def _watched(on_epoch: Callable[[dict], None] | None,
             watch: Callable[[dict, nn.Module], None] | None, model: nn.Module
             ) -> Callable[[dict], None] | None:
    """``on_epoch``, then ``watch`` given the model too."""
    if watch is None:
        return on_epoch

    def both(row: dict) -> None:
        if on_epoch is not None:
            on_epoch(row)
        watch(row, model)
    return both


def plan(settings: ModelSettings | list[ModelSettings], p: TrainSettings, losses: tuple = ()
         ) -> list[tuple[ModelSettings, str, int]]:
    """Every member's (settings, loss, seed), in the ensemble's order: each settings (the
    longest window first), each loss, each seed ``p.seed``, ``p.seed + 1``, ... (the i-th
    member takes ``p.seed + i``), so member 0 is the single model of ``ensemble: 1``."""
    kinds = settings if isinstance(settings, list) else [settings]
    out = [(s, loss) for s in kinds for loss in (losses or (p.loss,))
           for _ in range(p.ensemble)]
    return [(s, loss, p.seed + i) for i, (s, loss) in enumerate(out)]


def _build(s: ModelSettings, seed: int, init: nn.Module | None, device) -> nn.Module:
    torch.manual_seed(seed)
    np.random.seed(seed)
    return (copy.deepcopy(init) if init is not None else build_model(s)).to(device)


@dataclass(frozen=True)
class Job:
    """This process's part in a fit, and who watches it: ``wrap`` makes a member's
    forward-pass module (torch.compile, DistributedDataParallel), ``rank`` of ``world``
    processes, ``progress`` the epoch bar, ``on_epoch`` sees the first member's epochs (the
    history CSV's), ``watch(row, member)`` sees the first member after each of its epochs, with
    the member itself (a search scoring it to prune a trial: it may raise to end the run)."""
    wrap: Callable[[nn.Module], nn.Module] | None = None
    rank: int = 0
    world: int = 1
    progress: bool | None = None
    on_epoch: Callable[[dict], None] | None = None
    watch: Callable[[dict, nn.Module], None] | None = None


QUIET = Job(progress=False)


def train_model(settings: ModelSettings | list[ModelSettings], data: TrainData,
                p: TrainSettings, job: Job = Job(), *, init: nn.Module | None = None,
                losses: tuple = (), combine: str = "mean", stack: bool | str = "auto"
                ) -> tuple[nn.Module, list[FitResult]]:
    """Build and fit the model on ``data`` (on the training device): the members of
    :func:`plan`, combined by ``combine`` (mean or median) when there are several, each
    starting from its own seed, in this process's part of the run (``job``). ``init``: every
    member starts from a copy of this model's weights (the prior, fine-tuned) instead of random
    ones. ``stack``: True trains the members of one shape as one batched network (stacked.py:
    a different ensemble, see the module's docstring) where it can (one process, no wrap, no
    watch); False or "auto": one after another, on every device."""
    members = plan(settings, p, losses)
    groups: dict[ModelSettings, list[int]] = {}
    for i, (s, _, _) in enumerate(members):
        groups.setdefault(s, []).append(i)
    if stack not in (True, False, "auto"):
        raise ValueError(f"stack must be True, False or 'auto', got {stack!r}")
    batched = stack is True and job.world == 1 and job.wrap is None and job.watch is None
    device, series, train_ends, val_ends = data.device, data.z, data.train, data.val
    kw = dict(cal=data.side, rows=data.rows, progress=job.progress, rank=job.rank,
              world=job.world, keep_start=init is not None)
    models: list[nn.Module | None] = [None] * len(members)
    results: list[FitResult | None] = [None] * len(members)
    for s, idx in groups.items():
        if batched and len(idx) > 1:
            group = [_build(s, members[i][2], init, device) for i in idx]
            stacked = Stacked(group).to(device)
            loss = StackedLoss([make_loss(members[i][1], s.quantiles) for i in idx]).to(device)
            first_p = replace(p, seed=members[idx[0]][2], loss=members[idx[0]][1])
            t0 = time.perf_counter()
            res = fit_windows(stacked, series, train_ends, val_ends, first_p, loss_fn=loss,
                              on_epoch=job.on_epoch if idx[0] == 0 else None, **kw)
            seconds = time.perf_counter() - t0
            for i, m in zip(idx, stacked.unstack()):
                models[i] = m
                results[i] = replace(res, seconds=seconds / len(idx), loss=members[i][1],
                                     windows_per_s=res.windows_per_s * len(idx))
            continue
        for i in idx:
            s_i, loss_i, seed = members[i]
            model = _build(s_i, seed, init, device)
            member_p = replace(p, seed=seed, loss=loss_i)
            results[i] = fit_windows(model, series, train_ends, val_ends, member_p,
                                     step_model=job.wrap(model) if job.wrap else None,
                                     on_epoch=_watched(job.on_epoch, job.watch, model)
                                     if i == 0 else None, **kw)
            results[i].loss = loss_i
            models[i] = model
    if len(models) == 1:
        return models[0], results
    return Ensemble(models, combine), results
