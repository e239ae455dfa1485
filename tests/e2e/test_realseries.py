"""End-to-end: a real-series configuration through the real ``dvc``: the example CSV of daily
demand with an auto window and season, RevIN, patch tokens and calendar features, then the
forecast command on the trained model (which needs the dates for the calendar)."""
from __future__ import annotations

import json

import pandas as pd
import pytest

OVERRIDES = ["data.kind=csv", "data.csv_column=demand", "data.csv_time_column=date",
             "prepare.window=auto", "evaluate.season=auto", "model.instance_norm=revin",
             "model.patch_len=7", "prepare.time_features=[dayofweek,month]",
             "train.epochs=3"]


@pytest.fixture(scope="module")
def run(project_factory):
    proj = project_factory("realseries")
    args = [x for o in OVERRIDES for x in ("-S", o)]
    res = proj.run(["dvc", "exp", "run", *args], timeout=300)
    return proj, res


def test_auto_window_and_season_are_chosen_on_the_training_part(run):
    proj, res = run
    assert res.returncode == 0, res.stdout + res.stderr
    meta = json.loads((proj.path / "data/prepared/store.json").read_text())
    assert meta["auto"]["season"]["season"] == 7                  # the weekly pattern
    # two seasons (14), raised to the minimum of 16, rounded up so that patches of 7 tile it
    assert meta["window"] == 21 and "two seasons of 7" in meta["auto"]["window"]["reason"]
    assert meta["time_features"] == ["dayofweek", "month"]
    assert "season of the training parts: 7" in res.stdout
    m = json.loads((proj.path / "reports/metrics_detail.json").read_text())
    assert m["seasonal_naive"]["rmse"] > 0                        # the auto season is used


def test_patches_label_the_attention_by_the_lags_they_cover(run):
    proj, _ = run
    lags = pd.read_csv(proj.path / "reports/attention_by_lag.csv")
    assert lags["lag"].tolist() == [0, 7, 14] and lags["lag_oldest"].tolist() == [6, 13, 20]
    assert abs(lags["weight"].sum() - 1) < 1e-4


def test_forecast_with_calendar_features(run):
    proj, _ = run
    res = proj.run(["python", "-m", "attn_forecast.cli", "forecast", "--model", "models/model.pt",
                    "--csv", "data/external/example.csv", "--steps", "10", "--out", "fc.csv"],
                   timeout=120)
    assert res.returncode == 0, res.stderr
    fc = pd.read_csv(proj.path / "fc.csv")
    assert fc["time"].iloc[0] == "2025-01-01" and len(fc) == 10
    assert fc["forecast"].between(50, 1000).all()
