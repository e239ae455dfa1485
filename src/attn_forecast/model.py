"""Forecasters: the source's Q/K/V attention predictor (and its deeper variants) and an LSTM.

Both map a window (B, W) of scaled values to the next H values (B, H). The model settings are
plain data, saved in the checkpoint beside the ``state_dict``.

Attention model, with the defaults being the source's model (5,313 parameters)::

    x (B, W) -> Linear(1, d) -> + positions -> [block] x n_layers -> pool -> head -> (B, H)
    block, residual off:  x = attn(x)                     (the source: no norm, no skip)
    block, residual on:   x = x + attn(LN(x));  x = x + FFN(LN(x))          (pre-norm)
    head:  Linear(d, ffn_dim) -> ReLU -> Linear(ffn_dim, H)
"""
from __future__ import annotations

import io
import math
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
from torch import nn

from .attention import SelfAttention
from .io import atomic_path


@dataclass(frozen=True)
class ModelSettings:
    kind: str = "attention"
    window: int = 10
    horizon: int = 1
    d_model: int = 32
    ffn_dim: int = 64
    n_heads: int = 1
    n_layers: int = 1
    positional: str = "sinusoidal"
    residual: bool = False
    pooling: str = "last"
    dropout: float = 0.0

    def to_dict(self) -> dict:
        return asdict(self)


def sinusoidal_positions(length: int, d_model: int) -> torch.Tensor:
    """(length, d_model): PE[p, 2i] = sin(p / 10000^(2i/d)), PE[p, 2i+1] = cos(...)."""
    pos = torch.arange(length, dtype=torch.float64)[:, None]
    div = torch.exp(torch.arange(0, d_model, 2, dtype=torch.float64)
                    * -(math.log(10000.0) / d_model))
    pe = torch.zeros(length, d_model, dtype=torch.float64)
    pe[:, 0::2] = torch.sin(pos * div)
    pe[:, 1::2] = torch.cos(pos * div)
    return pe.float()


def _head(d_model: int, ffn_dim: int, horizon: int) -> nn.Sequential:
    return nn.Sequential(nn.Linear(d_model, ffn_dim), nn.ReLU(), nn.Linear(ffn_dim, horizon))


class Block(nn.Module):
    def __init__(self, s: ModelSettings) -> None:
        super().__init__()
        self.attn = SelfAttention(s.d_model, s.n_heads, s.dropout)
        self.residual = s.residual
        self.drop = nn.Dropout(s.dropout) if s.dropout else nn.Identity()
        if s.residual:
            self.norm1 = nn.LayerNorm(s.d_model)
            self.norm2 = nn.LayerNorm(s.d_model)
            self.ffn = nn.Sequential(nn.Linear(s.d_model, s.ffn_dim), nn.ReLU(),
                                     nn.Linear(s.ffn_dim, s.d_model))

    def forward(self, x: torch.Tensor, need_weights: bool):
        if not self.residual:
            out, w = self.attn(x, need_weights)
            return self.drop(out), w
        out, w = self.attn(self.norm1(x), need_weights)
        x = x + self.drop(out)
        return x + self.drop(self.ffn(self.norm2(x))), w


class AttentionForecaster(nn.Module):
    def __init__(self, s: ModelSettings) -> None:
        super().__init__()
        self.settings = s
        # creation order = the source's, so a seed gives the source's initial weights
        self.embedding = nn.Linear(1, s.d_model)
        if s.positional == "learned":
            self.pos = nn.Parameter(torch.randn(s.window, s.d_model) * 0.02)
        else:
            pe = sinusoidal_positions(s.window, s.d_model) if s.positional == "sinusoidal" \
                else torch.zeros(s.window, s.d_model)
            self.register_buffer("pos", pe, persistent=False)
        self.blocks = nn.ModuleList(Block(s) for _ in range(s.n_layers))
        self.norm = nn.LayerNorm(s.d_model) if s.residual else nn.Identity()
        self.head = _head(s.d_model, s.ffn_dim, s.horizon)

    def forward(self, x: torch.Tensor, need_weights: bool = False):
        """x (B, W) -> prediction (B, H), and per layer the weights (B, heads, W, W)."""
        h = self.embedding(x.unsqueeze(-1)) + self.pos  # (B, W, d)
        weights = []
        for block in self.blocks:
            h, w = block(h, need_weights)
            weights.append(w)
        h = self.norm(h)
        pooled = h[:, -1] if self.settings.pooling == "last" else h.mean(dim=1)  # (B, d)
        return self.head(pooled), (weights if need_weights else None)


class LSTMForecaster(nn.Module):
    """The lecture's RNN comparison: LSTM(hidden d_model, n_layers) -> last state -> head."""

    def __init__(self, s: ModelSettings) -> None:
        super().__init__()
        self.settings = s
        self.lstm = nn.LSTM(1, s.d_model, num_layers=s.n_layers, batch_first=True,
                            dropout=s.dropout if s.n_layers > 1 else 0.0)
        self.head = _head(s.d_model, s.ffn_dim, s.horizon)

    def forward(self, x: torch.Tensor, need_weights: bool = False):
        out, _ = self.lstm(x.unsqueeze(-1))  # (B, W, d)
        pooled = out[:, -1] if self.settings.pooling == "last" else out.mean(dim=1)
        return self.head(pooled), None


class Ensemble(nn.Module):
    """The mean forecast of several models with the same settings and other seeds
    (``train.ensemble``); the attention weights it reports are the first member's."""

    def __init__(self, members: list[nn.Module]) -> None:
        super().__init__()
        self.members = nn.ModuleList(members)
        self.settings = members[0].settings

    @property
    def blocks(self):  # the first member's attention blocks (None for an LSTM)
        return getattr(self.members[0], "blocks", None)

    def forward(self, x: torch.Tensor, need_weights: bool = False):
        outs = [m(x, need_weights and i == 0) for i, m in enumerate(self.members)]
        return torch.stack([o[0] for o in outs]).mean(dim=0), outs[0][1]


def build_model(s: ModelSettings, members: int = 1) -> nn.Module:
    """The model ``s`` describes; an :class:`Ensemble` of ``members`` of them if > 1."""
    if members > 1:
        return Ensemble([build_model(s) for _ in range(members)])
    return AttentionForecaster(s) if s.kind == "attention" else LSTMForecaster(s)


def n_parameters(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters() if p.requires_grad)


def save_checkpoint(path: str | Path, model: nn.Module, extra: dict) -> None:
    """state_dict + settings (+ the prepare metadata) as plain data; no pickled objects."""
    payload = {"settings": model.settings.to_dict(),
               "members": len(model.members) if isinstance(model, Ensemble) else 1,
               "state_dict": {k: v.detach().cpu() for k, v in model.state_dict().items()},
               **extra}
    buf = io.BytesIO()  # a buffer names the zip's inner folder "archive", not the temp file
    torch.save(payload, buf)
    with atomic_path(path) as tmp:
        tmp.write_bytes(buf.getvalue())


def load_checkpoint(path: str | Path, device: str | torch.device = "cpu"
                    ) -> tuple[nn.Module, dict]:
    payload = torch.load(path, map_location=device, weights_only=True)
    return model_from_payload(payload, device), payload


def model_from_payload(payload: dict, device: str | torch.device = "cpu") -> nn.Module:
    """The model a loaded checkpoint describes, with its weights, in eval mode."""
    model = build_model(ModelSettings(**payload["settings"]), payload.get("members", 1))
    model.load_state_dict(payload["state_dict"])
    return model.to(device).eval()
