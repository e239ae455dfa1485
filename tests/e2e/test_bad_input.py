"""End-to-end: bad params and bad CSV files through the real stage scripts, and a killed run.

Each bad-input case runs in its own copy of a small prepared project (generate and prepare have
run there on good params), with one change to params.yaml and, for CSV cases, a file in the
inputs folder. The stage must exit non-zero with exactly one line on stderr that names the
offending key or column, no traceback, and must leave no output behind. The cases run two at a
time (the machine has two cores); the per-case tests only look at the results.
"""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import yaml

# The folder of users' CSV files that generate depends on (data.csv_path must lie inside it).
_DVC_VARS = yaml.safe_load(
    (Path(__file__).resolve().parents[2] / "dvc.yaml").read_text()).get("vars") or []
INPUTS = next((v["p"]["inputs"] for v in _DVC_VARS
               if isinstance(v, dict) and "inputs" in (v.get("p") or {})), "data/external")


def _csv_rows(n: int, value=lambda i: f"{(i % 7) * 0.5:.1f}") -> str:
    return "t,value\n" + "".join(f"{i},{value(i)}\n" for i in range(n))


def _bad_at(n: int, row: int, text: str) -> str:
    """A two-column CSV whose ``row`` (0-based data row, file line row + 2) holds ``text``."""
    return _csv_rows(n, lambda i: text if i == row else f"{(i % 7) * 0.5:.1f}")


CSV = {"data.kind": "csv", "data.csv_path": f"{INPUTS}/user.csv"}


@dataclass
class Case:
    id: str
    stage: str
    params: dict
    expect: list[str]               # substrings the one stderr line must hold
    csv: str | None = None          # contents of the user's CSV file
    csv_at: str = f"{INPUTS}/user.csv"
    pre: list[str] = field(default_factory=list)  # stages that must succeed first
    marks: tuple = ()


CASES = [
    # ---- params.yaml
    Case("window-0", "prepare", {"prepare.window": 0}, ["prepare.window", "0"]),
    Case("lr-negative", "train", {"train.lr": -1}, ["train.lr", "-1"]),
    Case("heads-not-dividing", "train", {"model.n_heads": 3, "model.d_model": 32},
         ["model.n_heads", "model.d_model"]),
    Case("unknown-key", "train", {"train.lrr": 0.01}, ["train.lrr", "unknown"]),
    Case("kind-bogus", "generate", {"data.kind": "bogus"}, ["data.kind", "bogus"]),
    Case("scaler-robust", "prepare", {"prepare.scaler": "robust"}, ["prepare.scaler", "robust"]),
    Case("fracs-sum-to-1", "prepare", {"prepare.test_frac": 0.5, "prepare.val_frac": 0.5},
         ["prepare.test_frac", "prepare.val_frac"]),
    Case("epochs-string", "train", {"train.epochs": "many"}, ["train.epochs", "many"]),
    # ---- the user's CSV
    Case("csv-missing-file", "generate", {**CSV, "data.csv_path": f"{INPUTS}/nope.csv"},
         ["data.csv_path", "nope.csv"]),
    Case("csv-outside-inputs", "generate", {**CSV, "data.csv_path": "user.csv"},
         ["data.csv_path", INPUTS, "user.csv"], csv=_csv_rows(40), csv_at="user.csv"),
    Case("csv-missing-column", "generate", {**CSV, "data.csv_column": "close"},
         ["'close'", "columns: t, value"], csv=_csv_rows(40)),
    Case("csv-non-numeric", "generate", CSV, ["'value'", "'abc'", "line 7", "data.missing"],
         csv=_bad_at(40, 5, "abc")),
    Case("csv-inf", "generate", CSV, ["'value'", "infinite", "line 5"],
         csv=_bad_at(40, 3, "inf")),
    Case("csv-empty-cell", "generate", {**CSV, "data.missing": "error"},
         ["'value'", "empty", "data.missing"], csv=_bad_at(40, 4, "")),
    Case("csv-empty-cell-one-column", "generate", {**CSV, "data.missing": "error"},
         ["'value'", "empty", "data.missing"],
         # a blank line is an empty cell of a one-column file, not a line to skip
         csv="value\n" + "".join("\n" if i == 4 else f"{i % 5}.5\n" for i in range(40))),
    Case("csv-too-few-rows", "prepare", CSV,
         # no calendar, season 0: the auto horizon is 8 (M3's other)
         ["too short", "11 values", "window 16", "horizon 8", "need at least 153 values",
          "prepare.window"],
         csv=_csv_rows(11), pre=["generate"]),
    Case("csv-monthly-gap", "generate", {**CSV, "data.csv_time_column": "month"},
         ["not regular", "2020-05-01", "2020-11-01", "5 step(s) of one month missing",
          "data.time_gaps"],
         csv="month,value\n" + "".join(f"{d},{i}.5\n" for i, d in enumerate(
             [f"2020-{m:02d}-01" for m in range(1, 6)] + ["2020-11-01", "2020-12-01"]
             + [f"2021-{m:02d}-01" for m in range(1, 13)]))),
    Case("conformal-without-a-calibration-part", "baselines",
         {"evaluate.conformal": "split", "prepare.cal_frac": 0.0},
         ["evaluate.conformal", "prepare.cal_frac"]),
    Case("quantiles-unsorted", "baselines", {"evaluate.quantiles": [0.9, 0.1, 0.5]},
         ["evaluate.quantiles", "increasing", "0.9"]),
    Case("quantiles-repeated", "train", {"evaluate.quantiles": [0.1, 0.5, 0.5, 0.9]},
         ["evaluate.quantiles", "repeated"]),
    Case("quantile-outside-0-1", "evaluate", {"evaluate.quantiles": [0.5, 1.2]},
         ["evaluate.quantiles", "< 1", "1.2"]),
    Case("blend-of-nothing", "baselines",
         {"evaluate.blend": ["seasonal_naive"], "evaluate.season": 0},
         ["evaluate.blend", "seasonal_naive", "no season", "evaluate.blend to []"]),
    Case("folds-beyond-the-test-part", "backtest_train",
         {"backtest.folds": 3, "backtest.fold_size": 10},
         ["backtest.folds", "backtest.fold_size", "inside"]),
    # ---- a run that cannot succeed
    Case("train-diverges", "train", {"train.lr": 1e30}, ["diverged at epoch", "lower train.lr"]),
]


@dataclass
class Outcome:
    case: Case
    pre: list[subprocess.CompletedProcess]
    res: subprocess.CompletedProcess | None
    leftovers: list[str]


@pytest.fixture(scope="module")
def base(project_factory):
    """A copy with generate and prepare run on good tiny params (no git or DVC needed)."""
    proj = project_factory("bad-base", git=False)
    for stage in ("generate", "prepare"):
        res = proj.stage(stage)
        assert res.returncode == 0, res.stderr
    return proj


def _run_case(base, root: Path, case: Case) -> Outcome:
    proj = base.clone(root / case.id)
    dest = proj.path
    proj.update_params(case.params)
    if case.csv is not None:
        (dest / case.csv_at).parent.mkdir(parents=True, exist_ok=True)
        (dest / case.csv_at).write_text(case.csv)
    for rel in proj.stage_outs(case.stage) + [o for s in case.pre for o in proj.stage_outs(s)]:
        target = dest / rel
        shutil.rmtree(target) if target.is_dir() else target.unlink(missing_ok=True)
    pre = []
    for stage in case.pre:
        pre.append(proj.stage(stage))
        if pre[-1].returncode != 0:
            return Outcome(case, pre, None, [])
    res = proj.stage(case.stage)
    leftovers = [rel for rel in proj.stage_outs(case.stage) if (dest / rel).exists()]
    leftovers += [str(p.relative_to(dest)) for p in dest.rglob("*.tmp")]
    return Outcome(case, pre, res, leftovers)


@pytest.fixture(scope="module")
def outcomes(base, tmp_path_factory) -> dict[str, Outcome]:
    root = tmp_path_factory.mktemp("bad-cases")
    with ThreadPoolExecutor(max_workers=2) as pool:
        futures = {c.id: pool.submit(_run_case, base, root, c) for c in CASES}
        return {cid: f.result() for cid, f in futures.items()}


@pytest.mark.parametrize("case", [pytest.param(c, id=c.id, marks=c.marks) for c in CASES])
def test_bad_input_fails_with_one_line(case, outcomes):
    out = outcomes[case.id]
    for stage, res in zip(case.pre, out.pre):
        assert res.returncode == 0, f"{stage} should accept this input:\n{res.stderr}"
    res = out.res
    detail = f"exit {res.returncode}\n--- stdout\n{res.stdout}\n--- stderr\n{res.stderr}"
    assert res.returncode != 0, detail
    assert "Traceback" not in res.stderr, detail
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1, detail
    assert lines[0].startswith("error: "), detail
    print(f"\n| {case.id} | {case.stage} | {lines[0]} |")  # `pytest -s`: the answers as a table
    for text in case.expect:
        assert text in lines[0], f"{text!r} not in {lines[0]!r}"
    assert out.leftovers == [], f"{case.stage} left {out.leftovers} behind"


# ---------------------------------------------------------------- kill -9 and recover
# ~3 s of training on an idle 2-core machine, after ~2 s of imports.
KILL_CONFIG = {"data.n_points": 2000, "train.epochs": 250, "train.batch_size": 0}


def _wait_for(log: Path, text: str, proc: subprocess.Popen, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while text not in log.read_text():
        if proc.poll() is not None:
            pytest.fail(f"dvc repro exited ({proc.returncode}) before {text!r}:\n"
                        f"{log.read_text()}")
        if time.monotonic() > deadline:
            pytest.fail(f"no {text!r} in {timeout} s:\n{log.read_text()}")
        time.sleep(0.1)


def _train_running(proc_pid: int) -> bool:
    """Whether a process of the group runs stages/train.py (Linux /proc)."""
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            if os.getpgid(int(d.name)) == proc_pid and \
                    b"stages/train.py" in (d / "cmdline").read_bytes():
                return True
        except (ProcessLookupError, PermissionError, FileNotFoundError):
            continue
    return False


def test_kill_during_train_then_repro_recovers(project, tmp_path):
    proj = project
    proj.write_params(KILL_CONFIG)
    log = tmp_path / "repro.log"
    with open(log, "w") as fh:
        proc = proj.popen(["dvc", "repro"], stdout=fh, start_new_session=True)
    try:
        _wait_for(log, "Running stage 'train'", proc, timeout=90)
        # Let the stage get past its imports and into the epochs.
        time.sleep(3.0)
        assert proc.poll() is None, f"train finished before the kill:\n{log.read_text()}"
        assert _train_running(proc.pid)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL
    time.sleep(0.2)
    assert not _train_running(proc.pid)
    assert not (proj.path / "models/model.pt").exists()  # killed before the checkpoint

    proj.update_params({"train.epochs": 5})  # recovering needs no long training
    again = proj.run(["dvc", "repro"], timeout=240)
    out = again.stdout + again.stderr
    assert again.returncode == 0, out
    assert "Running stage 'train'" in out
    assert "Running stage 'generate'" not in out  # finished stages stay done
    for rel in ("models/model.pt", "reports/metrics.json", "reports/summary.md"):
        assert (proj.path / rel).is_file(), rel
    status = proj.run(["dvc", "status"], check=True)
    assert "up to date" in status.stdout, status.stdout
    assert not list(proj.path.rglob("*.tmp"))


def test_a_failed_experiment_leaves_the_workspaces_outputs_as_they_were(project):
    """`dvc exp run -S train.lr=-1` fails at train with one line; every output of the run before
    it is still there (dvc.yaml's outputs persist), so once params.yaml is restored `dvc status`
    is clean, with no `dvc checkout` needed."""
    proj = project
    proj.run(["dvc", "repro"], timeout=300, check=True)
    proj.git_commit("the run")
    before = {p: p.read_bytes() for p in (proj.path / "models/model.pt",
                                          proj.path / "data/forecasts.npz")}
    res = proj.run(["dvc", "exp", "run", "-S", "train.lr=-1"], timeout=300)
    assert res.returncode != 0
    assert "error: params.yaml: train.lr must be a number > 0, got -1" in res.stderr
    assert {p: p.read_bytes() for p in before} == before
    proj.run(["git", "checkout", "params.yaml"], check=True)
    status = proj.run(["dvc", "status"], check=True)
    assert "up to date" in status.stdout, status.stdout
