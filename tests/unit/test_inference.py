"""Unit tests for attn_forecast.inference: ``forecast_series`` (one series' future, recursive
past the horizon, each transform, calendar inputs and past covariates fed as in training),
``next_times``, and the forecast command (``main``) on one series and on a panel: a test
window forecast exactly as the evaluation does (the train stage's ModelForecaster), each id
scaled as in training, an unseen id by its own history, an id too short left out and named,
ids such as "NA" and "001", quantile columns, and the errors."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch

from attn_forecast.model import checkpoint
from attn_forecast.data.build import build
from attn_forecast.data.store import Store
from attn_forecast.errors import UserInputError
from attn_forecast.data.frequency import next_times
from attn_forecast.inference import forecast_series, main
from attn_forecast.outlook import blended_future, read_blend
from attn_forecast.model.networks import build_model
from attn_forecast.model.settings import ModelSettings
from attn_forecast.config.schema import DataParams, TrainParams
from attn_forecast.data.sources import ohlcv, sine
from attn_forecast.data.long_table import Raw
from attn_forecast.forecasters.neural import ModelForecaster
from attn_forecast.training.loop import fit_windows
from attn_forecast.pipeline.data import source_record

pytestmark = pytest.mark.usefixtures("one_torch_thread")

W, H = 10, 2
PANEL_SOURCE = source_record(DataParams(kind="panel"))   # id, t, value: the generate table


def _build(series, ids, *, t=None, window=W, horizon=H, transform="none", test=0.2, val=0.0,
           source=None, time_features=(), features=None, names=(), kinds=()) -> Store:
    offsets = np.r_[0, np.cumsum([len(s) for s in series])].astype(np.int64)
    levels = np.concatenate(series).astype(np.float64)
    if t is None:
        t = np.concatenate([np.arange(len(s), dtype=np.float64) for s in series])
    raw = Raw(np.array(ids), offsets, t, levels, np.full(len(levels), np.nan), features,
              tuple(names))
    return build(raw, window=window, horizon=horizon,
                   fracs={"test": test, "val": val, "cal": 0.0}, scaler="zscore",
                   transform=transform, time_features=tuple(time_features),
                   feature_transforms=tuple(kinds), source=source or {})


def _scaler(store: Store, i: int = 0) -> tuple[float, float]:
    return float(store.scalers.center[i]), float(store.scalers.scale[i])


def _save(path, store: Store, model):
    """The train stage's checkpoint of ``model`` on ``store``."""
    checkpoint.save(path, model, {"prepare": store.meta(), "best_epoch": 0, "history": []})
    return path


def _tiny(seed=0, **kw):
    torch.manual_seed(seed)
    return build_model(ModelSettings(**{"window": W, "horizon": H, "d_model": 8, "ffn_dim": 8,
                                        **kw})).eval()


def _run(*args: str) -> None:
    main([str(a) for a in args])


# ---------------------------------------------------------------- one trained series
@pytest.fixture(scope="module")
def trained(one_torch_thread):
    """A small model trained on the source's noisy sine (window 10, horizon 2)."""
    df = sine(300, 0.05, 42)
    store = _build([df["value"].to_numpy()], ["sine"])
    torch.manual_seed(0)
    model = build_model(ModelSettings(window=W, horizon=H, d_model=16, ffn_dim=32,
                                      pooling="last"))
    fit_windows(model, torch.from_numpy(np.asarray(store.z)),
                torch.from_numpy(store.ends("train")), torch.zeros(0, dtype=torch.int64),
                TrainParams(epochs=150, lr=0.01, augment_noise=0.0), progress=False)
    return model.eval(), store.meta(), store


def _fs(model, meta, store, levels, steps):
    return forecast_series(model, meta, levels, steps, _scaler(store),
                           np.arange(len(levels), dtype=np.float64))


def test_returns_steps_values(trained):
    model, meta, store = trained
    for steps in (1, 2, 5):
        out, quant = _fs(model, meta, store, store.levels, steps)
        assert out.shape == (steps,) and np.isfinite(out).all() and quant is None


def test_first_chunk_is_the_models_prediction_on_the_last_window(trained):
    model, meta, store = trained
    out, _ = _fs(model, meta, store, store.levels, H)
    # the last W levels, scaled by the training part's mean and std, through the model
    train = store.levels[:int(store.cuts.val_start[0])]
    x = torch.tensor((store.levels[-W:] - train.mean()) / train.std(), dtype=torch.float32)
    with torch.no_grad():
        z_pred = model(x[None])[0].double().numpy()[0]
    np.testing.assert_allclose(out, z_pred * train.std() + train.mean(), rtol=1e-5, atol=1e-6)


def test_recursive_past_the_horizon(trained):
    model, meta, store = trained
    levels = store.levels
    out, _ = _fs(model, meta, store, levels, 5)
    # the first H values do not depend on how far we forecast
    np.testing.assert_allclose(out[:H], _fs(model, meta, store, levels, H)[0], rtol=0,
                               atol=1e-12)
    # the next chunk is a forecast from the series extended by the first chunk's predictions
    ext = np.concatenate([levels, out[:H]])
    np.testing.assert_allclose(out[H:2 * H], _fs(model, meta, store, ext, H)[0], atol=1e-9)
    ext2 = np.concatenate([ext, out[H:2 * H]])
    np.testing.assert_allclose(out[2 * H:], _fs(model, meta, store, ext2, 1)[0], atol=1e-9)


def test_trained_model_forecasts_the_sine(trained):
    """Only a trained model passes: from 56 origins in the held-out last fifth, 4 steps ahead
    each, it must be far closer to the noise-free sine than repeating the last value (the
    naive forecast), an all-zero forecast or an untrained model."""
    model, meta, store = trained
    levels = store.levels
    n = len(levels)
    signal = np.sin(np.linspace(0, 4 * np.pi, n))
    origins = np.arange(240, n - 3)
    truth = np.array([signal[e:e + 4] for e in origins])

    def rmse(m):
        out = np.array([_fs(m, meta, store, levels[:e], 4)[0] for e in origins])
        return float(np.sqrt(np.mean((out - truth) ** 2)))
    naive = np.repeat(levels[origins - 1][:, None], 4, axis=1)
    got = rmse(model)
    assert got < 0.7 * float(np.sqrt(np.mean((naive - truth) ** 2)))
    assert got < 0.7 * float(np.sqrt(np.mean(truth ** 2)))
    assert got < 0.3 * rmse(_tiny(seed=5, d_model=16, ffn_dim=32))
    # the last forecast continues the sine past the end of the series
    x_next = 4 * np.pi * np.arange(n, n + 4) / (n - 1)
    assert np.abs(_fs(model, meta, store, levels, 4)[0] - np.sin(x_next)).max() < 0.2


@pytest.mark.parametrize("kind", ["diff", "log_return"])
def test_transforms_rebuild_levels(kind):
    model = _tiny(seed=1, window=4, horizon=1)
    meta = {"window": 4, "horizon": 1, "transform": kind, "time_features": [], "features": []}
    levels = np.array([10.0, 10.5, 10.2, 11.0, 11.3, 11.1])
    times = np.arange(6.0)
    out, _ = forecast_series(model, meta, levels, 3, (0.01, 0.5), times)
    # step 1 from the model on the last 4 (scaled) changes, applied to the last level
    r = np.diff(levels) if kind == "diff" else np.diff(np.log(levels))
    x = torch.tensor((r[-4:] - 0.01) / 0.5, dtype=torch.float32)[None, :]
    with torch.no_grad():
        step = model(x)[0].double().item() * 0.5 + 0.01
    first = levels[-1] + step if kind == "diff" else levels[-1] * np.exp(step)
    assert out[0] == pytest.approx(first, rel=1e-6)
    again, _ = forecast_series(model, meta, np.append(levels, out[0]), 1, (0.01, 0.5),
                               np.arange(7.0))
    assert out[1] == pytest.approx(again[0], rel=1e-9)
    # the transform needs window + 1 values
    forecast_series(model, meta, levels[-5:], 1, (0.01, 0.5), times[-5:])
    with pytest.raises(UserInputError, match=r"at least 5 \(window 4 \+ 1 for the " + kind):
        forecast_series(model, meta, levels[-4:], 1, (0.01, 0.5), times[-4:])


def test_too_short_series_raises(trained):
    model, meta, store = trained
    with pytest.raises(UserInputError, match=f"the series has {W - 1} values; this model needs "
                                             f"at least {W} "):
        _fs(model, meta, store, store.levels[:W - 1], 3)
    assert _fs(model, meta, store, store.levels[:W], 1)[0].shape == (1,)


# ---------------------------------------------------------------- time stamps of the forecast
def test_next_times_continue_numbers_by_the_usual_step():
    assert next_times(np.array([0.0, 1.0, 2.0, 3.0]), 3).tolist() == [4.0, 5.0, 6.0]
    assert next_times(np.array([10, 20, 30, 50, 60]), 2).tolist() == [70, 80]
    assert next_times(np.array([7.0]), 2).tolist() == [8.0, 9.0]


@pytest.mark.parametrize("stamps, expected", [
    (["2024-01-29", "2024-01-30", "2024-01-31"], ["2024-02-01", "2024-02-02"]),
    (["2024-01-31", "2024-02-29", "2024-03-31", "2024-04-30"], ["2024-05-31", "2024-06-30"]),
    # business days with a holiday (Jan 1) left out continue as business days
    (["2023-12-28", "2023-12-29", "2024-01-02", "2024-01-03", "2024-01-04", "2024-01-05"],
     ["2024-01-08", "2024-01-09"]),
    (["2024-03-01T22:00:00", "2024-03-01T23:00:00", "2024-03-02T00:00:00"],
     ["2024-03-02T01:00:00", "2024-03-02T02:00:00"]),
])
def test_next_times_continue_dates_at_their_frequency(stamps, expected):
    assert next_times(np.array(stamps, dtype=object), 2).tolist() == expected
    assert next_times(np.array(stamps, dtype="datetime64[s]"), 2).tolist() == expected


# ---------------------------------------------------------------- fed as in training
def test_calendar_inputs_are_fed_as_in_training():
    rs = np.random.default_rng(3)
    t = pd.date_range("2024-03-01", periods=120, freq="h").to_numpy("datetime64[s]")
    store = _build([10 + np.sin(np.arange(120) / 4.0) + rs.normal(0, 0.1, 120)], ["x"], t=t,
                   time_features=("hour", "dayofweek"))
    model = _tiny(n_time_features=4)
    ends = store.ends("test")
    want = ModelForecaster(model).forecast(store, ends).point
    meta = store.meta()
    for k, e in enumerate(ends):
        got, _ = forecast_series(model, meta, store.levels[:e], H, _scaler(store), t[:e])
        np.testing.assert_allclose(got, want[k], rtol=1e-6)
    # and the calendar matters: other times, another forecast
    shifted, _ = forecast_series(model, meta, store.levels[:ends[0]], H, _scaler(store),
                                 t[:ends[0]] + np.timedelta64(5, "h"))
    assert not np.allclose(shifted, want[0])


NAMES = ("open", "high", "low", "volume")
KINDS = ("log_return", "log_return", "log_return", "log1p")


def _bars_store(n=160, horizon=2, ids=("bars",), source=None):
    frames = [ohlcv(n + 15 * k, k, lead=0.8) for k in range(len(ids))]
    t = np.concatenate([pd.to_datetime(f["date"]).to_numpy("datetime64[s]") for f in frames])
    feats = np.concatenate([f[list(NAMES)].to_numpy() for f in frames])
    store = _build([f["close"].to_numpy() for f in frames], list(ids), t=t, window=12,
                   horizon=horizon, transform="log_return", features=feats, names=NAMES,
                   kinds=KINDS, source=source)
    return frames, feats, store


def test_past_covariates_are_fed_as_in_training():
    _, feats, store = _bars_store()
    model = _tiny(window=12, n_features=4)
    meta = store.meta()
    ends = store.ends("test")
    want = ModelForecaster(model).forecast(store, ends).point
    fs = (store.feature_center[0], store.feature_scale[0])
    for k, e in enumerate(ends[::5]):
        got, _ = forecast_series(model, meta, store.levels[:e], H, _scaler(store), store.t[:e],
                                 feats[:e], fs)
        np.testing.assert_allclose(got, want[5 * k], rtol=1e-6)
    with pytest.raises(UserInputError, match=r"--steps must be <= 2 .* \(open, high, low, "
                                             r"volume\)"):
        forecast_series(model, meta, store.levels, 3, _scaler(store), store.t, feats, fs)


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
                                    "value": store.levels[a:b]}))
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
        got, _ = forecast_series(model, meta, store.levels[a:e], H, _scaler(store, i),
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
        levels = raw.loc[raw["id"] == name, "value"].to_numpy()
        if name in store.ids:
            scaler = _scaler(store, int(np.flatnonzero(store.ids == name)[0]))
        else:   # an id the training never saw: scaled by its whole history
            r = {"none": levels, "diff": np.diff(levels),
                 "log_return": np.diff(np.log(levels))}[store.transform]
            scaler = (float(np.mean(r)), float(np.std(r)))
        want, _ = forecast_series(model, meta, levels, steps, scaler,
                                  np.arange(len(levels), dtype=np.float64))
        np.testing.assert_allclose(rows["forecast"], want, rtol=1e-9)
        np.testing.assert_array_equal(rows["time"], len(levels) + np.arange(steps))


def test_an_id_too_short_to_forecast_is_left_out_and_named(panel, tmp_path, capsys):
    store, _, path = panel
    a, b = int(store.offsets[0]), int(store.offsets[1])
    raw = pd.concat([pd.DataFrame({"id": "long", "t": np.arange(b - a),
                                   "value": store.levels[a:b]}),
                     pd.DataFrame({"id": "short", "t": np.arange(3), "value": [1.0, 2.0, 3.0]})])
    csv = tmp_path / "rows.csv"
    raw.to_csv(csv, index=False)
    out = tmp_path / "forecast.csv"
    _run("--model", path, "--csv", csv, "--out", out)
    err = capsys.readouterr().err
    assert "1 id(s) left out, the first: id 'short': the series has 3 values" in err, err
    assert pd.read_csv(out)["id"].tolist() == ["long"]
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
    _run("--model", path, "--csv", csv, "--out", out)
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
    levels = 5 + np.sin(np.arange(70) / 3.0) + rs.normal(0, 0.1, 70)
    source = source_record(DataParams(kind="csv", csv_column="price"))
    store = _build([levels], ["price"], source=source, val=0.1)
    model = _tiny()
    path = _save(tmp_path / "one.pt", store, model)
    csv, out = tmp_path / "prices.csv", tmp_path / "fc.csv"
    pd.DataFrame({"price": levels}).to_csv(csv, index=False)
    _run("--model", path, "--csv", csv, "--steps", 3, "--out", out)
    assert "forecast: 3 steps after 70 values -> " in capsys.readouterr().out
    got = pd.read_csv(out)
    assert list(got.columns) == ["step", "time", "forecast"]
    assert got["step"].tolist() == [1, 2, 3] and got["time"].tolist() == [70, 71, 72]
    want, _ = forecast_series(model, checkpoint.read(path)["prepare"], levels, 3,
                              _scaler(store), np.arange(70.0))
    np.testing.assert_allclose(got["forecast"], want, rtol=1e-9)
    # the training scaler, not one fitted on the history given now
    train = levels[:int(store.cuts.val_start[0])]
    assert _scaler(store) == pytest.approx((train.mean(), train.std()), rel=1e-12)


def test_another_series_than_the_trained_one_is_forecast_with_a_warning(tmp_path, capsys):
    rs = np.random.default_rng(2)
    levels = 5 + np.sin(np.arange(70) / 3.0) + rs.normal(0, 0.1, 70)
    source = source_record(DataParams(kind="csv", csv_column="price"))
    path = _save(tmp_path / "one.pt", _build([levels], ["price"], source=source), _tiny())
    csv = tmp_path / "prices.csv"
    pd.DataFrame({"price": levels}).to_csv(csv, index=False)
    _run("--model", path, "--csv", csv, "--steps", 1, "--out", tmp_path / "a.csv")
    first = capsys.readouterr()
    assert "warning" not in first.err and "forecast: 1 step after 70 values" in first.out
    pd.DataFrame({"price": 200 + 10 * levels}).to_csv(csv, index=False)   # another series
    _run("--model", path, "--csv", csv, "--steps", 1, "--out", tmp_path / "b.csv")
    err = capsys.readouterr().err
    assert "forecast: warning: the last window lies" in err and "'price'" in err
    assert "is this its series?" in err and len(err.strip().splitlines()) == 1


def test_gaps_in_the_time_column_are_refused_as_in_training_unless_allowed(tmp_path, capsys):
    levels = 5 + np.sin(np.arange(70) / 3.0)
    days = pd.date_range("2024-01-01", periods=71, freq="D").strftime("%Y-%m-%d")
    source = source_record(DataParams(kind="csv", csv_column="v", csv_time_column="day"))
    path = _save(tmp_path / "one.pt", _build([levels], ["v"], source=source), _tiny())
    csv = tmp_path / "gap.csv"
    pd.DataFrame({"day": np.delete(days, 40), "v": levels}).to_csv(csv, index=False)
    with pytest.raises(UserInputError, match=r"after 2024-02-09 comes 2024-02-11 \(1 step\(s\) "
                                             r"of one day missing\); fill the rows, or set "
                                             r"--time-gaps to allow"):
        main(["--model", str(path), "--csv", str(csv), "--out", str(tmp_path / "f.csv")])
    _run("--model", path, "--csv", csv, "--time-gaps", "allow", "--out", tmp_path / "f.csv")
    assert "forecast: 1 step after 70 values" in capsys.readouterr().out


def test_a_quantile_head_writes_its_levels_for_every_step(tmp_path, capsys):
    """Without an intervals file: the head's own quantiles for its horizon (2 steps), and
    past it step 2's spread grown by sqrt(k / 2) around the recursive forecast."""
    rs = np.random.default_rng(2)
    levels = 5 + np.cumsum(rs.normal(0, 0.3, 60))
    store = _build([levels], ["sine"], source=PANEL_SOURCE | {"id_column": ""})
    model = _tiny(quantiles=(0.1, 0.5, 0.9))
    path = _save(tmp_path / "q.pt", store, model)
    csv, out = tmp_path / "rows.csv", tmp_path / "fc.csv"
    pd.DataFrame({"t": np.arange(60), "value": levels}).to_csv(csv, index=False)
    _run("--model", path, "--csv", csv, "--steps", 4, "--out", out)
    said = capsys.readouterr().out
    assert "quantiles q10, q90 of every step: the quantile head's own" in said
    assert "steps past the model's horizon, 2: step 2's spread grown as sqrt(step / 2)" in said
    got = pd.read_csv(out)
    assert list(got.columns) == ["step", "time", "forecast", "q10", "q90"]
    assert (got["q10"] < got["forecast"]).all() and (got["forecast"] < got["q90"]).all()
    _, quant = forecast_series(model, checkpoint.read(path)["prepare"], levels, 4,
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


# ---------------------------------------------------------------- the blend's future
BLEND = {"members": ["model", "naive", "seasonal_naive"], "season": 4,
         "series": {"a": [0.25, 0.75, 0.0], "b": [0.5, 0.0, 0.5]},
         "mean": {"model": 0.375, "naive": 0.375, "seasonal_naive": 0.25}}


def test_the_blend_weights_each_member_refitted_on_the_whole_series():
    levels = np.array([1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 10.0])
    model = np.array([20.0, 20.0, 20.0])
    values, _, line = blended_future(BLEND, "a", model, levels, 3)
    np.testing.assert_allclose(values, 0.25 * 20 + 0.75 * 10)     # naive: the last value
    assert line == "model 0.25, naive 0.75"                         # a zero weight is not used
    values, _, _ = blended_future(BLEND, "b", model, levels, 3)
    np.testing.assert_allclose(values, 0.5 * 20 + 0.5 * np.array([5.0, 6.0, 7.0]))


def test_an_unseen_series_takes_the_mean_weights_and_a_member_that_cannot_run_is_left_out():
    levels = np.array([3.0, 4.0])          # too short for a season of 4: seasonal naive fails
    model = np.array([1.0, 1.0])
    values, _, line = blended_future(BLEND, "new", model, levels, 2)
    np.testing.assert_allclose(values, 0.5 * 1 + 0.5 * 4)             # reweighted 0.375/0.375
    assert line == "model 0.50, naive 0.50"
    only = {**BLEND, "series": {"c": [0.0, 0.0, 1.0]}}
    values, _, line = blended_future(only, "c", model, levels, 2)    # nothing else could run
    np.testing.assert_allclose(values, model)
    assert "no other member could run" in line


def test_the_blend_file_is_read_beside_the_model_and_off_with_an_empty_flag(tmp_path):
    (tmp_path / "blend.json").write_text('{"members": ["model", "naive"]}')
    model = str(tmp_path / "model.pt")
    assert read_blend(None, model)["members"] == ["model", "naive"]
    assert read_blend("", model) is None
    (tmp_path / "blend.json").write_text('{"members": []}')         # evaluate.blend []
    assert read_blend(None, model) is None
    with pytest.raises(UserInputError, match="--blend: file not found"):
        read_blend(str(tmp_path / "nope.json"), model)
