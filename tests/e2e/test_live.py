"""End-to-end: DVCLive logging (``train.live: true``) through a real ``dvc exp run``.

The files appear while training runs (read from the test while the experiment is still going),
``dvc exp show`` lists the running experiment's loss, the rows match the committed history CSV,
and the checkpoint and reports are byte-identical to a run with logging off.
"""
from __future__ import annotations

import csv
import json
import time

EPOCHS = 2000  # long enough on the tiny config to read the files while it trains
OUTS = ["models/model.pt", "reports/train/history.csv", "reports/metrics.json"]


def _exp_show_workspace(proj) -> dict:
    res = proj.run(["dvc", "exp", "show", "--json"], timeout=120)
    assert res.returncode == 0, res.stderr
    rows = json.loads(res.stdout)
    return rows[0]["data"]["metrics"]  # the workspace row


def test_dvclive_files_appear_during_training_and_change_nothing_else(project_factory):
    proj = project_factory("live", {"train.epochs": EPOCHS, "prepare.val_frac": 0.2,
                                    "data.n_points": 160})
    res = proj.run(["dvc", "repro"], timeout=300)
    assert res.returncode == 0, res.stdout + res.stderr
    assert not (proj.path / "dvclive").exists()  # off by default
    off = proj.hashes(OUTS)
    proj.git_commit("outputs with DVCLive off")

    live = proj.path / "dvclive"
    log = proj.path.parent / "live.log"
    with open(log, "w") as fh:
        proc = proj.popen(["dvc", "exp", "run", "-S", "train.live=true"], stdout=fh)
    seen_step, listed = None, None
    try:
        deadline = time.monotonic() + 240
        while proc.poll() is None and time.monotonic() < deadline:
            try:
                summary = json.loads((live / "metrics.json").read_text())
            except (FileNotFoundError, json.JSONDecodeError):  # not yet, or mid-write
                time.sleep(0.1)
                continue
            if seen_step is None and 1 <= summary["step"] < EPOCHS:
                # an epoch's row, before the last epoch; dvc exp show may catch the file
                # mid-write ("corrupted"): then ask again at a later epoch
                got = _exp_show_workspace(proj)
                if "train_loss" in (got.get("dvclive/metrics.json") or {}).get("data", {}):
                    seen_step, listed = summary["step"], got
            time.sleep(0.2)
        proc.wait(timeout=max(1.0, deadline - time.monotonic()))
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, log.read_text()
    assert seen_step is not None, "dvclive/metrics.json never showed an epoch before the end"
    # dvc exp show, asked while the experiment ran, listed its live loss (dvclive/dvc.yaml)
    files = {path: data.get("data", {}) for path, data in listed.items()}
    assert "train_loss" in files.get("dvclive/metrics.json", {}), listed

    # the whole history, one row per epoch, no timestamps, equal to the committed CSV's
    with open(proj.path / "reports/train/history.csv") as fh:
        history = list(csv.DictReader(fh))
    assert len(history) == EPOCHS and history[0]["val_loss"] not in ("", "NaN")
    for key in ("train_loss", "val_loss", "lr"):
        rows = (live / "plots" / "metrics" / f"{key}.tsv").read_text().splitlines()
        assert rows[0] == f"step\t{key}"
        got = [line.split("\t") for line in rows[1:]]
        assert [int(step) for step, _ in got] == list(range(1, EPOCHS + 1))
        for (_, value), row in zip(got, history):
            assert abs(float(value) - float(row[key])) <= 1e-5 * max(1.0, abs(float(row[key])))
    assert json.loads((live / "metrics.json").read_text())["step"] == EPOCHS
    assert not (proj.path / "dvc.yaml").read_text().count("dvclive")  # ours untouched
    assert (live / "dvc.yaml").exists() and not list(live.glob("*.html"))
    # logging changed no output: the same bytes as the run with it off
    assert proj.hashes(OUTS) == off
