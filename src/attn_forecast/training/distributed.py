"""The processes of a DistributedDataParallel run: relaunching a stage under torchrun, joining
its group, wrapping the model; and this process's peak memory."""
from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..cpu import cores


def relaunch(nproc: int, script: str, argv: list[str]) -> None:
    """Run ``script argv`` again under torchrun with ``nproc`` processes on this machine, then
    exit with its status; every rank reports the same ``error:`` line, shown once."""
    import subprocess
    import sys
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone",
           f"--nproc_per_node={nproc}", script, *argv]
    env = dict(os.environ)
    env.setdefault("OMP_NUM_THREADS", str(max(1, cores() // nproc)))
    res = subprocess.run(cmd, env=env, stderr=subprocess.PIPE, text=True)
    errors = [ln for ln in res.stderr.splitlines() if ln.startswith("error: ")]
    if res.returncode and errors:  # torchrun adds its own report of the failure
        print(errors[0], file=sys.stderr)
        sys.exit(2)
    sys.stderr.write(res.stderr)
    sys.exit(res.returncode)


@dataclass
class Distributed:
    """This process's place in a DistributedDataParallel run (rank 0 of 1 when alone)."""
    rank: int
    world: int
    device: Any  # torch.device

    def wrapper(self, compile_model: bool) -> Callable | None:
        """What training calls instead of a bare model: DDP and/or torch.compile, or None."""
        if self.world == 1 and not compile_model:
            return None

        def wrap(model):
            import torch
            step = model
            if self.world > 1:
                ids = [self.device.index] if self.device.type == "cuda" else None
                step = torch.nn.parallel.DistributedDataParallel(model, device_ids=ids)
            return torch.compile(step) if compile_model else step
        return wrap

    def close(self) -> None:
        if self.world > 1:
            import torch
            torch.distributed.destroy_process_group()


def distributed(nproc: int, device, script: str, argv: list[str]) -> Distributed:
    """Join the DDP group torchrun started (WORLD_SIZE > 1), or relaunch ``script`` under
    torchrun when ``nproc`` > 1 asks for one (this call then does not return)."""
    import torch
    world = int(os.environ.get("WORLD_SIZE", "1"))
    if nproc > 1 and world == 1:
        relaunch(nproc, script, argv)
    rank = int(os.environ.get("RANK", "0"))
    if world > 1:
        if device.type == "cuda":
            device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0")))
            torch.cuda.set_device(device)
        torch.distributed.init_process_group("nccl" if device.type == "cuda" else "gloo")
    return Distributed(rank, world, device)


def peak_rss_mib() -> float:
    """This process's peak resident memory so far (MiB; Linux reports KiB)."""
    import resource
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
