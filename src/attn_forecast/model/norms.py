"""Reversible per-window normalization: each window by its own statistics on the way in,
the forecast mapped back on the way out (RevIN and its relatives)."""
from __future__ import annotations

import torch
from torch import nn


class InstanceNorm(nn.Module):
    """Reversible per-window normalization of the values: ``revin`` (mean and std of the
    window, learned affine optional), ``last`` (minus the window's last value), ``seasonal``
    (minus the last value on the way in; on the way out each step is added to seasonal
    naive's forecast of it, the last season repeated: the model forecasts the change from
    seasonal naive), ``mean`` (divided by the window's mean absolute value: relative units, as
    DeepAR and Chronos scale), or ``delta`` (minus the last value, divided by the window's mean
    absolute one-step change: the change from the last value in units of the series' typical
    move). Statistics are over the steps that hold values (``seen``); padding becomes 0."""

    def __init__(self, kind: str, affine: bool, eps: float = 1e-5, season: int = 0,
                 horizon: int = 1) -> None:
        super().__init__()
        self.kind, self.eps, self.season, self.horizon = kind, eps, season, horizon
        self.affine = affine and kind == "revin"
        if self.affine:
            self.gamma = nn.Parameter(torch.ones(1))
            self.beta = nn.Parameter(torch.zeros(1))

    def normalize(self, x: torch.Tensor, seen: torch.Tensor | None = None
                  ) -> tuple[torch.Tensor, tuple]:
        """x (B, W) -> normalized x and the statistics to undo it with."""
        out, stats = self._normalize(x, seen)
        return (out if seen is None else out * seen), stats

    def _normalize(self, x: torch.Tensor, seen: torch.Tensor | None) -> tuple:
        if self.kind == "last":
            center = x[:, -1:]
            return x - center, (center, None)
        if self.kind == "seasonal":  # step h's anchor: seasonal naive, the last season's
            W, m = x.shape[1], self.season                            # value repeated
            anchor = x[:, W - m + torch.arange(self.horizon, device=x.device) % m]  # (B, H)
            return x - x[:, -1:], (anchor, None)
        if seen is None:
            mean = lambda v: v.mean(dim=1, keepdim=True)  # noqa: E731
        else:
            n = seen.sum(dim=1, keepdim=True)
            mean = lambda v: (v * seen).sum(dim=1, keepdim=True) / n  # noqa: E731
        if self.kind == "delta":   # the change from the last value, in units of a move
            step = (x[:, 1:] - x[:, :-1]).abs()
            if seen is None:
                move = step.mean(dim=1, keepdim=True)
            else:
                both = seen[:, 1:] & seen[:, :-1]
                move = (step * both).sum(dim=1, keepdim=True) \
                    / both.sum(dim=1, keepdim=True).clamp_min(1)
            scale = move + self.eps + 1e-3 * x[:, -1:].abs()
            return (x - x[:, -1:]) / scale, (x[:, -1:], scale)
        if self.kind == "mean":
            scale = mean(x.abs()) + self.eps                          # (B, 1)
            return x / scale, (None, scale)
        center = mean(x)                                              # (B, 1)
        if seen is None:
            scale = torch.sqrt(x.var(dim=1, keepdim=True, unbiased=False) + self.eps)
        else:
            scale = torch.sqrt(mean((x - center) ** 2) + self.eps)
        out = (x - center) / scale
        return (out * self.gamma + self.beta if self.affine else out), (center, scale)

    def denormalize(self, y: torch.Tensor, stats: tuple) -> torch.Tensor:
        """The model's output (B, H), or quantiles (B, H, Q), back in the window's own level
        and spread."""
        center, scale = stats
        if y.dim() == 3:  # quantiles: the same statistics for each of them
            center = center.unsqueeze(-1) if center is not None else None
            scale = scale.unsqueeze(-1) if scale is not None else None
        if self.kind in ("last", "seasonal"):
            return y + center
        if self.kind == "mean":
            return y * scale
        if self.kind == "delta":
            return y * scale + center
        if self.affine:
            y = (y - self.beta) / (self.gamma + self.eps * self.eps)
        return y * scale + center
