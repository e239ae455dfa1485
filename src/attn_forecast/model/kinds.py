"""Each network kind (``model.kind``) as the pipeline knows it before torch loads: how many
states its network hands the shared head, the size of one window's forward pass (FLOPs, and
the floats kept for the backward pass) and whether it reads the window as tokens (heads,
positions and patches apply). The stages that never import torch (params are checked in every
stage) read these; the network itself, a class in model/networks.py, names its kind.

A new kind: a subclass here with its entry in :data:`REGISTRY`, and its network in
model/networks.py (a subclass of ``Network`` whose ``kind`` is the new class, with its entry in
``NETWORKS``); the schema's ``model.kind``, the head's width, ``train.threads: auto``, the
memory warning and the params rules follow (tests/unit/model/test_kinds.py adds one).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .settings import ModelSettings


class Kind:
    """A network kind's facts; each method takes the model's settings."""
    name = ""
    tokens = False      # heads, positions and patches apply (model.n_heads, patch_len...)

    @staticmethod
    def states(s: ModelSettings) -> int:
        """How many (d_model) states the network hands its head (``flatten`` pools them all)."""
        return 1

    @staticmethod
    def flops(s: ModelSettings) -> float:
        """Multiply-adds of one window's forward pass, head included."""
        raise NotImplementedError

    @staticmethod
    def activations(s: ModelSettings) -> float:
        """Floats one window's forward pass keeps for the backward pass (fitted to measured
        peaks within about 30 %: window 10-96, d_model 32-64, 1-4 heads)."""
        raise NotImplementedError


class Attention(Kind):
    """The source's Q/K/V attention over the window's tokens (one per step, or patches)."""
    name = "attention"
    tokens = True

    @staticmethod
    def states(s: ModelSettings) -> int:
        return s.n_tokens

    @staticmethod
    def flops(s: ModelSettings) -> float:
        W, d, f = s.window, s.d_model, s.ffn_dim
        proj = 3 * d * d + (d * d if s.n_heads > 1 else 0)   # W_Q, W_K, W_V (+ out)
        mix = 2 * W * d                                      # scores and weighted sum
        ffn = 2 * d * f if s.residual else 0
        return s.n_layers * W * (proj + mix + ffn) + W * d + d * f

    @staticmethod
    def activations(s: ModelSettings) -> float:
        W, d = s.window, s.d_model
        per_layer = 5 * W * d + s.n_heads * W * W + (2 * W * s.ffn_dim if s.residual else 0)
        return s.n_layers * per_layer + 2 * W * d


class LSTM(Kind):
    """The lecture's RNN comparison: an LSTM over the window's steps."""
    name = "lstm"

    @staticmethod
    def states(s: ModelSettings) -> int:
        return s.window

    @staticmethod
    def flops(s: ModelSettings) -> float:
        W, d = s.window, s.d_model
        return s.n_layers * W * 8 * d * (d + 1) + 2 * d * s.ffn_dim

    @staticmethod
    def activations(s: ModelSettings) -> float:
        return s.n_layers * s.window * s.d_model * 16


class MLP(Kind):
    """The ablation without attention or recurrence: the window flattened through layers."""
    name = "mlp"

    @staticmethod
    def flops(s: ModelSettings) -> float:
        W, d = s.window, s.d_model
        return W * d + (s.n_layers - 1) * d * d + d * s.ffn_dim

    @staticmethod
    def activations(s: ModelSettings) -> float:
        return s.window + 2 * s.n_layers * s.d_model


# every kind, by its model.kind name
REGISTRY: dict[str, type[Kind]] = {k.name: k for k in (Attention, LSTM, MLP)}
KINDS = tuple(REGISTRY)     # model.kind's choices (the schema's), in this order


def kind_of(s: ModelSettings) -> type[Kind]:
    return REGISTRY[s.kind]


def with_tokens() -> list[str]:
    """The kinds whose rules for heads, positions and patches apply."""
    return [name for name, k in REGISTRY.items() if k.tokens]
