"""Unit tests for attn_forecast.training.losses: the point losses and the pinball loss."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from attn_forecast.training.losses import PinballLoss, make_loss

pytestmark = pytest.mark.usefixtures("one_torch_thread")

LEVELS = (0.1, 0.5, 0.9)


def test_losses():
    assert type(make_loss("mse").loss) is torch.nn.MSELoss
    assert type(make_loss("mae").loss) is torch.nn.L1Loss
    assert type(make_loss("huber").loss) is torch.nn.HuberLoss
    pin = make_loss("mse", (0.1, 0.5, 0.9))
    assert isinstance(pin, PinballLoss)
    # y = 1; quantiles 0, 1, 2: 0.1 * 1, 0, max(0.9 * -1, -0.1 * -1) = 0.1 -> mean 0.2 / 3
    q = torch.tensor([[[0.0, 1.0, 2.0]]])
    assert float(pin(q, torch.tensor([[1.0]]))) == pytest.approx(0.2 / 3)
    # the constant minimizing the pinball loss at tau is the tau-quantile of the targets
    y = torch.arange(1.0, 11.0)[:, None]                    # 1 .. 10: F(7) < 0.75 < F(8)
    one = PinballLoss([0.75])
    losses = {c: float(one(torch.full((10, 1, 1), float(c)), y)) for c in range(1, 11)}
    assert min(losses, key=losses.get) == 8


@pytest.mark.usefixtures("one_torch_thread")
def test_the_training_loss_is_the_same_pinball_loss():
    import torch

    from attn_forecast.training.losses import PinballLoss
    y = np.array([[1.0]])
    q = np.array([[[0.5, 1.5, 3.0]]])
    loss = PinballLoss(list(LEVELS))(torch.tensor(q), torch.tensor(y))
    assert float(loss) == pytest.approx((0.05 + 0.25 + 0.2) / 3)
