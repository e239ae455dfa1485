"""How many torch threads a job gets (by its size), and the memory of a training step.

Small models train fastest on one thread: a step is a few hundred microseconds of matrix
work, and a second OpenMP thread costs more in hand-offs than it saves (on a 2-core machine
shared with another job, many times more). ``train.threads: auto`` therefore takes one thread
below :data:`PARALLEL_FLOPS` of work per optimizer step and every core above it (at most
:data:`MAX_AUTO_THREADS`); ``bench/threads.py`` measures where the crossover lies.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from ..cpu import cores
from ..model.kinds import kind_of

if TYPE_CHECKING:
    from ..model.settings import ModelSettings

PARALLEL_FLOPS = 2e9    # forward + backward FLOPs per step above which threads pay off
MAX_AUTO_THREADS = 8


def step_flops(s: "ModelSettings", batch: int) -> float:
    """Approximate forward + backward FLOPs of one optimizer step on ``batch`` windows."""
    return 3 * 2 * batch * kind_of(s).flops(s)  # multiply-adds x 2, forward + backward x 3


def choose_threads(setting: str | int, flops_per_step: float, n_cores: int | None = None
                   ) -> int:
    """``train.threads``: an integer as given; ``auto`` by the size of one step."""
    if setting != "auto":
        return int(setting)
    n_cores = cores() if n_cores is None else n_cores
    if flops_per_step < PARALLEL_FLOPS:
        return 1
    return max(1, min(n_cores, MAX_AUTO_THREADS))


def set_threads(n: int) -> None:
    import torch
    torch.set_num_threads(n)


def activation_bytes(s: "ModelSettings", batch: int) -> float:
    """Rough peak memory of one training step's activations (float32, what the forward pass
    keeps for the backward one), for a warning before a full batch that will not fit."""
    return 4.0 * batch * kind_of(s).activations(s)


def full_batch_warning(s: "ModelSettings", n_windows: int, batch: int,
                       limit: float = 2 ** 30) -> str | None:
    """A warning when a full batch (``batch`` == every window) will need more than ``limit``
    bytes."""
    need = activation_bytes(s, n_windows)
    if batch < n_windows or need <= limit:
        return None
    return (f"warning: a full batch of {n_windows:,} windows needs about {need / 2 ** 30:.1f} "
            "GiB of memory for its activations; set train.batch_size (e.g. 256) to bound it")
