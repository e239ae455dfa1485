"""End-to-end: the evaluate stage with every option at once (horizon 3, the diff transform, a
seasonal-naive baseline and a validation part), through the real stage scripts, checked
against an independent computation from the series file."""
from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from conftest import pipeline_stages

SEASON = 150  # the default sine's period: 300 points over two periods
CONFIG = {"data.n_points": 300, "prepare.horizon": 3, "prepare.transform": "diff",
          "prepare.val_frac": 0.1, "prepare.cal_frac": 0.1, "evaluate.season": SEASON,
          "train.epochs": 3}


@pytest.fixture(scope="module")
def run(project_factory):
    proj = project_factory("evaluate", overrides=CONFIG, git=False)
    for stage in pipeline_stages():
        res = proj.stage(stage)
        assert res.returncode == 0, f"{stage}: {res.stderr}"
    return proj


def test_every_forecaster_and_step_is_scored(run):
    m = json.loads((run.path / "reports/metrics_detail.json").read_text())
    assert {"model", "naive", "seasonal_naive", "mean", "ridge"} <= set(m)
    for name in ("model", "naive", "seasonal_naive", "mean", "ridge"):
        assert {"rmse_step1", "rmse_step2", "rmse_step3"} <= set(m[name]), name
    horizon = pd.read_csv(run.path / "reports/horizon.csv")
    assert horizon["step"].tolist() == [1, 2, 3]
    assert (run.path / "reports/figures/horizon.png").is_file()


def test_predictions_match_an_independent_computation(run):
    series = pd.read_csv(run.path / "data/raw/series.csv")  # id, t, value, signal
    v = series["value"].to_numpy()
    pred = pd.read_csv(run.path / "reports/predictions.csv")
    t = pred["t"].to_numpy().astype(int)        # time of each window's first target
    # the test part: first targets from the last 20 % of the 300 time stamps
    assert t[0] == 240 and t[-1] == 300 - 3
    np.testing.assert_allclose(pred["actual"], v[t], rtol=1e-5)
    np.testing.assert_allclose(pred["naive"], v[t - 1], rtol=1e-5)
    np.testing.assert_allclose(pred["seasonal_naive"], v[t - SEASON], rtol=1e-5)
    train_y = v[:int(0.6 * 300)]  # before the validation and calibration parts (10 % each)
    # the mean of every value before each window (the historic average)
    np.testing.assert_allclose(pred["mean"], [v[:k].mean() for k in t], rtol=1e-5)
    m = json.loads((run.path / "reports/metrics_detail.json").read_text())
    err = pred["naive"].to_numpy() - pred["actual"].to_numpy()
    assert m["naive"]["rmse_step1"] == pytest.approx(np.sqrt(np.mean(err ** 2)), rel=1e-3)
    # MASE's scale: the in-sample seasonal naive error (the M4 rule), at the run's season
    scale = np.mean(np.abs(train_y[SEASON:] - train_y[:-SEASON]))
    assert m["naive"]["mase"] * scale == pytest.approx(m["naive"]["mae"], rel=1e-3)
