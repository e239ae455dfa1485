"""Speed and scale benchmarks, each printed beside what it is compared against.

    python bench/speed.py [--reference PATH] [--only NAME ...] [--big-points N]

  train_small   train stage's training time on the source's config vs the yardstick's
  train_large   windows/s of the stage's loop vs a TensorDataset + DataLoader loop over
                materialized windows (window 96, d_model 64, 4 heads, 2 layers, batch 512,
                200,000 points)
  memory        peak RSS of generate, prepare and one train epoch on a 10,000,000-point
                series with window 96 (each stage a separate process)
  repro         `dvc repro --force` wall time on the default params vs the yardstick's whole
                process, and a `dvc repro` with nothing changed
  queue         a 4-point queued grid run with `dvc queue start -j 2` vs `-j 1`
  experiment    one `dvc exp run -S train.lr=...` on the source's worked example
                (`make source-baseline` settings) vs the yardstick's whole process on the same
                settings, measured side by side, with where its wall time goes: DVC before the
                first stage, each stage (its imports and its own work), DVC after the last
  dvclive       the train stage process on the source's worked example with `train.live`
                off and on (DVCLive logging every epoch), alternated, median of 3 each
  defaults      `dvc exp run` on a user's CSV with only its path and columns set (the
                defaults for real data: the prior fine-tuned), an 8,000-point daily series
                and a 2,284-point weekly one (both generated), with what prepare chose

Timings depend on the machine and on what else runs: compare figures from one run.
"""
from __future__ import annotations

import argparse
import contextlib
import io
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import (ENV, INPUTS, ROOT, run_pipeline, stage_memory,  # noqa: E402
                    with_overrides, yardstick)
BASE = yaml.safe_load((ROOT / "params.yaml").read_text())
SOURCE = ["prepare.scaler=none", "prepare.window=10", "model.d_model=32", "model.ffn_dim=64",
          "model.n_heads=1", "model.n_layers=1", "model.residual=false",
          "model.positional=sinusoidal", "model.pooling=last", "model.dropout=0.0",
          "train.epochs=300", "train.lr=0.005", "train.batch_size=0", "train.optimizer=adam",
          "train.weight_decay=0.0", "train.loss=mse", "train.scheduler=none",
          "train.warmup_epochs=0", "train.augment_noise=0.0", "train.patience=0",
          "prepare.val_frac=0.0", "data.kind=sine", "data.n_points=300"]
LARGE = ["data.n_points=200000", "prepare.window=96", "model.d_model=64", "model.ffn_dim=128",
         "model.n_heads=4", "model.n_layers=2", "model.residual=true", "train.batch_size=512",
         "train.epochs=1", "prepare.val_frac=0.0", "train.patience=0",
         "train.augment_noise=0.0", "train.device=cpu"]


def quiet(fn, *a, **kw):
    with contextlib.redirect_stdout(io.StringIO()):
        return fn(*a, **kw)


def bench_train_small(ref: Path | None) -> None:
    p = with_overrides(BASE, SOURCE)
    runs = [quiet(run_pipeline, p)[0].seconds for _ in range(3)]
    print(f"train_small: train stage training time {min(runs):.3f} s (best of 3)", end="")
    if ref:
        r = [yardstick(ref)[0]["train_s"] for _ in range(3)]
        print(f" vs yardstick {min(r):.3f} s (best of 3): ratio {min(runs) / min(r):.2f}")
    else:
        print()


def dataloader_loop(p: dict, epochs: int = 1) -> float:
    """The straightforward loop: materialize every window, TensorDataset + DataLoader."""
    import numpy as np
    import torch
    from attn_forecast.data.store_io import load
    from attn_forecast.model.networks import build_model
    from attn_forecast.model.settings import ModelSettings
    work = Path(tempfile.mkdtemp(prefix="attn-bench-"))
    quiet(run_pipeline, p, work, stages=("generate", "prepare"))
    prep = load(work / "prepared")
    w, h = prep.window, prep.horizon
    z = np.asarray(prep.z)
    X = np.stack([z[e - w:e] for e in prep.ends("train")])
    Y = np.stack([z[e:e + h] for e in prep.ends("train")])
    torch.manual_seed(0)
    m = p["model"]
    model = build_model(ModelSettings(window=w, horizon=h, **m))
    ds = torch.utils.data.TensorDataset(torch.from_numpy(X), torch.from_numpy(Y))
    dl = torch.utils.data.DataLoader(ds, batch_size=p["train"]["batch_size"], shuffle=True)
    opt = torch.optim.Adam(model.parameters(), lr=p["train"]["lr"])
    loss_fn = torch.nn.MSELoss()
    t0 = time.perf_counter()
    for _ in range(epochs):
        model.train()
        for x, y in dl:
            opt.zero_grad()
            loss = loss_fn(model(x)[0], y)
            loss.backward()
            opt.step()
    dt = time.perf_counter() - t0
    shutil.rmtree(work)
    return len(X) * epochs / dt


def bench_train_large() -> None:
    p = with_overrides(BASE, LARGE)
    ours = quiet(run_pipeline, p, stages=("generate", "prepare", "train"))[0].windows_per_s
    base = dataloader_loop(p)
    print(f"train_large: stage {ours:,.0f} windows/s vs TensorDataset+DataLoader "
          f"{base:,.0f} windows/s: {ours / base:.2f}x (target >= 1.5x)")
    if shutil.which("cc") or shutil.which("gcc"):
        # two epochs, so the second runs the compiled graph; compile time included
        pc = with_overrides(p, ["train.compile=true", "train.epochs=2"])
        fit = quiet(run_pipeline, pc, stages=("generate", "prepare", "train"))[0]
        print(f"train_large: stage with train.compile {fit.windows_per_s:,.0f} windows/s over "
              f"2 epochs, compile time included: {fit.windows_per_s / base:.2f}x")


def bench_memory(n_points: int, train_limit_s: float) -> None:
    p = with_overrides(BASE, [f"data.n_points={n_points}", "prepare.window=96",
                              "train.epochs=1", "train.batch_size=512", "train.device=cpu",
                              "prepare.val_frac=0.0", "train.patience=0"])
    shutil.rmtree(stage_memory(p, f" of {n_points:,} points, window 96", train_limit_s, 1536))


def dvc_copy() -> Path:
    """A throwaway git + DVC repo holding the project's pipeline."""
    work = Path(tempfile.mkdtemp(prefix="attn-bench-dvc-"))
    # with dvc.lock and the prior's outputs, the pretrain stage is up to date (never rerun)
    # (competitions/params.yaml: a dependency of several stages, what auto means for M3)
    for name in ("dvc.yaml", "dvc.lock", "params.yaml", "competitions/params.yaml", "stages",
                 "src", str(INPUTS.relative_to(ROOT)), "models/pretrained.pt", "reports/pretrain",
                 "reports/pretrain.json"):
        src = ROOT / name
        (work / name).parent.mkdir(parents=True, exist_ok=True)
        (shutil.copytree if src.is_dir() else shutil.copy)(src, work / name)
    run = lambda *c: subprocess.run(c, cwd=work, env=ENV, check=True,  # noqa: E731
                                    capture_output=True)
    run("git", "init", "-q")
    run("git", "config", "user.email", "bench@example.invalid")
    run("git", "config", "user.name", "bench")
    run("dvc", "init", "-q")
    run("dvc", "config", "core.analytics", "false")
    run("dvc", "config", "core.check_update", "false")
    run("git", "add", "-A")
    run("git", "commit", "-qm", "bench")
    return work


def timed(cmd: list[str], cwd: Path) -> float:
    t0 = time.perf_counter()
    subprocess.run(cmd, cwd=cwd, env=ENV, check=True, capture_output=True)
    return time.perf_counter() - t0


def bench_repro(ref: Path | None) -> None:
    work = dvc_copy()
    timed(["dvc", "repro"], work)  # warm the caches once
    force = min(timed(["dvc", "repro", "--force"], work) for _ in range(2))
    noop = min(timed(["dvc", "repro"], work) for _ in range(3))
    line = f"repro: dvc repro --force {force:.1f} s (best of 2)"
    if ref:
        whole = min(yardstick(ref)[1] for _ in range(2))
        line += (f" vs yardstick whole process {whole:.1f} s: ratio {force / whole:.2f}"
                 " (target <= 2)")
    print(line)
    print(f"repro: dvc repro with nothing changed {noop:.2f} s (best of 3; target < 1.5 s)")
    shutil.rmtree(work)


def stage_lines(cmd: list[str], cwd: Path) -> tuple[float, list[tuple[float, str]]]:
    """Run ``cmd`` unbuffered; its wall time and each output line with the second it came."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=cwd, env={**ENV, "PYTHONUNBUFFERED": "1"}, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    lines = [(time.perf_counter() - t0, line.rstrip()) for line in proc.stdout]
    if proc.wait():
        raise SystemExit(f"{cmd} failed:\n" + "\n".join(x for _, x in lines))
    return time.perf_counter() - t0, lines


def breakdown(total: float, lines: list[tuple[float, str]]) -> str:
    """Seconds from the start to the first stage, in each stage, and after the last one,
    from the times DVC's "Running stage" lines and the stages' own lines came out."""
    marks = [(t, x.split("'")[1]) for t, x in lines if x.startswith("Running stage")]
    if not marks:
        return "no stage ran"
    parts = [f"dvc start {marks[0][0]:.2f}"]
    for (t, name), (t_next, _) in zip(marks, marks[1:] + [(None, None)]):
        # a stage ends at its own last line; DVC's bookkeeping follows until the next one
        own = [s for s, x in lines if t < s and (t_next is None or s < t_next)
               and not x.startswith(("Running stage", "Updating lock", "Ran experiment",
                                     "Experiment results", "To apply", "To promote"))]
        end = max(own) if own else t
        parts.append(f"{name} {end - t:.2f}")
        if t_next is not None:
            parts.append(f"dvc {t_next - end:.2f}")
        else:
            parts.append(f"dvc end {total - end:.2f}")
    return ", ".join(parts)


def bench_experiment(ref: Path | None, runs: int = 3) -> None:
    sys.path.insert(0, str(ROOT / "src"))
    from common import source_base
    work = dvc_copy()
    (work / "params.yaml").write_text(yaml.safe_dump(source_base(BASE), sort_keys=False))
    timed(["dvc", "repro"], work)
    subprocess.run(["git", "add", "-A"], cwd=work, check=True)
    subprocess.run(["git", "commit", "-qm", "source settings"], cwd=work, check=True, env=ENV)
    results = []
    for i in range(runs):  # a new learning rate each time: the train stage really runs
        lr = f"train.lr={0.004 + 0.001 * i:g}"
        total, lines = stage_lines(["dvc", "exp", "run", "-S", lr], work)
        results.append((total, lr, breakdown(total, lines)))
    shutil.rmtree(work)
    total, lr, parts = sorted(results)[len(results) // 2]
    line = f"experiment: dvc exp run -S {lr} {total:.1f} s (median of {runs})"
    if ref:
        whole = sorted(yardstick(ref)[1] for _ in range(runs))[runs // 2]
        line += (f" vs yardstick whole process {whole:.1f} s (median of {runs}): ratio "
                 f"{total / whole:.2f} (target <= 2.5)")
    print(line)
    print(f"experiment: where it goes (s): {parts}")


def user_series(n: int, freq: str, period: float, seed: int):
    """A demand-like series: level, trend, one season of ``period`` steps (and a yearly one
    for daily data), multiplicative noise."""
    import numpy as np
    import pandas as pd
    rs = np.random.default_rng(seed)
    t = np.arange(n)
    y = 100 + 0.01 * t + 10 * np.sin(2 * np.pi * t / period)
    if freq == "D":
        y += 15 * np.sin(2 * np.pi * t / 365.25)
    y = y * (1 + 0.05 * rs.standard_normal(n))
    days = pd.date_range("2000-01-03", periods=n, freq=freq)
    return pd.DataFrame({"date": days.strftime("%Y-%m-%d"), "sales": np.round(y, 2)})


def bench_defaults() -> None:
    work = dvc_copy()
    for name, n, freq, period in (("daily", 8000, "D", 7), ("weekly", 2284, "W-MON", 52.18)):
        user_series(n, freq, period, 3).to_csv(work / "data/external" / f"{name}.csv",
                                               index=False)
    subprocess.run(["git", "add", "-A"], cwd=work, check=True)
    subprocess.run(["git", "commit", "-qm", "user files"], cwd=work, check=True, env=ENV)
    for name, n in (("daily", 8000), ("weekly", 2284)):
        cmd = ["dvc", "exp", "run", "-S", "data.kind=csv", "-S",
               f"data.csv_path=data/external/{name}.csv", "-S", "data.csv_column=sales",
               "-S", "data.csv_time_column=date"]
        total, lines = stage_lines(cmd, work)
        print(f"defaults: {name}, {n:,} points: {' '.join(cmd)} {total:.1f} s (target < 60)")
        print(f"defaults: where it goes (s): {breakdown(total, lines)}")
        for _, x in lines:
            if x.startswith(("prepare:", "train: ", "evaluate:")) and "epoch " not in x:
                print(f"defaults:   {x}")
    shutil.rmtree(work)


def bench_dvclive(runs: int = 3) -> None:
    sys.path.insert(0, str(ROOT / "src"))
    from common import source_base
    work = dvc_copy()
    params = source_base(BASE)
    (work / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    timed(["dvc", "repro", "prepare"], work)
    from tools.stages import declared_args
    cmd = [sys.executable, "stages/train.py"] + declared_args("train", ROOT)
    env = {**ENV, "PYTHONPATH": "src"}
    times: dict[bool, list[float]] = {False: [], True: []}
    for _ in range(runs):
        for live in (False, True):
            params["train"]["live"] = live
            (work / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
            t0 = time.perf_counter()
            subprocess.run(cmd, cwd=work, env=env, check=True, capture_output=True)
            times[live].append(time.perf_counter() - t0)
    steps = len((work / "dvclive/plots/metrics/train_loss.tsv").read_text().splitlines()) - 1
    shutil.rmtree(work)
    off, on = (sorted(times[k])[runs // 2] for k in (False, True))
    print(f"dvclive: train stage {off:.2f} s with train.live off, {on:.2f} s on ({steps} epochs "
          f"logged; median of {runs}): DVCLive costs {on - off:.2f} s per run (budget 0.3 s)")


def bench_queue() -> None:
    grid = "train.lr=0.001,0.002,0.005,0.01"
    times = {}
    for jobs in (1, 2):
        work = dvc_copy()
        timed(["dvc", "repro"], work)
        subprocess.run(["git", "add", "-A"], cwd=work, check=True)
        subprocess.run(["git", "commit", "-qm", "base"], cwd=work, check=True, env=ENV)
        subprocess.run(["dvc", "exp", "run", "--queue", "-S", grid], cwd=work, env=ENV,
                       check=True, capture_output=True)
        # one torch thread per core and job: parallel jobs must not oversubscribe the cores
        threads = str(max(1, (os.cpu_count() or 1) // jobs))
        t0 = time.perf_counter()
        subprocess.run(["dvc", "queue", "start", "-j", str(jobs)], cwd=work,
                       env={**ENV, "OMP_NUM_THREADS": threads}, check=True,
                       capture_output=True)
        while True:
            status = subprocess.run(["dvc", "queue", "status"], cwd=work, env=ENV,
                                    capture_output=True, text=True).stdout
            if "Queued" not in status and "Running" not in status:
                break
            time.sleep(0.5)
        times[jobs] = time.perf_counter() - t0
        subprocess.run(["dvc", "queue", "stop"], cwd=work, env=ENV, capture_output=True)
        shutil.rmtree(work, ignore_errors=True)
    print(f"queue: 4 experiments -j 1 {times[1]:.1f} s, -j 2 (OMP_NUM_THREADS="
          f"{max(1, (os.cpu_count() or 1) // 2)}) {times[2]:.1f} s: speed-up "
          f"{times[1] / times[2]:.2f}x")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--reference", type=Path, help="the source's worked-example script")
    ap.add_argument("--only", nargs="*", default=["train_small", "train_large", "memory",
                                                  "repro", "queue", "experiment",
                                                  "dvclive", "defaults"])
    ap.add_argument("--big-points", type=int, default=10_000_000)
    ap.add_argument("--train-limit", type=float, default=0.0,
                    help="stop the 10M-point train epoch after this many seconds (default 0: "
                    "measure the whole epoch)")
    args = ap.parse_args()
    ref = args.reference if args.reference and args.reference.exists() else None
    if args.reference and ref is None:
        print(f"(no yardstick at {args.reference}: its columns are left out)")
    for name in args.only:
        if name == "train_small":
            bench_train_small(ref)
        elif name == "train_large":
            bench_train_large()
        elif name == "memory":
            bench_memory(args.big_points, args.train_limit or None)
        elif name == "repro":
            bench_repro(ref)
        elif name == "queue":
            bench_queue()
        elif name == "experiment":
            bench_experiment(ref)
        elif name == "dvclive":
            bench_dvclive()
        elif name == "defaults":
            bench_defaults()


if __name__ == "__main__":
    main()
