"""Stage backtest_train: train the model once per rolling-origin fold (backtest.folds > 0).

out: a folder with one checkpoint per fold, ``origin_<t>.pt`` for the fold whose first test
target is time index t (each trained on the data before that origin only, its scaler refitted
there), and ``folds.json`` (fold number, file, boundaries, and the key of what its model
depends on). Folds whose key did not change since the last run are not retrained (the
folder is a persistent DVC output), so `dvc exp run -S backtest.folds=...` with a fixed
``backtest.fold_size`` trains only the new folds. Folds train in parallel worker processes
(``backtest.jobs``). With ``backtest.folds: 0`` (off) it writes an empty index and never
imports torch.
"""
from __future__ import annotations

import attn_forecast  # noqa: F401, I001  (first: pins CPU code paths before numpy and torch load)
import argparse
import multiprocessing
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict
from pathlib import Path

from attn_forecast.backtest import check_folds, fold_key, fold_splits, train_fold
from attn_forecast.errors import run_cli
from attn_forecast.io import read_json, write_json
from attn_forecast.params import load_params
from attn_forecast.preflight import check as preflight
from attn_forecast.windows import load_prepared


def _start_method() -> str:
    """fork while torch has run nothing in this process (a DVC stage: the workers start in
    milliseconds and inherit the loaded torch); spawn when torch already ran (the stage called
    in-process, as the benchmarks do), since forking a running OpenMP pool can deadlock."""
    return "spawn" if "torch" in sys.modules else "fork"


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--params", default="params.yaml")
    ap.add_argument("--prepared", required=True, help="folder written by prepare")
    ap.add_argument("--out", required=True, help="folder for the fold checkpoints")
    args = ap.parse_args(argv)
    method = _start_method()  # before anything below imports torch
    params = load_params(args.params)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    index = out / "folds.json"
    folds = []
    if params.backtest.folds:  # (a panel has no backtest: params refuse folds > 0 there)
        prep = load_prepared(args.prepared)
        preflight(params, prep)
        s, pp = prep.split, params.prepare
        folds = fold_splits(s.n, s.window, s.horizon, pp.test_frac, pp.val_frac,
                            params.backtest, prep.offset)
        check_folds(folds, pp.val_frac)
    before = {f["file"]: f["key"] for f in (read_json(index)["folds"] if index.is_file() else [])}
    if not folds:
        for stale in out.glob("*.pt"):  # any checkpoint: the folder is what DVC hashes
            stale.unlink()
        write_json(index, {"folds": []})
        print(f"backtest_train: off (backtest.folds 0) -> {out}")
        return {"folds": 0, "trained": 0}

    from attn_forecast.preflight import model_settings  # torch, only when there is work
    from attn_forecast.runtime import choose_threads, cores, step_flops
    from attn_forecast.train import resolve_batch
    settings = model_settings(params, prep)
    n_train = len(folds[-1].ends("train"))
    bs = resolve_batch(params.train.batch_size, n_train)
    threads = choose_threads(params.train.threads, step_flops(settings, max(bs, 1)))
    jobs = params.backtest.jobs
    jobs = max(1, cores() // threads) if jobs == "auto" else jobs
    entries, todo = [], []
    for k, split in enumerate(folds, 1):
        origin = split.bounds("test")[0] + prep.offset      # the fold's first target time
        name, key = f"origin_{origin}.pt", fold_key(args.prepared, split, params)
        entries.append({"fold": k, "file": name, "key": key, "split": asdict(split)})
        if before.get(name) != key or not (out / name).is_file():
            todo.append(entries[-1])
    t0 = time.perf_counter()
    if todo:
        import torch  # noqa: F401  (loaded once here: forked workers inherit it)
        ctx = multiprocessing.get_context(method)
        with ProcessPoolExecutor(max_workers=min(jobs, len(todo)), mp_context=ctx) as pool:
            runs = [pool.submit(train_fold, args.prepared, e["split"], params.model_dump(),
                                str(out / e["file"]), e["key"], threads) for e in todo]
            for run in runs:
                run.result()
    for stale in out.glob("*.pt"):
        if stale.name not in {e["file"] for e in entries}:
            stale.unlink()
    write_json(index, {"folds": entries})
    print(f"backtest_train: {len(folds)} folds, {len(todo)} trained "
          f"({len(folds) - len(todo)} unchanged) in {time.perf_counter() - t0:.1f} s with "
          f"{min(jobs, max(len(todo), 1))} worker(s) -> {out}")
    return {"folds": len(folds), "trained": len(todo)}


if __name__ == "__main__":
    run_cli(main)
