"""Export for serving: the ONNX graph, run by onnxruntime alone, forecasts what PyTorch does
on the test windows (to 1e-5), for the attention model (one and several heads and layers,
patches, calendar inputs, a quantile head, an ensemble) and the LSTM; the pt2 program too."""
from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from attn_forecast.data import sine
from attn_forecast.export import export
from attn_forecast.model import ModelSettings, build_model
from attn_forecast.windows import gather_calendar, gather_windows, prepare

ort = pytest.importorskip("onnxruntime")
pytestmark = pytest.mark.usefixtures("one_torch_thread")

W, H = 24, 3
CASES = {
    "one head, one layer": dict(),
    "heads and layers": dict(n_heads=4, n_layers=2, residual=True, pooling="mean"),
    "patches, revin, highway": dict(patch_len=6, instance_norm="revin", highway=True),
    "quantile head": dict(quantiles=(0.1, 0.5, 0.9)),
    "lstm": dict(kind="lstm", n_layers=2),
}


@pytest.fixture(scope="module")
def prep():
    df = sine(300, 0.15, 3)
    import pandas as pd
    t = pd.date_range("2024-01-01", periods=300, freq="h").strftime("%Y-%m-%dT%H:%M:%S")
    return prepare(df["value"].to_numpy(), df["signal"].to_numpy(), np.asarray(t, dtype=object),
                   window=W, horizon=H, test_frac=0.2, val_frac=0.0, scaler="zscore",
                   transform="none", time_features=["hour"])


def _check(model, prep, tmp_path, calendar: bool):
    model.eval()
    meta = json.loads(json.dumps(prep.meta()))
    out = tmp_path / "m.onnx"
    export(model, meta, out, "onnx")
    desc = json.loads(out.with_suffix(".json").read_text())
    ends = prep.split.ends("test")
    x, _ = gather_windows(prep.z, ends, W, H)
    feeds = {"window": np.ascontiguousarray(x, dtype=np.float32)}
    cal = None
    if calendar:
        cin, cout = gather_calendar(prep.cal, ends, W, H)
        feeds.update(calendar_inputs=np.ascontiguousarray(cin, dtype=np.float32),
                     calendar_targets=np.ascontiguousarray(cout, dtype=np.float32))
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
def test_onnx_matches_pytorch_on_the_test_windows(name, prep, tmp_path):
    torch.manual_seed(0)
    model = build_model(ModelSettings(window=W, horizon=H, d_model=16, ffn_dim=16,
                                      **CASES[name]))
    desc = _check(model, prep, tmp_path, calendar=False)
    assert desc["window"] == W and desc["scaler"]["kind"] == "zscore"


def test_onnx_with_calendar_inputs_and_an_ensemble(prep, tmp_path):
    torch.manual_seed(1)
    s = ModelSettings(window=W, horizon=H, d_model=8, ffn_dim=8, n_time_features=2)
    desc = _check(build_model(s, members=3), prep, tmp_path, calendar=True)
    assert desc["inputs"]["calendar_targets"] == ["batch", H, 2]
    assert desc["time_features"] == ["hour"]


def test_pt2_program_matches_pytorch(prep, tmp_path):
    torch.manual_seed(2)
    model = build_model(ModelSettings(window=W, horizon=H, d_model=8, ffn_dim=8)).eval()
    out = tmp_path / "m.pt2"
    export(model, prep.meta(), out, "pt2")
    program = torch.export.load(str(out))
    x = torch.from_numpy(np.ascontiguousarray(
        gather_windows(prep.z, prep.split.ends("test"), W, H)[0], dtype=np.float32))
    with torch.no_grad():
        assert torch.allclose(program.module()(x), model(x)[0], atol=1e-6)


@pytest.mark.parametrize("kind", ["attention", "lstm"])
def test_onnx_with_calendar_and_feature_inputs(kind, tmp_path):
    from attn_forecast.data import ohlcv
    bars = ohlcv(200, 4, lead=0.8)
    names = ("open", "high", "low", "volume")
    fp = prepare(bars["close"].to_numpy(), np.full(200, np.nan), bars["date"].to_numpy(str),
                 window=W, horizon=H, test_frac=0.2, val_frac=0.0, scaler="zscore",
                 transform="log_return", time_features=["dayofweek"],
                 features={n: bars[n].to_numpy() for n in names},
                 feature_transforms=("log_return",) * 3 + ("log1p",))
    torch.manual_seed(3)
    model = build_model(ModelSettings(kind=kind, window=W, horizon=H, d_model=8, ffn_dim=8,
                                      n_time_features=2, n_features=4)).eval()
    out = tmp_path / "m.onnx"
    export(model, json.loads(json.dumps(fp.meta())), out, "onnx")
    desc = json.loads(out.with_suffix(".json").read_text())
    assert list(desc["inputs"]) == ["window", "calendar_inputs", "calendar_targets", "features"]
    assert desc["inputs"]["features"] == ["batch", W, 4] and desc["features"] == list(names)
    ends = fp.split.ends("test")
    x, _ = gather_windows(fp.z, ends, W, H)
    cin, cout = gather_calendar(fp.cal, ends, W, H)          # (N, W, 2 + 4), (N, H, 2 + 4)
    c32 = lambda a: np.ascontiguousarray(a, dtype=np.float32)  # noqa: E731
    feeds = {"window": c32(x), "calendar_inputs": c32(cin[..., :2]),
             "calendar_targets": c32(cout[..., :2]), "features": c32(cin[..., 2:])}
    got = ort.InferenceSession(str(out)).run(["forecast"], feeds)[0]
    with torch.no_grad():  # as training feeds it: the target times' feature columns included
        ref = model(torch.from_numpy(c32(x)), cal=(torch.from_numpy(c32(cin)),
                                                    torch.from_numpy(c32(cout))))[0].numpy()
    np.testing.assert_allclose(got, ref, atol=1e-5, rtol=1e-5)


def test_pt2_program_with_calendar_and_feature_inputs(tmp_path):
    from attn_forecast.data import ohlcv
    bars = ohlcv(200, 4)
    fp = prepare(bars["close"].to_numpy(), np.full(200, np.nan), bars["date"].to_numpy(str),
                 window=W, horizon=H, test_frac=0.2, val_frac=0.0, scaler="zscore",
                 transform="log_return", time_features=["dayofweek"],
                 features={"volume": bars["volume"].to_numpy()}, feature_transforms=("log1p",))
    torch.manual_seed(4)
    model = build_model(ModelSettings(window=W, horizon=H, d_model=8, ffn_dim=8,
                                      n_time_features=2, n_features=1)).eval()
    out = tmp_path / "m.pt2"
    export(model, fp.meta(), out, "pt2")
    program = torch.export.load(str(out)).module()
    ends = fp.split.ends("test")
    x, _ = gather_windows(fp.z, ends, W, H)
    cin, cout = gather_calendar(fp.cal, ends, W, H)
    t = [torch.from_numpy(np.ascontiguousarray(a, dtype=np.float32))
         for a in (x, cin[..., :2], cout[..., :2], cin[..., 2:])]
    with torch.no_grad():
        ref = model(t[0], cal=(torch.from_numpy(np.ascontiguousarray(cin, dtype=np.float32)),
                               torch.from_numpy(np.ascontiguousarray(cout, dtype=np.float32))))
        assert torch.allclose(program(*t), ref[0], atol=1e-6)
