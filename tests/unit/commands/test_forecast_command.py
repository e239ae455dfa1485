"""Unit tests for the forecast command (attn_forecast.commands.forecast.main) on panels and
one series."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch

from attn_forecast.model import checkpoint
from attn_forecast.data.store import Store
from attn_forecast.errors import UserInputError
from attn_forecast.commands.forecast import forecast_series, main
from attn_forecast.model.networks import build_model
from attn_forecast.model.settings import ModelSettings
from attn_forecast.config.schema import DataParams
from attn_forecast.data.sources import ohlcv
from attn_forecast.forecasters.neural import ModelForecaster
from attn_forecast.pipeline.generate import source_record
from unit.commands.helpers import H, NAMES, _bars_store, _build, _scaler, _tiny

pytestmark = pytest.mark.usefixtures("one_torch_thread")

PANEL_SOURCE = source_record(DataParams(kind="panel"))   # id, t, value: the generate table


def _save(path, store: Store, model):
    """The train stage's checkpoint of ``model`` on ``store``."""
    checkpoint.save(path, model, {"prepare": store.meta(), "best_epoch": 0, "history": []})
    return path


def _run(*args: str) -> None:
    main([str(a) for a in args])


# ---------------------------------------------------------------- the command on a panel
@pytest.fixture(scope="module", params=("none", "diff", "log_return"))
def panel(request, tmp_path_factory, one_torch_thread):
    """A tiny untrained model over a small panel (each transform), and its checkpoint."""
    rs = np.random.default_rng(4)
    series = [100 * np.exp(np.cumsum(rs.normal(0, 0.02, n))) for n in (40, 55, 47)]
    store = _build(series, ["north", "south", "east"], window=8, transform=request.param,
                   val=0.1, source=PANEL_SOURCE)
    torch.manual_seed(0)
    model = build_model(ModelSettings(window=8, horizon=H, d_model=8, ffn_dim=8)).eval()
    path = tmp_path_factory.mktemp("model") / "model.pt"
    checkpoint.save(path, model, {"prepare": store.meta(), "best_epoch": 0, "history": []})
    return store, model, path


def _long(store: Store, stops: dict | None = None) -> pd.DataFrame:
    """The store's series as a long table (id, t, value), each id up to its row in ``stops``
    (global rows; default: all)."""
    frames = []
    for i, sid in enumerate(store.ids):
        a, b = int(store.offsets[i]), int(store.offsets[i + 1])
        b = (stops or {}).get(str(sid), b)
        frames.append(pd.DataFrame({"id": str(sid), "t": np.asarray(store.t[a:b]).astype(int),
                                    "value": store.y[a:b]}))
    return pd.concat(frames, ignore_index=True)


def test_the_forecast_command_forecasts_a_test_window_as_the_evaluation_does(panel, tmp_path):
    store, model, path = panel
    ends = store.ends("test")
    sid = store.series_of(ends)
    want = ModelForecaster(model).forecast(store, ends).point   # what evaluate scores
    meta = checkpoint.read(path)["prepare"]
    for k, e in enumerate(ends):                 # the library call, window by window
        i = int(sid[k])
        a = int(store.offsets[i])
        got, _ = forecast_series(model, meta, store.y[a:e], H, _scaler(store, i),
                                 np.asarray(store.t[a:e]))
        # the same window alone through the model: the same inputs, so the same forecast
        alone = ModelForecaster(model).forecast(store, np.array([e])).point[0]
        np.testing.assert_allclose(got, alone, rtol=1e-12)
        # a batch of every test window may round a float32 unit apart from a batch of one
        np.testing.assert_allclose(got, want[k], rtol=1e-6)
    for pick in (0, -1):                         # the command: each id's first, last window
        chosen = {str(store.ids[i]): int(ends[sid == i][pick]) for i in range(3)}
        csv, out = tmp_path / f"rows{pick}.csv", tmp_path / f"fc{pick}.csv"
        _long(store, chosen).to_csv(csv, index=False)
        _run("--model", path, "--csv", csv, "--steps", H, "--out", out)
        got = pd.read_csv(out, dtype={"id": str})
        assert got["id"].tolist() == [n for n in ("north", "south", "east") for _ in range(H)]
        rows = np.array([np.flatnonzero(ends == chosen[n])[0] for n in chosen])
        np.testing.assert_allclose(got["forecast"].to_numpy().reshape(3, H), want[rows],
                                   rtol=1e-6)


def test_the_forecast_command_writes_each_id_scaled_as_training_did(panel, tmp_path, capsys):
    store, model, path = panel
    meta = checkpoint.read(path)["prepare"]
    rs = np.random.default_rng(1)
    unseen = 50 * np.exp(np.cumsum(rs.normal(0, 0.05, 30)))
    raw = pd.concat([_long(store), pd.DataFrame({"id": "new", "t": np.arange(30),
                                                 "value": unseen})], ignore_index=True)
    shuffled = raw.sample(frac=1.0, random_state=3)
    csv = tmp_path / "rows.csv"
    shuffled.to_csv(csv, index=False)                        # any row order
    out = tmp_path / "forecast.csv"
    steps = 5                                                # past the horizon: recursive
    _run("--model", path, "--csv", csv, "--steps", steps, "--out", out)
    assert "after each of 4 ids (1 id(s) not in training, scaled by their own history)" \
        in capsys.readouterr().out
    got = pd.read_csv(out, dtype={"id": str})
    assert list(got.columns) == ["id", "step", "time", "forecast"]
    order = shuffled["id"].drop_duplicates().tolist()        # ids in order of first sight
    assert got["id"].tolist() == [n for n in order for _ in range(steps)]
    assert got["step"].tolist() == list(range(1, steps + 1)) * 4
    for name in order:
        rows = got[got["id"] == name]
        y = raw.loc[raw["id"] == name, "value"].to_numpy()
        if name in store.ids:
            scaler = _scaler(store, int(np.flatnonzero(store.ids == name)[0]))
        else:   # an id the training never saw: scaled by its whole history
            r = {"none": y, "diff": np.diff(y),
                 "log_return": np.diff(np.log(y))}[store.transform]
            scaler = (float(np.mean(r)), float(np.std(r)))
        want, _ = forecast_series(model, meta, y, steps, scaler,
                                  np.arange(len(y), dtype=np.float64))
        np.testing.assert_allclose(rows["forecast"], want, rtol=1e-9)
        np.testing.assert_array_equal(rows["time"], len(y) + np.arange(steps))


def test_an_id_too_short_to_forecast_is_left_out_and_named(panel, tmp_path, capsys):
    store, _, path = panel
    a, b = int(store.offsets[0]), int(store.offsets[1])
    raw = pd.concat([pd.DataFrame({"id": "long", "t": np.arange(b - a),
                                   "value": store.y[a:b]}),
                     pd.DataFrame({"id": "short", "t": np.arange(3), "value": [1.0, 2.0, 3.0]})])
    csv = tmp_path / "rows.csv"
    raw.to_csv(csv, index=False)
    out = tmp_path / "forecast.csv"
    _run("--model", path, "--csv", csv, "--out", out)
    err = capsys.readouterr().err
    assert "1 id(s) left out, the first: id 'short': the series has 3 values" in err, err
    assert pd.read_csv(out)["id"].tolist() == ["long"] * store.horizon   # its horizon's steps
    # when no id can be forecast, nothing is written and the first is named
    only = tmp_path / "short.csv"
    pd.DataFrame({"id": ["tiny"] * 3 + ["tiny2"] * 3, "t": [0, 1, 2] * 2,
                  "value": np.arange(1.0, 7.0)}).to_csv(only, index=False)
    with pytest.raises(UserInputError, match="no id could be forecast; the first: id 'tiny'"):
        _run("--model", path, "--csv", only, "--out", tmp_path / "none.csv")
    assert not (tmp_path / "none.csv").exists()


def test_an_unseen_id_it_cannot_transform_is_named(tmp_path, capsys):
    rs = np.random.default_rng(4)
    series = [100 * np.exp(np.cumsum(rs.normal(0, 0.02, n))) for n in (40, 55)]
    store = _build(series, ["north", "south"], window=8, transform="log_return",
                   source=PANEL_SOURCE)
    path = _save(tmp_path / "lr.pt", store, _tiny(window=8))
    bad = np.r_[np.linspace(50, 60, 30), -1.0, np.linspace(50, 60, 9)]
    rows = pd.concat([_long(store), pd.DataFrame({"id": "newid", "t": np.arange(40),
                                                  "value": bad})])
    csv = tmp_path / "rows.csv"
    rows.to_csv(csv, index=False)
    _run("--model", path, "--csv", csv, "--out", tmp_path / "out.csv")
    err = capsys.readouterr().err
    assert "left out, the first: id 'newid': the model's transform log_return needs " \
           "positive values" in err, err
    alone = tmp_path / "alone.csv"
    rows[rows["id"] == "newid"].to_csv(alone, index=False)
    with pytest.raises(UserInputError, match="log_return needs positive values"):
        _run("--model", path, "--csv", alone, "--out", tmp_path / "no.csv")


def test_ids_that_read_as_missing_or_as_numbers_stay_text(tmp_path, capsys):
    rs = np.random.default_rng(6)
    series = [k * 10 + np.cumsum(rs.normal(0, 1, 45)) for k in (1, 5, 20)]
    store = _build(series, ["north", "NA", "001"], window=8, source=PANEL_SOURCE)
    model = _tiny(window=8)
    path = _save(tmp_path / "ids.pt", store, model)
    csv, out = tmp_path / "rows.csv", tmp_path / "fc.csv"
    _long(store).to_csv(csv, index=False)
    _run("--model", path, "--csv", csv, "--steps", 1, "--out", out)
    assert "not in training" not in capsys.readouterr().out      # all three known
    with open(out) as fh:
        assert [ln.split(",")[0] for ln in fh.read().splitlines()[1:]] == ["north", "NA", "001"]
    got = pd.read_csv(out, dtype={"id": str}, keep_default_na=False)
    meta = checkpoint.read(path)["prepare"]
    for i, name in enumerate(["north", "NA", "001"]):
        want, _ = forecast_series(model, meta, series[i], 1, _scaler(store, i),
                                  np.arange(45.0))
        np.testing.assert_allclose(got.loc[got["id"] == name, "forecast"], want, rtol=1e-9)


# ---------------------------------------------------------------- the command on one series
def test_one_series_without_an_id_column(tmp_path, capsys):
    rs = np.random.default_rng(2)
    y = 5 + np.sin(np.arange(70) / 3.0) + rs.normal(0, 0.1, 70)
    source = source_record(DataParams(kind="csv", csv_column="price"))
    store = _build([y], ["price"], source=source, val=0.1)
    model = _tiny()
    path = _save(tmp_path / "one.pt", store, model)
    csv, out = tmp_path / "prices.csv", tmp_path / "fc.csv"
    pd.DataFrame({"price": y}).to_csv(csv, index=False)
    _run("--model", path, "--csv", csv, "--steps", 3, "--out", out)
    assert "forecast: 3 steps after 70 values -> " in capsys.readouterr().out
    got = pd.read_csv(out)
    assert list(got.columns) == ["step", "time", "forecast"]
    assert got["step"].tolist() == [1, 2, 3] and got["time"].tolist() == [70, 71, 72]
    want, _ = forecast_series(model, checkpoint.read(path)["prepare"], y, 3,
                              _scaler(store), np.arange(70.0))
    np.testing.assert_allclose(got["forecast"], want, rtol=1e-9)
    # the training scaler, not one fitted on the history given now
    train = y[:int(store.cuts.val_start[0])]
    assert _scaler(store) == pytest.approx((train.mean(), train.std()), rel=1e-12)


def test_the_generate_stages_table_forecasts_as_the_users_own_file(tmp_path, capsys):
    """The README's `--csv data/raw/series.csv` with a model a CSV run trained: the file is
    the generate stage's table (id, t, value, signal), not the user's columns (date, demand),
    and it is read as that table: the same forecast as the user's file gives."""
    from attn_forecast.data.csv import read_table
    from attn_forecast.data.long_table import write_long
    y = 50 + 10 * np.sin(np.arange(70) / 3.0) + np.random.default_rng(4).normal(0, 1, 70)
    days = pd.date_range("2024-01-01", periods=70, freq="D")
    source = source_record(DataParams(kind="csv", csv_column="demand",
                                      csv_time_column="date"))
    store = _build([y], ["demand"], t=days.to_numpy("datetime64[s]"), source=source, val=0.1)
    path = _save(tmp_path / "one.pt", store, _tiny())
    mine, long = tmp_path / "mine.csv", tmp_path / "series.csv"
    pd.DataFrame({"date": days.strftime("%Y-%m-%d"), "demand": y}).to_csv(mine, index=False)
    write_long(long, [read_table(mine, "demand", time_column="date", default_id="demand")])
    for csv, out in ((mine, "a.csv"), (long, "b.csv")):
        _run("--model", path, "--csv", csv, "--out", tmp_path / out)
        assert f"forecast: {H} steps after 70 values" in capsys.readouterr().out
    a, b = (pd.read_csv(tmp_path / f) for f in ("a.csv", "b.csv"))
    pd.testing.assert_frame_equal(a, b)
    assert a["time"].iloc[0] == "2024-03-11" and "id" not in a

def test_another_series_than_the_trained_one_is_refused_unless_allowed(tmp_path, capsys):
    """A file far from the series the model was trained on is one line and nothing written;
    --allow-far forecasts it with the warning."""
    rs = np.random.default_rng(2)
    y = 5 + np.sin(np.arange(70) / 3.0) + rs.normal(0, 0.1, 70)
    source = source_record(DataParams(kind="csv", csv_column="price"))
    path = _save(tmp_path / "one.pt", _build([y], ["price"], source=source), _tiny())
    csv = tmp_path / "prices.csv"
    pd.DataFrame({"price": y}).to_csv(csv, index=False)
    _run("--model", path, "--csv", csv, "--steps", 1, "--out", tmp_path / "a.csv")
    first = capsys.readouterr()
    assert "warning" not in first.err and "forecast: 1 step after 70 values" in first.out
    pd.DataFrame({"price": 200 + 10 * y}).to_csv(csv, index=False)   # another series
    with pytest.raises(UserInputError, match=r"the last window lies .* not its series, it "
                                             r"seems .*--allow-far forecasts it anyway"):
        main(["--model", str(path), "--csv", str(csv), "--out", str(tmp_path / "b.csv")])
    assert not (tmp_path / "b.csv").exists()
    _run("--model", path, "--csv", csv, "--steps", 1, "--out", tmp_path / "b.csv",
         "--allow-far")
    err = capsys.readouterr().err
    assert "forecast: warning: the last window lies" in err and "'price'" in err
    assert "is this its series?" in err and len(err.strip().splitlines()) == 1


def test_gaps_in_the_time_column_are_refused_as_in_training_unless_allowed(tmp_path, capsys):
    y = 5 + np.sin(np.arange(70) / 3.0)
    days = pd.date_range("2024-01-01", periods=71, freq="D").strftime("%Y-%m-%d")
    source = source_record(DataParams(kind="csv", csv_column="v", csv_time_column="day"))
    path = _save(tmp_path / "one.pt", _build([y], ["v"], source=source), _tiny())
    csv = tmp_path / "gap.csv"
    pd.DataFrame({"day": np.delete(days, 40), "v": y}).to_csv(csv, index=False)
    with pytest.raises(UserInputError, match=r"after 2024-02-09 comes 2024-02-11 \(1 step\(s\) "
                                             r"of one day missing\); fill the rows, or set "
                                             r"--time-gaps to allow"):
        main(["--model", str(path), "--csv", str(csv), "--out", str(tmp_path / "f.csv")])
    _run("--model", path, "--csv", csv, "--time-gaps", "allow", "--out", tmp_path / "f.csv")
    assert "forecast: 2 steps after 70 values" in capsys.readouterr().out   # the horizon


def test_a_quantile_head_writes_its_levels_for_every_step(tmp_path, capsys):
    """Without an intervals file: the head's own quantiles for its horizon (2 steps), and
    past it step 2's spread grown by sqrt(k / 2) around the recursive forecast."""
    rs = np.random.default_rng(2)
    y = 5 + np.cumsum(rs.normal(0, 0.3, 60))
    store = _build([y], ["sine"], source=PANEL_SOURCE | {"id_column": ""})
    model = _tiny(quantiles=(0.1, 0.5, 0.9))
    path = _save(tmp_path / "q.pt", store, model)
    csv, out = tmp_path / "rows.csv", tmp_path / "fc.csv"
    pd.DataFrame({"t": np.arange(60), "value": y}).to_csv(csv, index=False)
    _run("--model", path, "--csv", csv, "--steps", 4, "--out", out)
    said = capsys.readouterr()
    assert "quantiles q10, q90 of every step: the quantile head's own" in said.out
    assert ("steps 3 to 4 lie past the 2 the intervals were calibrated for: their quantiles "
            "are step 2's spread grown as sqrt(step / 2), not calibrated") in said.err
    got = pd.read_csv(out)
    assert list(got.columns) == ["step", "time", "forecast", "q10", "q90", "calibrated"]
    assert not got["calibrated"].any()          # the head's own: nothing calibrated them
    assert (got["q10"] < got["forecast"]).all() and (got["forecast"] < got["q90"]).all()
    _, quant = forecast_series(model, checkpoint.read(path)["prepare"], y, 4,
                               _scaler(store), np.arange(60.0))
    np.testing.assert_allclose(got[["q10", "forecast", "q90"]][:2].to_numpy(), quant[:2],
                               rtol=1e-9)
    spread = (got["q90"] - got["forecast"]).to_numpy()
    np.testing.assert_allclose(spread[2:], spread[1] * np.sqrt([3 / 2, 4 / 2]), rtol=1e-9)


def test_the_command_on_a_panel_with_past_covariates(tmp_path):
    ids = ("north", "south")
    source = source_record(DataParams(kind="csv", csv_column="close", csv_time_column="date",
                                      csv_id_column="ticker",
                                      csv_feature_columns=list(NAMES)))
    frames, _, store = _bars_store(ids=ids, source=source)
    model = _tiny(window=12, n_features=4)
    path = _save(tmp_path / "bars.pt", store, model)
    ends = store.ends("test")
    sid = store.series_of(ends)
    want = ModelForecaster(model).forecast(store, ends).point
    pick = [int(np.flatnonzero(sid == i)[3]) for i in range(2)]     # a test window of each
    rows = []
    for i, f in enumerate(frames):
        stop = int(ends[pick[i]] - store.offsets[i])
        rows.append(f.iloc[:stop].assign(ticker=ids[i]))
    west = ohlcv(90, 9, lead=0.8)                     # an id the training never saw
    rows.append(west.assign(ticker="west"))
    csv, out = tmp_path / "bars.csv", tmp_path / "fc.csv"
    pd.concat(rows).to_csv(csv, index=False)
    _run("--model", path, "--csv", csv, "--steps", 2, "--out", out)
    got = pd.read_csv(out)
    assert got["id"].tolist() == ["north", "north", "south", "south", "west", "west"]
    np.testing.assert_allclose(got["forecast"].to_numpy()[:4].reshape(2, 2), want[pick],
                               rtol=1e-6)
    # the unseen id: its value and every feature column scaled by its own history
    close = west["close"].to_numpy()
    r = np.diff(np.log(close))
    cols = [np.diff(np.log(west[n].to_numpy())) for n in NAMES[:3]] \
        + [np.log1p(west["volume"].to_numpy())]
    fs = (np.array([c.mean() for c in cols]), np.array([c.std() for c in cols]))
    mine, _ = forecast_series(model, store.meta(), close, 2, (r.mean(), r.std()),
                              pd.to_datetime(west["date"]).to_numpy(),
                              west[list(NAMES)].to_numpy(), fs)
    np.testing.assert_allclose(got["forecast"].to_numpy()[4:], mine, rtol=1e-9)
    with pytest.raises(UserInputError, match="--steps must be <= 2"):
        _run("--model", path, "--csv", csv, "--steps", 3, "--out", tmp_path / "no.csv")
    assert not (tmp_path / "no.csv").exists()
    pd.concat(rows).drop(columns="volume").to_csv(csv, index=False)
    with pytest.raises(UserInputError, match=r"the model's feature columns: column 'volume' "
                                             r"not in"):
        _run("--model", path, "--csv", csv, "--out", tmp_path / "no.csv")


def test_bad_arguments_are_one_line(tmp_path):
    csv = tmp_path / "rows.csv"
    pd.DataFrame({"value": np.arange(30.0)}).to_csv(csv, index=False)
    with pytest.raises(UserInputError, match=r"--steps must be an integer from 1 to 10,000, "
                                             r"got 0"):
        _run("--model", tmp_path / "m.pt", "--csv", csv, "--steps", 0)
    with pytest.raises(UserInputError, match=r"--steps must be an integer from 1 to 10,000, "
                                             r"got 1000000"):
        _run("--model", tmp_path / "m.pt", "--csv", csv, "--steps", 1_000_000)
    with pytest.raises(UserInputError, match=r"^--model: file not found"):
        _run("--model", tmp_path / "m.pt", "--csv", csv)
    store = _build([np.arange(30.0)], ["value"], source=source_record(DataParams(kind="csv")))
    path = _save(tmp_path / "bad.pt", store, _tiny())
    with pytest.raises(UserInputError, match=r"^--column: column 'price' not in"):
        _run("--model", path, "--csv", csv, "--column", "price")
    with pytest.raises(UserInputError, match=r"^--csv: file not found"):
        _run("--model", path, "--csv", tmp_path / "none.csv")
