"""Shared helpers for the benchmarks: params overrides like `dvc exp run -S`, and the stage
scripts run in-process (one torch import for many runs) into a scratch folder."""
from __future__ import annotations

import copy
import importlib.util
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
# the folder of users' CSV files, as dvc.yaml declares it
PATHS = next(v["p"] for v in yaml.safe_load((ROOT / "dvc.yaml").read_text())["vars"]
             if "p" in v)
INPUTS = ROOT / PATHS["inputs"]
PRIOR = ROOT / PATHS["pretrained"]   # the committed prior (train.init pretrained, zeroshot)


# the stage scripts' environment when a benchmark runs them as processes
ENV = {**os.environ, "DVC_NO_ANALYTICS": "1", "ITERATIVE_DO_NOT_TRACK": "1",
       "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}


def peak_rss_mib(cmd: list[str], cwd: Path, limit_s: float | None = None
                 ) -> tuple[float, float, bool]:
    """Run ``cmd``; its peak RSS (MiB, the kernel's VmHWM), wall seconds, and whether it was
    stopped at ``limit_s`` (the peak so far is then what is reported)."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=cwd, env=ENV, stdout=subprocess.DEVNULL)
    status, peak, stopped = Path(f"/proc/{proc.pid}/status"), 0, False
    while proc.poll() is None:
        try:
            for line in status.read_text().splitlines():
                if line.startswith("VmHWM:"):
                    peak = max(peak, int(line.split()[1]))
        except (FileNotFoundError, ProcessLookupError):
            break
        if limit_s and time.perf_counter() - t0 > limit_s:
            proc.kill()
            stopped = True
            break
        time.sleep(0.05)
    proc.wait()
    if proc.returncode and not stopped:
        raise SystemExit(f"{cmd} failed with exit status {proc.returncode}")
    return peak / 1024, time.perf_counter() - t0, stopped


def stage_memory(params: dict, label: str, train_limit_s: float | None,
                 train_target_mib: int) -> Path:
    """Run generate, prepare and one train epoch on ``params``, each a process of its own as
    DVC runs them, in a scratch folder; print each one's peak RSS against its target (1 GiB,
    and ``train_target_mib`` for train, stopped after ``train_limit_s``). Returns the folder
    (the caller removes it)."""
    import yaml
    work = Path(tempfile.mkdtemp(prefix="attn-bench-"))
    (work / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    py, st = sys.executable, str(ROOT / "stages")
    steps = {
        "generate": [py, f"{st}/generate.py", "--inputs", str(INPUTS), "--out", "series.csv"],
        "prepare": [py, f"{st}/prepare.py", "--series", "series.csv", "--out", "prepared"],
        "train (1 epoch)": [py, f"{st}/train.py", "--prepared", "prepared", "--model",
                            "model.pt", "--history", "history.csv", "--forecasts", "fc.npz",
                            "--attention", "att.npz", "--lags", "lags.csv"],
    }
    for name, cmd in steps.items():
        is_train = name.startswith("train")
        rss, secs, stopped = peak_rss_mib(cmd, work, train_limit_s if is_train else None)
        limit = train_target_mib if is_train else 1024
        note = f", stopped after {secs:.0f} s of the epoch" if stopped else f" in {secs:.1f} s"
        print(f"memory: {name}{label}: peak RSS {rss:,.0f} MiB{note} (target < {limit:,} MiB)",
              flush=True)
    return work


def load_stage(name: str):
    spec = importlib.util.spec_from_file_location(f"stage_{name}", ROOT / "stages" / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def with_overrides(base: dict, overrides: list[str]) -> dict:
    """Apply `section.key=value` overrides (value parsed as YAML, as `dvc exp run -S` does)."""
    p = copy.deepcopy(base)
    for item in overrides:
        key, _, raw = item.partition("=")
        *path, last = key.split(".")
        node = p
        for part in path:
            node = node.setdefault(part, {})
        node[last] = yaml.safe_load(raw)
    return p


def source_base(base: dict) -> dict:
    """``base`` with every setting of the lecture's worked example (make source-baseline's)."""
    from attn_forecast.params import dvc_set_args, source_settings
    return with_overrides(base, dvc_set_args(source_settings())[1::2])  # the "k=v" halves


STAGES = ("generate", "prepare", "baselines", "train", "evaluate")


def stage_args(work: Path, inputs: Path | None = None) -> dict[str, list[str]]:
    """Each stage's command-line arguments into the scratch folder ``work``."""
    d = {k: str(work / v) for k, v in {
        "series": "series.csv", "prepared": "prepared", "baselines": "baselines.npz",
        "model": "model.pt", "forecasts": "forecasts.npz", "history": "history.csv",
        "attention": "att.npz", "lags": "lags.csv", "metrics": "metrics.json",
        "detail": "metrics_detail.json", "by_series": "by_series.csv",
        "predictions": "pred.csv", "predictions_plot": "pred_plot.csv",
        "horizon": "horizon.csv", "calibration": "calibration.csv", "folds": "backtest",
        "backtest": "backtest.json", "backtest_plot": "backtest_folds.csv"}.items()}
    prior = ["--pretrained", str(PRIOR)]
    return {
        "generate": ["--inputs", str(inputs or INPUTS), "--out", d["series"]],
        "prepare": ["--series", d["series"], "--out", d["prepared"]],
        "baselines": ["--prepared", d["prepared"], "--out", d["baselines"]] + prior,
        "train": ["--prepared", d["prepared"], "--model", d["model"], "--history",
                  d["history"], "--forecasts", d["forecasts"], "--attention", d["attention"],
                  "--lags", d["lags"]] + prior,
        "evaluate": ["--prepared", d["prepared"], "--forecasts", d["forecasts"],
                     "--baselines", d["baselines"], "--metrics", d["metrics"], "--detail",
                     d["detail"], "--by-series", d["by_series"], "--predictions",
                     d["predictions"], "--predictions-plot", d["predictions_plot"],
                     "--horizon", d["horizon"], "--calibration", d["calibration"]],
        "backtest_train": ["--prepared", d["prepared"], "--out", d["folds"]] + prior,
        "backtest_evaluate": ["--prepared", d["prepared"], "--folds", d["folds"], "--metrics",
                              d["backtest"], "--plot", d["backtest_plot"]] + prior,
    }


def run_pipeline(params: dict, workdir: Path | None = None, stages=STAGES,
                 inputs: Path | None = None):
    """Run the stages in-process on ``params``; returns (FitResult, every score: the
    metrics_detail.json dict); with the backtest stages also asked for, the backtest metrics
    are in ``workdir/backtest.json``. ``inputs``: the folder the CSV named by data.csv_path
    lies in (default data/external)."""
    work = Path(workdir or tempfile.mkdtemp(prefix="attn-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    pfile = work / "params.yaml"
    pfile.write_text(yaml.safe_dump(params, sort_keys=False))
    args = stage_args(work, inputs)
    out = {}
    for name in stages:
        out[name] = load_stage(name).main(["--params", str(pfile)] + args[name])
    return out.get("train"), out.get("evaluate")


def pipeline_metrics(params: dict, inputs: Path | None = None) -> dict:
    """The metrics of one quiet run of the stages on ``params`` in a scratch folder."""
    import contextlib
    import io
    import json
    import shutil
    work = Path(tempfile.mkdtemp(prefix="attn-bench-"))
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        run_pipeline(params, work, inputs=inputs)
    m = json.loads((work / "metrics_detail.json").read_text())
    shutil.rmtree(work)
    return m
