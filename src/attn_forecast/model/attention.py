"""Scaled dot-product self-attention with learned Q/K/V projections.

    Attention(Q, K, V) = softmax(Q K^T / sqrt(d_k)) V,   Q = X W_Q, K = X W_K, V = X W_V

:func:`attention` is the explicit path and returns the weights (for evaluation and figures);
training takes PyTorch's fused ``scaled_dot_product_attention``, which computes the same output
without materialising the weights (the tests check the two agree).
"""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn


def attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
              dropout: nn.Module | None = None, keep: torch.Tensor | None = None
              ) -> tuple[torch.Tensor, torch.Tensor]:
    """q, k, v: (..., T, d_k). Returns output (..., T, d_k) and weights (..., T, T).

    Row i of the weights says how much query position i takes from each key position.
    ``keep`` (..., 1, T) bool: the keys that may be attended to (padding is not).
    """
    d_k = q.shape[-1]
    scores = q @ k.transpose(-2, -1) / math.sqrt(d_k)  # (..., T, T); without sqrt(d_k)
    if keep is not None:
        scores = scores.masked_fill(~keep, float("-inf"))
    weights = torch.softmax(scores, dim=-1)            # the softmax saturates as d_k grows
    mixed = dropout(weights) if dropout is not None else weights
    return mixed @ v, weights


class SelfAttention(nn.Module):
    """Multi-head self-attention with bias-free W_Q, W_K, W_V (d_model x d_model).

    With one head there is no output projection, exactly the source's layer; with several, a
    Linear(d_model, d_model) mixes the concatenated heads as in the Transformer.
    """

    def __init__(self, d_model: int, n_heads: int = 1, dropout: float = 0.0) -> None:
        super().__init__()
        assert d_model % n_heads == 0, "validated in params"
        self.n_heads = n_heads
        self.W_Q = nn.Linear(d_model, d_model, bias=False)
        self.W_K = nn.Linear(d_model, d_model, bias=False)
        self.W_V = nn.Linear(d_model, d_model, bias=False)
        self.out = nn.Linear(d_model, d_model) if n_heads > 1 else nn.Identity()
        self.p_drop = dropout
        self.drop = nn.Dropout(dropout) if dropout else nn.Identity()

    def forward(self, x: torch.Tensor, need_weights: bool = False,
                keep: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor | None]:
        """``keep`` (B, T) bool: the tokens that hold values (padding is never attended to)."""
        B, T, D = x.shape
        H = self.n_heads

        def heads(t: torch.Tensor) -> torch.Tensor:
            return t.view(B, T, H, D // H).transpose(1, 2)  # (B, H, T, d_k)

        # (B, 1, T, D) for one head: a view, no copy
        split = heads if H > 1 else (lambda t: t.unsqueeze(1))
        q, k, v = split(self.W_Q(x)), split(self.W_K(x)), split(self.W_V(x))
        mask = keep[:, None, None, :] if keep is not None else None    # (B, 1, 1, T)
        if need_weights:
            out, weights = attention(q, k, v, self.drop if self.training else None, mask)
        else:
            p = self.p_drop if self.training else 0.0
            out, weights = F.scaled_dot_product_attention(q, k, v, attn_mask=mask,
                                                          dropout_p=p), None
        out = out.transpose(1, 2).reshape(B, T, D) if H > 1 else out.squeeze(1)  # (B, T, D)
        return self.out(out), weights
