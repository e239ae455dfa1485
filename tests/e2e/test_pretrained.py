"""End-to-end: the prior through the real ``dvc``. A user's CSV with only its path and columns
set gets the defaults for real data (printed and saved), the committed prior fine-tuned and
zero-shot beside the baselines, and never a pretraining run; ``dvc exp run -S pretrain....``
rebuilds the prior when asked, and the stages after it follow."""
from __future__ import annotations

import json
import math

import pandas as pd
import pytest

USER_CSV = {"data.kind": "csv", "data.csv_path": "data/external/example.csv",
            "data.csv_column": "demand", "data.csv_time_column": "date"}
# a prior built in seconds: one round of two steps on a few short series
TINY_PRETRAIN = ["pretrain.train.epochs=1", "pretrain.steps_per_round=2",
                 "pretrain.series_per_round=16", "pretrain.val_series=8",
                 "pretrain.train.batch_size=16", "pretrain.max_length=96"]


@pytest.fixture(scope="module")
def user_csv(project_factory):
    proj = project_factory("pretrained-csv")
    proj.write_params(USER_CSV)
    proj.git_commit("only the path and the columns")
    return proj, proj.run(["dvc", "repro"], timeout=400)


def test_a_clone_has_the_prior_up_to_date(project):
    res = project.run(["dvc", "status", "pretrain"], timeout=120)
    assert res.returncode == 0, res.stderr
    assert "changed" not in res.stdout, res.stdout


def test_only_path_and_columns_get_the_real_data_defaults(user_csv):
    proj, res = user_csv
    out = res.stdout + res.stderr
    assert res.returncode == 0, out
    assert "Running stage 'pretrain'" not in out       # the committed prior, never rebuilt
    line = next(x for x in out.splitlines() if x.startswith("prepare: auto for real data"))
    for said in ("prepare.val_frac 0.1", "model.instance_norm seasonal",
                 "train.init pretrained", "train.patience 10"):
        assert said in line, line
    assert "keeps its own model.* architecture" in line    # the profile's model keys: not used
    meta = json.loads((proj.path / "data/prepared/store.json").read_text())
    assert meta["auto"]["profile"]["name"] == "real"
    assert meta["auto"]["profile"]["resolved"]["values"]["train.init"] == "pretrained"
    assert meta["auto"]["season"]["season"] == 7                # the weekly pattern
    assert "fine-tuned from the prior" in out


def test_zero_shot_and_fine_tuned_sit_beside_the_baselines(user_csv):
    proj, res = user_csv
    assert res.returncode == 0, res.stdout + res.stderr
    m = proj.read_json("reports/metrics_detail.json")
    for name in ("model", "zeroshot", "naive", "ets", "theta"):
        assert math.isfinite(m[name]["rmse"]) and m[name]["rmse"] > 0, name
    # fine-tuning changed it, unless no epoch beat the prior on the validation part (then the
    # prior is kept as epoch 0, and the model forecasts as the zero-shot prior does)
    if m["model_run"]["best_epoch"] == 0:
        assert m["zeroshot"]["rmse"] == m["model"]["rmse"]
    else:
        assert m["zeroshot"]["rmse"] != m["model"]["rmse"]
    assert "zeroshot" in m["significance"]                      # Diebold-Mariano vs the model
    assert "zeroshot" in (proj.path / "reports/summary.md").read_text()


def test_the_forecast_command_reads_the_fine_tuned_model(user_csv):
    proj, res = user_csv
    assert res.returncode == 0, res.stdout + res.stderr
    fc = proj.run(["python", "-m", "attn_forecast.cli", "forecast", "--model", "models/model.pt",
                   "--csv", "data/external/example.csv", "--steps", "5", "--out", "fc.csv"],
                  timeout=120)
    assert fc.returncode == 0, fc.stderr
    frame = pd.read_csv(proj.path / "fc.csv")
    assert len(frame) == 5 and frame["forecast"].notna().all()
    assert frame["q10"].iloc[0] <= frame["forecast"].iloc[0] <= frame["q90"].iloc[0]


def test_exp_run_with_a_pretrain_key_rebuilds_the_prior(project):
    before = project.hashes(["models/pretrained.pt"])
    args = [x for o in TINY_PRETRAIN for x in ("-S", o)]
    res = project.run(["dvc", "exp", "run", *args], timeout=400)
    out = res.stdout + res.stderr
    assert res.returncode == 0, out
    assert "Running stage 'pretrain'" in out and "Running stage 'train'" in out
    assert project.hashes(["models/pretrained.pt"]) != before
    assert project.read_json("reports/pretrain.json")["rounds"] == 1
    status = project.run(["dvc", "status"], timeout=120)
    assert "changed" not in status.stdout, status.stdout   # dvc.lock records the new prior


def test_pretraining_runs_in_two_processes_as_training_does(project):
    tiny = {k: float(v) if "." in v else int(v)
            for k, v in (o.split("=") for o in TINY_PRETRAIN)}
    project.update_params({**tiny, "pretrain.train.nproc": 2})
    res = project.stage("pretrain", timeout=300)
    assert res.returncode == 0, res.stdout + res.stderr
    summary = project.read_json("reports/pretrain.json")
    assert summary["processes"] == 2 and math.isfinite(summary["val_loss"])
    from attn_forecast.model import checkpoint
    model = checkpoint.model_from(checkpoint.read(project.path / "models/pretrained.pt"))
    assert len(model.settings.quantiles) == 9 and model.settings.window == 128


def test_a_forced_repro_keeps_the_prior_made_with_these_settings(project):
    before = project.hashes(["models/pretrained.pt", "reports/pretrain.json"])
    res = project.run(["dvc", "repro", "--force", "pretrain"], timeout=120)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "was made with these settings" in res.stdout and "kept" in res.stdout
    assert project.hashes(["models/pretrained.pt", "reports/pretrain.json"]) == before
