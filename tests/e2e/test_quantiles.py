"""End-to-end: a quantile model through the real ``dvc exp run``, with split-conformal
intervals: the interval metrics, the quantile columns, the calibration CSV and figures, and
the forecast command's quantiles."""
from __future__ import annotations

import json

import pandas as pd
import pytest


@pytest.fixture(scope="module")
def run(project_factory):
    proj = project_factory("quantiles", overrides={"data.n_points": 200, "prepare.window": 20,
                                                   "train.epochs": 30})
    res = proj.run(["dvc", "exp", "run", "-S", "model.quantiles=[0.1,0.5,0.9]",
                    "-S", "evaluate.conformal=split", "-S", "prepare.cal_frac=0.1"],
                   timeout=300)
    return proj, res


def test_interval_metrics(run):
    proj, res = run
    assert res.returncode == 0, res.stdout + res.stderr
    m = json.loads((proj.path / "reports/metrics_detail.json").read_text())
    # split conformal calibrates every forecaster's intervals on the calibration part: the
    # mean's too (from its residuals there)
    for name in ("model", "naive", "mean", "ridge", "ets", "theta"):
        for key in ("coverage_80", "width_80", "winkler_80", "pinball", "crps",
                    "quantile_rmse"):
            assert isinstance(m[name][key], float), (name, key)
        assert 0 <= m[name]["coverage_80"] <= 1
    assert 0.5 < m["ideal_coverage_80"] < 1
    assert proj.read_json("data/prepared/store.json")["n_windows"]["cal"] >= 10


def test_quantile_columns_calibration_and_figures(run):
    proj, _ = run
    pred = pd.read_csv(proj.path / "reports/predictions.csv")
    assert {"predicted_q10", "predicted_q90", "naive_q10", "ridge_q90"} <= set(pred.columns)
    assert (pred["predicted_q10"] <= pred["predicted"]).all()
    assert (pred["predicted"] <= pred["predicted_q90"]).all()
    cal = pd.read_csv(proj.path / "reports/calibration.csv")
    assert cal["nominal"].tolist() == [0.8] and cal["model"].between(0, 1).all()
    assert (proj.path / "reports/figures/calibration.png").is_file()
    summary = (proj.path / "reports/summary.md").read_text()
    assert "Intervals and quantiles" in summary and "A perfect interval" in summary


def test_forecast_writes_quantiles_for_the_horizon(run):
    proj, _ = run
    series = proj.path / "data/external/series.csv"
    raw = pd.read_csv(proj.path / "data/raw/series.csv")
    raw[["t", "value"]].to_csv(series, index=False)
    res = proj.run(["python", "-m", "attn_forecast.cli", "forecast", "--model", "models/model.pt",
                    "--csv", str(series), "--time-column", "t", "--steps", "3",
                    "--out", "fc.csv"])
    assert res.returncode == 0, res.stderr
    fc = pd.read_csv(proj.path / "fc.csv")
    assert list(fc.columns) == ["step", "time", "forecast", "q10", "q90"]
    assert fc["q10"].notna().tolist() == [True, False, False]   # horizon 1: one step
    assert fc["q10"][0] <= fc["forecast"][0] <= fc["q90"][0]
    assert "quantiles for the first 1 step(s) only" in res.stdout
