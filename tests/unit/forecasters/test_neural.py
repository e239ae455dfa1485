"""Unit tests for attn_forecast.forecasters.neural: the model as a forecaster."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from attn_forecast.forecasters.run import run
from attn_forecast.model.networks import build_model
from attn_forecast.model.settings import ModelSettings
from attn_forecast.forecasters.neural import ModelForecaster
from unit.training.helpers import W, _sine, _store

pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.mark.parametrize("transform", ["none", "diff", "log_return"])
def test_model_forecaster_gives_each_window_in_its_series_levels(transform):
    rs = np.random.default_rng(1)
    series = [100 * np.exp(np.cumsum(rs.normal(0, 0.02, n))) for n in (60, 75)]
    store = _store(series, horizon=2, transform=transform)
    torch.manual_seed(0)
    m = build_model(ModelSettings(window=W, horizon=2, d_model=8, ffn_dim=8)).eval()
    f = ModelForecaster(m)
    assert f.fit(store) == [] and f.name == "model"
    ends = store.ends("test")
    got = f.forecast(store, ends)
    assert got.quantiles is None and got.members is None and got.point.shape == (len(ends), 2)
    for k, e in enumerate(ends):                       # window by window, by hand
        i = int(np.searchsorted(store.offsets, e, side="right") - 1)
        lv = series[i]
        a = int(store.offsets[i])
        e_loc = int(e) - a
        steps = {"none": lv, "diff": np.r_[0, np.diff(lv)],
                 "log_return": np.r_[0, np.diff(np.log(lv))]}[transform]
        c, s = store.scalers.center[i], store.scalers.scale[i]
        x = torch.tensor((steps[e_loc - W:e_loc] - c) / s, dtype=torch.float32)[None]
        with torch.no_grad():
            y = m(x)[0][0].double().numpy() * s + c
        want = {"none": y, "diff": lv[e_loc - 1] + np.cumsum(y),
                "log_return": lv[e_loc - 1] * np.exp(np.cumsum(y))}[transform]
        np.testing.assert_allclose(got.point[k], want, rtol=1e-5)


def test_model_forecaster_of_an_ensemble_and_a_quantile_head():
    store = _store([_sine(), _sine(120, seed=3) * 4 + 2], horizon=2, transform="diff")
    ends = store.ends("test")
    torch.manual_seed(0)
    ens = build_model(ModelSettings(window=W, horizon=2, d_model=8, ffn_dim=8), members=3)
    got = ModelForecaster(ens).forecast(store, ends)
    assert got.members.shape == (3, len(ends), 2)
    for j, member in enumerate(ens.members):
        np.testing.assert_allclose(got.members[j],
                                   ModelForecaster(member).forecast(store, ends).point)
    # diff and its scaler are linear: the mean forecast is the members' mean in levels
    np.testing.assert_allclose(got.point, got.members.mean(axis=0), rtol=1e-5)
    torch.manual_seed(1)
    q = build_model(ModelSettings(window=W, horizon=2, d_model=8, ffn_dim=8,
                                  quantiles=(0.1, 0.5, 0.9)))
    qf = ModelForecaster(q).forecast(store, ends, levels=(0.1, 0.5, 0.9))
    assert qf.quantiles.shape == (len(ends), 2, 3)
    np.testing.assert_allclose(qf.quantiles[..., 1], qf.point, rtol=1e-6)
    # the train stage's path: run over the parts it scores
    fs = run(store, [ModelForecaster(q)], ("test",), (0.1, 0.5, 0.9), season=0)
    np.testing.assert_array_equal(fs.ends["test"], ends)
    np.testing.assert_allclose(fs.forecasts["model"]["test"].point, qf.point)
