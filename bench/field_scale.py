"""The statistical field on a panel of M4's shape, at scale: a synthetic panel (no download) of
yearly, quarterly and monthly series in the M4 competition's proportions (23 %, 24 %, 53 % of
these three) and of lengths like M4's shortest (yearly 20-60 values, quarterly 24-120, monthly
48-240; horizons 6, 8 and 18), through the pipeline's own steps in one process each: prepare
(the store), the field (ETS, Theta, Naive2, with their quantiles) and evaluate (points and
intervals), on ``local`` (this machine's processes) and ``dask`` (a cluster embedded here, a
worker per core).

    python bench/field_scale.py --series 10000,30000 [--engines local,dask] [--out FILE]
    python bench/field_scale.py --series 1000,10000,100000 --model

Prints, per size and engine, each step's wall seconds, the cost per series, and the peak
memory (RSS) of the main process and of the largest worker (each the largest since this
process began: run one engine per process for clean figures), and the same two sampled
during the field alone (every 0.1 s, any descendant process counting as a worker); ``--out``
also adds each row to a JSON file (a list of rows, each with the command, the date and the
commit it ran at). With ``--model``: the attention
model's side instead, on the same panel: prepare (each group's store, window three horizons),
then one epoch of the train stage's loop over every training window (batches of 1,024
gathered from the store's one series tensor as they are drawn: the windows are never all
materialized; the default architecture, one thread per core), its seconds, windows per
second and the process's peak memory.
"""
from __future__ import annotations

import argparse
import contextlib
import resource
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import ROOT  # noqa: E402  (and the project on sys.path)

from attn_forecast.config.load import parse_params  # noqa: E402
from attn_forecast.data.long_table import raw_of  # noqa: E402
from attn_forecast.data.sources import panel_series  # noqa: E402
from attn_forecast.pipeline.data import prepare  # noqa: E402
from attn_forecast.pipeline.field import field  # noqa: E402
from attn_forecast.pipeline.evaluate import score  # noqa: E402

GROUPS = {"yearly": (0.23, 1, 6, (20, 60)), "quarterly": (0.24, 4, 8, (24, 120)),
          "monthly": (0.53, 12, 18, (48, 240))}
FIELD = ["naive2", "ets", "theta"]


def frame(group: str, n: int, seed: int = 0) -> pd.DataFrame:
    """``n`` series of ``group``: each its length drawn from the group's range (+ horizon)."""
    _, period, h, (lo, hi) = GROUPS[group]
    lengths = np.random.default_rng([seed, period]).integers(lo, hi + 1, n) + h
    parts = [panel_series(i, int(k), seed + period, 0.15, 0.002)[0]
             for i, k in enumerate(lengths)]
    width = len(str(n))
    return pd.DataFrame({"id": np.repeat([f"{group[0]}{i:0{width}d}" for i in range(n)],
                                         lengths),
                         "t": np.concatenate([np.arange(k) for k in lengths]),
                         "value": np.abs(np.concatenate(parts)) + 1.0,
                         "signal": np.nan, "horizon": h, "period": period})


def peak_mib(who: int) -> float:
    return resource.getrusage(who).ru_maxrss / 1024


class Sampled:
    """The largest RSS, sampled every 0.1 s while the block runs, of this process (``main``)
    and of any one of its descendants (``worker``: a pool's process, a Dask worker), in MiB."""

    def __enter__(self) -> Sampled:
        import threading
        self.main = self.worker = 0.0
        self._error: BaseException | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)
        self._thread.start()
        return self

    def _watch(self) -> None:
        try:
            while True:
                self._sample()
                if self._stop.wait(0.1):
                    return
        except BaseException as err:       # re-raised by __exit__: never a silent 0 MiB
            self._error = err

    def _sample(self) -> None:
        import psutil
        me = psutil.Process()
        self.main = max(self.main, me.memory_info().rss / 2**20)
        for child in me.children(recursive=True):
            with contextlib.suppress(psutil.Error):     # a process that ended meanwhile
                self.worker = max(self.worker, child.memory_info().rss / 2**20)

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        if self._error is not None:
            raise RuntimeError(f"memory sampling failed: {self._error!r}") from self._error
        self._sample()                                  # and once more at the end


def one(group: str, n: int, engine: str) -> dict:
    _, period, h, (lo, _) = GROUPS[group]
    p = parse_params({"data": {"kind": "panel"},
                      "prepare": {"window": 1, "horizon": h, "min_context": 0,
                                  "val_frac": 0.0, "cal_frac": 0.0},
                      "evaluate": {"season": period, "baselines": FIELD, "blend": [],
                                   "conformal": "none", "engine": engine}})
    t0 = time.perf_counter()
    raw = raw_of(frame(group, n), [])
    store = prepare(p, raw, {"name": "synthetic", "resolved": {"values": {}}})
    t1 = time.perf_counter()
    with Sampled() as mem:
        fs = field(p, store, period, None)
    t2 = time.perf_counter()
    model = type(fs)(fs.ends, {}, fs.taus, [], {"data": store.key()})
    ev = score(p, store, model, fs, period)
    t3 = time.perf_counter()
    return {"prepare": t1 - t0, "field": t2 - t1, "evaluate": t3 - t2,
            "series": store.n_series, "ets_mase": ev.metrics["ets"]["mase_mean"],
            "field_main": mem.main, "field_worker": mem.worker}


def epoch(group: str, n: int) -> dict:
    """One training epoch of the model on ``n`` series of ``group``."""
    import torch
    from attn_forecast.pipeline.model import model_settings, train_settings
    from attn_forecast.training.batches import to_device
    from attn_forecast.training.members import train_model
    _, period, h, _ = GROUPS[group]
    p = parse_params({"data": {"kind": "panel"},
                      "prepare": {"window": 3 * h, "horizon": h, "min_context": 0,
                                  "val_frac": 0.0, "cal_frac": 0.0, "test_frac": 0.1},
                      "train": {"epochs": 1, "batch_size": 1024, "ensemble": 1,
                                "augment_noise": 0.0, "device": "cpu"},
                      "evaluate": {"conformal": "none"}})
    t0 = time.perf_counter()
    store = prepare(p, raw_of(frame(group, n), []), {"name": "synthetic",
                                                      "resolved": {"values": {}}})
    t1 = time.perf_counter()
    data = to_device(store, torch.device("cpu"))
    _, res = train_model(model_settings(p, store, 0), data["z"], data["train"], data["val"],
                         train_settings(p), torch.device("cpu"), progress=False,
                         rows=data["rows"])
    return {"prepare": t1 - t0, "epoch": res[0].seconds, "windows": len(data["train"]),
            "series": store.n_series}


def model_sizes(sizes: list[int]) -> None:
    import torch
    torch.set_num_threads(2)
    print("| series | training windows | prepare s | epoch s | windows/s | peak RSS MiB |")
    print("|---:|---:|---:|---:|---:|---:|")
    for total in sizes:
        rows = [epoch(g, int(round(total * share / sum(v[0] for v in GROUPS.values()))))
                for g, (share, *_) in GROUPS.items()]
        n, w = sum(r["series"] for r in rows), sum(r["windows"] for r in rows)
        sec = {k: sum(r[k] for r in rows) for k in ("prepare", "epoch")}
        print(f"| {n:,} | {w:,} | {sec['prepare']:.0f} | {sec['epoch']:.1f} | "
              f"{w / sec['epoch']:,.0f} | {peak_mib(resource.RUSAGE_SELF):.0f} |", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--series", default="10000")
    ap.add_argument("--engines", default="local,dask")
    ap.add_argument("--out", type=Path, help="add each field row to this JSON file")
    ap.add_argument("--model", action="store_true",
                    help="one training epoch of the model per size instead of the field")
    args = ap.parse_args()
    print("command: python bench/field_scale.py " + " ".join(sys.argv[1:]), flush=True)
    at = commit()
    if args.model:
        return model_sizes([int(x) for x in args.series.split(",")])
    print("| series | engine | prepare s | field s | evaluate s | ms per series (field) | "
          "peak RSS main MiB | peak RSS worker MiB | in the field: main MiB | worker MiB | "
          "ETS mean MASE |")
    print("|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for total in (int(x) for x in args.series.split(",")):
        for engine in args.engines.split(","):
            rows = [one(g, int(round(total * share / sum(v[0] for v in GROUPS.values()))),
                        engine) for g, (share, *_) in GROUPS.items()]
            n = sum(r["series"] for r in rows)
            sec = {k: sum(r[k] for r in rows) for k in ("prepare", "field", "evaluate")}
            mase = np.average([r["ets_mase"] for r in rows], weights=[r["series"] for r in rows])
            row = {"series": n, "engine": engine, **{f"{k}_s": round(v, 1)
                                                      for k, v in sec.items()},
                   "ms_per_series": round(1000 * sec["field"] / n, 1),
                   "peak_rss_main_mib": round(peak_mib(resource.RUSAGE_SELF)),
                   "peak_rss_worker_mib": round(peak_mib(resource.RUSAGE_CHILDREN)),
                   "field_peak_main_mib": round(max(r["field_main"] for r in rows)),
                   "field_peak_worker_mib": round(max(r["field_worker"] for r in rows)),
                   "ets_mase": round(float(mase), 4)}
            print(f"| {n:,} | {engine} | {sec['prepare']:.0f} | {sec['field']:.0f} | "
                  f"{sec['evaluate']:.0f} | {row['ms_per_series']:.1f} | "
                  f"{row['peak_rss_main_mib']} | {row['peak_rss_worker_mib']} | "
                  f"{row['field_peak_main_mib']} | {row['field_peak_worker_mib']} | {mase:.3f} |",
                  flush=True)
            if args.out:
                record(args.out, {"command": "python bench/field_scale.py "
                                  + " ".join(sys.argv[1:]), "date": time.strftime("%Y-%m-%d"),
                                  "commit": at,
                                  **row})


def commit() -> str:
    """The project's commit (a ``+`` where the work tree differs from it outside bench/results,
    where the rows are written)."""
    import subprocess
    git = ["git", "-C", str(ROOT)]
    rev = subprocess.run([*git, "rev-parse", "--short", "HEAD"], capture_output=True,
                         text=True, check=True).stdout.strip()
    dirty = subprocess.run([*git, "status", "--porcelain", "--untracked-files=no", "--", ".",
                            ":(exclude)bench/results"], capture_output=True, text=True,
                           check=True).stdout.strip()
    return rev + ("+" if dirty else "")


def record(path: Path, row: dict) -> None:
    """``row`` added to the JSON list in ``path`` (written whole, so never half a file)."""
    import json
    rows = json.loads(path.read_text()) if path.is_file() else []
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(rows + [row], indent=1) + "\n")
    tmp.replace(path)


if __name__ == "__main__":
    main()
