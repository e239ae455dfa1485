"""What a training batch reads: the series on the training device, each window's series
(``Rows``), augmentation, the batch size, and the batches of an epoch (``WindowBatches``: the
training windows in a seeded random order, the same on every rank).

The series lives on the training device once; each batch gathers its windows from it by index
(no per-sample Python, no N x W copy of the data).
"""
from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import torch

from ..data.scaling import naive_scale
from ..data.windows import inputs


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


def rows_of(store, device: torch.device) -> Rows:
    naive = [naive_scale(store.train_y(i), int(lag)) for i, lag in enumerate(store.lags())]
    naive = np.where(np.array(naive) > 0, naive, 1.0)
    f32 = lambda a: torch.tensor(np.asarray(a), dtype=torch.float32, device=device)  # noqa
    return Rows(torch.from_numpy(store.offsets).to(device), store.offset,
                0 < store.context < store.window, f32(store.scalers.center),
                f32(store.scalers.scale), f32(naive), store.window)


@dataclass(frozen=True)
class TrainData:
    """What training reads of a store, on the training device: the model series ``z``, the
    training and validation window ends, the side inputs (or None) and the series' Rows."""
    z: torch.Tensor
    train: torch.Tensor
    val: torch.Tensor
    side: torch.Tensor | None = None
    rows: Rows | None = None

    @property
    def device(self) -> torch.device:
        return self.z.device


def to_device(store, device: torch.device) -> TrainData:
    """What training reads of ``store``, on ``device``."""
    side = store.side
    ends = {part: torch.from_numpy(store.ends(part)).to(device) for part in ("train", "val")}
    return TrainData(torch.from_numpy(np.asarray(store.z)).to(device), ends["train"],
                     ends["val"],
                     torch.from_numpy(np.asarray(side)).to(device) if side is not None else None,
                     rows_of(store, device))


class WindowBatches:
    """The batches of one epoch over the windows ending at ``ends``: in a random order drawn
    from ``seed`` (the same on every rank), ``batch`` windows each; all of them at once
    (gathered once) when the batch is every window. Under DistributedDataParallel a rank
    gathers only every ``world``-th window of each batch. A batch is (x, y, side inputs, seen,
    series, windows in the whole batch)."""

    def __init__(self, series: torch.Tensor, ends: torch.Tensor, window: int, horizon: int,
                 batch: int, seed: int, cal: torch.Tensor | None = None,
                 rows: Rows | None = None, rank: int = 0, world: int = 1) -> None:
        self.series, self.ends, self.window, self.horizon = series, ends, window, horizon
        self.cal, self.rows, self.rank, self.world = cal, rows, rank, world
        self.n, self.batch = len(ends), batch
        self.gen = torch.Generator(device=series.device).manual_seed(seed)
        self.full = self.of(ends) if batch == self.n else None

    @property
    def steps(self) -> int:
        """Optimizer steps per epoch."""
        return -(-self.n // max(self.batch, 1))

    def of(self, ends: torch.Tensor) -> tuple:
        mine = ends[self.rank::self.world] if self.world > 1 else ends
        rows = self.rows
        x, y, c, seen = inputs(self.series, self.cal, mine, self.window, self.horizon,
                               rows.first(mine, self.window) if rows is not None else None)
        return x, y, c, seen, rows.sid(mine) if rows is not None else None, len(ends)

    def epoch(self, e: int) -> Iterator[tuple]:
        if self.full is not None:
            yield self.full
            return
        order = torch.randperm(self.n, generator=self.gen, device=self.series.device)
        for i in range(0, self.n, self.batch):
            yield self.of(self.ends[order[i:i + self.batch]])
