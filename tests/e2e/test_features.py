"""End-to-end: past covariates from a small OHLCV file through the real ``dvc exp run``, then
the forecast command on the same file, and the model's export."""
from __future__ import annotations

import json
import sys

import pandas as pd

from conftest import ROOT

sys.path.insert(0, str(ROOT / "src"))
from attn_forecast.data.sources import ohlcv  # noqa: E402

CSV = "data/external/bars.csv"
RUN = ["-S", "data.kind=csv", "-S", f"data.csv_path={CSV}", "-S", "data.csv_column=close",
       "-S", "data.csv_time_column=date", "-S", "prepare.transform=log_return",
       "-S", "prepare.window=10", "-S", "train.augment_noise=0.0",
       "-S", "data.csv_feature_columns=[open,high,low,volume]",
       "-S", "prepare.feature_transforms=[log_return,log_return,log_return,log1p]"]


def test_ohlcv_features_run_as_an_experiment_and_forecast(project_factory, tmp_path):
    proj = project_factory("features", {"train.epochs": 20})
    bars = ohlcv(160, 5, lead=0.8)
    bars.to_csv(proj.path / CSV, index=False)
    proj.git_commit("daily bars")
    res = proj.run(["dvc", "exp", "run", "-n", "ohlcv", *RUN], timeout=300)
    out = res.stdout + res.stderr
    assert res.returncode == 0, out
    assert "features open, high, low, volume" in out, out
    meta = json.loads((proj.path / "data/prepared/store.json").read_text())
    assert meta["features"] == ["open", "high", "low", "volume"]
    assert meta["feature_transforms"] == ["log_return", "log_return", "log_return", "log1p"]
    centers = __import__("numpy").load(proj.path / "data/prepared/index.npz")["feature_center"]
    assert centers.shape == (1, 4)                     # one scaler per series and column
    metrics = json.loads((proj.path / "reports/metrics_detail.json").read_text())
    assert metrics["model"]["rmse"] > 0 and metrics["naive"]["rmse"] > 0
    assert metrics["ridge_features"]["rmse"] > 0      # ridge on the same features, beside
    assert "ridge_features" in pd.read_csv(proj.path / "reports/predictions.csv").columns

    # the forecast command reads the same columns from the file and forecasts the horizon
    H = meta["horizon"]
    fc = tmp_path / "fc.csv"
    res = proj.run(["python", "-m", "attn_forecast.cli", "forecast", "--model", "models/model.pt",
                    "--csv", CSV, "--out", str(fc)], timeout=120)
    assert res.returncode == 0, res.stdout + res.stderr
    got = pd.read_csv(fc)
    assert list(got["time"]) == list(pd.bdate_range(bars["date"].iloc[-1], periods=H + 1)[1:]
                                     .strftime("%Y-%m-%d"))
    last = bars["close"].iloc[-1]
    assert 0.8 * last < got["forecast"].iloc[0] < 1.2 * last
    # past the horizon the features' future is unknown: one line, no file
    res = proj.run(["python", "-m", "attn_forecast.cli", "forecast", "--model", "models/model.pt",
                    "--csv", CSV, "--steps", str(H + 2), "--out", str(tmp_path / "no.csv")])
    assert res.returncode == 2 and res.stderr.strip().splitlines() == [
        f"error: --steps must be <= {H} (the model's horizon) for a model with feature columns "
        "(open, high, low, volume): their future values are not known, so it cannot feed "
        "forecasts back in"], res.stderr
    assert not (tmp_path / "no.csv").exists()
    # a file without one of the columns: named, one line
    bars.drop(columns="volume").to_csv(tmp_path / "novol.csv", index=False)
    res = proj.run(["python", "-m", "attn_forecast.cli", "forecast", "--model", "models/model.pt",
                    "--csv", str(tmp_path / "novol.csv"), "--out", str(tmp_path / "no.csv")])
    assert res.returncode == 2 and "column 'volume' not in" in res.stderr, res.stderr
    assert "Traceback" not in res.stderr
    # export: the features are an input of their own, described in the JSON
    res = proj.run(["python", "-m", "attn_forecast.cli", "export", "--model", "models/model.pt",
                    "--out", str(tmp_path / "m.onnx")], timeout=120)
    assert res.returncode == 0, res.stdout + res.stderr
    desc = json.loads((tmp_path / "m.json").read_text())
    assert desc["inputs"]["features"] == ["batch", 10, 4]
