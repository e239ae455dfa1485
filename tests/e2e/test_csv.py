"""End-to-end: a realistic user CSV of daily prices through the real ``dvc repro``, then the
forecast command on the trained model.

The file looks like an export from a broker: business days only (weekends absent) with a few
holidays missing, rows in no particular order, ``date, open, close, volume`` columns and a few
empty ``close`` cells. One copy of the project is shared by the tests of this module (one
``dvc repro`` costs ~15 s on two cores), so they run in file order and build on each other:
repro -> outputs -> forecast -> bad forecast input -> editing the CSV makes generate stale.
"""
from __future__ import annotations

import json
import math
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from conftest import pipeline_stages

CSV_REL = "data/external/prices.csv"   # inside the folder the generate stage depends on
N_BUSINESS_DAYS = 406
GAP_DAYS = (37, 88, 150, 211, 290, 333)  # business days left out: holidays
N_ROWS = N_BUSINESS_DAYS - len(GAP_DAYS)  # 400 rows in the file
EMPTY_AT = (57, 181, 342)                # sorted rows whose close cell is empty (isolated)
WINDOW = 20
PARAMS = {
    "data.kind": "csv", "data.csv_path": CSV_REL, "data.csv_column": "close",
    "data.csv_time_column": "date", "data.missing": "ffill", "data.time_gaps": "allow",
    "prepare.window": WINDOW, "prepare.transform": "log_return", "train.epochs": 3,
}


def _price_frame(seed: int = 7) -> pd.DataFrame:
    """Sorted business-day prices (a seeded geometric random walk) with gaps and empty
    cells; ``close_full`` holds the close before the cells were emptied."""
    rng = np.random.default_rng(seed)
    days = pd.bdate_range("2021-01-04", periods=N_BUSINESS_DAYS)
    days = days.delete(list(GAP_DAYS))
    log_ret = rng.normal(0.0003, 0.012, N_ROWS)
    close = 50.0 * np.exp(np.cumsum(log_ret))
    frame = pd.DataFrame({
        "date": days.strftime("%Y-%m-%d"),
        "open": close * np.exp(rng.normal(0, 0.004, N_ROWS)),
        "close": close,
        "volume": rng.integers(10_000, 500_000, N_ROWS),
    })
    frame["close_full"] = frame["close"]
    return frame


def _write_csv(path: Path, frame: pd.DataFrame, seed: int = 11) -> None:
    """Write the frame in shuffled row order with the EMPTY_AT close cells blank."""
    out = frame.drop(columns="close_full").copy()
    out["open"] = out["open"].map(lambda v: f"{v:.4f}")
    out["close"] = out["close"].map(lambda v: f"{v:.4f}")
    out.loc[list(EMPTY_AT), "close"] = ""
    order = np.random.default_rng(seed).permutation(len(out))
    path.parent.mkdir(parents=True, exist_ok=True)
    out.iloc[order].to_csv(path, index=False, lineterminator="\n")


@pytest.fixture(scope="module")
def csv_built(project_factory):
    """A copy of the project with the user's CSV in data/external/ and the pipeline reproduced
    on it once."""
    proj = project_factory("csv")
    frame = _price_frame()
    _write_csv(proj.path / CSV_REL, frame)
    proj.write_params(PARAMS)
    proj.git_commit("a user's price CSV")
    res = proj.run(["dvc", "repro"], timeout=240)
    return SimpleNamespace(proj=proj, frame=frame, repro=res)


def _ok(built):
    if built.repro.returncode != 0:
        pytest.fail(f"dvc repro failed ({built.repro.returncode}):\n{built.repro.stdout}\n"
                    f"{built.repro.stderr}")
    return built.proj


def _forecast(proj, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return proj.run(["python", "-m", "attn_forecast.cli", "forecast", *args], timeout=timeout)


# ---------------------------------------------------------------- the pipeline on the CSV
def test_repro_on_user_csv_succeeds(csv_built):
    _ok(csv_built)
    out = csv_built.repro.stdout + csv_built.repro.stderr
    for stage in pipeline_stages():
        assert f"Running stage '{stage}'" in out, out


def test_series_is_sorted_with_every_row_and_filled_cells(csv_built):
    proj = _ok(csv_built)
    frame = csv_built.frame
    series = pd.read_csv(proj.path / "data/raw/series.csv", dtype={"t": str})
    assert list(series.columns) == ["id", "t", "value", "signal"]
    assert set(series["id"]) == {"close"}  # one series, named by its column
    # every row kept (none dropped, none invented for the weekends or the holidays)
    assert len(series) == N_ROWS
    assert series["t"].tolist() == frame["date"].tolist()  # sorted by date
    dates = pd.to_datetime(series["t"])
    assert dates.is_monotonic_increasing and dates.is_unique
    assert (dates.dt.day_of_week < 5).all()
    assert series["value"].notna().all() and np.isfinite(series["value"]).all()
    assert series["signal"].isna().all()  # real data has no noise-free signal

    written = frame["close"].map(lambda v: float(f"{v:.4f}")).to_numpy()
    keep = np.setdiff1d(np.arange(N_ROWS), EMPTY_AT)
    np.testing.assert_allclose(series["value"].to_numpy()[keep], written[keep], rtol=1e-9)
    for i in EMPTY_AT:  # the last value before it, in date order: never a later one
        assert series["value"][i] == pytest.approx(written[i - 1], rel=1e-9), i


def test_metrics_are_finite_without_signal(csv_built):
    proj = _ok(csv_built)
    metrics = proj.read_json("reports/metrics_detail.json")
    for name in ("model", "naive", "ridge"):
        assert math.isfinite(metrics[name]["rmse"]), (name, metrics[name])
        assert metrics[name]["rmse"] > 0
        assert metrics[name]["signal_rmse"] is None, name
        assert metrics[name]["noise_floor_ratio"] is None, name
    # in the series' own units: price errors, not log returns (daily moves of ~1 % of ~50)
    assert 0.05 < metrics["naive"]["rmse"] < 10
    assert metrics["n_test"] >= 1


def test_predictions_are_indexed_by_the_test_dates(csv_built):
    proj = _ok(csv_built)
    pred = pd.read_csv(proj.path / "reports/predictions.csv", dtype={"t": str})
    n_test = proj.read_json("reports/metrics.json")["n_test"]
    assert len(pred) == n_test
    t = pd.to_datetime(pred["t"], format="%Y-%m-%d")
    assert t.is_monotonic_increasing and t.is_unique
    # every origin of the test part: the first targets of its H-step windows, the last of
    # which ends the series (business days: the frequency's horizon, 14)
    H = proj.read_json("data/prepared/store.json")["horizon"]
    assert H == 14
    dates = csv_built.frame["date"].tolist()
    assert pred["t"].tolist() == dates[len(dates) - n_test - H + 1:len(dates) - H + 1]
    series = pd.read_csv(proj.path / "data/raw/series.csv", dtype={"t": str})
    v = series["value"].to_numpy()
    np.testing.assert_allclose(pred["actual"], v[len(v) - n_test - H + 1:len(v) - H + 1],
                               rtol=1e-8)
    for col in ("predicted", "naive", "ridge"):
        assert np.isfinite(pred[col]).all() and (pred[col] > 0).all(), col


def test_forecast_figure_is_rendered(csv_built):
    proj = _ok(csv_built)
    png = proj.path / "reports/figures/forecast.png"
    assert png.is_file() and png.stat().st_size > 1000
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


# ---------------------------------------------------------------- the forecast command
def test_forecast_cli_on_the_csv(csv_built):
    proj = _ok(csv_built)
    # column, time column and gap handling come from the checkpoint: the CSV the model was
    # trained on, empty cells and all, needs no flags
    res = _forecast(proj, "--model", "models/model.pt", "--csv", CSV_REL, "--steps", "25",
                    "--out", "fc.csv")
    assert res.returncode == 0, res.stderr
    fc = pd.read_csv(proj.path / "fc.csv")
    # the blend (the defaults for a CSV): every level of evaluate.quantiles but the median
    levels = ["q2.5", "q10", "q20", "q30", "q40", "q60", "q70", "q80", "q90", "q97.5"]
    assert list(fc.columns) == ["step", "time", "forecast"] + levels + ["calibrated"]
    assert fc["step"].tolist() == list(range(1, 26))
    # the 14 steps of the horizon calibrated, the 11 past it not, and the command says so
    assert fc["calibrated"].tolist() == [True] * 14 + [False] * 11
    assert "steps 15 to 25 lie past the 14 the intervals were calibrated for" in res.stderr
    # the next 25 business days after the last date (weekends skipped)
    last = pd.Timestamp(csv_built.frame["date"].iloc[-1])
    assert fc["time"].tolist() == list(pd.bdate_range(last, periods=26)[1:].strftime("%Y-%m-%d"))
    values = fc["forecast"].to_numpy()
    assert np.isfinite(values).all() and (values > 0).all()  # log returns rebuild prices
    # 25 days of a ~1 %/day walk stay within a factor of 3 of the last close
    last = csv_built.frame["close"].iloc[-1]
    assert (values > last / 3).all() and (values < last * 3).all()
    # the real profile's blend: the command names it, and its quantiles surround its forecast
    assert "the blend of the model and baselines" in res.stdout
    assert fc[levels].notna().all().all()                      # every step's quantiles
    assert (fc["q2.5"] <= fc["q10"]).all() and (fc["q10"] <= fc["forecast"]).all() \
        and (fc["forecast"] <= fc["q90"]).all() and (fc["q90"] <= fc["q97.5"]).all()
    alone = _forecast(proj, "--model", "models/model.pt", "--csv", CSV_REL, "--steps", "25",
                      "--blend", "", "--out", "fc-alone.csv")
    assert alone.returncode == 0, alone.stderr
    assert "blend" not in alone.stdout
    model = pd.read_csv(proj.path / "fc-alone.csv")
    assert list(model.columns) == list(fc.columns)
    assert not np.allclose(model["forecast"], values)


def _bad_model_files(proj) -> dict[str, Path]:
    d = proj.path / "not-models"
    d.mkdir(exist_ok=True)
    files = {"text": d / "notes.txt", "json": d / "metrics.json", "empty": d / "empty.pt"}
    files["text"].write_text("hello, this is not a model\n")
    files["json"].write_text(json.dumps({"model": {"rmse": 1.0}}) + "\n")
    files["empty"].write_bytes(b"")
    return files


BAD_FORECAST = [
    pytest.param("missing-csv", ["--csv", "data/external/nope.csv"], "nope.csv", id="missing-csv"),
    pytest.param("unknown-column", ["--column", "price"], "'price'", id="unknown-column"),
    pytest.param("steps-0", ["--steps", "0"], "--steps", id="steps-0"),
    pytest.param("model-text", ["--model", "text"], "notes.txt", id="model-text"),
    pytest.param("model-json", ["--model", "json"], "metrics.json", id="model-json"),
    pytest.param("model-empty", ["--model", "empty"], "empty.pt", id="model-empty"),
]


@pytest.fixture(scope="module")
def bad_forecasts(csv_built):
    """Each bad-input forecast run once, two at a time; each writes to its own --out."""
    proj = _ok(csv_built)
    models = _bad_model_files(proj)

    def run(case_id: str, change: list[str]):
        args = {"--model": "models/model.pt", "--csv": CSV_REL, "--column": "close",
                "--time-column": "date", "--missing": "ffill", "--steps": "5",
                "--out": f"bad-{case_id}.csv"}
        key, value = change
        args[key] = str(models[value]) if key == "--model" else value
        return _forecast(proj, *[x for kv in args.items() for x in kv])

    with ThreadPoolExecutor(max_workers=2) as pool:
        futures = {p.values[0]: pool.submit(run, p.values[0], p.values[1])
                   for p in BAD_FORECAST}
        return {cid: f.result() for cid, f in futures.items()}


@pytest.mark.parametrize("case_id, change, names", BAD_FORECAST)
def test_forecast_bad_input_fails_with_one_line(case_id, change, names, bad_forecasts,
                                                csv_built):
    proj = csv_built.proj
    res = bad_forecasts[case_id]
    detail = f"exit {res.returncode}\n--- stdout\n{res.stdout}\n--- stderr\n{res.stderr}"
    assert res.returncode != 0, detail
    assert "Traceback" not in res.stderr, detail
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), detail
    assert names in lines[0], detail
    assert not (proj.path / f"bad-{case_id}.csv").exists()
    assert not list(proj.path.glob(".bad-*.tmp"))


# ---------------------------------------------------------------- the CSV is a dependency
def test_editing_the_csv_makes_generate_stale(csv_built):
    proj = _ok(csv_built)
    status = proj.run(["dvc", "status", "--json"], check=True)
    assert json.loads(status.stdout) == {}, status.stdout  # up to date after the repro
    csv = proj.path / CSV_REL
    before = csv.read_bytes()
    try:
        with open(csv, "a") as fh:  # the next business day's row
            fh.write("2022-08-08,60.1000,60.2000,123456\n")
        status = proj.run(["dvc", "status", "--json"], check=True)
        changed = json.loads(status.stdout)
        assert "generate" in changed, status.stdout
        assert "data/external" in json.dumps(changed["generate"]), changed["generate"]
    finally:
        csv.write_bytes(before)
    status = proj.run(["dvc", "status", "--json"], check=True)
    assert json.loads(status.stdout) == {}, status.stdout
