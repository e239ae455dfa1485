"""End-to-end: the whole DVC pipeline on a tiny config, in a throw-away copy of the project.

One copy is shared by the tests of this module (each full ``dvc repro`` costs ~15 s on two
cores), so the tests run in file order and build on each other: repro -> outputs -> up to date
-> forced repro is byte-identical -> plots -> an experiment -> a queued grid -> plots diff.
"""
from __future__ import annotations

import json
import re
import subprocess
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd
import yaml
import pytest
import torch

from conftest import TINY, pipeline_stages

# Outputs that must come out byte-identical from the same params (dvc.lock covers the rest).
DETERMINISTIC = ["reports/metrics.json", "reports/metrics_detail.json", "data/raw/series.csv",
                 "data/prepared", "models/model.pt", "data/forecasts.npz",
                 "reports/predictions.csv", "reports/train/history.csv"]
STAGES = pipeline_stages()
BASE_LR = 0.005


@pytest.fixture(scope="module")
def built(project_factory):
    """One tiny project with the pipeline reproduced once."""
    proj = project_factory("pipeline", overrides={"train.lr": BASE_LR})
    t0 = time.perf_counter()
    res = proj.run(["dvc", "repro"], timeout=240)
    state = SimpleNamespace(proj=proj, repro=res, seconds=time.perf_counter() - t0)
    if res.returncode == 0:
        state.hashes = proj.hashes(DETERMINISTIC)
        state.lock = (proj.path / "dvc.lock").read_text()
    yield state
    _wait_for_queue_workers(proj)


def _wait_for_queue_workers(proj, timeout: float = 30) -> None:
    """The queue's worker daemon exits by itself once the queue is empty; wait for that, and
    stop it through DVC if it lingers, so no process outlives the tests."""
    deadline = time.monotonic() + timeout
    for pid_file in (proj.path / ".dvc/tmp/exps/celery").glob("*.pid"):
        try:
            pid = int(pid_file.read_text().strip())
        except (OSError, ValueError):
            continue
        while Path(f"/proc/{pid}").exists() and time.monotonic() < deadline:
            time.sleep(0.2)
        if Path(f"/proc/{pid}").exists():
            proj.run(["dvc", "queue", "stop", "--kill"], timeout=60)


def _ok(built):
    if built.repro.returncode != 0:
        pytest.fail(f"dvc repro failed ({built.repro.returncode}):\n{built.repro.stdout}\n"
                    f"{built.repro.stderr}")
    return built.proj


def test_repro_runs_every_stage_and_writes_outputs(built):
    proj = _ok(built)
    out = built.repro.stdout + built.repro.stderr
    for stage in STAGES:
        assert f"Running stage '{stage}'" in out
    p = proj.path

    series = pd.read_csv(p / "data/raw/series.csv")  # one long table, a series of one id
    assert list(series.columns) == ["id", "t", "value", "signal"]
    assert len(series) == TINY["data.n_points"] and set(series["id"]) == {"sine"}
    assert series["value"].notna().all()

    assert {f.name for f in (p / "data/prepared").iterdir()} == {
        "store.json", "index.npz", "levels.npy", "signal.npy", "t.npy", "z.npy"}
    meta = proj.read_json("data/prepared/store.json")
    from attn_forecast.config.load import load_params
    params = load_params(p / "params.yaml").prepare      # auto resolved: the sine's window
    assert (meta["window"], meta["horizon"]) == (params.window, params.horizon)
    assert meta["n_series"] == 1
    assert all(meta["n_windows"][k] >= 1 for k in ("train", "test"))

    ckpt = torch.load(p / "models/model.pt", weights_only=True)
    assert {"settings", "state_dict"} <= set(ckpt)
    assert ckpt["state_dict"] and all(isinstance(v, torch.Tensor)
                                      for v in ckpt["state_dict"].values())

    hist = pd.read_csv(p / "reports/train/history.csv")
    assert list(hist.columns) == ["epoch", "train_loss", "val_loss", "lr"]
    assert hist["epoch"].tolist() == [1, 2, 3]
    assert (hist["lr"] == BASE_LR).all()

    pred = pd.read_csv(p / "reports/predictions.csv")
    assert {"t", "actual", "predicted", "naive", "ridge"} <= set(pred.columns)
    assert list(pred.columns[:3]) == ["t", "actual", "predicted"]
    assert len(pred) == meta["n_windows"]["test"]
    assert pred[["actual", "predicted", "naive", "ridge"]].notna().all().all()

    png = p / "reports/figures/overview.png"
    assert png.is_file() and png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert (p / "reports/summary.md").read_text().strip()


def test_metrics_json_schema(built):
    """The DVC metrics are the headline (a few scores a forecaster); every score is in the
    detail file beside it, committed but not a DVC metric."""
    proj = _ok(built)
    metrics = proj.read_json("reports/metrics.json")
    detail = proj.read_json("reports/metrics_detail.json")
    for name in ("model", "naive", "ridge"):
        assert set(metrics[name]) == {"rmse", "mase", "signal_rmse", "wql"}, name
        for key in ("mse", "rmse", "mae", "r2", "signal_rmse", "wql", "msis", "coverage_80",
                    "coverage_95"):
            assert isinstance(detail[name][key], (int, float)), (name, key)
        assert metrics[name]["rmse"] == detail[name]["rmse"]
    assert metrics["seasonal_naive"] is None  # asked for, no season: shown as n/a
    assert "no season" in detail["unavailable"]["seasonal_naive"]
    assert type(metrics["n_test"]) is int and detail["n_series"] == 1
    spec = yaml.safe_load((proj.path / "dvc.yaml").read_text())
    declared = [list(m)[0] if isinstance(m, dict) else m
                for st in spec["stages"].values() for m in st.get("metrics", [])]
    assert not any("detail" in str(m) for m in declared)
    pred = pd.read_csv(proj.path / "reports/predictions.csv")
    assert metrics["n_test"] == len(pred)
    # recomputed from the committed predictions, independently of metrics.py (both files are
    # written at a documented precision: 4 and 6 significant digits)
    for name, column in (("model", "predicted"), ("naive", "naive"), ("ridge", "ridge")):
        err = pred[column].to_numpy() - pred["actual"].to_numpy()
        assert metrics[name]["rmse"] == pytest.approx(np.sqrt(np.mean(err ** 2)), rel=1e-3)
        assert detail[name]["mae"] == pytest.approx(np.mean(np.abs(err)), rel=1e-3)


def test_up_to_date_after_repro(built):
    proj = _ok(built)
    status = proj.run(["dvc", "status"], check=True)
    assert "up to date" in status.stdout, status.stdout
    again = proj.run(["dvc", "repro"], check=True)
    out = again.stdout + again.stderr
    assert "Running stage" not in out
    assert "up to date" in out or "didn't change" in out, out


def test_forced_repro_is_byte_identical(built):
    """``dvc repro --force`` twice: the same bytes as the first repro each time, and the same
    dvc.lock (which also pins the figures and the summary)."""
    proj = _ok(built)
    for run in (1, 2):
        forced = proj.run(["dvc", "repro", "--force"], timeout=240, check=True)
        assert all(f"Running stage '{s}'" in forced.stdout for s in STAGES), forced.stdout
        hashes = proj.hashes(DETERMINISTIC)
        changed = sorted(k for k in built.hashes if hashes.get(k) != built.hashes[k])
        assert not changed, f"forced run {run} changed {changed}"
        assert hashes == built.hashes
        assert (proj.path / "dvc.lock").read_text() == built.lock, f"forced run {run}"
    status = proj.run(["dvc", "status"], check=True)
    assert "up to date" in status.stdout


def test_plots_show_writes_html(built):
    proj = _ok(built)
    res = proj.run(["dvc", "plots", "show"], check=True)
    html = proj.path / "dvc_plots" / "index.html"
    assert html.is_file(), res.stdout + res.stderr
    text = html.read_text()
    assert "Training loss" in text or "history.csv" in text
    assert "overview.png" in text or "figures" in text


def _exp_show(proj):
    res = proj.run(["dvc", "exp", "show", "--json"], check=True)
    rows = json.loads(res.stdout)
    baselines = [r for r in rows if r["rev"] != "workspace"]
    exps = {}
    for base in baselines:
        for group in base.get("experiments") or []:
            for rev in group["revs"]:
                params = rev["data"]["params"]["params.yaml"]["data"]
                exps[rev.get("name") or rev["rev"]] = params["train"]["lr"]
    return baselines, exps


def test_experiment_run_show_and_metrics_diff(built):
    proj = _ok(built)
    proj.run(["dvc", "plots", "show"])  # idempotent; keep dvc_plots out of the commit
    (proj.path / ".gitignore").write_text(
        (proj.path / ".gitignore").read_text() + "\n/dvc_plots/\n")
    proj.git_commit("baseline: pipeline outputs")
    res = proj.run(["dvc", "exp", "run", "-S", "train.lr=0.01"], timeout=240, check=True)
    out = res.stdout + res.stderr
    assert "Running stage 'train'" in out
    assert "Running stage 'generate'" not in out  # data stages are unchanged

    baselines, exps = _exp_show(proj)
    assert len(baselines) == 1
    base = baselines[0]
    assert base["data"]["params"]["params.yaml"]["data"]["train"]["lr"] == BASE_LR
    assert base["data"]["metrics"]["reports/metrics.json"]["data"]["n_test"] >= 1
    assert 0.01 in exps.values(), exps

    diff = proj.run(["dvc", "metrics", "diff", "--json"], check=True)
    changes = json.loads(diff.stdout)["reports/metrics.json"]
    assert "model.rmse" in changes
    assert changes["model.rmse"]["old"] != changes["model.rmse"]["new"]
    assert "naive.rmse" not in changes  # the baselines do not depend on train.lr
    plain = proj.run(["dvc", "metrics", "diff"], check=True)
    assert "model.rmse" in plain.stdout

    # the comparison a user makes fits a 120-column terminal as it comes
    proj.env["COLUMNS"] = "120"
    try:
        table = proj.run(["dvc", "exp", "show", "--only-changed", "--no-pager"],
                         check=True).stdout
    finally:
        del proj.env["COLUMNS"]
    widths = [len(line) for line in table.splitlines()]
    assert max(widths) <= 120, table
    for column in ("model.rmse", "model.mase", "train.lr"):
        assert column in table, table


def test_queued_grid_and_plots_diff(built):
    proj = _ok(built)
    res = proj.run(["dvc", "exp", "run", "--queue", "-S", "train.lr=0.001,0.01"], check=True)
    names = re.findall(r"Queued experiment '([^']+)'", res.stdout + res.stderr)
    assert len(names) == 2, res.stdout + res.stderr

    # The worker is a detached daemon that would hold a captured pipe open: no capture here.
    subprocess.run(["dvc", "queue", "start", "-j", "2"], cwd=proj.path, env=proj.env,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                   stdin=subprocess.DEVNULL, timeout=60, check=True)
    deadline = time.monotonic() + 180
    try:
        while True:
            status = proj.run(["dvc", "queue", "status"], check=True).stdout
            rows = {n: line for line in status.splitlines() for n in names
                    if n in line.split()}
            done = len(rows) == 2 and not any(s in line for line in rows.values()
                                              for s in ("Queued", "Running"))
            if done:
                break
            assert time.monotonic() < deadline, f"queue not done in time:\n{status}"
            time.sleep(2)
    except BaseException:
        proj.run(["dvc", "queue", "stop", "--kill"], timeout=60)  # no stray worker
        raise
    if not all("Success" in line for line in rows.values()):
        logs = "\n".join(proj.run(["dvc", "queue", "logs", n]).stdout for n in names)
        pytest.fail(f"queued experiments did not all succeed:\n{status}\n{logs}")

    _, exps = _exp_show(proj)
    for name, lr in zip(names, (0.001, 0.01)):
        assert exps.get(name) == lr, (name, exps)

    html = proj.path / "dvc_plots" / "index.html"
    html.unlink(missing_ok=True)
    diff = proj.run(["dvc", "plots", "diff", *names], check=True)
    assert html.is_file(), diff.stdout + diff.stderr
    text = html.read_text()
    assert all(name in text for name in names)
