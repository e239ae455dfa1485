"""Pretraining the prior: one global attention model on a corpus drawn on the fly.

Each round draws ``series_per_round`` fresh series (seed ``seed``, round ``r``: the same
series on every rank and every run), lays them end to end as one flat series with offsets
(a panel, as the pipeline's stores), and takes ``steps_per_round`` optimizer steps on windows
drawn at random across them. A window may reach before its series' first value: those steps
are padding, masked out of attention, pooling and the instance norm (the mechanism of
``prepare.min_context``), so the model meets every context from ``min_context`` to
``window`` steps. The targets are the next ``horizon`` values, scored by the pinball loss of
the quantile head; a shorter horizon is the first steps of the head (``model.with_horizon``).

A fixed validation corpus (another seed) is scored after every round; the weights of the
best round are kept. The loop is the training loop's (``train._train_epoch``), so torchrun,
DistributedDataParallel, bf16 autocast and ``torch.compile`` work here as they do in training.
"""
from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import torch

from . import corpus
from .model import ModelSettings, build_model
from .train import Rows, _train_epoch, evaluate_loss, inputs, make_loss, make_optimizer, \
    make_scheduler


def settings_of(p) -> ModelSettings:
    """The prior's model settings from the ``pretrain`` section."""
    return ModelSettings(
        kind="attention", window=p.window, horizon=p.horizon, d_model=p.d_model,
        ffn_dim=p.ffn_dim, n_heads=p.n_heads, n_layers=p.n_layers, positional="sinusoidal",
        residual=True, pooling="mean", dropout=0.0, instance_norm=p.instance_norm,
        revin_affine=False, patch_len=p.patch_len, patch_stride=p.patch_stride,
        quantiles=tuple(p.quantiles))


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
    from .windows import concat_ranges
    ends = concat_ranges(offsets[:-1] + min_context, offsets[1:] - horizon + 1)
    n = len(series)
    one = torch.ones(n, device=device)
    rows = Rows(torch.from_numpy(offsets).to(device), 0, True, torch.zeros(n, device=device),
                one, one)
    return Flat(torch.from_numpy(np.concatenate(series)).to(device), rows,
                torch.from_numpy(ends).to(device))


def round_series(p, r: int, real: list[np.ndarray]) -> list[np.ndarray]:
    """Round ``r``'s corpus: the generators' series, and with real series a share of them
    (``real_share``) drawn from ``real``."""
    seed = p.seed * 1_000_003 + r
    n_real = int(round(p.series_per_round * p.real_share)) if real else 0
    out = corpus.draw(p.series_per_round - n_real, (p.min_length, p.max_length), seed,
                      tuple(p.generators), p.shift_prob, p.spike_prob)
    if n_real:
        pick = np.random.default_rng(seed).integers(0, len(real), n_real)
        out += [real[i] for i in pick]
    return out


def pretrain(p, device: torch.device, dist, real: list[np.ndarray] | None = None,
             progress=None, train_params=None) -> tuple[torch.nn.Module, list[dict]]:
    """Train the prior; returns the model (the best validation round's weights) and one
    history row per round. ``train_params``: a TrainParams with the optimizer's settings."""
    s = settings_of(p)
    torch.manual_seed(p.seed)
    model = build_model(s).to(device)
    wrap = dist.wrapper(p.compile)
    step_model = wrap(model) if wrap else model
    tp = train_params
    loss_fn = make_loss("mae", s.quantiles).to(device)
    opt = make_optimizer(model, tp)
    sched = make_scheduler(opt, tp)
    val = flat(corpus.draw(p.val_series, (p.min_length, p.max_length), p.seed + 7_777_777,
                           tuple(p.generators), p.shift_prob, p.spike_prob),
               s.horizon, p.min_context, device)
    val_ends = val.ends[torch.linspace(0, len(val.ends) - 1, min(len(val.ends), 4096),
                                       device=device).long()]
    gen = torch.Generator(device=device).manual_seed(p.seed)
    aug_gen = torch.Generator(device=device).manual_seed(p.seed + 1 + dist.rank)
    rank, world, bs = dist.rank, dist.world, p.batch_size
    history, best, best_state = [], float("inf"), None
    for r in range(1, p.rounds + 1):
        t0 = time.perf_counter()
        data = flat(round_series(p, r, real or []), s.horizon, p.min_context, device)
        drawn = time.perf_counter() - t0
        pick = torch.randint(len(data.ends), (p.steps_per_round * bs,), generator=gen,
                             device=device)

        def batches(d=data, pick=pick):
            for i in range(0, len(pick), bs):
                e = d.ends[pick[i:i + bs]]
                mine = e[rank::world] if world > 1 else e
                x, y, c, seen = inputs(d.z, None, mine, s.window, s.horizon, d.rows.first(mine))
                yield x, y, c, seen, None, len(e)
        lr = opt.param_groups[0]["lr"]
        loss, _ = _train_epoch(model, step_model, batches(), opt, loss_fn, tp, aug_gen,
                               len(pick), rank, world, rows=data.rows)
        if sched is not None:
            sched.step()
        val_loss = evaluate_loss(model, val.z, val_ends, s.window, s.horizon, loss_fn,
                                 tp.precision, rows=val.rows)
        seconds = time.perf_counter() - t0
        history.append({"round": r, "train_loss": loss, "val_loss": val_loss, "lr": lr,
                        "seconds": seconds, "draw_seconds": drawn,
                        "windows_per_s": len(pick) / max(seconds - drawn, 1e-9)})
        if val_loss < best:
            best = val_loss
            best_state = {k: v.detach().clone() for k, v in model.state_dict().items()}
        if progress is not None:
            progress(history[-1])
    if best_state is not None:
        model.load_state_dict(best_state)
    return model.eval(), history


def from_params(p, dist) -> tuple:
    """Pretrain the prior as ``params.pretrain`` says, in this process of the run (``dist``);
    returns the model, the per-round history and the checkpoint's record (the corpus and
    settings, the summary the metrics file holds)."""
    import time

    from .model import n_parameters
    from .params import ParamsError, TrainParams
    from .progress import Progress
    from .runtime import peak_rss_mib
    pp = p.pretrain
    if pp.min_length < pp.min_context + pp.horizon or pp.max_length < pp.min_length:
        raise ParamsError(f"pretrain.min_length ({pp.min_length}) must be >= pretrain."
                          f"min_context + pretrain.horizon ({pp.min_context + pp.horizon}) and "
                          f"<= pretrain.max_length ({pp.max_length})")
    from .rules import check_patches
    check_patches(pp.window, pp.patch_len, pp.patch_stride)
    if pp.d_model % pp.n_heads or pp.d_model % 2:
        raise ParamsError(f"pretrain.d_model ({pp.d_model}) must be even and divisible by "
                          f"pretrain.n_heads ({pp.n_heads})")
    q = pp.quantiles
    if sorted(set(q)) != list(q) or 0.5 not in q or len(q) < 2:
        raise ParamsError(f"pretrain.quantiles must be increasing and hold 0.5, got {list(q)}")
    real = []
    if pp.real:
        from .corpus import competition_train_parts
        for subset in pp.real:
            real += competition_train_parts("m3", subset, pp.min_context + pp.horizon)
    tp = TrainParams(lr=pp.lr, epochs=pp.rounds, scheduler="cosine",
                     warmup_epochs=pp.warmup_rounds, grad_clip=pp.grad_clip,
                     precision=pp.precision, augment_noise=0.0, batch_size=pp.batch_size)
    bar = Progress(pp.rounds, enabled=dist.rank == 0, what="pretrain: round")
    t0 = time.perf_counter()
    try:
        model, history = pretrain(pp, dist.device, dist, real,
                             lambda row: bar.update(row["round"], row["train_loss"],
                                                    row["val_loss"]), tp)
    finally:
        bar.close()
        dist.close()
    seconds = time.perf_counter() - t0
    windows = pp.rounds * pp.steps_per_round * pp.batch_size
    summary = {"val_loss": min(r["val_loss"] for r in history), "rounds": len(history),
               "windows": windows, "seconds": round(seconds, 1),
               "windows_per_s": round(windows / seconds, 1),
               "peak_mib": round(peak_rss_mib(), 1), "parameters": n_parameters(model),
               "device": str(dist.device), "processes": dist.world}
    if dist.device.type == "cuda":
        summary["peak_gpu_mib"] = round(torch.cuda.max_memory_allocated() / 2 ** 20, 1)
    record = {"prepare": {}, "kind": "pretrained", "pretrain": pp.model_dump(),
              "history": history, "summary": summary, "real_series": len(real)}
    return model, history, record
