"""Thread-count benchmark: the train stage at 1, 2, ... torch threads, idle and beside a second
training job (as when `dvc queue start -j 2` runs two experiments on two cores).

    python bench/threads.py [--threads 1,2] [--configs small,large] [--load idle]
                            [--env KEY=VALUE ...]

For each config, prepares the data once, then runs the real train stage script in a fresh
process per measurement (imports included) and prints the training seconds the stage reports,
the process wall time, and whether the checkpoint bytes equal those of the first thread
count's run. ``--env`` adds variables to the measured runs' environment, e.g.
``MKL_CBWR=COMPATIBLE`` (MKL's reproducible mode) or ``ATTN_FORECAST_NATIVE_CPU=1`` (without
the CPU pins of ``attn_forecast.cpu``), to measure what they cost.
`train.threads: auto` picks one thread below `runtime.PARALLEL_FLOPS` of work per step.
"""
from __future__ import annotations

import argparse
import hashlib
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import ROOT, run_pipeline, stage_args, with_overrides  # noqa: E402

CONFIGS = {
    # the defaults (window 60, full batch of ~190 windows)
    "small": [],
    # a larger job: 20,000 points, window 96, 4 heads, 2 residual layers, batch 512
    "large": ["data.n_points=20000", "prepare.window=96", "model.d_model=64", "model.n_heads=4",
              "model.n_layers=2", "model.residual=true", "model.ffn_dim=128",
              "train.batch_size=512", "train.epochs=2"],
}


def _train(work: Path, params: dict, threads: int, extra_env: dict
           ) -> tuple[float, float, str]:
    p = with_overrides(params, [f"train.threads={threads}"])
    pfile = work / f"params-{threads}.yaml"
    pfile.write_text(yaml.safe_dump(p, sort_keys=False))
    model = work / f"model-{threads}.pt"
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), **extra_env}
    env.pop("OMP_NUM_THREADS", None)  # the stage sets its own thread count
    t0 = time.perf_counter()
    out = subprocess.run([sys.executable, str(ROOT / "stages" / "train.py"), "--params",
                          str(pfile)] + _args(work, model), env=env, capture_output=True,
                         text=True, check=True)
    wall = time.perf_counter() - t0
    train_s = float(re.search(r" in ([\d.]+) s", out.stdout).group(1))
    return train_s, wall, hashlib.sha256(model.read_bytes()).hexdigest()


def _busy(work: Path, params: dict) -> subprocess.Popen:
    """A second training job on one thread, looping until killed."""
    p = with_overrides(params, ["train.threads=1", "train.epochs=100000"])
    pfile = work / "params-busy.yaml"
    pfile.write_text(yaml.safe_dump(p, sort_keys=False))
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    return subprocess.Popen([sys.executable, str(ROOT / "stages" / "train.py"), "--params",
                             str(pfile)] + _args(work, work / "busy.pt"), env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def _args(work: Path, model: Path) -> list[str]:
    """The train stage's arguments from dvc.yaml in the scratch folder ``work`` (the prepared
    data there), the checkpoint written to ``model``."""
    args = stage_args(work)["train"]
    args[args.index("--model") + 1] = str(model)
    return args


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--configs", default="small,large")
    ap.add_argument("--load", default="idle,second job")
    ap.add_argument("--env", action="append", default=[], help="KEY=VALUE for measured runs")
    args = ap.parse_args()
    extra_env = dict(item.split("=", 1) for item in args.env)
    base = yaml.safe_load((ROOT / "params.yaml").read_text())
    print("command: python bench/threads.py " + " ".join(sys.argv[1:]))
    print("| config | threads | load | train s | process s | same bytes as the first |")
    print("|---|---:|---|---:|---:|---|")
    for name in args.configs.split(","):
        params = with_overrides(base, CONFIGS[name])
        work = Path(tempfile.mkdtemp(prefix=f"attn-threads-{name}-"))
        run_pipeline(params, work, stages=("generate", "prepare"))
        for load in args.load.split(","):
            busy = _busy(work, params) if load != "idle" else None
            try:
                if busy:
                    time.sleep(3)  # past its imports, into its epochs
                ref = None
                for n in [int(x) for x in args.threads.split(",")]:
                    train_s, wall, digest = _train(work, params, n, extra_env)
                    ref = ref or digest
                    print(f"| {name} | {n} | {load} | {train_s:.2f} | {wall:.2f} | "
                          f"{'yes' if digest == ref else 'NO'} |", flush=True)
            finally:
                if busy:
                    busy.kill()
                    busy.wait()


if __name__ == "__main__":
    main()
