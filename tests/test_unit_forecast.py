"""Unit tests for attn_forecast.forecast.forecast_levels."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from attn_forecast.data import sine
from attn_forecast.errors import UserInputError
from attn_forecast.forecast import forecast_levels
from attn_forecast.model import ModelSettings, build_model
from attn_forecast.params import TrainParams
from attn_forecast.train import fit
from attn_forecast.windows import prepare

W, H = 10, 2


@pytest.fixture(scope="module")
def trained():
    old = torch.get_num_threads()
    torch.set_num_threads(1)
    df = sine(300, 0.05, 42)
    levels = df["value"].to_numpy()
    prep = prepare(levels, df["signal"].to_numpy(), df["t"].to_numpy(), window=W, horizon=H,
                   test_frac=0.2, val_frac=0.0, scaler="zscore", transform="none")
    torch.manual_seed(0)
    model = build_model(ModelSettings(window=W, horizon=H, d_model=16, ffn_dim=32))
    fit(model, torch.from_numpy(prep.z), torch.from_numpy(prep.split.ends("train")),
        torch.zeros(0, dtype=torch.int64), W, H, TrainParams(epochs=150, lr=0.01),
        progress=False)
    model.eval()
    yield model, prep.meta(), levels, prep
    torch.set_num_threads(old)


def test_returns_steps_values(trained):
    model, meta, levels, _ = trained
    for steps in (1, 2, 5):
        out = forecast_levels(model, meta, levels, steps)
        assert out.shape == (steps,)
        assert np.isfinite(out).all()


def test_first_chunk_is_the_models_prediction_on_the_last_window(trained):
    model, meta, levels, prep = trained
    out = forecast_levels(model, meta, levels, H)
    # the prepared (scaled) series' last window, through the model, unscaled
    x = torch.from_numpy(prep.z[-W:])[None, :]
    with torch.no_grad():
        z_pred = model(x)[0].double().numpy()[0]
    assert np.allclose(out, prep.scaler.inverse(z_pred), rtol=1e-5, atol=1e-6)


def test_recursive_past_the_horizon(trained):
    model, meta, levels, _ = trained
    out = forecast_levels(model, meta, levels, 5)
    # the first H values do not depend on how far we forecast
    assert np.allclose(out[:H], forecast_levels(model, meta, levels, H), rtol=0, atol=1e-12)
    # the next chunk is a forecast from the series extended by the first chunk's predictions
    ext = np.concatenate([levels, out[:H]])
    assert np.allclose(out[H:2 * H], forecast_levels(model, meta, ext, H), rtol=0, atol=1e-9)
    ext2 = np.concatenate([ext, out[H:2 * H]])
    assert np.allclose(out[2 * H:], forecast_levels(model, meta, ext2, 1), rtol=0, atol=1e-9)


def test_trained_model_forecasts_the_sine(trained):
    """Only a trained model passes: from 56 origins in the held-out last fifth, 4 steps ahead
    each, it must be far closer to the noise-free sine than repeating the last value (the
    naive forecast: ratio 1), an all-zero forecast or an untrained model (ratio ~11)."""
    model, meta, levels, prep = trained
    n = len(levels)
    signal = np.sin(np.linspace(0, 4 * np.pi, n))
    origins = np.arange(240, n - 3)
    out = np.array([forecast_levels(model, meta, levels[:e], 4) for e in origins])
    truth = np.array([signal[e:e + 4] for e in origins])
    naive = np.repeat(levels[origins - 1][:, None], 4, axis=1)
    rmse = lambda p: float(np.sqrt(np.mean((p - truth) ** 2)))  # noqa: E731
    assert rmse(out) < 0.7 * rmse(naive)
    assert rmse(out) < 0.7 * rmse(np.zeros_like(truth))
    # the last forecast continues the sine past the end of the series
    x_next = 4 * np.pi * np.arange(n, n + 4) / (n - 1)
    assert np.abs(forecast_levels(model, meta, levels, 4) - np.sin(x_next)).max() < 0.2


@pytest.mark.parametrize("kind", ["diff", "log_return"])
def test_transforms_rebuild_levels(kind):
    torch.manual_seed(1)
    model = build_model(ModelSettings(window=4, horizon=1, d_model=8, ffn_dim=8)).eval()
    meta = {"window": 4, "horizon": 1, "transform": kind,
            "scaler": {"kind": "zscore", "center": 0.01, "scale": 0.5}}
    levels = np.array([10.0, 10.5, 10.2, 11.0, 11.3, 11.1])
    out = forecast_levels(model, meta, levels, 3)
    # step 1 from the model on the last 4 (scaled) changes, applied to the last level
    r = np.diff(levels) if kind == "diff" else np.diff(np.log(levels))
    x = torch.tensor((r[-4:] - 0.01) / 0.5, dtype=torch.float32)[None, :]
    with torch.no_grad():
        step = model(x)[0].double().item() * 0.5 + 0.01
    first = levels[-1] + step if kind == "diff" else levels[-1] * np.exp(step)
    assert out[0] == pytest.approx(first, rel=1e-6)
    assert out[1] == pytest.approx(
        forecast_levels(model, meta, np.append(levels, out[0]), 1)[0], rel=1e-9)
    # the transform needs window + 1 values
    forecast_levels(model, meta, levels[-5:], 1)
    with pytest.raises(UserInputError, match="at least 5"):
        forecast_levels(model, meta, levels[-4:], 1)


def test_too_short_series_raises(trained):
    model, meta, levels, _ = trained
    with pytest.raises(UserInputError, match=f"at least {W}"):
        forecast_levels(model, meta, levels[:W - 1], 3)
    assert forecast_levels(model, meta, levels[:W], 1).shape == (1,)


# ---------------------------------------------------------------- time stamps of the forecast
def test_next_times_continue_numbers_by_the_usual_step():
    from attn_forecast.forecast import next_times
    assert next_times(np.array([0.0, 1.0, 2.0, 3.0]), 3).tolist() == [4.0, 5.0, 6.0]
    assert next_times(np.array([10, 20, 30, 50, 60]), 2).tolist() == [70, 80]


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
    from attn_forecast.forecast import next_times
    assert next_times(np.array(stamps, dtype=object), 2).tolist() == expected
