"""Export for serving: the ONNX graph, run by onnxruntime alone, forecasts what PyTorch does
on a store's test windows (to 1e-5), for the attention model (one and several heads and
layers, patches, calendar inputs, a quantile head, an ensemble, past covariates) and the LSTM;
the pt2 program too; the JSON beside it says how to scale each series."""
from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
import torch

from attn_forecast.data.build import build
from attn_forecast.data.store import Store
from attn_forecast.model.export import export
from attn_forecast.model.networks import build_model
from attn_forecast.model.settings import ModelSettings
from attn_forecast.data.sources import ohlcv
from attn_forecast.data.long_table import Raw
from attn_forecast.data.windows import gather, gather_side
from unit.model.helpers import H, W, _f32, hourly_store

ort = pytest.importorskip("onnxruntime")
pytestmark = pytest.mark.usefixtures("one_torch_thread")

CASES = {
    "one head, one layer": dict(),
    "heads and layers": dict(n_heads=4, n_layers=2, residual=True, pooling="mean"),
    "patches, revin, highway": dict(patch_len=6, instance_norm="revin", highway=True),
    "quantile head": dict(quantiles=(0.1, 0.5, 0.9)),
    "lstm": dict(kind="lstm", n_layers=2),
    "mlp": dict(kind="mlp", n_layers=2, instance_norm="revin"),
}


@pytest.fixture(scope="module")
def hourly() -> Store:
    return hourly_store()


def _bars(volume_only: bool = False) -> Store:
    bars = ohlcv(200, 4, lead=0.8)
    names = ("volume",) if volume_only else ("open", "high", "low", "volume")
    kinds = ("log1p",) if volume_only else ("log_return",) * 3 + ("log1p",)
    t = pd.to_datetime(bars["date"]).to_numpy("datetime64[s]")
    raw = Raw(np.array(["bars"]), np.array([0, 200]), t, bars["close"].to_numpy(),
              np.full(200, np.nan), bars[list(names)].to_numpy(), names)
    return build(raw, window=W, horizon=H, fracs={"test": 0.2, "val": 0.0, "cal": 0.0},
                   scaler="zscore", transform="log_return", time_features=("dayofweek",),
                   feature_transforms=kinds)


def _check(model, store, tmp_path, calendar: bool) -> dict:
    model.eval()
    out = tmp_path / "m.onnx"
    export(model, store.meta(), out, "onnx")
    desc = json.loads(out.with_suffix(".json").read_text())
    ends = store.ends("test")
    x, _ = gather(np.asarray(store.z), ends, W, H)
    feeds = {"window": _f32(x)}
    cal = None
    if calendar:
        cin, cout = gather_side(np.asarray(store.side), ends, W, H)
        feeds.update(calendar_inputs=_f32(cin), calendar_targets=_f32(cout))
        cal = (torch.from_numpy(feeds["calendar_inputs"]),
               torch.from_numpy(feeds["calendar_targets"]))
    assert set(desc["inputs"]) == set(feeds)
    session = ort.InferenceSession(str(out))
    got = dict(zip([o.name for o in session.get_outputs()], session.run(None, feeds)))
    with torch.no_grad():
        ref = model(torch.from_numpy(feeds["window"]), cal=cal)[0].numpy()
        np.testing.assert_allclose(got["forecast"], ref, atol=1e-5, rtol=1e-5)
        if model.settings.quantiles:
            q = model(torch.from_numpy(feeds["window"]), cal=cal, quantiles=True)[0].numpy()
            np.testing.assert_allclose(got["quantiles"], q, atol=1e-5, rtol=1e-5)
    assert got["forecast"].shape == (len(ends), H)     # any batch size, not the example's 2
    return desc


@pytest.mark.parametrize("name", CASES)
def test_onnx_matches_pytorch_on_the_test_windows(name, hourly, tmp_path):
    torch.manual_seed(0)
    model = build_model(ModelSettings(window=W, horizon=H, d_model=16, ffn_dim=16,
                                      **CASES[name]))
    desc = _check(model, hourly, tmp_path, calendar=False)
    assert desc["window"] == W and desc["horizon"] == H and desc["scaler"] == "zscore"
    assert list(desc["outputs"]) == (["forecast", "quantiles"] if "quantiles" in CASES[name]
                                     else ["forecast"])
    assert desc["quantiles"] == list(CASES[name].get("quantiles", ()))


def test_onnx_with_calendar_inputs_and_an_ensemble(hourly, tmp_path):
    torch.manual_seed(1)
    s = ModelSettings(window=W, horizon=H, d_model=8, ffn_dim=8, n_time_features=2)
    desc = _check(build_model(s, members=3), hourly, tmp_path, calendar=True)
    assert desc["inputs"]["calendar_targets"] == ["batch", H, 2]
    assert desc["time_features"] == ["hour"]


def test_the_json_says_how_to_forecast_each_series_in_its_own_units(hourly, tmp_path):
    """What a service without Python does with the JSON: scale the last W levels of a series
    by its own scaler, the calendar as sin and cos of hour / 24 times 2 pi, run the graph,
    unscale: the train stage's forecast in levels."""
    from attn_forecast.forecasters.neural import ModelForecaster
    torch.manual_seed(2)
    model = build_model(ModelSettings(window=W, horizon=H, d_model=8, ffn_dim=8,
                                      n_time_features=2)).eval()
    out = tmp_path / "m.onnx"
    export(model, hourly.meta(), out, "onnx")
    desc = json.loads(out.with_suffix(".json").read_text())
    assert desc["series_scalers"]["ids"] == ["a", "b"] and desc["transform"] == "none"
    assert "features" not in desc
    session = ort.InferenceSession(str(out))
    ends = hourly.ends("test")
    want = ModelForecaster(model).forecast(hourly, ends).point
    sc = desc["series_scalers"]
    for k in (0, len(ends) - 1):                     # a window of each series
        e = int(ends[k])
        i = int(np.searchsorted(hourly.offsets, e, side="right") - 1)
        c, s = sc["center"][i], sc["scale"][i]
        x = _f32(((hourly.y[e - W:e] - c) / s)[None])
        hour = pd.DatetimeIndex(hourly.t[e - W:e + H]).hour.to_numpy()
        phase = 2 * np.pi * hour / 24
        cal = _f32(np.stack([np.sin(phase), np.cos(phase)], axis=1))
        feeds = {"window": x, "calendar_inputs": cal[None, :W],
                 "calendar_targets": cal[None, W:]}
        y = session.run(["forecast"], feeds)[0][0] * s + c
        np.testing.assert_allclose(y, want[k], rtol=1e-5)


def test_pt2_program_matches_pytorch(hourly, tmp_path):
    torch.manual_seed(2)
    model = build_model(ModelSettings(window=W, horizon=H, d_model=8, ffn_dim=8)).eval()
    out = tmp_path / "m.pt2"
    export(model, hourly.meta(), out, "pt2")
    assert json.loads(out.with_suffix(".json").read_text())["format"] == "pt2"
    program = torch.export.load(str(out))
    x = torch.from_numpy(_f32(gather(np.asarray(hourly.z), hourly.ends("test"), W, H)[0]))
    with torch.no_grad():
        assert torch.allclose(program.module()(x), model(x)[0], atol=1e-6)
        assert torch.allclose(program.module()(x[:5]), model(x[:5])[0], atol=1e-6)


@pytest.mark.parametrize("kind", ["attention", "lstm", "mlp"])
def test_onnx_with_calendar_and_feature_inputs(kind, tmp_path):
    store = _bars()
    torch.manual_seed(3)
    model = build_model(ModelSettings(kind=kind, window=W, horizon=H, d_model=8, ffn_dim=8,
                                      n_time_features=2, n_features=4)).eval()
    out = tmp_path / "m.onnx"
    export(model, store.meta(), out, "onnx")
    desc = json.loads(out.with_suffix(".json").read_text())
    assert list(desc["inputs"]) == ["window", "calendar_inputs", "calendar_targets", "features"]
    assert desc["inputs"]["features"] == ["batch", W, 4]
    assert desc["features"] == ["open", "high", "low", "volume"]
    assert desc["feature_transforms"] == ["log_return"] * 3 + ["log1p"]
    assert desc["series_scalers"]["feature_center"] == store.feature_center.tolist()
    ends = store.ends("test")
    x, _ = gather(np.asarray(store.z), ends, W, H)
    cin, cout = gather_side(np.asarray(store.side), ends, W, H)  # (N, W, 2 + 4), (N, H, 2 + 4)
    feeds = {"window": _f32(x), "calendar_inputs": _f32(cin[..., :2]),
             "calendar_targets": _f32(cout[..., :2]), "features": _f32(cin[..., 2:])}
    got = ort.InferenceSession(str(out)).run(["forecast"], feeds)[0]
    with torch.no_grad():  # as training feeds it: the target times' feature columns included
        ref = model(torch.from_numpy(_f32(x)), cal=(torch.from_numpy(_f32(cin)),
                                                     torch.from_numpy(_f32(cout))))[0].numpy()
    np.testing.assert_allclose(got, ref, atol=1e-5, rtol=1e-5)


def test_pt2_program_with_calendar_and_feature_inputs(tmp_path):
    store = _bars(volume_only=True)
    torch.manual_seed(4)
    model = build_model(ModelSettings(window=W, horizon=H, d_model=8, ffn_dim=8,
                                      n_time_features=2, n_features=1)).eval()
    out = tmp_path / "m.pt2"
    export(model, store.meta(), out, "pt2")
    program = torch.export.load(str(out)).module()
    ends = store.ends("test")
    x, _ = gather(np.asarray(store.z), ends, W, H)
    cin, cout = gather_side(np.asarray(store.side), ends, W, H)
    t = [torch.from_numpy(_f32(a)) for a in (x, cin[..., :2], cout[..., :2], cin[..., 2:])]
    with torch.no_grad():
        ref = model(t[0], cal=(torch.from_numpy(_f32(cin)), torch.from_numpy(_f32(cout))))
        assert torch.allclose(program(*t), ref[0], atol=1e-6)
