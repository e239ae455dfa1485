"""End-to-end: the default run's intervals through the real ``dvc exp run`` (every forecaster's
quantiles at evaluate.quantiles, calibrated by split conformal on the calibration part), with a
quantile head: the interval metrics, the quantile columns, the calibration CSV and figures (the
fan chart), and the forecast command's quantiles for every step."""
from __future__ import annotations

import json

import pandas as pd
import pytest


@pytest.fixture(scope="module")
def run(project_factory):
    proj = project_factory("quantiles", overrides={"data.n_points": 200, "prepare.window": 20,
                                                   "train.epochs": 30})
    res = proj.run(["dvc", "exp", "run", "-S", "model.quantiles=[0.1,0.5,0.9]"], timeout=300)
    return proj, res


def test_interval_metrics(run):
    proj, res = run
    assert res.returncode == 0, res.stdout + res.stderr
    m = json.loads((proj.path / "reports/metrics_detail.json").read_text())
    # split conformal calibrates every forecaster's intervals on the calibration part: the
    # mean's too (from its residuals there)
    for name in ("model", "naive", "mean", "ridge", "ets", "theta"):
        for key in ("coverage_80", "coverage_95", "width_80", "winkler_80", "pinball", "crps",
                    "wql", "msis", "quantile_rmse"):
            assert isinstance(m[name][key], float), (name, key)
        assert 0 <= m[name]["coverage_80"] <= m[name]["coverage_95"] <= 1
        assert m[name]["intervals"] == "calibrated" and m[name]["n_interval_fallback"] == 0
    assert 0.5 < m["ideal_coverage_80"] < 1
    head = json.loads((proj.path / "reports/metrics.json").read_text())
    assert "wql" in head["model"] and "coverage_80" not in head["model"]  # the rest: detail
    assert proj.read_json("data/prepared/store.json")["n_windows"]["cal"] >= 10


def test_quantile_columns_calibration_and_figures(run):
    proj, _ = run
    pred = pd.read_csv(proj.path / "reports/predictions.csv")
    assert {"predicted_q2.5", "predicted_q10", "predicted_q90", "predicted_q97.5", "naive_q10",
            "ridge_q90"} <= set(pred.columns)
    assert (pred["predicted_q2.5"] <= pred["predicted_q10"]).all()
    assert (pred["predicted_q10"] <= pred["predicted"]).all()
    assert (pred["predicted"] <= pred["predicted_q90"]).all()
    cal = pd.read_csv(proj.path / "reports/calibration.csv")
    assert cal["nominal"].tolist() == [0.95, 0.8, 0.6, 0.4, 0.2]
    assert cal["model"].between(0, 1).all()
    for name in ("calibration.png", "fan.png"):
        assert (proj.path / "reports/figures" / name).is_file()
    summary = (proj.path / "reports/summary.md").read_text()
    assert "Intervals and quantiles" in summary and "A perfect interval" in summary


def test_forecast_writes_quantiles_for_every_step(run):
    proj, _ = run
    series = proj.path / "data/external/series.csv"
    raw = pd.read_csv(proj.path / "data/raw/series.csv")
    raw[["t", "value"]].to_csv(series, index=False)
    res = proj.run(["python", "-m", "attn_forecast.cli", "forecast", "--model", "models/model.pt",
                    "--csv", str(series), "--time-column", "t", "--steps", "3",
                    "--out", "fc.csv"])
    assert res.returncode == 0, res.stderr
    fc = pd.read_csv(proj.path / "fc.csv")
    levels = ["q2.5", "q10", "q20", "q30", "q40", "q60", "q70", "q80", "q90", "q97.5"]
    assert list(fc.columns) == ["step", "time", "forecast"] + levels + ["calibrated"]
    # the sine's horizon is one step: only the first was calibrated
    assert fc["calibrated"].tolist() == [True, False, False]
    assert fc[levels].notna().all().all()                       # every step, every level
    assert (fc[levels].diff(axis=1).iloc[:, 1:] >= 0).all().all()   # never crossing
    assert (fc["q10"] <= fc["forecast"]).all() and (fc["forecast"] <= fc["q90"]).all()
    assert "calibrated on the calibration part" in res.stdout
