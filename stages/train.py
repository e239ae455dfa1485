"""Stage train: fit the forecaster on the train windows (CUDA when present, else CPU).

out: checkpoint (state_dict + model settings + prepare metadata + the full-precision history;
loads with ``weights_only=True``) and the per-epoch history CSV ``epoch, train_loss, val_loss,
lr`` (of the first member, with ``train.ensemble`` > 1). With ``train.live: true`` the same rows
go to DVCLive's ``dvclive/`` after every epoch, for watching the run (not a DVC output).

With ``train.nproc`` > 1 the stage relaunches itself under ``torch.distributed.run`` as
DistributedDataParallel (gloo on CPU, NCCL on GPU); rank 0 writes the outputs. It can also be
started by hand: ``torchrun --nproc_per_node=N stages/train.py ...``.
"""
from __future__ import annotations

import attn_forecast  # noqa: F401, I001  (first: pins CPU code paths before numpy and torch load)
import argparse
import sys

import pandas as pd
import torch

from attn_forecast.cpu import unpin_torch
from attn_forecast.errors import run_cli
from attn_forecast.io import write_csv
from attn_forecast.live import epoch_logger
from attn_forecast.metrics import CSV_DIGITS
from attn_forecast.model import n_parameters, save_checkpoint
from attn_forecast.params import load_params
from attn_forecast.preflight import check as preflight
from attn_forecast.preflight import model_settings
from attn_forecast.runtime import (choose_threads, cores, distributed, full_batch_warning,
                                   set_threads, step_flops)
from attn_forecast.train import (FitResult, check_runtime, resolve_batch, select_device,
                                 train_model)
from attn_forecast.panel import load_data


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
    prep = load_data(args.prepared)
    preflight(params, prep)
    device = select_device(p.device)
    check_runtime(p, device)
    dist = distributed(p.nproc, device, __file__, sys.argv[1:] if argv is None else argv)

    settings = model_settings(params, prep)
    n_train = len(prep.split.ends("train"))
    batch = resolve_batch(p.batch_size, n_train)
    threads = choose_threads(p.threads, step_flops(settings, batch),
                             max(1, cores() // dist.world))
    set_threads(threads)
    warning = full_batch_warning(settings, n_train, batch)
    if warning and dist.rank == 0:
        print(warning, file=sys.stderr)
    z = torch.from_numpy(prep.z).to(dist.device)
    cal = torch.from_numpy(prep.cal).to(dist.device) if prep.cal is not None else None
    ends = {part: torch.from_numpy(prep.split.ends(part)).to(dist.device)
            for part in ("train", "val")}
    live = None
    try:
        live = epoch_logger(p.live and dist.rank == 0)  # DVCLive: rank 0 only
        model, results = train_model(settings, z, ends["train"], ends["val"], p, dist.device,
                                     wrap=dist.wrapper(p.compile), rank=dist.rank,
                                     world=dist.world, cal=cal, on_epoch=live)
    finally:
        try:
            dist.close()
        finally:
            if live is not None:
                live.close()
    res = results[0]
    if dist.rank != 0:
        return res
    # the histories at full precision (the committed CSV holds 6 significant digits)
    save_checkpoint(args.model, model, {"prepare": prep.meta(), "best_epoch": res.best_epoch,
                                        "history": res.history,
                                        "member_histories": [r.history for r in results]})
    hist = pd.DataFrame(res.history, columns=["epoch", "train_loss", "val_loss", "lr"])
    write_csv(args.history, hist, digits=CSV_DIGITS)
    where = f" x {dist.world} processes" if dist.world > 1 else f", {threads} thread(s)"
    members = f" x {len(results)} seeds" if len(results) > 1 else ""
    size = n_parameters(model) // len(results)
    seconds = sum(r.seconds for r in results)
    print(f"train: {settings.kind} model{members}, {size} parameters"
          f"{' each' if len(results) > 1 else ''}, "
          f"{len(res.history)} epochs on {dist.device}{where} in {seconds:.2f} s "
          f"({res.windows_per_s:,.0f} windows/s), final loss "
          f"{res.history[-1]['train_loss']:.5f}, best epoch {res.best_epoch} -> {args.model}")
    return res


if __name__ == "__main__":
    run_cli(main)
