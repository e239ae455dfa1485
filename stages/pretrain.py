"""Stage pretrain: the prior, one global attention model trained on a synthetic corpus drawn
on the fly (and, with ``pretrain.real``, the train parts of M3 subsets), for the train
stage's ``train.init: pretrained`` and the ``zeroshot`` forecaster.

out: the checkpoint (``models/pretrained.pt``, committed: a fresh clone never pretrains), the
per-round history CSV and a metrics file (the final validation loss, windows/s, seconds and
the peak memory). With ``pretrain.nproc`` > 1 the stage relaunches itself under
``torch.distributed.run``, as training does.
"""
from __future__ import annotations

import argparse
import sys

from attn_forecast import stage  # first: it pins the CPU before numpy loads
from attn_forecast.config.load import load_params
from attn_forecast.io import write_columns, write_json
from attn_forecast.model import checkpoint
from attn_forecast.pipeline.model import device
from attn_forecast.pipeline.prior import from_params, kept
from attn_forecast.training.distributed import distributed


@stage.main
def main(argv: list[str] | None = None):
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--params", default="params.yaml")
    for name in ("model", "history", "metrics"):
        ap.add_argument(f"--{name}", required=True)
    args = ap.parse_args(argv)
    params = load_params(args.params)
    t = params.pretrain.train
    if kept(params, [args.model, args.history, args.metrics]):
        print(f"pretrain: {args.model} was made with these settings (pretrain in params.yaml): "
              "kept; delete it to pretrain afresh")
        return []
    if t.compile:  # before torch's first operation
        stage.unpin_torch()
    dist = distributed(t.nproc, device(t, "pretrain.train"), __file__,
                       sys.argv[1:] if argv is None else argv)
    model, history, record = from_params(params, dist)
    if dist.rank != 0:
        return history
    checkpoint.save(args.model, model, record)
    write_columns(args.history, {k: [row[k] for row in history]
                                 for k in ("round", "train_loss", "val_loss", "lr")}, 6)
    write_json(args.metrics, record["summary"])
    s = record["summary"]
    print(f"pretrain: {s['parameters']:,} parameters, {s['rounds']} rounds x "
          f"{params.pretrain.steps_per_round} steps of {t.batch_size} windows on {dist.device} "
          f"in {s['seconds']:.0f} s ({s['windows_per_s']:,.0f} windows/s, peak "
          f"{s['peak_mib']:.0f} MiB), validation pinball {s['val_loss']:.4f} -> {args.model}")
    return history


if __name__ == "__main__":
    stage.run(main)
