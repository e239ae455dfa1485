"""The statistical field on a panel of M4's shape, at scale: a synthetic panel (no download) of
yearly, quarterly and monthly series in the M4 competition's proportions (23 %, 24 %, 53 % of
these three) and of lengths like M4's shortest (yearly 20-60 values, quarterly 24-120, monthly
48-240; horizons 6, 8 and 18), through the pipeline's own steps, each in its own process as
`dvc repro` runs its stages, the store and the forecasts handed on in files as the stages hand
them on: prepare (the panel made and prepared, the store written), the field (the store
loaded memory-mapped; ETS, Theta, Naive2, with their quantiles; the forecasts written) and
evaluate (points and intervals), on ``local`` (this machine's processes) and ``dask`` (a
cluster embedded in the field's process, a worker per core).

    python bench/field_scale.py --series 10000,30000 [--engines local,dask] [--out FILE]
    python bench/field_scale.py --series 1000,10000,100000 --model

Prints, per size and engine, each step's wall seconds (inside its process: the interpreter's
start and imports left out), the cost per series, and each process's peak memory (RSS, the
largest of the three groups): prepare's, the field's main process, its largest worker (sampled
every 0.1 s during the field, any descendant counting) and evaluate's. ``--out`` also adds each
row to a JSON file (a list of rows, each with the command, the date and the commit it ran at).
With ``--model``: the attention model's side instead, on the same panel: prepare (each group's
store, window three horizons), then one epoch of the train stage's loop over every training
window (batches of 1,024 gathered from the store's one series tensor as they are drawn: the
windows are never all materialized; the default architecture, one thread per core), its
seconds, windows per second and the process's peak memory.
"""
from __future__ import annotations

import argparse
import contextlib
import resource
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import commit, record  # noqa: E402  (and the project on sys.path)

from attn_forecast.config.load import parse_params  # noqa: E402
from attn_forecast.data.long_table import Raw  # noqa: E402
from attn_forecast.data.sources import panel_series  # noqa: E402
from attn_forecast.pipeline.prepare import prepare  # noqa: E402
from attn_forecast.pipeline.baselines import field  # noqa: E402
from attn_forecast.pipeline.evaluate import score  # noqa: E402

GROUPS = {"yearly": (0.23, 1, 6, (20, 60)), "quarterly": (0.24, 4, 8, (24, 120)),
          "monthly": (0.53, 12, 18, (48, 240))}
FIELD = ["naive2", "ets", "theta"]


def panel(group: str, n: int, seed: int = 0) -> Raw:
    """``n`` series of ``group``, each its length drawn from the group's range (+ horizon), as
    the flat arrays prepare reads from the generate stage's long table (no table of strings
    a row in between: the panel's own cost, not the pipeline's)."""
    _, period, h, (lo, hi) = GROUPS[group]
    lengths = np.random.default_rng([seed, period]).integers(lo, hi + 1, n) + h
    parts = [panel_series(i, int(k), seed + period, 0.15, 0.002)[0]
             for i, k in enumerate(lengths)]
    width = len(str(n))
    return Raw(np.array([f"{group[0]}{i:0{width}d}" for i in range(n)]),
               np.r_[0, np.cumsum(lengths)].astype(np.int64),
               np.concatenate([np.arange(k) for k in lengths]).astype(float),
               np.abs(np.concatenate(parts)) + 1.0, np.full(int(lengths.sum()), np.nan),
               horizons=np.full(n, h, dtype=np.int64), periods=np.full(n, period, dtype=np.int64))


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


def params(group: str, engine: str):
    _, period, h, _ = GROUPS[group]
    return parse_params({"data": {"kind": "panel"},
                         "prepare": {"window": 1, "horizon": h, "min_context": 0,
                                     "val_frac": 0.0, "cal_frac": 0.0},
                         "evaluate": {"season": period, "baselines": FIELD, "blend": [],
                                      "conformal": "none", "engine": engine}})


def step(name: str, group: str, n: int, engine: str, folder: Path) -> dict:
    """One step of one group, in this process: its seconds and this process's peak memory;
    the store in ``folder``/store, the forecasts in ``folder``/field.npz."""
    from attn_forecast.data import store_io
    from attn_forecast.forecasters import saved
    p, period = params(group, engine), GROUPS[group][1]
    t0 = time.perf_counter()
    out: dict = {}
    if name == "prepare":
        store = prepare(p, panel(group, n),
                        {"name": "synthetic", "resolved": {"values": {}}})
        store_io.save(folder / "store", store)
        out["series"] = store.n_series
    elif name == "field":
        store = store_io.load(folder / "store")
        with Sampled() as mem:
            fs = field(p, store, period, None)
        saved.save(folder / "field.npz", fs)
        out.update(worker_sampled=mem.worker, worker=peak_mib(resource.RUSAGE_CHILDREN))
    else:
        store = store_io.load(folder / "store")
        fs = saved.load(folder / "field.npz")
        model = type(fs)(fs.ends, {}, fs.levels, [], {"data": store.key()})
        out["ets_mase"] = score(p, store, model, fs, period).metrics["ets"]["mase_mean"]
    return {"seconds": time.perf_counter() - t0, "peak": peak_mib(resource.RUSAGE_SELF), **out}


def one(group: str, n: int, engine: str) -> dict:
    """The three steps of one group, each a process of its own (this script with --step)."""
    import json
    import subprocess
    import tempfile
    res: dict = {}
    with tempfile.TemporaryDirectory(prefix="field_scale_") as tmp:
        for name in ("prepare", "field", "evaluate"):
            done = subprocess.run([sys.executable, __file__, "--step", name, "--group", group,
                                   "--n", str(n), "--engine", engine, "--dir", tmp],
                                  stdout=subprocess.PIPE, text=True)
            if done.returncode:
                raise SystemExit(f"field_scale: the {name} step of {n:,} {group} series on "
                                 f"{engine} failed (exit {done.returncode}; its error above)")
            res[name] = json.loads(done.stdout.strip().splitlines()[-1])
    return res


def epoch(group: str, n: int) -> dict:
    """One training epoch of the model on ``n`` series of ``group``."""
    import torch
    from attn_forecast.setup.training import model_settings, train_settings
    from attn_forecast.training.batches import to_device
    from attn_forecast.training.members import QUIET, train_model
    _, period, h, _ = GROUPS[group]
    p = parse_params({"data": {"kind": "panel"},
                      "prepare": {"window": 3 * h, "horizon": h, "min_context": 0,
                                  "val_frac": 0.0, "cal_frac": 0.0, "test_frac": 0.1},
                      "train": {"epochs": 1, "batch_size": 1024, "ensemble": 1,
                                "augment_noise": 0.0, "device": "cpu"},
                      "evaluate": {"conformal": "none"}})
    t0 = time.perf_counter()
    store = prepare(p, panel(group, n), {"name": "synthetic",
                                                      "resolved": {"values": {}}})
    t1 = time.perf_counter()
    data = to_device(store, torch.device("cpu"))
    _, res = train_model(model_settings(p, store, 0), data, train_settings(p), QUIET)
    return {"prepare": t1 - t0, "epoch": res[0].seconds, "windows": len(data.train),
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
    ap.add_argument("--step", choices=("prepare", "field", "evaluate"), help=argparse.SUPPRESS)
    ap.add_argument("--group", choices=list(GROUPS), help=argparse.SUPPRESS)
    ap.add_argument("--n", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--engine", help=argparse.SUPPRESS)
    ap.add_argument("--dir", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.step:                     # one step of one group, run by one() as a process
        import json
        print(json.dumps(step(args.step, args.group, args.n, args.engine, args.dir)))
        return
    print("command: python bench/field_scale.py " + " ".join(sys.argv[1:]), flush=True)
    at = commit()
    if args.model:
        return model_sizes([int(x) for x in args.series.split(",")])
    print("| series | engine | prepare s | field s | evaluate s | ms per series (field) | "
          "prepare MiB | field MiB | field's worker MiB | evaluate MiB | ETS mean MASE |")
    print("|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for total in (int(x) for x in args.series.split(",")):
        for engine in args.engines.split(","):
            rows = [one(g, int(round(total * share / sum(v[0] for v in GROUPS.values()))),
                        engine) for g, (share, *_) in GROUPS.items()]
            n = sum(r["prepare"]["series"] for r in rows)
            sec = {k: sum(r[k]["seconds"] for r in rows) for k in ("prepare", "field",
                                                                   "evaluate")}
            mase = np.average([r["evaluate"]["ets_mase"] for r in rows],
                              weights=[r["prepare"]["series"] for r in rows])

            def peak(name: str, key: str = "peak") -> int:
                return round(max(r[name][key] for r in rows))
            row = {"series": n, "engine": engine, **{f"{k}_s": round(v, 1)
                                                      for k, v in sec.items()},
                   "ms_per_series": round(1000 * sec["field"] / n, 1),
                   "prepare_peak_mib": peak("prepare"), "field_peak_mib": peak("field"),
                   "field_peak_worker_mib": peak("field", "worker_sampled"),
                   "field_worker_since_start_mib": peak("field", "worker"),
                   "evaluate_peak_mib": peak("evaluate"),
                   "ets_mase": round(float(mase), 4)}
            print(f"| {n:,} | {engine} | {sec['prepare']:.0f} | {sec['field']:.0f} | "
                  f"{sec['evaluate']:.0f} | {row['ms_per_series']:.1f} | "
                  f"{row['prepare_peak_mib']} | {row['field_peak_mib']} | "
                  f"{row['field_peak_worker_mib']} | {row['evaluate_peak_mib']} | "
                  f"{mase:.3f} |", flush=True)
            if args.out:
                record(args.out, {"command": "python bench/field_scale.py "
                                  + " ".join(sys.argv[1:]), "date": time.strftime("%Y-%m-%d"),
                                  "commit": at,
                                  **row})


if __name__ == "__main__":
    main()
