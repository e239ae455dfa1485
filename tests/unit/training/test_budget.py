"""Unit tests of what real series need from the model and its training: instance
normalization (revin, last, seasonal), patches, a calendar model with patches and a highway,
mini-batches and step budgets, and augmentation noise in units of the series' own moves."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from attn_forecast.model.networks import build_model
from attn_forecast.model.norms import InstanceNorm
from attn_forecast.model.settings import ModelSettings
from attn_forecast.config.load import parse_params
from attn_forecast.training.settings import TrainSettings
from attn_forecast.errors import ParamsError
from attn_forecast.training.batches import move_unit, resolve_batch
from attn_forecast.training.loop import fit_windows

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
        assert torch.allclose(z.std(1, unbiased=False), torch.ones(8, dtype=torch.float64),
                              atol=1e-6)
    if kind == "last":
        assert torch.equal(z[:, -1], torch.zeros(8, dtype=torch.float64))
    # the model's output in normalized units maps back to the window's own units; a window
    # that the model "predicts" as itself comes back as itself
    back = norm.denormalize(z, stats)
    assert torch.allclose(back, x, rtol=0, atol=1e-9 * 1000)
    # quantiles (B, H, Q) go back with the same statistics as the point forecast
    q = torch.stack([z, z + 1.0], dim=-1)
    back_q = norm.denormalize(q, stats)
    assert torch.allclose(back_q[..., 0], back, atol=1e-9)


def test_seasonal_norm_adds_back_the_value_one_season_before_each_step():
    norm = InstanceNorm("seasonal", False, season=4, horizon=3)
    x = torch.tensor([[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 9.0]])
    z, stats = norm.normalize(x)
    assert torch.equal(z, x - 9.0)                      # minus the last value on the way in
    # step h (1-based) of the forecast is x[W - 4 + h - 1]: 5, 6, 7 (one season before)
    assert torch.equal(norm.denormalize(torch.zeros(1, 3), stats), torch.tensor([[5., 6., 7.]]))
    assert torch.equal(norm.denormalize(torch.ones(1, 3), stats), torch.tensor([[6., 7., 8.]]))
    # a model of zeros in normalized units is exactly seasonal naive
    m = build_model(ModelSettings(window=8, horizon=3, d_model=8, ffn_dim=8,
                                  instance_norm="seasonal", season=4))
    with torch.no_grad():
        m.head[2].weight.zero_()
        m.head[2].bias.zero_()
        assert torch.equal(m(x)[0], torch.tensor([[5.0, 6.0, 7.0]]))


def test_seasonal_norm_repeats_the_last_season_past_one_season():
    """A horizon longer than the season (M3 monthly: 18 steps at season 12) is anchored on
    seasonal naive's forecast: the last season, repeated."""
    norm = InstanceNorm("seasonal", False, season=3, horizon=7)
    x = torch.tensor([[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]])
    _, stats = norm.normalize(x)
    assert torch.equal(norm.denormalize(torch.zeros(1, 7), stats),
                       torch.tensor([[4.0, 5.0, 6.0, 4.0, 5.0, 6.0, 4.0]]))


def test_a_season_longer_than_a_window_is_a_one_line_error():
    from types import SimpleNamespace

    from attn_forecast.setup.forecasting import check_data
    from attn_forecast.setup.training import member_settings, model_settings
    p = parse_params({"model": {"instance_norm": "seasonal", "lookbacks": [6, 24]},
                      "prepare": {"window": 24, "horizon": 18}, "evaluate": {"season": 12}})
    store = SimpleNamespace(auto={}, window=24, horizon=18,
                            cuts=SimpleNamespace(test_start=np.array([100])))
    assert check_data(p, store) == 12      # a horizon past the season is allowed
    base = ModelSettings(window=24, horizon=18, instance_norm="seasonal", season=12)
    with pytest.raises(ParamsError, match=r"model.lookbacks has 6, below evaluate.season 12"):
        member_settings(p, base)
    p = parse_params({"model": {"instance_norm": "seasonal", "lookbacks": [12, 24]},
                      "prepare": {"window": 24, "horizon": 18}, "evaluate": {"season": 12}})
    assert [m.window for m in member_settings(p, base)] == [24, 12]
    store.window, store.n_time_features, store.n_features = 8, 0, 0
    with pytest.raises(ParamsError, match=r"at most prepare.window \(8\), got evaluate.se"):
        model_settings(p, store, check_data(p, store))


def test_instance_norm_lets_the_model_forecast_at_a_new_level():
    """Shifting a window shifts the forecast by exactly as much (revin, last and seasonal):
    what makes a trend reachable; revin also scales it with the window."""
    for kind in ("revin", "last", "seasonal"):
        torch.manual_seed(1)
        m = build_model(ModelSettings(window=12, horizon=2, d_model=8, ffn_dim=8,
                                      instance_norm=kind, season=6, highway=True))
        x = torch.randn(4, 12)
        with torch.no_grad():
            assert torch.allclose(m(x + 100.0)[0], m(x)[0] + 100.0, atol=1e-3), kind
    torch.manual_seed(2)
    m = build_model(ModelSettings(window=12, d_model=8, ffn_dim=8, instance_norm="revin"))
    x = torch.randn(4, 12)
    with torch.no_grad():
        assert torch.allclose(m(x * 10.0)[0], m(x)[0] * 10.0, atol=1e-3)
    plain = build_model(ModelSettings(window=12, d_model=8, ffn_dim=8))
    with torch.no_grad():                               # without it, no such guarantee
        assert not torch.allclose(plain(x + 100.0)[0], plain(x)[0] + 100.0, atol=1e-3)


# ---------------------------------------------------------------- patches
@pytest.mark.parametrize("W, P, S", [(48, 12, 12), (48, 12, 6), (60, 6, 3), (336, 24, 24)])
def test_patches_cover_the_window(W, P, S):
    s = ModelSettings(window=W, patch_len=P, patch_stride=S)
    covered = np.zeros(W, dtype=int)
    for first, last in s.token_steps():
        covered[first:last + 1] += 1
    assert (covered >= 1).all()                       # every step is in a patch
    assert s.token_steps()[-1][1] == W - 1            # the last patch ends at the newest step
    assert s.n_tokens == (W - P) // S + 1
    if S == P:
        assert (covered == 1).all()                   # side by side: each step exactly once
    m = build_model(s)
    x = torch.arange(2 * W, dtype=torch.float32).reshape(2, W)
    tok = m.tokens(x, None)
    assert tok.shape == (2, s.n_tokens, P)
    for i, (first, last) in enumerate(s.token_steps()):
        assert torch.equal(tok[0, i], x[0, first:last + 1])
    with torch.no_grad():
        y, w = m(x[:, :W], need_weights=True)
    assert y.shape == (2, 1) and w[0].shape == (2, 1, s.n_tokens, s.n_tokens)


def test_a_patchs_calendar_is_its_newest_steps():
    s = ModelSettings(window=12, patch_len=4, patch_stride=2, n_time_features=2)
    m = build_model(s)
    x = torch.zeros(1, 12)
    cal_in = torch.arange(24, dtype=torch.float32).reshape(1, 12, 2)
    tok = m.tokens(x, (cal_in, torch.zeros(1, 1, 2)))
    assert tok.shape == (1, 5, 4 + 2)
    for i, (_, last) in enumerate(s.token_steps()):
        assert torch.equal(tok[0, i, 4:], cal_in[0, last])


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


def test_the_highway_adds_a_linear_forecast_of_the_window():
    torch.manual_seed(4)
    s = ModelSettings(window=10, horizon=2, d_model=8, ffn_dim=8, highway=True)
    m = build_model(s).eval()
    x = torch.randn(3, 10)
    with torch.no_grad():
        with_hw = m(x)[0]
        linear = x @ m.highway.weight.T + m.highway.bias
        m.highway.weight.zero_()
        m.highway.bias.zero_()
        assert torch.allclose(with_hw - m(x)[0], linear, atol=1e-5)


# ---------------------------------------------------------------- batches and budgets
def test_auto_batch_and_step_budget():
    assert resolve_batch("auto", 800) == 800 and resolve_batch("auto", 7000) == 256
    assert resolve_batch("auto", 1024) == 1024 and resolve_batch("auto", 1025) == 256
    assert resolve_batch(0, 7000) == 7000 and resolve_batch(64, 10) == 10
    assert resolve_batch(64, 7000) == 64
    z = torch.tensor(np.sin(np.arange(400) / 5.0), dtype=torch.float32)
    ends = torch.arange(10, 300)
    torch.manual_seed(0)
    m = build_model(ModelSettings(window=10, d_model=8, ffn_dim=8))
    res = fit_windows(m, z, ends, torch.zeros(0, dtype=torch.int64),
                      TrainSettings(epochs=50, batch_size=100, max_steps=7), progress=False)
    assert len(res.history) == 3  # 3 steps an epoch: the third epoch stops after its first
    # the last epoch's loss is the mean over the one batch it took: rerun that step by hand
    torch.manual_seed(0)
    m2 = build_model(ModelSettings(window=10, d_model=8, ffn_dim=8))
    res6 = fit_windows(m2, z, ends, torch.zeros(0, dtype=torch.int64),
                       TrainSettings(epochs=2, batch_size=100), progress=False)
    assert [r["train_loss"] for r in res.history[:2]] == \
        pytest.approx([r["train_loss"] for r in res6.history], rel=1e-6)
    res1 = fit_windows(build_model(ModelSettings(window=10, d_model=8, ffn_dim=8)), z, ends,
                       torch.zeros(0, dtype=torch.int64),
                       TrainSettings(epochs=1, batch_size=100, max_steps=1), progress=False)
    assert len(res1.history) == 1 and res1.history[0]["train_loss"] > 0


def test_noise_in_moves_follows_the_series():
    z = torch.tensor(np.cumsum(np.full(100, 0.01)), dtype=torch.float32)  # steps of 0.01
    z[::2] += 0.005
    unit = move_unit(z, torch.arange(10, 50), 10, 1)   # the span of inputs and targets: 0..49
    assert unit == pytest.approx(float(np.std(np.diff(z[:50].double().numpy()), ddof=1)))
    assert unit == pytest.approx(move_unit(z * 3, torch.arange(10, 50), 10, 1) / 3, rel=1e-6)


def test_training_with_noise_in_moves_scales_the_noise_by_the_series():
    """The same series at 1000 times the scale, with noise in moves, trains the same model:
    the noise follows the series (in scaled units it would swamp the small one)."""
    base = np.sin(np.arange(200) / 4.0) + 0.01 * np.arange(200)
    ends = torch.arange(10, 160)
    none = torch.zeros(0, dtype=torch.int64)
    p = TrainSettings(epochs=5, lr=0.01, augment_noise=0.5, augment_units="moves", ensemble=1)
    out = []
    for k in (1.0, 1000.0):
        z = torch.tensor(base * k, dtype=torch.float32)
        torch.manual_seed(0)
        m = build_model(ModelSettings(window=10, d_model=8, ffn_dim=8, instance_norm="revin",
                                      revin_affine=False))
        res = fit_windows(m, z, ends, none, p, progress=False)
        out.append(res.history[-1]["train_loss"] / k ** 2)
    assert out[0] == pytest.approx(out[1], rel=1e-2)
