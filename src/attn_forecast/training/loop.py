"""The one training loop, for the train stage, the backtest's folds and pretraining the prior:
epochs of batches from a batch source (the training windows, or a pretraining round's corpus),
a validation score after each, the best epoch's weights kept, early stopping, a step budget,
progress and Ctrl-C; from small helpers (optimizer, schedule, one epoch).

``p`` is the training settings (any object with the fields of params.yaml's ``train``
section: ``p.lr``, ``p.epochs``...). Seeds are set once by the caller; the batch order and
the augmentation draw from their own seeded generators.
"""
from __future__ import annotations

import contextlib
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import torch
from torch import nn

from ..data.windows import gather, inputs
from ..errors import Diverged, Interrupted
from .adam import Adam
from .batches import Rows, WindowBatches, augment, move_unit, resolve_batch
from .losses import PinballLoss, make_loss
from ..progress import Progress


def quantile_loss(loss_fn: nn.Module) -> bool:
    """Whether the loss scores quantiles (a quantile head's pinball loss; stacked members'
    losses say so themselves)."""
    return getattr(loss_fn, "quantiles", isinstance(loss_fn, PinballLoss))


def make_optimizer(model: nn.Module, p) -> torch.optim.Optimizer:
    """Adam or AdamW (``p.optimizer``): on a CPU torch's update without torch's compiler
    (adam.py: a second less of each training process's start), on a GPU torch's own."""
    params = list(model.parameters())
    if params and params[0].device.type != "cpu":
        cls = torch.optim.Adam if p.optimizer == "adam" else torch.optim.AdamW
        return cls(params, lr=p.lr, weight_decay=p.weight_decay)
    return Adam(params, lr=p.lr, weight_decay=p.weight_decay, decoupled=p.optimizer == "adamw")


def make_scheduler(opt: torch.optim.Optimizer, p
                   ) -> torch.optim.lr_scheduler.LRScheduler | None:
    """torch's StepLR / CosineAnnealingLR after an optional linear warm-up; None for a flat lr.

    Stepped once per epoch.
    """
    sched = opt_sched = None
    if p.scheduler == "step":
        opt_sched = torch.optim.lr_scheduler.StepLR(opt, step_size=p.step_size, gamma=p.gamma)
    elif p.scheduler == "cosine":
        t_max = max(1, p.epochs - p.warmup_epochs)
        opt_sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=t_max)
    if p.warmup_epochs:
        warm = torch.optim.lr_scheduler.LinearLR(
            opt, start_factor=1.0 / (p.warmup_epochs + 1), total_iters=p.warmup_epochs)
        sched = warm if opt_sched is None else torch.optim.lr_scheduler.SequentialLR(
            opt, [warm, opt_sched], milestones=[p.warmup_epochs])
    else:
        sched = opt_sched
    return sched


def autocast(device: torch.device, precision: str) -> contextlib.AbstractContextManager:
    if precision == "bf16":
        return torch.autocast(device_type=device.type, dtype=torch.bfloat16)
    return contextlib.nullcontext()


@torch.no_grad()
def predict(model: nn.Module, series: torch.Tensor, ends: torch.Tensor, window: int,
            horizon: int, batch: int = 4096, precision: str = "fp32",
            cal: torch.Tensor | None = None, quantiles: bool = False,
            rows: Rows | None = None) -> torch.Tensor:
    """Model-space predictions (N, H) for window ends, in batches to bound memory; ``cal``
    (n, C): the calendar features aligned with ``series``, if the model takes them;
    ``quantiles``: the quantiles (N, H, Q) instead; ``rows``: the series (padded windows)."""
    model.eval()
    outs = []
    for i in range(0, len(ends), batch):
        e = ends[i:i + batch]
        x, _, c, seen = inputs(series, cal, e, window, horizon,
                               rows.first(e, window) if rows is not None else None)
        with autocast(series.device, precision):
            outs.append(model(x, cal=c, quantiles=quantiles, seen=seen)[0].float())
    k = getattr(model, "k", 0)              # stacked members: (K, N, ...)
    if outs:
        return torch.cat(outs, dim=1 if k else 0)
    shape = (0, horizon, model.settings.n_outputs) if quantiles else (0, horizon)
    return torch.zeros(((k,) if k else ()) + shape, device=series.device)


@torch.no_grad()
def evaluate_loss(model: nn.Module, series: torch.Tensor, ends: torch.Tensor, window: int,
                  horizon: int, loss_fn: nn.Module, precision: str = "fp32",
                  cal: torch.Tensor | None = None, rows: Rows | None = None) -> float:
    pred = predict(model, series, ends, window, horizon, precision=precision, cal=cal,
                   quantiles=quantile_loss(loss_fn), rows=rows)
    _, y = gather(series, ends, 1, horizon)
    return float(loss_fn(pred, y, rows.sid(ends) if rows is not None else None, rows))


@dataclass
class FitResult:
    history: list[dict] = field(default_factory=list)
    best_epoch: int = 0
    seconds: float = 0.0
    windows_per_s: float = 0.0
    window: int = 0          # the member's window (an ensemble over lookbacks: each its own)
    loss: str = ""           # the member's training loss (an ensemble over losses)


def train_epoch(model: nn.Module, step_model: nn.Module, batches, opt: torch.optim.Optimizer,
                loss_fn: nn.Module, p, aug_gen: torch.Generator, n: int, rank: int, world: int,
                on_batch: Callable[[int], None] | None = None, unit: float = 1.0,
                rows: Rows | None = None, limit: int = 0) -> tuple[float, int]:
    """One pass over ``batches`` of (x, y, side inputs, seen, series, windows in the whole
    batch): under DDP each rank's x and y are only its own share of the batch. Returns the mean
    training loss over the windows seen (n of them for a whole pass) and the optimizer steps
    taken. ``on_batch(windows done)`` is called after each batch; ``limit`` > 0 stops after
    that many steps."""
    model.train()
    total = None
    done = steps = 0
    for x, y, c, seen, sid, n_batch in batches:
        if limit and steps >= limit:
            break
        done += n_batch
        x, y = augment(x, y, p, aug_gen, unit)
        opt.zero_grad(set_to_none=True)
        with autocast(x.device, p.precision):
            pred = step_model(x, cal=c, quantiles=quantile_loss(loss_fn),
                              seen=seen)[0]
        # a rank whose shard is empty still takes part in DDP's gradient all-reduce
        loss = loss_fn(pred.float(), y, sid, rows) if len(x) else pred.float().sum()
        # DDP averages gradients over ranks; weighting each rank's mean loss by its share
        # of the batch makes that average the gradient of the whole batch's mean loss
        (loss * (len(x) * world / n_batch) if world > 1 else loss).backward()
        if p.grad_clip:
            clip = getattr(model, "clip_gradients", None)     # stacked: member by member
            clip(p.grad_clip) if clip else nn.utils.clip_grad_norm_(model.parameters(),
                                                                   p.grad_clip)
        opt.step()
        steps += 1
        part = loss.detach() * len(x)
        total = part if total is None else total + part
        if on_batch is not None:
            on_batch(done)
    if world > 1:
        torch.distributed.all_reduce(total)
    return float(total) / min(n, done), steps  # one device sync per epoch


def planned_epochs(p, steps_per_epoch: int) -> int:
    """The epochs a run takes at most: ``p.epochs``, or fewer when ``p.max_steps`` ends it
    (early stopping may end it sooner)."""
    if p.max_steps and steps_per_epoch:
        return min(p.epochs, -(-p.max_steps // steps_per_epoch))
    return p.epochs


def _state(model: nn.Module) -> dict:
    return {k: v.detach().clone() for k, v in model.state_dict().items()}


def fit(model: nn.Module, batches, p, *, validate: Callable[[], float] | None = None,
        step_model: nn.Module | None = None, progress: bool | Progress | None = None,
        rank: int = 0, world: int = 1, on_epoch: Callable[[dict], None] | None = None,
        rows: Rows | None = None, unit: float = 1.0, keep_start: bool = False,
        loss_fn: nn.Module | None = None) -> FitResult:
    """Train ``model`` in place for ``p.epochs`` epochs of ``batches.epoch(e)`` (a batch
    source of ``batches.n`` windows and ``batches.steps`` steps an epoch).

    With ``validate`` (the validation loss, called after every epoch) the weights of the best
    epoch are restored at the end, and ``p.patience`` > 0 stops after that many epochs without
    improvement; ``keep_start`` (fine-tuning) makes the starting weights a candidate too, as
    epoch 0. ``p.max_steps`` > 0 ends training after that many optimizer steps (inside an
    epoch: its history row is the mean loss of the windows it saw). ``step_model`` is what the
    forward pass calls (a compiled or DistributedDataParallel wrapper of ``model``). Under
    DDP (``world`` > 1) the logged loss is summed over ranks and every rank takes rank 0's
    early-stopping decision. ``on_epoch`` sees each epoch's history row. Raises
    :class:`Diverged` if the loss stops being finite, and :class:`Interrupted` (naming the
    epoch) on Ctrl-C. ``loss_fn``: instead of ``p.loss``'s (stacked members: each its own,
    summed; the history shows their mean).
    """
    step_model = model if step_model is None else step_model  # (a Module has no truth value)
    device = next(model.parameters()).device
    aug_gen = torch.Generator(device=device).manual_seed(p.seed + 1 + rank)
    loss_fn = (loss_fn if loss_fn is not None
               else make_loss(p.loss, model.settings.quantiles)).to(device)
    members = getattr(model, "k", 1)
    opt, n = make_optimizer(model, p), batches.n
    sched = make_scheduler(opt, p)
    epochs = planned_epochs(p, batches.steps)
    bar = progress if isinstance(progress, Progress) else \
        Progress(epochs, enabled=(rank == 0) if progress is None else progress,
                 at_most=validate is not None and p.patience > 0)
    res = FitResult()
    best_val, best_state, stale, steps = math.inf, None, 0, 0

    def val_score() -> float:
        v = validate()
        if world > 1:  # every rank must take the same early-stopping decision
            t = torch.tensor(v, device=device)
            torch.distributed.broadcast(t, src=0)
            v = float(t)
        return v
    if keep_start and validate is not None:
        best_val, res.best_epoch, best_state = val_score(), 0, _state(model)
    t0 = time.perf_counter()
    epoch = 0
    try:
        for epoch in range(1, p.epochs + 1):
            lr = opt.param_groups[0]["lr"]
            train_loss, took = train_epoch(
                model, step_model, batches.epoch(epoch), opt, loss_fn, p, aug_gen, n, rank,
                world, on_batch=lambda done, e=epoch: bar.batch(e, done, n), unit=unit,
                rows=rows, limit=p.max_steps - steps if p.max_steps else 0)
            steps += took
            train_loss /= members
            if not math.isfinite(train_loss):
                bar.close()
                raise Diverged(epoch, train_loss)
            if sched is not None:
                sched.step()
            val_loss = None
            if validate is not None:
                val_loss = val_score()
                if val_loss < best_val:
                    best_val, stale, res.best_epoch = val_loss, 0, epoch
                    best_state = _state(model)
                else:
                    stale += 1
            res.history.append({"epoch": epoch, "train_loss": train_loss,
                                "val_loss": val_loss, "lr": lr})
            if on_epoch is not None:
                on_epoch(res.history[-1])
            bar.update(epoch, train_loss, val_loss)
            if (p.patience and stale >= p.patience) or (p.max_steps and steps >= p.max_steps):
                break
    except KeyboardInterrupt:
        bar.close()
        raise Interrupted(f"interrupted at epoch {epoch} of {epochs}") from None
    except Exception:       # a watch that ends the run (a pruned trial), or a bug
        bar.close()
        raise
    bar.close()
    res.seconds = time.perf_counter() - t0
    res.windows_per_s = n * len(res.history) / res.seconds if res.seconds > 0 else 0.0
    if best_state is not None:
        model.load_state_dict(best_state)
    else:
        res.best_epoch = len(res.history)
    return res


def fit_windows(model: nn.Module, series: torch.Tensor, train_ends: torch.Tensor,
                val_ends: torch.Tensor, p, *, cal: torch.Tensor | None = None,
                rows: Rows | None = None, **kw) -> FitResult:
    """:func:`fit` on the windows of ``series`` (on the training device) ending at
    ``train_ends`` (batches of ``p.batch_size`` in a seeded order), validated on those ending at
    ``val_ends`` (none: no validation); ``cal`` (n, C): the side inputs aligned with ``series``;
    ``rows``: the windows' series (padded windows; the scalers of losses of the values)."""
    s, device = model.settings, series.device
    batches = WindowBatches(series, train_ends, s.window, s.horizon,
                            resolve_batch(p.batch_size, len(train_ends)), p.seed, cal, rows,
                            kw.get("rank", 0), kw.get("world", 1))
    unit = move_unit(series, train_ends, s.window, s.horizon) \
        if p.augment_units == "moves" else 1.0
    val_loss = kw.get("loss_fn") or make_loss(p.loss, s.quantiles).to(device)
    validate = (lambda: evaluate_loss(model, series, val_ends, s.window, s.horizon, val_loss,
                                      p.precision, cal, rows)) if len(val_ends) else None
    res = fit(model, batches, p, validate=validate, rows=rows, unit=unit, **kw)
    res.window = s.window
    return res
