"""Stage train: fit the forecaster on the train windows (CUDA when present, else CPU).

out: checkpoint (state_dict + model settings + prepare metadata; loads with
``weights_only=True``) and the per-epoch history CSV ``epoch, train_loss, val_loss, lr``.

With ``train.nproc`` > 1 the stage relaunches itself under ``torch.distributed.run`` as
DistributedDataParallel (gloo on CPU, NCCL on GPU); rank 0 writes the outputs. It can also be
started by hand: ``torchrun --nproc_per_node=N stages/train.py ...``.
"""
from __future__ import annotations

import attn_forecast  # noqa: F401, I001  (first: pins CPU code paths before numpy and torch load)
import argparse
import os
import subprocess
import sys

import numpy as np
import pandas as pd
import torch

from attn_forecast.cpu import unpin_torch
from attn_forecast.errors import run_cli
from attn_forecast.io import write_csv
from attn_forecast.metrics import CSV_DIGITS
from attn_forecast.model import ModelSettings, build_model, n_parameters, save_checkpoint
from attn_forecast.preflight import check as preflight
from attn_forecast.params import load_params
from attn_forecast.runtime import choose_threads, cores, full_batch_warning, set_threads, step_flops
from attn_forecast.train import FitResult, check_runtime, fit, select_device
from attn_forecast.windows import load_prepared


def _relaunch(nproc: int, argv: list[str] | None) -> None:
    """Run this script again under torchrun with ``nproc`` processes on this machine."""
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone",
           f"--nproc_per_node={nproc}", __file__, *(sys.argv[1:] if argv is None else argv)]
    env = dict(os.environ)
    env.setdefault("OMP_NUM_THREADS", str(max(1, (os.cpu_count() or 1) // nproc)))
    res = subprocess.run(cmd, env=env, stderr=subprocess.PIPE, text=True)
    errors = [ln for ln in res.stderr.splitlines() if ln.startswith("error: ")]
    if res.returncode and errors:  # every rank reports the same error; torchrun adds its own
        print(errors[0], file=sys.stderr)
        sys.exit(2)
    sys.stderr.write(res.stderr)
    sys.exit(res.returncode)


def main(argv: list[str] | None = None) -> FitResult | None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--params", default="params.yaml")
    ap.add_argument("--prepared", required=True, help="folder written by prepare")
    ap.add_argument("--model", required=True, help="checkpoint to write")
    ap.add_argument("--history", required=True, help="per-epoch history CSV to write")
    args = ap.parse_args(argv)
    params = load_params(args.params)
    p = params.train
    if p.compile:  # before torch's first operation
        unpin_torch()
    prep = load_prepared(args.prepared)
    preflight(params, prep)
    device = select_device(p.device)
    world = int(os.environ.get("WORLD_SIZE", "1"))
    check_runtime(p, device)
    if p.nproc > 1 and world == 1:
        _relaunch(p.nproc, argv)
    rank = int(os.environ.get("RANK", "0"))
    if world > 1:
        if device.type == "cuda":
            device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0")))
            torch.cuda.set_device(device)
        torch.distributed.init_process_group("nccl" if device.type == "cuda" else "gloo")

    torch.manual_seed(p.seed)
    np.random.seed(p.seed)
    settings = ModelSettings(window=prep.split.window, horizon=prep.split.horizon,
                             **params.model.model_dump())
    n_train = len(prep.split.ends("train"))
    batch = n_train if p.batch_size == 0 else min(p.batch_size, n_train)
    threads = choose_threads(p.threads, step_flops(settings, batch), max(1, cores() // world))
    set_threads(threads)
    warning = full_batch_warning(settings, n_train, p.batch_size)
    if warning and rank == 0:
        print(warning, file=sys.stderr)
    model = build_model(settings).to(device)
    z = torch.from_numpy(prep.z).to(device)
    to_dev = lambda part: torch.from_numpy(prep.split.ends(part)).to(device)  # noqa: E731
    step_model = model
    if world > 1:
        step_model = torch.nn.parallel.DistributedDataParallel(
            model, device_ids=[device.index] if device.type == "cuda" else None)
    if p.compile:
        step_model = torch.compile(step_model)
    try:
        res = fit(model, z, to_dev("train"), to_dev("val"), prep.split.window,
                  prep.split.horizon, p, step_model=step_model, rank=rank, world=world)
    finally:
        if world > 1:
            torch.distributed.destroy_process_group()
    if rank != 0:
        return res
    # the history at full precision (the committed CSV holds 6 significant digits)
    save_checkpoint(args.model, model, {"prepare": prep.meta(), "best_epoch": res.best_epoch,
                                        "history": res.history})
    hist = pd.DataFrame(res.history, columns=["epoch", "train_loss", "val_loss", "lr"])
    write_csv(args.history, hist, digits=CSV_DIGITS)
    last = res.history[-1]
    procs = f" x {world} processes" if world > 1 else f", {threads} thread(s)"
    print(f"train: {settings.kind} model, {n_parameters(model)} parameters, "
          f"{len(res.history)} epochs on {device}{procs} in {res.seconds:.2f} s "
          f"({res.windows_per_s:,.0f} windows/s), final loss {last['train_loss']:.5f}, "
          f"best epoch {res.best_epoch} -> {args.model}")
    return res


if __name__ == "__main__":
    run_cli(main)
