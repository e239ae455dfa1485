"""The training loop, from small helpers: optimizer, loss, schedule, augmentation, batches.

``p`` is the training settings (any object with the fields of ``params.yaml``'s ``train``
section: ``p.lr``, ``p.epochs``...).

The series lives on the training device once; each batch gathers its windows from it by index
(no per-sample Python, no N x W copy of the data). Seeds are set once by the caller; the
shuffling and augmentation draw from their own seeded generator.
"""
from __future__ import annotations

import contextlib
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import torch
from torch import nn

from .errors import Diverged, Interrupted
from .forecasters import Forecast
from .model import Ensemble, ModelSettings, build_model
from .progress import Progress
from .windows import gather, gather_side, observed


@dataclass
class Rows:
    """What a batch needs to know of each window's series (on the training device): where
    each series starts (``offsets``, for padded windows, whose inputs before the series' first
    model row are padding) and its scaler and in-sample naive error (for losses that score the
    levels: sMAPE, MASE)."""
    offsets: torch.Tensor          # (S + 1,)
    off: int                       # leading rows without a model value
    padded: bool                   # windows may start before their series
    center: torch.Tensor           # (S,) levels = z * scale + center
    scale: torch.Tensor
    naive: torch.Tensor            # (S,) in-sample naive MAE (of the series' lag)
    window: int = 0                # the store's window: a model reading more is padded

    def sid(self, ends: torch.Tensor) -> torch.Tensor:
        return torch.searchsorted(self.offsets, ends, right=True) - 1

    def first(self, ends: torch.Tensor, window: int = 0) -> torch.Tensor | None:
        """Each window's first row with a value, when windows of ``window`` steps may reach
        before their series (None: they never do)."""
        if self.padded or window > self.window:
            return self.offsets[self.sid(ends)] + self.off
        return None


class PinballLoss(nn.Module):
    """The quantile loss of (B, H, Q) forecasts at levels ``taus`` against (B, H) targets,
    averaged over windows, steps and levels."""

    def __init__(self, taus) -> None:
        super().__init__()
        self.register_buffer("taus", torch.tensor(list(taus), dtype=torch.float32))

    def forward(self, q: torch.Tensor, y: torch.Tensor, sid=None, rows=None) -> torch.Tensor:
        diff = y.unsqueeze(-1) - q
        return torch.maximum(self.taus * diff, (self.taus - 1) * diff).mean()


class LevelLoss(nn.Module):
    """A score of the levels (the series' own units) as the training loss: ``smape``
    (200 |y - f| / (|y| + |f|), M3's), or ``mase`` (|y - f| over each series' in-sample naive
    error). ``sid``: each window's series in ``rows``, whose scalers give the levels."""

    def __init__(self, kind: str) -> None:
        super().__init__()
        self.kind = kind

    def forward(self, f: torch.Tensor, y: torch.Tensor, sid: torch.Tensor, rows: Rows
                ) -> torch.Tensor:
        scale = rows.scale[sid][:, None]
        if self.kind == "mase":
            return ((f - y).abs() * (scale / rows.naive[sid][:, None])).mean()
        lf, ly = f * scale + rows.center[sid][:, None], y * scale + rows.center[sid][:, None]
        return (200 * (lf - ly).abs() / (lf.abs() + ly.abs()).clamp_min(1e-8)).mean()


class _Plain(nn.Module):
    """torch's own losses, taking (and leaving) the series of each window."""

    def __init__(self, loss: nn.Module) -> None:
        super().__init__()
        self.loss = loss

    def forward(self, f, y, sid=None, rows=None):
        return self.loss(f, y)


def make_loss(kind: str, quantiles=()) -> nn.Module:
    """train.loss, or the pinball loss for a model with a quantile head."""
    if quantiles:
        return PinballLoss(quantiles)
    if kind in ("smape", "mase"):
        return LevelLoss(kind)
    return _Plain({"mse": nn.MSELoss, "mae": nn.L1Loss, "huber": nn.HuberLoss}[kind]())


def make_optimizer(model: nn.Module, p) -> torch.optim.Optimizer:
    cls = torch.optim.Adam if p.optimizer == "adam" else torch.optim.AdamW
    return cls(model.parameters(), lr=p.lr, weight_decay=p.weight_decay)


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


def augment(x: torch.Tensor, y: torch.Tensor, p, gen: torch.Generator,
            unit: float = 1.0) -> tuple[torch.Tensor, torch.Tensor]:
    """Training windows only: scale and shift the whole window (inputs and targets alike, as
    if the series were scaled or shifted), then add noise to the inputs. ``unit`` is what one
    unit of shift and noise is (1, or the training part's typical one-step move)."""
    if p.augment_scale:
        s = 1 + (torch.rand(x.shape[0], 1, generator=gen, device=x.device) * 2 - 1) \
            * p.augment_scale
        x, y = x * s, y * s
    if p.augment_shift:
        b = (torch.rand(x.shape[0], 1, generator=gen, device=x.device) * 2 - 1) \
            * (p.augment_shift * unit)
        x, y = x + b, y + b
    if p.augment_noise:
        x = x + torch.randn(x.shape, generator=gen, device=x.device) * (p.augment_noise * unit)
    return x, y


def move_unit(series: torch.Tensor, train_ends: torch.Tensor, window: int, horizon: int
              ) -> float:
    """The std of the one-step changes inside the training windows: the unit of
    ``train.augment_units: moves``. One series: its training windows' span. A panel (ends
    with gaps): the changes inside each training window's rows only, so never a change
    across two series, nor a value after a series' training part."""
    lo, hi = int(train_ends.min()) - window, int(train_ends.max()) + horizon
    if len(train_ends) == hi - lo - window - horizon + 1:   # contiguous ends: one span
        return float(torch.diff(series[lo:hi].double()).std())
    ends = train_ends.cpu().numpy()
    n = len(series) + 1
    # rows r whose change series[r] - series[r-1] lies inside a window [e - W, e + H)
    cover = np.cumsum(np.bincount(ends - window + 1, minlength=n)
                      - np.bincount(ends + horizon, minlength=n))[:len(series)] > 0
    rows = torch.from_numpy(np.flatnonzero(cover)).to(series.device)
    s = series.double()
    return float((s[rows] - s[rows - 1]).std())


def resolve_batch(batch_size: int | str, n: int) -> int:
    """``train.batch_size``: 0 = every window at once; auto = that up to
    :data:`AUTO_FULL_BATCH` windows, else :data:`AUTO_BATCH`."""
    if batch_size == "auto":
        return n if n <= AUTO_FULL_BATCH else AUTO_BATCH
    return n if batch_size == 0 else min(int(batch_size), n)


AUTO_FULL_BATCH, AUTO_BATCH = 1024, 256


def autocast(device: torch.device, precision: str) -> contextlib.AbstractContextManager:
    if precision == "bf16":
        return torch.autocast(device_type=device.type, dtype=torch.bfloat16)
    return contextlib.nullcontext()


def rows_of(store, device: torch.device) -> Rows:
    from .metrics import naive_scale
    naive = [naive_scale(store.train_levels(i), int(lag)) for i, lag in enumerate(store.lags())]
    naive = np.where(np.array(naive) > 0, naive, 1.0)
    f32 = lambda a: torch.tensor(np.asarray(a), dtype=torch.float32, device=device)  # noqa
    return Rows(torch.from_numpy(store.offsets).to(device), store.offset,
                0 < store.context < store.window, f32(store.scalers.center),
                f32(store.scalers.scale), f32(naive), store.window)


def to_device(store, device: torch.device) -> dict:
    """What training reads of a store, on ``device``: the model series ``z``, the side inputs
    (or None), the training and validation window ends and the series' Rows."""
    side = store.side
    return {"z": torch.from_numpy(np.asarray(store.z)).to(device),
            "side": torch.from_numpy(np.asarray(side)).to(device) if side is not None else None,
            **{part: torch.from_numpy(store.ends(part)).to(device) for part in ("train", "val")},
            "rows": rows_of(store, device)}


def inputs(series: torch.Tensor, cal: torch.Tensor | None, ends: torch.Tensor, window: int,
           horizon: int, first: torch.Tensor | None = None) -> tuple:
    """A batch's inputs: (x, y, side inputs, seen): ``first`` (each window's first row with a
    value) pads the steps before it, and ``seen`` marks the others (None: none padded)."""
    x, y = gather(series, ends, window, horizon, first)
    seen = observed(ends, window, first) if first is not None else None
    return x, y, gather_side(cal, ends, window, horizon, first), seen


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
    if outs:
        return torch.cat(outs)
    shape = (0, horizon, model.settings.n_outputs) if quantiles else (0, horizon)
    return torch.zeros(shape, device=series.device)


@torch.no_grad()
def evaluate_loss(model: nn.Module, series: torch.Tensor, ends: torch.Tensor, window: int,
                  horizon: int, loss_fn: nn.Module, precision: str = "fp32",
                  cal: torch.Tensor | None = None, rows: Rows | None = None) -> float:
    pred = predict(model, series, ends, window, horizon, precision=precision, cal=cal,
                   quantiles=isinstance(loss_fn, PinballLoss), rows=rows)
    _, y = gather(series, ends, 1, horizon)
    return float(loss_fn(pred, y, rows.sid(ends) if rows is not None else None, rows))


@dataclass
class FitResult:
    history: list[dict] = field(default_factory=list)
    best_epoch: int = 0
    seconds: float = 0.0
    windows_per_s: float = 0.0


def _train_epoch(model: nn.Module, step_model: nn.Module, batches, opt: torch.optim.Optimizer,
                 loss_fn: nn.Module, p, aug_gen: torch.Generator, n: int,
                 rank: int, world: int, on_batch: Callable[[int], None] | None = None,
                 unit: float = 1.0, rows: Rows | None = None, limit: int = 0
                 ) -> tuple[float, int]:
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
            pred = step_model(x, cal=c, quantiles=isinstance(loss_fn, PinballLoss),
                              seen=seen)[0]
        # a rank whose shard is empty still takes part in DDP's gradient all-reduce
        loss = loss_fn(pred.float(), y, sid, rows) if len(x) else pred.float().sum()
        # DDP averages gradients over ranks; weighting each rank's mean loss by its share
        # of the batch makes that average the gradient of the whole batch's mean loss
        (loss * (len(x) * world / n_batch) if world > 1 else loss).backward()
        if p.grad_clip:
            nn.utils.clip_grad_norm_(model.parameters(), p.grad_clip)
        opt.step()
        steps += 1
        part = loss.detach() * len(x)
        total = part if total is None else total + part
        if on_batch is not None:
            on_batch(done)
    if world > 1:
        torch.distributed.all_reduce(total)
    return float(total) / min(n, done), steps  # one device sync per epoch


def fit(model: nn.Module, series: torch.Tensor, train_ends: torch.Tensor,
        val_ends: torch.Tensor, window: int, horizon: int, p,
        step_model: nn.Module | None = None, progress: bool | Progress | None = None,
        rank: int = 0, world: int = 1, cal: torch.Tensor | None = None,
        on_epoch: Callable[[dict], None] | None = None, rows: Rows | None = None,
        keep_start: bool = False) -> FitResult:
    """Train ``model`` in place on the windows ending at ``train_ends``.

    ``series`` (n,) and the index tensors are on the training device. With a validation part
    the weights of the best validation epoch are restored at the end, and ``p.patience`` > 0
    stops after that many epochs without improvement. ``step_model`` is what the forward pass
    calls (a compiled or DistributedDataParallel wrapper of ``model``); default ``model``.
    Under DistributedDataParallel (``world`` > 1) every rank draws the same batch order and
    gathers only every ``world``-th window of each batch; DDP averages the gradients, and the
    logged loss is summed over ranks, so the history matches a single process up to rounding
    (with input noise, each rank draws its own).
    ``progress``: a :class:`Progress`, or whether to show the default one (default: on rank 0).
    ``cal`` (n, C): calendar features aligned with ``series`` (the model's calendar inputs).
    ``rows``: the windows' series (padded windows; the scalers of losses of the levels).
    ``p.max_steps`` > 0 ends training after that many optimizer steps (inside an epoch: its
    history row is the mean loss of the windows it saw). ``on_epoch`` is called with each epoch's history row (DVCLive logging).
    ``keep_start`` (fine-tuning): the starting weights are a candidate too, as epoch 0, so
    training that never improves the validation loss returns them (``best_epoch`` 0).
    Raises :class:`Diverged` if the loss stops being finite, and :class:`Interrupted` (naming the
    epoch) on Ctrl-C.
    """
    step_model = model if step_model is None else step_model  # (a Module has no truth value)
    device = series.device
    gen = torch.Generator(device=device).manual_seed(p.seed)  # batch order: same on all ranks
    aug_gen = torch.Generator(device=device).manual_seed(p.seed + 1 + rank)
    loss_fn = make_loss(p.loss, model.settings.quantiles).to(device)
    opt = make_optimizer(model, p)
    sched = make_scheduler(opt, p)
    n = len(train_ends)
    bs = resolve_batch(p.batch_size, n)
    unit = move_unit(series, train_ends, window, horizon) if p.augment_units == "moves" else 1.0

    def batch_of(ends: torch.Tensor) -> tuple:
        """A batch's windows; under DDP this rank's share only (every ``world``-th), so a
        rank reads only the windows it trains on."""
        mine = ends[rank::world] if world > 1 else ends
        x, y, c, seen = inputs(series, cal, mine, window, horizon,
                               rows.first(mine, window) if rows is not None else None)
        sid = rows.sid(mine) if rows is not None else None
        return x, y, c, seen, sid, len(ends)
    full = batch_of(train_ends) if bs == n else None
    bar = progress if isinstance(progress, Progress) else \
        Progress(p.epochs, enabled=(rank == 0) if progress is None else progress)
    res = FitResult()
    best_val, best_state, stale, steps = math.inf, None, 0, 0

    def val_score() -> float:
        v = evaluate_loss(model, series, val_ends, window, horizon, loss_fn, p.precision, cal,
                          rows)
        if world > 1:  # every rank must take the same early-stopping decision
            t = torch.tensor(v, device=device)
            torch.distributed.broadcast(t, src=0)
            v = float(t)
        return v
    if keep_start and len(val_ends):
        best_val, res.best_epoch = val_score(), 0
        best_state = {k: v.detach().clone() for k, v in model.state_dict().items()}
    t0 = time.perf_counter()
    epoch = 0
    try:
        for epoch in range(1, p.epochs + 1):
            lr = opt.param_groups[0]["lr"]
            order = torch.randperm(n, generator=gen, device=device) if full is None else None
            batches = (full,) if full is not None else (
                batch_of(train_ends[order[i:i + bs]]) for i in range(0, n, bs))
            train_loss, took = _train_epoch(
                model, step_model, batches, opt, loss_fn, p, aug_gen, n, rank, world,
                on_batch=lambda done, e=epoch: bar.batch(e, done, n), unit=unit, rows=rows,
                limit=p.max_steps - steps if p.max_steps else 0)
            steps += took
            if not math.isfinite(train_loss):
                bar.close()
                raise Diverged(epoch, train_loss)
            if sched is not None:
                sched.step()
            val_loss = None
            if len(val_ends):
                val_loss = val_score()
                if val_loss < best_val:
                    best_val, stale, res.best_epoch = val_loss, 0, epoch
                    best_state = {k: v.detach().clone() for k, v in model.state_dict().items()}
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
        raise Interrupted(f"interrupted at epoch {epoch} of {p.epochs}") from None
    bar.close()
    res.seconds = time.perf_counter() - t0
    res.windows_per_s = n * len(res.history) / res.seconds if res.seconds > 0 else 0.0
    if best_state is not None:
        model.load_state_dict(best_state)
    else:
        res.best_epoch = len(res.history)
    return res


def train_model(settings: ModelSettings | list[ModelSettings], series: torch.Tensor,
                train_ends: torch.Tensor, val_ends: torch.Tensor, p, device: torch.device,
                wrap: Callable[[nn.Module], nn.Module] | None = None,
                progress: bool | None = None, rank: int = 0, world: int = 1,
                cal: torch.Tensor | None = None,
                on_epoch: Callable[[dict], None] | None = None, rows: Rows | None = None,
                init: nn.Module | None = None) -> tuple[nn.Module, list[FitResult]]:
    """Build and fit the model: ``p.ensemble`` members per settings (several settings: an
    ensemble over their windows, the longest first) with seeds ``p.seed``, ``p.seed + 1``,
    ...; their mean is the forecast. Each member starts from its own seed, so member 0 is
    exactly the single model of ``ensemble: 1``. ``wrap`` makes a member's forward-pass module
    (torch.compile, DistributedDataParallel). ``on_epoch`` sees the first member's epochs (the
    history CSV's). ``init``: every member starts from a copy of this model's weights (the
    prior, fine-tuned) instead of random ones; the seeds then differ in batch order only."""
    import copy
    kinds = settings if isinstance(settings, list) else [settings]
    members, results = [], []
    for i, s in enumerate(k for k in kinds for _ in range(p.ensemble)):
        seed = p.seed + i
        torch.manual_seed(seed)
        np.random.seed(seed)
        model = (copy.deepcopy(init) if init is not None else build_model(s)).to(device)
        member_p = p.model_copy(update={"seed": seed}) if i else p
        results.append(fit(model, series, train_ends, val_ends, s.window, s.horizon, member_p,
                           step_model=wrap(model) if wrap else None, progress=progress,
                           rank=rank, world=world, cal=cal,
                           on_epoch=on_epoch if i == 0 else None, rows=rows,
                           keep_start=init is not None))
        members.append(model)
    return (members[0] if len(members) == 1 else Ensemble(members)), results


class ModelForecaster:
    """A trained model's forecasts of a store's windows, in levels (the ensemble's mean, and
    each member; the quantile head's quantiles)."""
    name = "model"

    def __init__(self, model: torch.nn.Module, device: torch.device | str = "cpu") -> None:
        self.model, self.device = model, torch.device(device)

    def fit(self, store) -> list[str]:
        return []   # trained by the train stage

    def forecast(self, store, ends, taus=()) -> Forecast:
        z = torch.from_numpy(np.asarray(store.z)).to(self.device)
        side = torch.from_numpy(np.asarray(store.side)).to(self.device) \
            if store.side is not None else None
        e = torch.from_numpy(np.asarray(ends)).to(self.device)
        rows = rows_of(store, self.device)

        def run(m: torch.nn.Module, quantiles: bool = False) -> np.ndarray:
            out = predict(m, z, e, m.settings.window, store.horizon, cal=side,
                          quantiles=quantiles, rows=rows).cpu().numpy()
            return store.to_levels(out, ends)
        levels = list(self.model.settings.quantiles)
        quant = run(self.model, True) if levels else None
        if quant is not None and taus and list(taus) != levels:  # the levels asked for
            quant = quant[..., [levels.index(t) for t in taus]] \
                if set(taus) <= set(levels) else None
        members = np.stack([run(m) for m in self.model.members]) \
            if isinstance(self.model, Ensemble) else None
        return Forecast(run(self.model), quant, members)
