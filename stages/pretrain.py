"""Stage pretrain: the prior, one global attention model trained on a synthetic corpus drawn
on the fly (and, with ``pretrain.real``, the train parts of M3 subsets), for the train
stage's ``train.init: pretrained`` and the ``zeroshot`` forecaster.

out: the checkpoint (``models/pretrained.pt``, committed: a fresh clone never pretrains), the
per-round history CSV and a metrics file (the final validation loss, windows/s, seconds and
the peak memory). With ``pretrain.nproc`` > 1 the stage relaunches itself under
``torch.distributed.run``, as training does.
"""
from __future__ import annotations

import attn_forecast.cpu as _cpu  # noqa: I001
_cpu.pin()  # before numpy and torch load: the same kernels on every x86-64 CPU with AVX2
import argparse  # noqa: E402
import sys  # noqa: E402

from attn_forecast import checkpoint, pretrain, wiring  # noqa: E402
from attn_forecast.errors import run_cli  # noqa: E402
from attn_forecast.io import write_columns, write_json  # noqa: E402
from attn_forecast.params import load_params  # noqa: E402
from attn_forecast.runtime import distributed  # noqa: E402


# how a run executes, not what it learns: a change of these alone keeps the prior
EXECUTION = ("device", "compile", "nproc")


def kept(args, p) -> bool:
    """Whether the prior already there was made with these settings: then it is kept, so
    that `dvc repro --force`, `dvc exp run -f` and an edit of the library do not pretrain
    again. A new prior with the same settings: delete models/pretrained.pt first."""
    import os
    if not all(os.path.isfile(f) for f in (args.model, args.history, args.metrics)):
        return False
    try:
        made = checkpoint.read(args.model, "the prior").get("pretrain") or {}
    except Exception:
        return False
    now = p.model_dump()
    if any(made.get(k) != now[k] for k in now if k not in EXECUTION):
        return False
    print(f"pretrain: {args.model} was made with these settings (pretrain in params.yaml): "
          "kept; delete it to pretrain afresh")
    return True


def main(argv: list[str] | None = None):
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--params", default="params.yaml")
    for name in ("model", "history", "metrics"):
        ap.add_argument(f"--{name}", required=True)
    args = ap.parse_args(argv)
    params = load_params(args.params)
    p = params.pretrain
    if kept(args, p):
        return []
    if p.compile:  # before torch's first operation
        _cpu.unpin_torch()
    dist = distributed(p.nproc, wiring.device(params, p), __file__,
                       sys.argv[1:] if argv is None else argv)
    model, history, record = pretrain.from_params(params, dist)
    if dist.rank != 0:
        return history
    checkpoint.save(args.model, model, record)
    write_columns(args.history, {k: [row[k] for row in history]
                                 for k in ("round", "train_loss", "val_loss", "lr")}, 6)
    write_json(args.metrics, record["summary"])
    s = record["summary"]
    print(f"pretrain: {s['parameters']:,} parameters, {s['rounds']} rounds x "
          f"{p.steps_per_round} steps of {p.batch_size} windows on {dist.device} in "
          f"{s['seconds']:.0f} s ({s['windows_per_s']:,.0f} windows/s, peak "
          f"{s['peak_mib']:.0f} MiB), validation pinball {s['val_loss']:.4f} -> {args.model}")
    return history


if __name__ == "__main__":
    run_cli(main)
