"""Shared helpers for the benchmarks: params overrides like `dvc exp run -S`, and the stage
scripts run in-process (one torch import for many runs) into a scratch folder, with the
command lines dvc.yaml gives them (tools.stages)."""
from __future__ import annotations

import copy
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.append(str(ROOT))       # the project's tools (tools.stages, tools.worked_example)
# the folder of users' CSV files, as dvc.yaml declares it
PATHS = next(v["p"] for v in yaml.safe_load((ROOT / "dvc.yaml").read_text())["vars"]
             if "p" in v)
INPUTS = ROOT / PATHS["inputs"]
PRIOR = ROOT / PATHS["pretrained"]   # the committed prior (train.init pretrained, zeroshot)


# the stage scripts' environment when a benchmark runs them as processes
ENV = {**os.environ, "DVC_NO_ANALYTICS": "1", "ITERATIVE_DO_NOT_TRACK": "1",
       "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}


def train_on(p, store) -> tuple:
    """The model the train stage would train on ``store`` with the validated params ``p``
    (one process, this machine's device), its members' results, the training's seconds and
    the season it used."""
    from attn_forecast.setup.forecasting import check_data
    from attn_forecast.setup.training import fit
    season = check_data(p, store)
    t0 = time.perf_counter()
    fitted = fit(p, store, season)
    return fitted.model, fitted.results, time.perf_counter() - t0, season


def commit() -> str:
    """The project's commit (a ``+`` where the work tree differs from it outside bench/results,
    where the benchmarks write their rows)."""
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


def clone(dest: Path) -> None:
    """A fresh clone of the project into ``dest`` as a user's clone from a server is: the
    history in one pack (``--no-local``). A plain clone of a local path links the source's
    loose objects, and DVC's temporary copy of the project (``dvc exp run --temp``, each
    search trial) then takes twice as long to fill (bench/README.md)."""
    subprocess.run(["git", "clone", "-q", "--no-local", str(ROOT), str(dest)], check=True)


def yardstick(script: Path, seed=42, n=300, epochs=300) -> tuple[dict, float]:
    """The source's worked example (``script``, its defaults: 300 points, 300 epochs) run as a
    process: its JSON line and the process's wall seconds."""
    import json
    t0 = time.perf_counter()
    out = subprocess.run([sys.executable, str(script), str(seed), str(n), str(epochs)],
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1]), time.perf_counter() - t0


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
    py, st = sys.executable, ROOT / "stages"
    args = stage_args(work)
    steps = {"generate": [py, str(st / "generate.py")] + args["generate"],
             "prepare": [py, str(st / "prepare.py")] + args["prepare"],
             "train (1 epoch)": [py, str(st / "train.py")] + args["train"]}
    for name, cmd in steps.items():
        is_train = name.startswith("train")
        rss, secs, stopped = peak_rss_mib(cmd, work, train_limit_s if is_train else None)
        limit = train_target_mib if is_train else 1024
        note = f", stopped after {secs:.0f} s of the epoch" if stopped else f" in {secs:.1f} s"
        print(f"memory: {name}{label}: peak RSS {rss:,.0f} MiB{note} (target < {limit:,} MiB)",
              flush=True)
    return work


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
    from tools.worked_example import dvc_set_args, source_settings
    return with_overrides(base, dvc_set_args(source_settings())[1::2])  # the "k=v" halves


STAGES = ("generate", "prepare", "baselines", "train", "evaluate")


def stage_args(work: Path, inputs: Path | None = None) -> dict[str, list[str]]:
    """Each stage's command-line arguments into the scratch folder ``work`` (from dvc.yaml)."""
    from tools.stages import stage_args as from_dvc_yaml
    return from_dvc_yaml(work, ROOT, inputs)


def load_stage(name: str):
    from tools.stages import load_stage as load
    return load(name, ROOT)


def run_pipeline(params: dict, workdir: Path | None = None, stages=STAGES,
                 inputs: Path | None = None):
    """Run the stages in-process on ``params``; returns (FitResult, every score: the
    detail.json dict); with the backtest stages also asked for, the backtest metrics are in
    ``workdir/backtest.json``. ``inputs``: the folder the CSV named by data.csv_path lies in
    (default data/external)."""
    from tools.stages import run_stages
    work = Path(workdir or tempfile.mkdtemp(prefix="attn-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    pfile = work / "params.yaml"
    pfile.write_text(yaml.safe_dump(params, sort_keys=False))
    out = run_stages(pfile, work, ROOT, stages, inputs)
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
    m = json.loads((work / "detail.json").read_text())
    shutil.rmtree(work)
    return m


def timed(cmd: list[str], cwd: Path) -> tuple[float, dict[str, float], str]:
    """Run ``cmd``; its wall seconds, each DVC stage's (from one "Running stage" line to the
    next, or to the end) and its output (stdout and stderr)."""
    import re
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=cwd, env=ENV, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    stages, current, since, lines = {}, None, t0, []
    for line in proc.stdout:
        lines.append(line)
        m = re.match(r"Running stage '(?:[\w/]*dvc.yaml:)?([^']+)'", line)
        if m:
            now = time.perf_counter()
            if current:
                stages[current] = now - since
            current, since = m.group(1), now
        if line.startswith(("ERROR", "error")):
            print(line.rstrip(), file=sys.stderr)
    proc.wait()
    end = time.perf_counter()
    if current:
        stages[current] = end - since
    if proc.returncode:
        raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}):\n" + "".join(lines[-20:]))
    return end - t0, stages, "".join(lines)
