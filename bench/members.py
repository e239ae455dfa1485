"""An ensemble's members trained as one batched network (training/stacked.py) against the
one-model loop (one member after another), on M3 monthly's series with the competition's
monthly settings: members per second (and optimizer steps per second) for each, at several
ensemble sizes; the same members, batches and steps both ways.

    python bench/members.py [--subset monthly] [--members 3,9,18] [--steps 100]

Prints the command, then one row per size: seconds, members per second, the speed-up.
"""
from __future__ import annotations

import argparse
from dataclasses import replace
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import ROOT  # noqa: E402

from attn_forecast.pipeline import training as pm  # noqa: E402
from attn_forecast.pipeline.competition import model_store, subset_params  # noqa: E402
from attn_forecast.setup.forecasting import check_data  # noqa: E402
from attn_forecast.training.batches import to_device  # noqa: E402
from attn_forecast.training.members import QUIET, train_model  # noqa: E402

LOSSES = ("smape", "mase", "mape")


def timed(settings, data, p, stack: bool, losses: tuple) -> float:
    t0 = time.perf_counter()
    train_model(settings, replace(data, val=data.val[:0]), p, QUIET, losses=losses, stack=stack)
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--subset", default="monthly")
    ap.add_argument("--members", default="3,9,18")
    ap.add_argument("--steps", type=int, default=100)
    args = ap.parse_args()
    print("command: python bench/members.py " + " ".join(sys.argv[1:]), flush=True)
    p, prof = subset_params(ROOT / "competitions" / "params.yaml", args.subset,
                            holdout="validation")
    store = model_store(p, prof)
    settings = pm.model_settings(p, store, check_data(p, store))
    threads, _ = pm.threads_for(p, settings, int(store.counts("train").sum()), 1)
    data = to_device(store, torch.device("cpu"))
    print(f"{args.subset}: {store.n_series} series, {int(store.counts('train').sum()):,} "
          f"training windows, batch {p.train.batch_size}, {args.steps} steps a member, "
          f"{threads} thread(s)\n")
    print("| members | one after another (s) | as one batched network (s) | members/s, "
          "loop | members/s, batched | speed-up |")
    print("|---:|---:|---:|---:|---:|---:|")
    for k in (int(x) for x in args.members.split(",")):
        losses = LOSSES[:min(3, k)] if k % 3 == 0 else ()
        seeds = k // max(1, len(losses))
        tp = replace(pm.train_settings(p), ensemble=seeds, max_steps=args.steps,
                     epochs=10_000)
        loop = timed(settings, data, tp, False, losses)
        batched = timed(settings, data, tp, True, losses)
        print(f"| {k} | {loop:.1f} | {batched:.1f} | {k / loop:.3f} | {k / batched:.3f} | "
              f"{loop / batched:.2f}x |", flush=True)


if __name__ == "__main__":
    main()
