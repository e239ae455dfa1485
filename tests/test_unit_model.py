"""Unit tests for attn_forecast.model: size, shapes, variants, checkpoints, seeded init."""
from __future__ import annotations

import math

import pytest
import torch
from torch import nn

from attn_forecast.model import (
    AttentionForecaster, LSTMForecaster, ModelSettings, build_model, load_checkpoint,
    n_parameters, save_checkpoint, sinusoidal_positions,
)


pytestmark = pytest.mark.usefixtures("one_torch_thread")


def test_default_model_has_source_parameter_count():
    # Linear(1,32) 64 + 3 x Linear(32,32,no bias) 3072 + Linear(32,64) 2112 + Linear(64,1) 65
    m = build_model(ModelSettings())
    assert isinstance(m, AttentionForecaster)
    assert n_parameters(m) == 5313


@pytest.mark.parametrize("horizon", [1, 5])
@pytest.mark.parametrize("n_heads,n_layers", [(1, 1), (4, 2)])
def test_output_and_weight_shapes(horizon, n_heads, n_layers):
    torch.manual_seed(0)
    s = ModelSettings(window=12, horizon=horizon, n_heads=n_heads, n_layers=n_layers)
    m = build_model(s).eval()
    x = torch.randn(6, 12)
    with torch.no_grad():
        y, w = m(x, need_weights=True)
        y_fast, none = m(x)
    assert y.shape == (6, horizon)
    assert none is None
    assert torch.allclose(y, y_fast, atol=1e-5)
    assert isinstance(w, list) and len(w) == n_layers
    for layer in w:
        assert layer.shape == (6, n_heads, 12, 12)
        assert (layer >= 0).all()
        assert torch.allclose(layer.sum(-1), torch.ones(6, n_heads, 12), atol=1e-5)


VARIANTS = [
    dict(residual=True, n_layers=2),
    dict(positional="learned"),
    dict(positional="none"),
    dict(pooling="mean"),
    dict(residual=True, pooling="mean", positional="learned", n_heads=2, dropout=0.1),
    dict(kind="lstm"),
    dict(kind="lstm", n_layers=2, pooling="mean", dropout=0.2),
]


@pytest.mark.parametrize("kw", VARIANTS)
def test_variants_build_run_and_backprop(kw):
    torch.manual_seed(0)
    s = ModelSettings(window=8, horizon=3, d_model=16, ffn_dim=24, **kw)
    m = build_model(s)
    assert isinstance(m, LSTMForecaster if kw.get("kind") == "lstm" else AttentionForecaster)
    x = torch.randn(4, 8)
    m.train()
    y, _ = m(x)
    assert y.shape == (4, 3)
    y.pow(2).mean().backward()
    grads = [p.grad for p in m.parameters() if p.requires_grad]
    assert all(g is not None and torch.isfinite(g).all() for g in grads)
    m.eval()
    with torch.no_grad():
        out, w = m(x, need_weights=True)
    assert torch.isfinite(out).all()
    if kw.get("kind") == "lstm":
        assert w is None
    else:
        assert len(w) == s.n_layers


def test_positional_variants_differ():
    s = ModelSettings(window=6, d_model=8)
    assert torch.equal(build_model(ModelSettings(window=6, d_model=8, positional="none")).pos,
                       torch.zeros(6, 8))
    pe = build_model(s).pos
    # PE[p, 0] = sin(p), PE[p, 1] = cos(p), PE[p, 2] = sin(p / 10000^(2/8))
    for p in range(6):
        assert pe[p, 0].item() == pytest.approx(math.sin(p), abs=1e-6)
        assert pe[p, 1].item() == pytest.approx(math.cos(p), abs=1e-6)
        assert pe[p, 2].item() == pytest.approx(math.sin(p / 10000 ** (2 / 8)), abs=1e-6)
        assert pe[p, 7].item() == pytest.approx(math.cos(p / 10000 ** (6 / 8)), abs=1e-6)
    assert sinusoidal_positions(6, 8).shape == (6, 8)
    learned = build_model(ModelSettings(window=6, d_model=8, positional="learned"))
    assert isinstance(learned.pos, nn.Parameter)


@pytest.mark.parametrize("kw", [dict(), dict(positional="learned", residual=True, n_heads=2,
                                              horizon=3), dict(kind="lstm", n_layers=2)])
def test_checkpoint_round_trip(tmp_path, kw):
    torch.manual_seed(3)
    s = ModelSettings(window=10, **kw)
    m = build_model(s).eval()
    extra = {"prepare": {"window": 10, "horizon": s.horizon, "transform": "none",
                         "scaler": {"kind": "zscore", "center": 0.5, "scale": 2.0}}}
    path = tmp_path / "sub" / "model.pt"
    save_checkpoint(path, m, extra)
    assert path.is_file()
    # plain data only: loads with weights_only=True
    payload = torch.load(path, weights_only=True)
    assert payload["settings"] == s.to_dict()
    loaded, payload2 = load_checkpoint(path)
    assert payload2["prepare"] == extra["prepare"]
    assert not loaded.training
    x = torch.randn(7, 10)
    with torch.no_grad():
        assert torch.equal(m(x)[0], loaded(x)[0])


def test_seeded_init_matches_source_creation_order():
    torch.manual_seed(42)
    emb = nn.Linear(1, 32)
    wq = nn.Linear(32, 32, bias=False)
    wk = nn.Linear(32, 32, bias=False)
    wv = nn.Linear(32, 32, bias=False)
    fc1 = nn.Linear(32, 64)
    fc2 = nn.Linear(64, 1)
    torch.manual_seed(42)
    m = build_model(ModelSettings())
    attn = m.blocks[0].attn
    pairs = [(m.embedding.weight, emb.weight), (m.embedding.bias, emb.bias),
             (attn.W_Q.weight, wq.weight), (attn.W_K.weight, wk.weight),
             (attn.W_V.weight, wv.weight), (m.head[0].weight, fc1.weight),
             (m.head[0].bias, fc1.bias), (m.head[2].weight, fc2.weight),
             (m.head[2].bias, fc2.bias)]
    for ours, src in pairs:
        assert torch.equal(ours, src)


def test_checkpoint_bytes_are_deterministic(tmp_path):
    torch.manual_seed(5)
    m = build_model(ModelSettings(window=6, d_model=8, ffn_dim=8))
    extra = {"prepare": {"window": 6}}
    a, b = tmp_path / "a.pt", tmp_path / "dir" / "b.pt"
    save_checkpoint(a, m, extra)
    save_checkpoint(b, m, extra)
    assert a.read_bytes() == b.read_bytes()
    # and they differ when the weights differ
    with torch.no_grad():
        m.head[2].bias.add_(1.0)
    save_checkpoint(b, m, extra)
    assert a.read_bytes() != b.read_bytes()
    assert sorted(p.name for p in tmp_path.rglob("*") if p.is_file()) == ["a.pt", "b.pt"]
