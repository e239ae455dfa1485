"""Diverse ensembles on the M3 validation cuts (the last horizon of each train part; the test
parts never read): for each configuration, every member's sMAPE (the mean over all
forecasts) and the ensemble's by its mean and by its median, so the gain of diversity (seeds,
losses, lookbacks) is visible beside one member alone.

    python bench/ensembles.py --subset monthly [--config NAME ...] [--out FILE.json]

Configurations (on top of the subset's competition settings, competitions/params.yaml):
``own`` (the committed settings), ``losses`` (one seed of each of sMAPE, MASE and MAPE),
``losses3`` (three seeds of each). Prints a table; ``--out`` writes every figure as JSON.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import ROOT, train_on  # noqa: E402

from attn_forecast.evaluation.metrics import smape  # noqa: E402
from attn_forecast.forecasters.neural import ModelForecaster  # noqa: E402
from attn_forecast.forecasters.run import run  # noqa: E402
from attn_forecast.pipeline.competition import model_store, subset_params  # noqa: E402

CONFIGS = {"own": {},
           "losses": {"train": {"losses": ["smape", "mase", "mape"], "ensemble": 1}},
           "losses3": {"train": {"losses": ["smape", "mase", "mape"], "ensemble": 3}}}


def scores(subset: str, over: dict) -> dict:
    p, prof = subset_params(ROOT / "competitions" / "params.yaml", subset, over,
                            holdout="validation")
    store = model_store(p, prof)
    model, results, seconds, season = train_on(p, store)
    fc = run(store, [ModelForecaster(model)], ("test",), (), season=season)
    f = fc.forecasts["model"]["test"]
    y = store.targets(fc.ends["test"])
    members = f.members if f.members is not None else f.point[None]
    out = {"members": [{"window": r.window, "loss": r.loss, "smape": smape(y, m)}
                       for r, m in zip(results, members)],
           "mean": smape(y, members.mean(axis=0)),
           "median": smape(y, np.median(members, axis=0)), "seconds": seconds}
    out["ensemble"] = out[getattr(model, "combine", "mean")] if len(members) > 1 \
        else out["mean"]
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--subset", default="monthly")
    ap.add_argument("--config", action="append", choices=sorted(CONFIGS))
    ap.add_argument("--out")
    args = ap.parse_args()
    print("command: python bench/ensembles.py " + " ".join(sys.argv[1:]), flush=True)
    torch.manual_seed(0)
    got = {}
    print("| subset | configuration | members | each member (min / mean / max) | mean | "
          "median | seconds |")
    print("|---|---|---:|---|---:|---:|---:|")
    for name in args.config or list(CONFIGS):
        r = scores(args.subset, CONFIGS[name])
        got[name] = r
        each = [m["smape"] for m in r["members"]]
        print(f"| {args.subset} | {name} | {len(each)} | {min(each):.2f} / "
              f"{np.mean(each):.2f} / {max(each):.2f} | {r['mean']:.2f} | {r['median']:.2f} | "
              f"{r['seconds']:.0f} |", flush=True)
    if args.out:
        Path(args.out).write_text(json.dumps({"subset": args.subset, "command":
                                              " ".join(sys.argv), "results": got}, indent=1))


if __name__ == "__main__":
    main()
