"""Unit tests of what real series need: instance normalization, patches, calendar features,
auto season and window, mini-batches and step budgets."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from attn_forecast.calendar import time_features
from attn_forecast.errors import UserInputError
from attn_forecast.model import InstanceNorm, ModelSettings, build_model
from attn_forecast.params import ParamsError, TrainParams, parse_params
from attn_forecast.seasons import detect_season, window_for
from attn_forecast.train import fit, resolve_batch
from attn_forecast.windows import choose_auto, gather_calendar, prepare

pytestmark = pytest.mark.usefixtures("one_torch_thread")


# ---------------------------------------------------------------- instance normalization
@pytest.mark.parametrize("kind, affine", [("revin", True), ("revin", False), ("last", False)])
def test_instance_norm_round_trip_is_exact(kind, affine):
    torch.manual_seed(0)
    norm = InstanceNorm(kind, affine)
    if affine:  # a trained affine, not the identity it starts as
        with torch.no_grad():
            norm.gamma.fill_(1.7)
            norm.beta.fill_(-0.3)
    x = torch.randn(8, 24, dtype=torch.float64) * 50 + 1000
    z, stats = norm.normalize(x)
    if kind == "revin" and not affine:
        assert torch.allclose(z.mean(1), torch.zeros(8, dtype=torch.float64), atol=1e-10)
    # the model's output in normalized units maps back to the window's own units; a window
    # that the model "predicts" as itself comes back as itself
    back = norm.denormalize(z, stats)
    assert torch.allclose(back, x, rtol=0, atol=1e-9 * 1000)


def test_instance_norm_lets_the_model_forecast_at_a_new_level():
    """Shifting a window shifts the forecast by exactly as much (revin and last): what makes
    a trend reachable."""
    for kind in ("revin", "last"):
        torch.manual_seed(1)
        m = build_model(ModelSettings(window=12, d_model=8, ffn_dim=8, instance_norm=kind))
        x = torch.randn(4, 12)
        with torch.no_grad():
            assert torch.allclose(m(x + 100.0)[0], m(x)[0] + 100.0, atol=1e-3)


# ---------------------------------------------------------------- patches
@pytest.mark.parametrize("W, P, S", [(48, 12, 12), (48, 12, 6), (60, 6, 3), (336, 24, 24)])
def test_patches_cover_the_window(W, P, S):
    s = ModelSettings(window=W, patch_len=P, patch_stride=S)
    covered = np.zeros(W, dtype=int)
    for first, last in s.token_steps():
        covered[first:last + 1] += 1
    assert (covered >= 1).all()                       # every step is in a patch
    assert s.token_steps()[-1][1] == W - 1            # the last patch ends at the newest step
    if S == P:
        assert (covered == 1).all()                   # side by side: each step exactly once
    m = build_model(s)
    x = torch.arange(2 * W, dtype=torch.float32).reshape(2, W)
    tok = m.tokens(x, None)
    assert tok.shape == (2, s.n_tokens, P)
    for i, (first, last) in enumerate(s.token_steps()):
        assert torch.equal(tok[0, i], x[0, first:last + 1])


def test_one_step_patches_are_the_source_model():
    torch.manual_seed(3)
    a = build_model(ModelSettings(window=10))
    torch.manual_seed(3)
    b = build_model(ModelSettings(window=10, patch_len=1))
    x = torch.randn(5, 10)
    with torch.no_grad():
        assert torch.equal(a(x)[0], b(x)[0])


def test_patch_params_are_checked():
    with pytest.raises(ParamsError, match="cover prepare.window 60 exactly"):
        parse_params({"prepare": {"window": 60}, "model": {"patch_len": 16}})
    with pytest.raises(ParamsError, match="model.kind attention"):
        parse_params({"model": {"kind": "lstm", "patch_len": 2}})
    with pytest.raises(ParamsError, match="patch_stride"):
        parse_params({"prepare": {"window": 60}, "model": {"patch_len": 6, "patch_stride": 12}})
    parse_params({"prepare": {"window": 60}, "model": {"patch_len": 12, "patch_stride": 6}})


# ---------------------------------------------------------------- calendar features
def test_calendar_features_depend_on_each_time_stamp_only():
    t = np.array(["2024-03-01T00:00:00", "2024-03-01T06:00:00", "2024-03-02T12:00:00"],
                 dtype=object)
    f = time_features(t, ["hour", "dayofweek"])
    assert f.shape == (3, 4)
    np.testing.assert_allclose(f[0, :2], [0, 1], atol=1e-7)             # 00:00
    np.testing.assert_allclose(f[1, :2], [1, 0], atol=1e-7)             # 06:00
    t2 = t.copy()
    t2[2] = "2024-03-05T18:00:00"
    g = time_features(t2, ["hour", "dayofweek"])
    assert np.array_equal(f[:2], g[:2]) and not np.array_equal(f[2], g[2])
    with pytest.raises(UserInputError, match="prepare.time_features"):
        time_features(np.arange(3.0), ["hour"])


def test_windows_see_their_targets_calendar_and_never_their_values():
    n = 48
    t = np.array(pd_range(n), dtype=object)
    levels = np.sin(np.arange(n) / 3.0)
    prep = prepare(levels, np.full(n, np.nan), t, window=8, horizon=2, test_frac=0.25,
                   val_frac=0.0, scaler="zscore", transform="diff", time_features=["hour"])
    ends = prep.split.ends("test")
    cin, cout = gather_calendar(prep.cal, ends, 8, 2)
    full = time_features(t, ["hour"])
    off = prep.offset
    for k, e in enumerate(ends):
        # model index e is level e + off: the targets' time stamps, and the inputs' own
        assert np.array_equal(cout[k], full[e + off:e + off + 2])
        assert np.array_equal(cin[k], full[e + off - 8:e + off])
    # the features do not move when the values do
    prep2 = prepare(levels * 5 + 3, np.full(n, np.nan), t, window=8, horizon=2,
                    test_frac=0.25, val_frac=0.0, scaler="zscore", transform="diff",
                    time_features=["hour"])
    assert np.array_equal(prep.cal, prep2.cal)


def pd_range(n):
    import pandas as pd
    return pd.date_range("2024-01-01", periods=n, freq="h").strftime("%Y-%m-%dT%H:%M:%S")


def test_a_calendar_model_runs_with_patches_and_a_highway():
    s = ModelSettings(window=24, horizon=3, d_model=8, ffn_dim=8, patch_len=6,
                      n_time_features=4, highway=True, instance_norm="revin")
    m = build_model(s)
    x = torch.randn(5, 24)
    cal = (torch.randn(5, 24, 4), torch.randn(5, 3, 4))
    y, w = m(x, need_weights=True, cal=cal)
    assert y.shape == (5, 3) and w[0].shape == (5, 1, 4, 4)
    # the target times' calendar reaches the forecast
    with torch.no_grad():
        other = (cal[0], cal[1] + 1)
        assert not torch.allclose(m(x, cal=cal)[0], m(x, cal=other)[0])


# ---------------------------------------------------------------- seasons and windows
def test_auto_season_and_window_use_the_training_part_only():
    rng = np.random.default_rng(0)
    t = np.arange(600)
    levels = 10 + np.sin(2 * np.pi * t / 24) + 0.2 * rng.normal(size=600)
    clean = choose_auto(levels, 0.2, 0.1, "auto")
    poisoned = levels.copy()
    poisoned[int(600 * 0.7):] = rng.normal(size=600 - int(600 * 0.7)) * 1e3  # val and test
    assert choose_auto(poisoned, 0.2, 0.1, "auto") == clean
    assert clean["season"]["season"] == 24 and clean["window"]["window"] == 48


def test_no_season_in_a_random_walk_and_a_window_anyway():
    rng = np.random.default_rng(5)
    found = detect_season(np.cumsum(rng.normal(size=800)))
    assert found["season"] == 0 and "noise band" in found["reason"]
    assert window_for(0, 800)["window"] == 24
    assert window_for(336, 10_000)["window"] == 512          # capped
    assert window_for(4, 400)["window"] == 16                # at least 16
    assert window_for(12, 40)["window"] == 20                # at most half the training part
    assert window_for(19, 30)["window"] == 19                # but always a whole season


# ---------------------------------------------------------------- batches and budgets
def test_auto_batch_and_step_budget():
    assert resolve_batch("auto", 800) == 800 and resolve_batch("auto", 7000) == 256
    assert resolve_batch(0, 7000) == 7000 and resolve_batch(64, 10) == 10
    z = torch.tensor(np.sin(np.arange(400) / 5.0), dtype=torch.float32)
    ends = torch.arange(10, 300)
    torch.manual_seed(0)
    m = build_model(ModelSettings(window=10, d_model=8, ffn_dim=8))
    res = fit(m, z, ends, torch.zeros(0, dtype=torch.int64), 10, 1,
              TrainParams(epochs=50, batch_size=100, max_steps=7), progress=False)
    assert len(res.history) == 3  # 3 steps an epoch: stops after the epoch reaching 7


def test_noise_in_moves_follows_the_series():
    from attn_forecast.train import move_unit
    z = torch.tensor(np.cumsum(np.full(100, 0.01)), dtype=torch.float32)  # steps of 0.01
    z[::2] += 0.005
    unit = move_unit(z, torch.arange(10, 50), 10, 1)   # the span of inputs and targets: 0..49
    assert unit == pytest.approx(float(np.std(np.diff(z[:50].double().numpy()), ddof=1)))
    assert unit == pytest.approx(move_unit(z * 3, torch.arange(10, 50), 10, 1) / 3, rel=1e-6)


def test_auto_window_is_tiled_by_the_patches():
    got = window_for(7, 700, patch_len=7)
    assert got["window"] == 21 and "patches tile it" in got["reason"]
    assert window_for(48, 3200, patch_len=24)["window"] == 96
    assert window_for(48, 3200, patch_len=16, patch_stride=8)["window"] == 96
