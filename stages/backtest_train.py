"""Stage backtest_train: train the model once per rolling-origin fold (backtest.folds > 0).

The folds lie inside every series' test part; fold k trains on the data before its origins
only (every scaler refitted there). out: a folder with each fold's checkpoint and forecasts
(``origin_<t>.pt`` and ``.npz``, t = the first series' first test target) and ``folds.json``
(fold, files, cuts, and the key of what its model depends on). Folds whose key did not change
are not retrained (the folder is a persistent DVC output), so `dvc exp run -S
backtest.folds=...` with a fixed ``backtest.fold_size`` trains only the new folds. Folds train
in parallel worker processes (``backtest.jobs``). Off (``folds: 0``): an empty index, no torch.
"""
from __future__ import annotations

import argparse
import multiprocessing
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from attn_forecast import stage  # first: it pins the CPU before numpy loads
from attn_forecast.config.load import load_params
from attn_forecast.data.store_io import profile
from attn_forecast.io import read_json, write_json
from attn_forecast.pipeline.forecasting import taus


@stage.main
def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--params", default="params.yaml")
    ap.add_argument("--prepared", required=True, help="folder written by prepare")
    ap.add_argument("--out", required=True, help="folder for the folds' models and forecasts")
    ap.add_argument("--pretrained", help="the prior (train.init pretrained)")
    args = ap.parse_args(argv)
    method = "spawn" if "torch" in sys.modules else "fork"  # fork: before torch has run
    params = load_params(args.params, profile(args.prepared))
    out = Path(args.out)
    index = out / "folds.json"
    before = {f["file"]: f["key"] for f in (read_json(index)["folds"] if index.is_file() else [])}
    entries, todo, how = [], [], {}
    if params.backtest.folds:
        from attn_forecast.pipeline.fold_training import plan_folds, train_fold  # torch
        entries, todo, how = plan_folds(params, args.prepared, out, before, args.pretrained)
    out.mkdir(parents=True, exist_ok=True)  # after every check: a refusal leaves nothing
    t0 = time.perf_counter()
    if todo:
        ctx = multiprocessing.get_context(method)
        with ProcessPoolExecutor(max_workers=min(how["jobs"], len(todo)), mp_context=ctx) as pool:
            runs = [pool.submit(train_fold, args.prepared, e["cuts"], how["settings"],
                                how["train"], how["device"], str(out / e["file"]),
                                str(out / e["forecasts"]), e["key"], how["threads"],
                                taus(params), how["parts"], how["prior"], how["season"],
                                how["combine"], how["losses"])
                    for e in todo]
            for run in runs:
                run.result()
    keep = {f for e in entries for f in (e["file"], e["forecasts"])}
    for stale in [*out.glob("*.pt"), *out.glob("*.npz")]:  # the folder is what DVC hashes
        if stale.name not in keep:
            stale.unlink()
    write_json(index, {"folds": entries})
    print(f"backtest_train: {len(entries)} folds, {len(todo)} trained "
          f"({len(entries) - len(todo)} unchanged) in {time.perf_counter() - t0:.1f} s -> {out}"
          if entries else f"backtest_train: off (backtest.folds 0) -> {out}")
    return {"folds": len(entries), "trained": len(todo)}


if __name__ == "__main__":
    stage.run(main)
