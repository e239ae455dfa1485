"""End-to-end: panels (many series, one global model) through the real ``dvc exp run``: the
built-in synthetic panel and a user's long-format CSV, the forecast command for every id, and
two-process DistributedDataParallel on a panel against one process."""
from __future__ import annotations

import json
import sys
from types import SimpleNamespace

import numpy as np
import pandas as pd
import torch
import yaml

from conftest import ROOT, set_key

sys.path.insert(0, str(ROOT / "src"))

PANEL = {"data.kind": "panel", "data.n_series": 12, "data.n_points": 120,
         "data.panel_min_points": 60, "prepare.window": 12, "prepare.horizon": 2,
         "evaluate.season": 12, "train.augment_noise": 0.0,
         "evaluate.baselines": ["naive", "seasonal_naive", "mean", "ridge", "ets"]}


def _sets(overrides: dict) -> list[str]:
    out = []
    for k, v in overrides.items():
        text = json.dumps(v, separators=(",", ":")) if isinstance(v, list) else str(v)
        out += ["-S", f"{k}={text}"]
    return out


def test_synthetic_panel_runs_as_an_experiment_and_forecasts_every_id(project_factory,
                                                                      tmp_path):
    proj = project_factory("panel", {"train.epochs": 4})
    res = proj.run(["dvc", "exp", "run", "-n", "panel", *_sets(PANEL)], timeout=300)
    out = res.stdout + res.stderr
    assert res.returncode == 0, out
    assert "in 12 series" in out and "prepare: 12 series" in out, out

    prepared = proj.path / "data/prepared"   # the same store as a single series'
    assert sorted(p.name for p in prepared.iterdir()) == [
        "index.npz", "levels.npy", "signal.npy", "store.json", "t.npy", "z.npy"]
    metrics = proj.read_json("reports/metrics_detail.json")
    headline = proj.read_json("reports/metrics.json")
    assert metrics["n_series"] == 12 and set(headline["model"]) == {
        "mase_mean", "smape_mean", "wql"}
    for name in ("model", "naive", "seasonal_naive", "mean", "ridge", "ets"):
        assert metrics[name]["mase_mean"] > 0 and metrics[name]["rmse_median"] > 0

    by = pd.read_csv(proj.path / "reports/metrics_by_series.csv", dtype={"id": str})
    assert len(by) == 12 and by["id"].is_unique
    assert by["n_test"].sum() == metrics["n_test"]
    # the headline is the mean over series of the per-series MASE
    assert abs(by["model_mase"].mean() - metrics["model"]["mase_mean"]) < 1e-3 * \
        metrics["model"]["mase_mean"]

    full = pd.read_csv(proj.path / "data/predictions.csv", dtype={"id": str})
    plot = pd.read_csv(proj.path / "reports/predictions.csv", dtype={"id": str})
    assert len(full) == metrics["n_test"] and set(full["id"]) == set(by["id"])
    median = by["id"].iloc[np.argsort(by["model_mase"].to_numpy())[(12 - 1) // 2]]
    # the committed sample: the median series' windows only (its id in the summary)
    one = full[full["id"] == median].drop(columns="id").reset_index(drop=True)
    pd.testing.assert_frame_equal(plot, one)
    figures = {p.name for p in (proj.path / "reports/figures").glob("*.png")}
    assert {"forecast_best.png", "forecast.png", "forecast_worst.png",
            "overview.png", "attention.png", "horizon.png"} <= figures
    summary = (proj.path / "reports/summary.md").read_text()
    assert "mean MASE is the headline" in summary and f"median series {median}" in summary

    show = proj.run(["dvc", "exp", "show", "--no-pager", "--md"], timeout=120)
    assert "model.mase_mean" in show.stdout, show.stdout

    # the forecast command: every id of the raw panel, two steps each
    fc = tmp_path / "fc.csv"
    res = proj.run(["python", "-m", "attn_forecast.cli", "forecast", "--model", "models/model.pt",
                    "--csv", "data/raw/series.csv", "--steps", "3", "--out", str(fc)],
                   timeout=120)
    assert res.returncode == 0, res.stdout + res.stderr
    got = pd.read_csv(fc, dtype={"id": str})
    assert len(got) == 12 * 3 and got.groupby("id")["step"].apply(list).map(
        lambda s: s == [1, 2, 3]).all()
    raw = pd.read_csv(proj.path / "data/raw/series.csv", dtype={"id": str})
    last_t = raw.groupby("id")["t"].max()
    assert (got[got["step"] == 1].set_index("id")["time"] == last_t + 1).all()


def test_long_csv_panel_with_dates_runs_as_an_experiment(project_factory):
    proj = project_factory("panel_csv", {"train.epochs": 3})
    rows = []
    rs = np.random.default_rng(3)
    # ids a CSV reader might take for something else: "NA" (missing), "001" (the number 1)
    for k, store in enumerate(["north", "NA", "east", "001"]):
        days = pd.date_range("2024-01-01", periods=70 + 10 * k, freq="D")
        level = 50 * (k + 1)
        values = level + 5 * np.sin(2 * np.pi * np.arange(len(days)) / 7) + \
            rs.standard_normal(len(days))
        rows += [{"store": store, "day": d.strftime("%d/%m/%Y"), "sales": f"{v:.3f}"}
                 for d, v in zip(days, values)]
    frame = pd.DataFrame(rows).sample(frac=1.0, random_state=0)   # any row order
    frame.iloc[5, frame.columns.get_loc("sales")] = ""              # one gap, carried forward
    frame.to_csv(proj.path / "data/external/stores.csv", index=False)
    proj.git_commit("stores")
    res = proj.run(["dvc", "exp", "run", "-n", "stores", *_sets({
        "data.kind": "csv", "data.csv_path": "data/external/stores.csv",
        "data.csv_id_column": "store", "data.csv_column": "sales",
        "data.csv_time_column": "day", "data.csv_time_format": "%d/%m/%Y",
        "data.missing": "ffill", "prepare.window": "auto", "evaluate.season": "auto",
        "prepare.time_features": ["dayofweek"],
        "evaluate.baselines": ["naive", "seasonal_naive", "ridge"]})], timeout=300)
    assert res.returncode == 0, res.stdout + res.stderr
    # the weekly season from the training parts, a window of two seasons (at least 16)
    assert "season of the training parts: 7" in res.stdout and "window 16" in res.stdout, \
        res.stdout
    meta = proj.read_json("data/prepared/store.json")
    assert meta["window"] == 16 and meta["time_features"] == ["dayofweek"]
    assert np.load(proj.path / "data/prepared/side.npy").shape[1] == 2    # sin, cos
    raw = pd.read_csv(proj.path / "data/raw/series.csv", dtype={"id": str},
                      keep_default_na=False)
    assert list(raw["id"].drop_duplicates()) == list(frame["store"].drop_duplicates())
    assert raw.groupby("id")["t"].apply(lambda t: t.is_monotonic_increasing).all()
    assert raw["t"].iloc[0] == "2024-01-01"
    by = pd.read_csv(proj.path / "reports/metrics_by_series.csv", dtype={"id": str},
                     keep_default_na=False)
    assert sorted(by["id"]) == ["001", "NA", "east", "north"]
    figures = {p.name for p in (proj.path / "reports/figures").glob("*.png")}
    assert {"forecast_best.png", "forecast.png", "forecast_worst.png"} <= figures
    metrics = proj.read_json("reports/metrics_detail.json")
    assert metrics["n_series"] == 4 and metrics["seasonal_naive"]["mase_mean"] > 0


def test_a_panel_takes_backtests_quantiles_and_conformal_intervals(project_factory):
    """What a single series has, a panel has: folds per series inside each test part, a
    quantile head, intervals calibrated on each series' calibration part, and the
    Diebold-Mariano test pooled over series and per series."""
    proj = project_factory("panel_all", {"train.epochs": 2})
    res = proj.run(["dvc", "exp", "run", *_sets({
        **PANEL, "backtest.folds": 2, "model.quantiles": [0.1, 0.5, 0.9],
        "prepare.cal_frac": 0.1, "evaluate.conformal": "split",
        "evaluate.baselines": ["naive", "seasonal_naive", "ridge"]})], timeout=300)
    out = res.stdout + res.stderr
    assert res.returncode == 0, out
    assert "backtest_train: 2 folds, 2 trained" in out, out
    bt = proj.read_json("reports/backtest.json")
    assert bt["n_folds"] == 2 and len(bt["model"]["mase_mean_folds"]) == 2
    assert 0 <= bt["model"]["coverage_80_mean"] <= 1
    assert set(bt["significance"]) == {"naive", "seasonal_naive", "ridge"}
    detail = proj.read_json("reports/metrics_detail.json")
    assert 0 <= detail["model"]["coverage_80"] <= 1 and "ridge" in detail["significance"]
    by = pd.read_csv(proj.path / "reports/metrics_by_series.csv", dtype={"id": str})
    assert {"naive_dm_p", "ridge_dm_p"} <= set(by.columns)
    assert by["naive_dm_p"].between(0, 1).all()
    assert (proj.path / "reports/figures/backtest.png").is_file()


def test_ddp_on_a_panel_matches_one_process(project_factory):
    """Two ranks each gather every 2nd window of the same batches across series; the loss
    history equals one process's to 1e-6 relative (full batch and mini-batches)."""
    proj = project_factory("panel_ddp", {**PANEL, "train.epochs": 4, "train.device": "cpu",
                                         "train.batch_size": 0}, git=False)
    for cmd in (["python", "stages/generate.py", "--inputs", "data/external",
                 "--out", "data/raw/series.csv"],
                ["python", "stages/prepare.py", "--series", "data/raw/series.csv",
                 "--out", "data/prepared"]):
        proj.run(cmd, check=True)
    n_train = proj.read_json("data/prepared/store.json")["n_windows"]["train"]
    assert n_train % 2 == 1 or n_train % 64, n_train    # uneven shards somewhere below

    def train(name: str, **over) -> SimpleNamespace:
        params = yaml.safe_load((proj.path / "params.yaml").read_text())
        for k, v in over.items():
            set_key(params, k, v)
        (proj.path / f"runs/{name}").mkdir(parents=True)
        (proj.path / f"runs/{name}/params.yaml").write_text(yaml.safe_dump(params))
        res = proj.run(["python", "stages/train.py", "--params", f"runs/{name}/params.yaml",
                        "--prepared", "data/prepared", "--model", f"runs/{name}/model.pt",
                        "--onnx", f"runs/{name}/model.onnx", "--onnx-meta",
                        f"runs/{name}/model.json", "--history", f"runs/{name}/history.csv",
                        "--forecasts",
                        f"runs/{name}/fc.npz", "--attention", f"runs/{name}/att.npz",
                        "--lags", f"runs/{name}/lags.csv"], timeout=240)
        assert res.returncode == 0, res.stdout + res.stderr
        payload = torch.load(proj.path / f"runs/{name}/model.pt", map_location="cpu",
                             weights_only=True)
        return np.array([h["train_loss"] for h in payload["history"]])

    # full batch: the target's 1e-6; mini-batches of 64 take ~25 times the optimizer steps,
    # each summing the gradient in another order in float32, so 1e-5
    for batch, tol in ((0, 1e-6), (64, 1e-5)):
        one = train(f"one_{batch}", **{"train.nproc": 1, "train.batch_size": batch})
        two = train(f"two_{batch}", **{"train.nproc": 2, "train.batch_size": batch})
        assert len(one) == len(two) == 4
        assert (np.abs(two - one) / np.abs(one) < tol).all(), (batch, one, two)


def test_a_panel_of_ohlcv_bars_with_features_runs_as_an_experiment(project_factory, tmp_path):
    """Several tickers' daily bars in one long file: close forecast from OHLCV past
    covariates, each ticker's features scaled on its own training rows."""
    from attn_forecast.data.sources import ohlcv
    proj = project_factory("panel_ohlcv", {"train.epochs": 5})
    frames = []
    for k, ticker in enumerate(["AAA", "BBB", "CCC"]):
        bars = ohlcv(150, k, lead=0.8)
        bars.insert(0, "ticker", ticker)
        frames.append(bars)
    pd.concat(frames).to_csv(proj.path / "data/external/bars.csv", index=False)
    proj.git_commit("bars")
    res = proj.run(["dvc", "exp", "run", "-n", "tickers", *_sets({
        "data.kind": "csv", "data.csv_path": "data/external/bars.csv",
        "data.csv_id_column": "ticker", "data.csv_time_column": "date",
        "data.csv_column": "close", "prepare.transform": "log_return", "prepare.window": 10,
        "data.csv_feature_columns": ["open", "high", "low", "volume"],
        "prepare.feature_transforms": ["log_return", "log_return", "log_return", "log1p"],
        "train.augment_noise": 0.0, "evaluate.baselines": ["naive", "ridge"]})], timeout=300)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "prepare: 3 series" in res.stdout and "features open, high, low, volume" \
        in res.stdout, res.stdout
    meta = proj.read_json("data/prepared/store.json")
    assert meta["features"] == ["open", "high", "low", "volume"]
    metrics = proj.read_json("reports/metrics.json")
    assert metrics["ridge_features"]["mase_mean"] > 0 and metrics["model"]["mase_mean"] > 0
    fc = tmp_path / "fc.csv"
    res = proj.run(["python", "-m", "attn_forecast.cli", "forecast", "--model", "models/model.pt",
                    "--csv", "data/external/bars.csv", "--out", str(fc)], timeout=120)
    assert res.returncode == 0, res.stdout + res.stderr
    got = pd.read_csv(fc)
    H = meta["horizon"]                     # each id's horizon, step by step
    assert got["id"].tolist() == [t for t in ["AAA", "BBB", "CCC"] for _ in range(H)]
    last = pd.concat(frames).groupby("ticker")["close"].last()
    first = got[got["step"] == 1].set_index("id")["forecast"]
    assert ((first / last).between(0.8, 1.2)).all()
