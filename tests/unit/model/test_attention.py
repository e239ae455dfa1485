"""Unit tests for attn_forecast.attention against hand-worked numbers and PyTorch's own layers
(scaled_dot_product_attention, MultiheadAttention), and its dropout."""
from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from attn_forecast.model.attention import SelfAttention, attention


pytestmark = pytest.mark.usefixtures("one_torch_thread")


def _identity_layer() -> SelfAttention:
    sa = SelfAttention(2, n_heads=1)
    with torch.no_grad():
        for lin in (sa.W_Q, sa.W_K, sa.W_V):
            lin.weight.copy_(torch.eye(2))
    return sa.eval()


# Two tokens, d = 2, Q = K = V = X, scale 1/sqrt(2):
# softmax([1/sqrt2, 0]) = [e^0.7071, 1] / (e^0.7071 + 1) = [0.6698, 0.3302]
HAND = [
    ([[1.0, 0.0], [0.0, 1.0]],
     [[0.6698, 0.3302], [0.3302, 0.6698]],
     [[0.6698, 0.3302], [0.3302, 0.6698]]),
    ([[1.0, 0.0], [1.0, 1.0]],
     [[0.5, 0.5], [0.3302, 0.6698]],
     [[1.0, 0.5], [1.0, 0.6698]]),
]


@pytest.mark.parametrize("x,weights,out", HAND)
def test_hand_worked_attention_function(x, weights, out):
    X = torch.tensor([x])
    o, w = attention(X, X, X)
    assert torch.allclose(w, torch.tensor([weights]), atol=1e-4)
    assert torch.allclose(o, torch.tensor([out]), atol=1e-4)


@pytest.mark.parametrize("x,weights,out", HAND)
@pytest.mark.parametrize("need_weights", [True, False])
def test_hand_worked_self_attention_identity_projections(x, weights, out, need_weights):
    sa = _identity_layer()
    with torch.no_grad():
        o, w = sa(torch.tensor([x]), need_weights=need_weights)
    assert torch.allclose(o, torch.tensor([out]), atol=1e-4)
    if need_weights:
        assert w.shape == (1, 1, 2, 2)
        assert torch.allclose(w[0, 0], torch.tensor(weights), atol=1e-4)
    else:
        assert w is None


def test_attention_matches_torch_sdpa():
    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(3, 4, 7, 8, generator=g, dtype=torch.float64) for _ in range(3))
    o, w = attention(q, k, v)
    ref = F.scaled_dot_product_attention(q, k, v)
    assert o.shape == (3, 4, 7, 8) and w.shape == (3, 4, 7, 7)
    assert torch.allclose(o, ref, atol=1e-10)
    assert torch.allclose(w.sum(-1), torch.ones(3, 4, 7, dtype=torch.float64), atol=1e-12)


def test_attention_weights_match_explicit_softmax_large_dk():
    # the scale is 1/sqrt(d_k) of the key size, compare with torch's sdpa on a wide head
    g = torch.Generator().manual_seed(1)
    q, k, v = (torch.randn(2, 5, 64, generator=g, dtype=torch.float64) * 3 for _ in range(3))
    o, _ = attention(q, k, v)
    assert torch.allclose(o, F.scaled_dot_product_attention(q, k, v), atol=1e-10)


@pytest.mark.parametrize("n_heads", [1, 2, 4])
def test_need_weights_and_fast_path_agree(n_heads):
    torch.manual_seed(0)
    sa = SelfAttention(16, n_heads=n_heads).eval()
    x = torch.randn(5, 9, 16)
    with torch.no_grad():
        slow, w = sa(x, need_weights=True)
        fast, none = sa(x, need_weights=False)
    assert none is None
    assert w.shape == (5, n_heads, 9, 9)
    assert torch.allclose(slow, fast, atol=1e-5)
    assert torch.allclose(w.sum(-1), torch.ones(5, n_heads, 9), atol=1e-5)


def test_single_head_matches_multihead_attention():
    torch.manual_seed(0)
    d = 16
    sa = SelfAttention(d, n_heads=1).eval()
    mha = nn.MultiheadAttention(d, 1, bias=False, batch_first=True).eval()
    with torch.no_grad():
        mha.in_proj_weight.copy_(torch.cat([sa.W_Q.weight, sa.W_K.weight, sa.W_V.weight]))
        mha.out_proj.weight.copy_(torch.eye(d))
        if mha.out_proj.bias is not None:
            mha.out_proj.bias.zero_()
    x = torch.randn(4, 7, d)
    with torch.no_grad():
        out, w = sa(x, need_weights=True)
        ref, ref_w = mha(x, x, x, need_weights=True, average_attn_weights=False)
    assert torch.allclose(out, ref, atol=1e-5)
    assert torch.allclose(w, ref_w, atol=1e-6)


def test_four_heads_match_multihead_attention():
    torch.manual_seed(1)
    d, h = 32, 4
    sa = SelfAttention(d, n_heads=h).eval()
    assert isinstance(sa.out, nn.Linear)
    mha = nn.MultiheadAttention(d, h, bias=True, batch_first=True).eval()
    with torch.no_grad():
        mha.in_proj_weight.copy_(torch.cat([sa.W_Q.weight, sa.W_K.weight, sa.W_V.weight]))
        mha.in_proj_bias.zero_()  # W_Q, W_K, W_V are bias-free
        mha.out_proj.weight.copy_(sa.out.weight)
        mha.out_proj.bias.copy_(sa.out.bias)
    x = torch.randn(3, 10, d)
    with torch.no_grad():
        out, w = sa(x, need_weights=True)
        fast, _ = sa(x, need_weights=False)
        ref, ref_w = mha(x, x, x, need_weights=True, average_attn_weights=False)
    assert w.shape == ref_w.shape == (3, h, 10, 10)
    assert torch.allclose(out, ref, atol=1e-5)
    assert torch.allclose(fast, ref, atol=1e-5)
    assert torch.allclose(w, ref_w, atol=1e-6)


def test_projections_are_bias_free_and_square():
    sa = SelfAttention(8, n_heads=2)
    for lin in (sa.W_Q, sa.W_K, sa.W_V):
        assert lin.bias is None and lin.weight.shape == (8, 8)
    assert isinstance(SelfAttention(8, n_heads=1).out, nn.Identity)


@pytest.mark.parametrize("need_weights", [True, False])
def test_dropout_acts_in_training_only(need_weights):
    torch.manual_seed(2)
    sa = SelfAttention(8, n_heads=2, dropout=0.5)
    plain = SelfAttention(8, n_heads=2)
    plain.load_state_dict(sa.state_dict())
    x = torch.randn(3, 6, 8)
    with torch.no_grad():
        sa.eval()
        plain.eval()
        assert torch.allclose(sa(x, need_weights)[0], plain(x, need_weights)[0], atol=1e-6)
        sa.train()
        dropped, w = sa(x, need_weights)
    assert not torch.allclose(dropped, plain(x, need_weights)[0], atol=1e-3)
    if need_weights:  # the weights reported are the softmax itself, before dropout
        assert torch.allclose(w, plain(x, need_weights=True)[1], atol=1e-6)
