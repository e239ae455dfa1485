"""The training losses: torch's MSE, MAE and Huber, the pinball loss of a quantile head, and
scores of the series' own values (sMAPE, MASE) through each window's scaler."""
from __future__ import annotations

import torch
from torch import nn

from .batches import Rows


LEVEL_LOSSES = ("smape", "mape", "mase")   # scores of the series' own values


class PinballLoss(nn.Module):
    """The quantile loss of (B, H, Q) forecasts at ``levels`` against (B, H) targets,
    averaged over windows, steps and levels. ``scaled``: each window's loss in units of its
    series' in-sample naive error (MASE's unit: series of every size count alike, as WQL
    and MSIS score them), instead of the model's scaled units."""

    def __init__(self, levels, scaled: bool = False) -> None:
        super().__init__()
        self.register_buffer("levels", torch.tensor(list(levels), dtype=torch.float32))
        self.scaled = scaled

    def forward(self, q: torch.Tensor, y: torch.Tensor, sid=None, rows=None) -> torch.Tensor:
        diff = y.unsqueeze(-1) - q
        terms = torch.maximum(self.levels * diff, (self.levels - 1) * diff)
        if self.scaled and rows is not None:
            terms = terms * (rows.scale[sid] / rows.naive[sid])[:, None, None]
        return terms.mean()


class LevelLoss(nn.Module):
    """A score of the values in the series' own units as the training loss: ``smape``
    (200 |y - f| / (|y| + |f|), M3's), ``mape`` (100 |y - f| / |y|), or ``mase`` (|y - f| over
    each series' in-sample naive error): N-BEATS' three. ``sid``: each window's series in
    ``rows``, whose scalers give the values."""

    def __init__(self, kind: str) -> None:
        super().__init__()
        self.kind = kind

    def forward(self, f: torch.Tensor, y: torch.Tensor, sid: torch.Tensor, rows: Rows
                ) -> torch.Tensor:
        scale = rows.scale[sid][:, None]
        if self.kind == "mase":
            return ((f - y).abs() * (scale / rows.naive[sid][:, None])).mean()
        lf, ly = f * scale + rows.center[sid][:, None], y * scale + rows.center[sid][:, None]
        if self.kind == "mape":
            return (100 * (lf - ly).abs() / ly.abs().clamp_min(1e-8)).mean()
        return (200 * (lf - ly).abs() / (lf.abs() + ly.abs()).clamp_min(1e-8)).mean()


class _Plain(nn.Module):
    """torch's own losses, taking (and leaving) the series of each window."""

    def __init__(self, loss: nn.Module) -> None:
        super().__init__()
        self.loss = loss

    def forward(self, f, y, sid=None, rows=None):
        return self.loss(f, y)


def make_loss(kind: str, quantiles=()) -> nn.Module:
    """train.loss, or the pinball loss for a model with a quantile head: in units of each
    series' in-sample naive error where train.loss scores the values (sMAPE, MAPE, MASE: the
    competitions'), else in the model's scaled units."""
    if quantiles:
        return PinballLoss(quantiles, scaled=kind in LEVEL_LOSSES)
    if kind in LEVEL_LOSSES:
        return LevelLoss(kind)
    return _Plain({"mse": nn.MSELoss, "mae": nn.L1Loss, "huber": nn.HuberLoss}[kind]())
