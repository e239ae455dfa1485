"""Unit tests for attn_forecast.quantiles and the quantile head: the pinball loss by hand,
non-crossing quantiles on random weights, conformal coverage, CRPS against the closed form."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from scipy.stats import norm

from attn_forecast import quantiles as Q
from attn_forecast.model import ModelSettings, build_model, non_crossing
from attn_forecast.train import PinballLoss

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def test_pinball_by_hand():
    # y = 1; quantiles 0.5, 1.5, 3.0 at levels 0.1, 0.5, 0.9
    # level 0.1: y - q = 0.5 > 0 -> 0.1 * 0.5 = 0.05
    # level 0.5: y - q = -0.5 < 0 -> (0.5 - 1) * -0.5 = 0.25
    # level 0.9: y - q = -2.0 < 0 -> (0.9 - 1) * -2.0 = 0.2
    y = np.array([[1.0]])
    q = np.array([[[0.5, 1.5, 3.0]]])
    assert Q.pinball(y, q, [0.1, 0.5, 0.9]) == pytest.approx((0.05 + 0.25 + 0.2) / 3)
    torch_loss = PinballLoss([0.1, 0.5, 0.9])(torch.tensor(q), torch.tensor(y))
    assert float(torch_loss) == pytest.approx((0.05 + 0.25 + 0.2) / 3)
    # the median's pinball loss is half the absolute error
    assert Q.pinball(np.array([[2.0]]), np.array([[[5.0]]]), [0.5]) == pytest.approx(1.5)


@pytest.mark.parametrize("seed", range(5))
def test_quantiles_never_cross_whatever_the_weights(seed):
    torch.manual_seed(seed)
    s = ModelSettings(window=16, horizon=3, d_model=8, ffn_dim=8,
                      quantiles=(0.05, 0.1, 0.5, 0.9, 0.95))
    m = build_model(s)
    with torch.no_grad():
        for p in m.parameters():
            p.normal_(0, 3.0)  # wild weights
        q = m(torch.randn(64, 16) * 10, quantiles=True)[0]
        assert q.shape == (64, 3, 5)
        assert (q[..., 1:] >= q[..., :-1]).all()
        # the point forecast is the median column
        zero = torch.zeros(2, 16)
        assert torch.equal(m(zero)[0], m(zero, quantiles=True)[0][..., 2])
    raw = torch.randn(1000, 7) * 5
    out = non_crossing(raw, 3)
    assert (out[:, 1:] >= out[:, :-1]).all() and torch.equal(out[:, 3], raw[:, 3])


def test_split_conformal_coverage_holds_at_the_nominal_level():
    """Heavy-tailed residuals, an interval that starts far too narrow: after calibration on
    500 windows, coverage on 20,000 new ones is 80 % within sampling error."""
    rng = np.random.default_rng(0)
    taus = (0.1, 0.5, 0.9)
    covered = []

    def too_narrow(y):
        return np.stack([-0.1 * np.ones_like(y), 0 * y, 0.1 * np.ones_like(y)], axis=-1)
    for _ in range(20):
        y_cal, y_new = rng.standard_t(3, (500, 1)), rng.standard_t(3, (20_000, 1))
        q = Q.calibrate(too_narrow(y_cal), y_cal, too_narrow(y_new), taus)
        covered.append(Q.interval_scores(y_new, q, taus)["coverage_80"])
        # a point forecast, from its residuals alone
        p = Q.from_residuals(np.zeros_like(y_new), np.zeros_like(y_cal), y_cal, taus)
        covered.append(Q.interval_scores(y_new, p, taus)["coverage_80"])
    # conformal guarantees 80 % to 80 % + 1 / (n + 1) on average over calibration sets; one
    # set's coverage varies by about sqrt(0.8 * 0.2 / 500) = 0.018, so the mean of 20 sets by
    # about 0.004: three of those either side
    assert abs(np.mean(covered[::2]) - 0.80) < 3 * 0.018 / math.sqrt(20) + 1 / 501
    assert all(abs(c - 0.80) < 0.06 for c in covered)
    # without calibration the interval covers far less: the test can fail
    y = rng.standard_t(3, (20_000, 1))
    raw = np.concatenate([-0.1 + 0 * y[..., None], 0 * y[..., None], 0.1 + 0 * y[..., None]], -1)
    assert Q.interval_scores(y, raw, taus)["coverage_80"] < 0.2


def test_crps_estimate_matches_the_gaussian_closed_form():
    """For y ~ N(0, 1) forecast by the N(mu, sigma) quantiles, CRPS has a closed form
    (Gneiting and Raftery): sigma (z (2 Phi(z) - 1) + 2 phi(z) - 1 / sqrt(pi)), z = (y - mu)
    / sigma. Many evenly spaced levels give it to within a per cent."""
    rng = np.random.default_rng(1)
    y = rng.normal(size=(4000, 1))
    mu, sigma = 0.3, 1.4
    taus = np.linspace(0.005, 0.995, 199)
    q = np.broadcast_to(mu + sigma * norm.ppf(taus), (4000, 1, 199))
    z = (y - mu) / sigma
    exact = float(np.mean(sigma * (z * (2 * norm.cdf(z) - 1) + 2 * norm.pdf(z)
                                   - 1 / math.sqrt(math.pi))))
    assert Q.crps(y, q, taus) == pytest.approx(exact, rel=0.01)


def test_interval_scores_by_hand():
    y = np.array([[0.0], [5.0], [-3.0]])
    q = np.array([[[-1.0, 0.0, 1.0]]] * 3)
    s = Q.interval_scores(y, q, (0.1, 0.5, 0.9))
    assert s["coverage_80"] == pytest.approx(1 / 3) and s["width_80"] == pytest.approx(2.0)
    # Winkler: width + 2 / 0.2 x miss: 2, 2 + 10 x 4, 2 + 10 x 2
    assert s["winkler_80"] == pytest.approx((2 + 42 + 22) / 3)
    assert Q.intervals((0.05, 0.1, 0.5, 0.9, 0.95)) == [(0, 4, 90), (1, 3, 80)]
