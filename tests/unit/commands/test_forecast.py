"""Unit tests for attn_forecast.commands.forecast's ``forecast_series``: one series' future,
recursive past the horizon, each transform, calendar inputs and past covariates fed as in
training. (The forecast command: test_forecast_command.py.)"""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch

from attn_forecast.errors import UserInputError
from attn_forecast.commands.forecast import forecast_series
from attn_forecast.model.networks import build_model
from attn_forecast.model.settings import ModelSettings
from attn_forecast.training.settings import TrainSettings
from attn_forecast.data.sources import sine
from attn_forecast.forecasters.neural import ModelForecaster
from attn_forecast.training.loop import fit_windows
from unit.commands.helpers import H, W, _bars_store, _build, _scaler, _tiny

pytestmark = pytest.mark.usefixtures("one_torch_thread")


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
                TrainSettings(epochs=150, lr=0.01, augment_noise=0.0), progress=False)
    return model.eval(), store.meta(), store


def _fs(model, meta, store, y, steps):
    return forecast_series(model, meta, y, steps, _scaler(store),
                           np.arange(len(y), dtype=np.float64))


def test_returns_steps_values(trained):
    model, meta, store = trained
    for steps in (1, 2, 5):
        out, quant = _fs(model, meta, store, store.y, steps)
        assert out.shape == (steps,) and np.isfinite(out).all() and quant is None


def test_first_chunk_is_the_models_prediction_on_the_last_window(trained):
    model, meta, store = trained
    out, _ = _fs(model, meta, store, store.y, H)
    # the last W levels, scaled by the training part's mean and std, through the model
    train = store.y[:int(store.cuts.val_start[0])]
    x = torch.tensor((store.y[-W:] - train.mean()) / train.std(), dtype=torch.float32)
    with torch.no_grad():
        z_pred = model(x[None])[0].double().numpy()[0]
    np.testing.assert_allclose(out, z_pred * train.std() + train.mean(), rtol=1e-5, atol=1e-6)


def test_recursive_past_the_horizon(trained):
    model, meta, store = trained
    y = store.y
    out, _ = _fs(model, meta, store, y, 5)
    # the first H values do not depend on how far we forecast
    np.testing.assert_allclose(out[:H], _fs(model, meta, store, y, H)[0], rtol=0,
                               atol=1e-12)
    # the next chunk is a forecast from the series extended by the first chunk's predictions
    ext = np.concatenate([y, out[:H]])
    np.testing.assert_allclose(out[H:2 * H], _fs(model, meta, store, ext, H)[0], atol=1e-9)
    ext2 = np.concatenate([ext, out[H:2 * H]])
    np.testing.assert_allclose(out[2 * H:], _fs(model, meta, store, ext2, 1)[0], atol=1e-9)


def test_trained_model_forecasts_the_sine(trained):
    """Only a trained model passes: from 56 origins in the held-out last fifth, 4 steps ahead
    each, it must be far closer to the noise-free sine than repeating the last value (the
    naive forecast), an all-zero forecast or an untrained model."""
    model, meta, store = trained
    y = store.y
    n = len(y)
    signal = np.sin(np.linspace(0, 4 * np.pi, n))
    origins = np.arange(240, n - 3)
    truth = np.array([signal[e:e + 4] for e in origins])

    def rmse(m):
        out = np.array([_fs(m, meta, store, y[:e], 4)[0] for e in origins])
        return float(np.sqrt(np.mean((out - truth) ** 2)))
    naive = np.repeat(y[origins - 1][:, None], 4, axis=1)
    got = rmse(model)
    assert got < 0.7 * float(np.sqrt(np.mean((naive - truth) ** 2)))
    assert got < 0.7 * float(np.sqrt(np.mean(truth ** 2)))
    assert got < 0.3 * rmse(_tiny(seed=5, d_model=16, ffn_dim=32))
    # the last forecast continues the sine past the end of the series
    x_next = 4 * np.pi * np.arange(n, n + 4) / (n - 1)
    assert np.abs(_fs(model, meta, store, y, 4)[0] - np.sin(x_next)).max() < 0.2


@pytest.mark.parametrize("kind", ["diff", "log_return"])
def test_transforms_rebuild_levels(kind):
    model = _tiny(seed=1, window=4, horizon=1)
    meta = {"window": 4, "horizon": 1, "transform": kind, "time_features": [], "features": []}
    y = np.array([10.0, 10.5, 10.2, 11.0, 11.3, 11.1])
    times = np.arange(6.0)
    out, _ = forecast_series(model, meta, y, 3, (0.01, 0.5), times)
    # step 1 from the model on the last 4 (scaled) changes, applied to the last level
    r = np.diff(y) if kind == "diff" else np.diff(np.log(y))
    x = torch.tensor((r[-4:] - 0.01) / 0.5, dtype=torch.float32)[None, :]
    with torch.no_grad():
        step = model(x)[0].double().item() * 0.5 + 0.01
    first = y[-1] + step if kind == "diff" else y[-1] * np.exp(step)
    assert out[0] == pytest.approx(first, rel=1e-6)
    again, _ = forecast_series(model, meta, np.append(y, out[0]), 1, (0.01, 0.5),
                               np.arange(7.0))
    assert out[1] == pytest.approx(again[0], rel=1e-9)
    # the transform needs window + 1 values
    forecast_series(model, meta, y[-5:], 1, (0.01, 0.5), times[-5:])
    with pytest.raises(UserInputError, match=r"at least 5 \(window 4 \+ 1 for the " + kind):
        forecast_series(model, meta, y[-4:], 1, (0.01, 0.5), times[-4:])


def test_too_short_series_raises(trained):
    model, meta, store = trained
    with pytest.raises(UserInputError, match=f"the series has {W - 1} values; this model needs "
                                             f"at least {W} "):
        _fs(model, meta, store, store.y[:W - 1], 3)
    assert _fs(model, meta, store, store.y[:W], 1)[0].shape == (1,)


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
        got, _ = forecast_series(model, meta, store.y[:e], H, _scaler(store), t[:e])
        np.testing.assert_allclose(got, want[k], rtol=1e-6)
    # and the calendar matters: other times, another forecast
    shifted, _ = forecast_series(model, meta, store.y[:ends[0]], H, _scaler(store),
                                 t[:ends[0]] + np.timedelta64(5, "h"))
    assert not np.allclose(shifted, want[0])


def test_past_covariates_are_fed_as_in_training():
    _, feats, store = _bars_store()
    model = _tiny(window=12, n_features=4)
    meta = store.meta()
    ends = store.ends("test")
    want = ModelForecaster(model).forecast(store, ends).point
    fs = (store.feature_center[0], store.feature_scale[0])
    for k, e in enumerate(ends[::5]):
        got, _ = forecast_series(model, meta, store.y[:e], H, _scaler(store), store.t[:e],
                                 feats[:e], fs)
        np.testing.assert_allclose(got, want[5 * k], rtol=1e-6)
    with pytest.raises(UserInputError, match=r"--steps must be <= 2 .* \(open, high, low, "
                                             r"volume\)"):
        forecast_series(model, meta, store.y, 3, _scaler(store), store.t, feats, fs)
