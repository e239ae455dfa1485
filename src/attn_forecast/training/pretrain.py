"""Pretraining the prior: one global attention model on a corpus drawn on the fly, trained by
the one training loop (loop.fit), an epoch being a round.

Each round draws ``series_per_round`` fresh series (seed ``train.seed``, round ``r``: the same
series on every rank and every run), lays them end to end as one flat series with offsets (a
panel, as the pipeline's stores), and takes ``steps_per_round`` optimizer steps on windows
drawn at random across them. A window may reach before its series' first value: those steps
are padding, masked out of attention, pooling and the instance norm (the mechanism of
``prepare.min_context``), so the model meets every context from ``min_context`` to
``window`` steps. The targets are the next ``horizon`` values, scored by the pinball loss of
the quantile head; a shorter horizon is the first steps of the head
(``model.networks.with_horizon``). A fixed validation corpus (another seed) is scored after
every round; the weights of the best round are kept.

``p`` holds the corpus's settings (``generators``, ``series_per_round``, ``steps_per_round``,
the lengths, ``min_context``...); the model's and the training's come as the library's own
types (``ModelSettings`` for the longest context and horizon, ``TrainSettings``), built by the
pipeline (pipeline/pretrain.py).
"""
from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import torch

from ..data.windows import concat_ranges, inputs
from ..model.networks import build_model, n_parameters
from ..model.settings import ModelSettings
from . import corpus
from .batches import Rows
from .loop import evaluate_loss, fit
from .losses import make_loss
from .settings import TrainSettings


@dataclass
class Flat:
    """Series laid end to end on a device: values, Rows (each series' start) and the window
    ends that have ``min_context`` values before them and a whole horizon after."""
    z: torch.Tensor
    rows: Rows
    ends: torch.Tensor


def flat(series: list[np.ndarray], horizon: int, min_context: int, device) -> Flat:
    lengths = np.array([len(s) for s in series], dtype=np.int64)
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    ends = concat_ranges(offsets[:-1] + min_context, offsets[1:] - horizon + 1)
    n = len(series)
    one = torch.ones(n, device=device)
    rows = Rows(torch.from_numpy(offsets).to(device), 0, True, torch.zeros(n, device=device),
                one, one)
    return Flat(torch.from_numpy(np.concatenate(series)).to(device), rows,
                torch.from_numpy(ends).to(device))


def round_series(p, r: int, real: list[np.ndarray], seed: int) -> list[np.ndarray]:
    """Round ``r``'s corpus (of the training's ``seed``): the generators' series, and with real
    series a share of them (``real_share``) drawn from ``real``."""
    seed = seed * 1_000_003 + r
    n_real = int(round(p.series_per_round * p.real_share)) if real else 0
    out = corpus.draw(p.series_per_round - n_real, (p.min_length, p.max_length), seed,
                      tuple(p.generators), p.shift_prob, p.spike_prob)
    if n_real:
        pick = np.random.default_rng(seed).integers(0, len(real), n_real)
        out += [real[i] for i in pick]
    return out


class CorpusBatches:
    """The batches of one round: its corpus drawn afresh, ``steps_per_round`` batches of
    windows drawn at random across it (the same on every rank; under DDP a rank gathers its
    share of each)."""

    def __init__(self, p, s: ModelSettings, t: TrainSettings, real: list[np.ndarray], device,
                 rank: int, world: int) -> None:
        self.p, self.s, self.real, self.device = p, s, real, device
        self.rank, self.world, self.batch, self.seed = rank, world, t.batch_size, t.seed
        self.steps = p.steps_per_round
        self.n = p.steps_per_round * self.batch
        self.gen = torch.Generator(device=device).manual_seed(t.seed)
        self.draw_seconds = 0.0

    def epoch(self, r: int) -> Iterator[tuple]:
        t0 = time.perf_counter()
        d = flat(round_series(self.p, r, self.real, self.seed), self.s.horizon, self.p.min_context,
                 self.device)
        self.draw_seconds = time.perf_counter() - t0
        pick = torch.randint(len(d.ends), (self.n,), generator=self.gen, device=self.device)
        for i in range(0, self.n, self.batch):
            e = d.ends[pick[i:i + self.batch]]
            mine = e[self.rank::self.world] if self.world > 1 else e
            x, y, c, seen = inputs(d.z, None, mine, self.s.window, self.s.horizon,
                                   d.rows.first(mine))
            yield x, y, c, seen, None, len(e)


def pretrain(p, s: ModelSettings, t: TrainSettings, device: torch.device, dist,
             real: list[np.ndarray] | None = None, progress=None, wrap=None
             ) -> tuple[torch.nn.Module, list[dict]]:
    """Train the prior (model ``s``, training ``t``, the corpus of ``p``); ``wrap``: what
    the forward pass calls instead of the bare model (DDP, torch.compile). Returns the model
    (the best validation round's weights) and one history row per round (``round,
    train_loss, val_loss, lr, seconds, draw_seconds, windows_per_s``)."""
    torch.manual_seed(t.seed)
    model = build_model(s).to(device)
    val = flat(corpus.draw(p.val_series, (p.min_length, p.max_length),
                           t.seed + 7_777_777, tuple(p.generators), p.shift_prob,
                           p.spike_prob), s.horizon, p.min_context, device)
    val_ends = val.ends[torch.linspace(0, len(val.ends) - 1, min(len(val.ends), 4096),
                                       device=device).long()]
    val_loss = make_loss("mae", s.quantiles).to(device)
    batches = CorpusBatches(p, s, t, real or [], device, dist.rank, dist.world)
    history: list[dict] = []
    last = [time.perf_counter()]

    def row(r: dict) -> None:
        now = time.perf_counter()
        seconds, last[0] = now - last[0], now
        history.append({"round": r["epoch"], "train_loss": r["train_loss"],
                        "val_loss": r["val_loss"], "lr": r["lr"], "seconds": seconds,
                        "draw_seconds": batches.draw_seconds,
                        "windows_per_s": batches.n / max(seconds - batches.draw_seconds,
                                                         1e-9)})
        if progress is not None:
            progress(history[-1])
    fit(model, batches, t,
        validate=lambda: evaluate_loss(model, val.z, val_ends, s.window, s.horizon, val_loss,
                                       t.precision, rows=val.rows),
        step_model=wrap(model) if wrap else None, progress=False, rank=dist.rank,
        world=dist.world, on_epoch=row)
    return model.eval(), history


def summary(p, t: TrainSettings, model, history: list[dict], seconds: float, dist,
            peak_mib: float) -> dict:
    """The metrics file's record of a pretraining run."""
    windows = len(history) * p.steps_per_round * t.batch_size
    out = {"val_loss": min(r["val_loss"] for r in history), "rounds": len(history),
           "windows": windows, "seconds": round(seconds, 1),
           "windows_per_s": round(windows / seconds, 1), "peak_mib": round(peak_mib, 1),
           "parameters": n_parameters(model), "device": str(dist.device),
           "processes": dist.world}
    if dist.device.type == "cuda":
        out["peak_gpu_mib"] = round(torch.cuda.max_memory_allocated() / 2 ** 20, 1)
    return out
