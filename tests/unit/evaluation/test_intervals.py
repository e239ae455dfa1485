"""Unit tests for attn_forecast.evaluation.intervals (and the model's quantile head): the
pinball loss and interval scores by hand, CRPS against the Gaussian closed form, and
split-conformal calibration per step ahead, pooled over series in units of each series (WQL,
MSIS and coverage: test_quantile_scores.py)."""
from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import norm

from attn_forecast.evaluation import intervals as Q
from attn_forecast.forecasters.protocol import central_intervals

LEVELS = (0.1, 0.5, 0.9)


def _k(n: int, alpha: float) -> int:
    """The split-conformal rank (1-based) of n calibration scores, by the formula."""
    return min(math.ceil((n + 1) * (1 - alpha)), n)


# ---------------------------------------------------------------- losses and scores
def test_pinball_by_hand():
    # y = 1; quantiles 0.5, 1.5, 3.0 at levels 0.1, 0.5, 0.9
    # level 0.1: y - q = 0.5 > 0 -> 0.1 * 0.5 = 0.05
    # level 0.5: y - q = -0.5 < 0 -> (0.5 - 1) * -0.5 = 0.25
    # level 0.9: y - q = -2.0 < 0 -> (0.9 - 1) * -2.0 = 0.2
    y = np.array([[1.0]])
    q = np.array([[[0.5, 1.5, 3.0]]])
    assert Q.pinball(y, q, LEVELS) == pytest.approx((0.05 + 0.25 + 0.2) / 3)
    # the median's pinball loss is half the absolute error
    assert Q.pinball(np.array([[2.0]]), np.array([[[5.0]]]), [0.5]) == pytest.approx(1.5)


@pytest.mark.usefixtures("one_torch_thread")
@pytest.mark.parametrize("seed", range(3))
def test_the_quantile_head_never_crosses_whatever_the_weights(seed):
    import torch

    from attn_forecast.model.networks import build_model, non_crossing
    from attn_forecast.model.settings import ModelSettings
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


def test_crps_estimate_matches_the_gaussian_closed_form():
    """For y ~ N(0, 1) forecast by the N(mu, sigma) quantiles, CRPS has a closed form
    (Gneiting and Raftery): sigma (z (2 Phi(z) - 1) + 2 phi(z) - 1 / sqrt(pi)), z = (y - mu)
    / sigma. Many evenly spaced levels give it to within a per cent."""
    rng = np.random.default_rng(1)
    y = rng.normal(size=(4000, 1))
    mu, sigma = 0.3, 1.4
    levels = np.linspace(0.005, 0.995, 199)
    q = np.broadcast_to(mu + sigma * norm.ppf(levels), (4000, 1, 199))
    z = (y - mu) / sigma
    exact = float(np.mean(sigma * (z * (2 * norm.cdf(z) - 1) + 2 * norm.pdf(z)
                                   - 1 / math.sqrt(math.pi))))
    assert Q.crps(y, q, levels) == pytest.approx(exact, rel=0.01)


def test_interval_scores_by_hand():
    y = np.array([[0.0], [5.0], [-3.0]])
    q = np.array([[[-1.0, 0.0, 1.0]]] * 3)
    s = Q.interval_scores(y, q, LEVELS)
    assert s["coverage_80"] == pytest.approx(1 / 3) and s["width_80"] == pytest.approx(2.0)
    # Winkler: width + 2 / 0.2 x miss: 2, 2 + 10 x 4, 2 + 10 x 2
    assert s["winkler_80"] == pytest.approx((2 + 42 + 22) / 3)
    assert set(s) == {"pinball", "crps", "wql", "coverage_80", "width_80", "winkler_80"}
    assert central_intervals((0.05, 0.1, 0.5, 0.9, 0.95)) == [(0, 4, 90), (1, 3, 80)]
    assert central_intervals((0.1, 0.5)) == [] and central_intervals((0.5,)) == []


# ---------------------------------------------------------------- split conformal
def test_the_conformal_margin_is_the_formulas_rank_per_step_by_hand():
    # 9 calibration windows, 2 steps: ceil(10 x 0.8) = 8 -> the 8th smallest of each step
    scores = np.stack([np.array([5, 1, 9, 3, 7, 2, 8, 4, 6.0]),
                       10 * np.array([9, 8, 7, 6, 5, 4, 3, 2, 1.0])], axis=1)
    np.testing.assert_array_equal(Q.conformal_margin(scores, 0.2), [8.0, 80.0])
    # ceil(10 x 0.5) = 5 -> the median
    np.testing.assert_array_equal(Q.conformal_margin(scores, 0.5), [5.0, 50.0])
    # no calibration windows: no margin
    np.testing.assert_array_equal(Q.conformal_margin(np.zeros((0, 3)), 0.2), np.zeros(3))


def test_a_later_step_with_larger_errors_gets_a_larger_margin():
    rng = np.random.default_rng(2)
    n, H = 199, 4
    err = np.abs(rng.normal(size=(n, H))) * np.arange(1, H + 1)      # step k: k times larger
    got = Q.conformal_margin(err, 0.2)
    want = np.sort(err, axis=0)[_k(n, 0.2) - 1]
    np.testing.assert_array_equal(got, want)
    assert (np.diff(got) > 0).all()
    # the intervals of a point forecast widen with the step, each by its own margin
    q = Q.from_residuals(np.zeros((5, H)), np.zeros((n, H)), err * rng.choice([-1, 1], (n, H)),
                         LEVELS)
    np.testing.assert_allclose(q[..., 2] - q[..., 1], np.broadcast_to(want, (5, H)))
    np.testing.assert_allclose(q[..., 1] - q[..., 0], np.broadcast_to(want, (5, H)))
    np.testing.assert_array_equal(q[..., 1], 0.0)


def test_from_residuals_by_hand():
    point = np.array([[10.0, 20.0]])
    point_cal = np.zeros((4, 2))
    y_cal = np.array([[1.0, -4.0], [-2.0, 8.0], [3.0, 2.0], [-0.5, -6.0]])
    # |residuals| per step: [1, 2, 3, 0.5] and [4, 8, 2, 6]; rank ceil(5 x 0.8) = 4 -> the
    # largest: 3 and 8; with alpha 0.5 rank ceil(2.5) = 3: 2 and 6
    q = Q.from_residuals(point, point_cal, y_cal, LEVELS)
    np.testing.assert_allclose(q, [[[7.0, 10.0, 13.0], [12.0, 20.0, 28.0]]])
    q = Q.from_residuals(point, point_cal, y_cal, (0.25, 0.5, 0.75))
    np.testing.assert_allclose(q, [[[8.0, 10.0, 12.0], [14.0, 20.0, 26.0]]])


def test_calibrate_moves_each_pair_by_its_own_margin_per_step_by_hand():
    levels = (0.25, 0.5, 0.75)
    # calibration intervals [-1, 1] at step 1, [-2, 2] at step 2, median 0
    q_cal = np.broadcast_to(np.array([[-1.0, 0.0, 1.0], [-2.0, 0.0, 2.0]]), (3, 2, 3))
    y_cal = np.array([[0.0, 5.0], [3.0, -2.0], [-1.5, 0.0]])
    # scores max(lo - y, y - hi): step 1: -1, 2, 0.5; step 2: 3, 0, -2; rank ceil(4 x .5) = 2
    # -> margins 0.5 and 0
    q = np.array([[[9.0, 10.0, 11.0], [18.0, 20.0, 22.0]]])
    got = Q.calibrate(q_cal, y_cal, q, levels)
    np.testing.assert_allclose(got, [[[8.5, 10.0, 11.5], [18.0, 20.0, 22.0]]])


def test_calibrate_narrows_an_interval_too_wide_but_never_across_the_median():
    rng = np.random.default_rng(3)
    levels = (0.05, 0.1, 0.5, 0.9, 0.95)
    y_cal = rng.normal(size=(300, 1))
    wide = np.array([-50.0, -40.0, 0.0, 40.0, 50.0])
    q_cal = np.broadcast_to(wide, (300, 1, 5))
    got = Q.calibrate(q_cal, y_cal, np.broadcast_to(wide, (10, 1, 5)), levels)
    # each pair narrows by its own (negative) margin, to the calibration errors' quantile
    for lo, hi, pct in central_intervals(levels):
        e = np.maximum(wide[lo] - y_cal, y_cal - wide[hi])
        m = np.sort(e, axis=0)[_k(300, 1 - pct / 100) - 1, 0]
        np.testing.assert_allclose(got[:, 0, hi], wide[hi] + m)
        np.testing.assert_allclose(got[:, 0, lo], wide[lo] - m)
    assert (np.diff(got, axis=-1) >= 0).all() and (got[..., 2] == 0).all()
    # an interval the scores would pull past the median stops at it
    tight = Q.calibrate(np.broadcast_to(wide, (300, 1, 5)), np.zeros((300, 1)),
                        np.broadcast_to(np.array([-1.0, -0.5, 0.0, 0.5, 1.0]), (2, 1, 5)),
                        levels)
    np.testing.assert_array_equal(tight, 0.0)


def test_split_conformal_coverage_holds_at_the_nominal_level():
    """Heavy-tailed residuals, an interval that starts far too narrow: after calibration on
    500 windows, coverage on 20,000 new ones is 80 % within sampling error."""
    rng = np.random.default_rng(0)
    covered = []

    def too_narrow(y):
        return np.stack([-0.1 * np.ones_like(y), 0 * y, 0.1 * np.ones_like(y)], axis=-1)
    for _ in range(20):
        y_cal, y_new = rng.standard_t(3, (500, 1)), rng.standard_t(3, (20_000, 1))
        q = Q.calibrate(too_narrow(y_cal), y_cal, too_narrow(y_new), LEVELS)
        covered.append(Q.interval_scores(y_new, q, LEVELS)["coverage_80"])
        # a point forecast, from its residuals alone
        p = Q.from_residuals(np.zeros_like(y_new), np.zeros_like(y_cal), y_cal, LEVELS)
        covered.append(Q.interval_scores(y_new, p, LEVELS)["coverage_80"])
    # conformal guarantees 80 % to 80 % + 1 / (n + 1) on average over calibration sets; one
    # set's coverage varies by about sqrt(0.8 * 0.2 / 500) = 0.018, so the mean of 20 sets by
    # about 0.004: three of those either side
    assert abs(np.mean(covered[::2]) - 0.80) < 3 * 0.018 / math.sqrt(20) + 1 / 501
    assert abs(np.mean(covered[1::2]) - 0.80) < 3 * 0.018 / math.sqrt(20) + 1 / 501
    assert all(abs(c - 0.80) < 0.06 for c in covered)
    # without calibration the interval covers far less: the test can fail
    y = rng.standard_t(3, (20_000, 1))
    assert Q.interval_scores(y, too_narrow(y), LEVELS)["coverage_80"] < 0.2


# ---------------------------------------------------------------- pooled over series
def test_a_series_1000_times_larger_gets_a_margin_1000_times_larger():
    """Two series pooled in units of each: the second is the first times 1000. Pooled raw,
    both would get one margin in between."""
    rng = np.random.default_rng(4)
    n, H = 40, 2
    r = rng.normal(size=(n, H)) * np.array([1.0, 3.0])
    y_cal = np.concatenate([r, 1000 * r])
    u_cal = np.r_[np.ones(n), np.full(n, 1000.0)]
    point = np.zeros((2, H))
    q = Q.from_residuals(point, np.zeros_like(y_cal), y_cal, LEVELS, u_cal, np.array([1, 1000.]))
    half = q[..., 2] - q[..., 1]
    np.testing.assert_allclose(half[1], 1000 * half[0], rtol=1e-12)
    # the margin: the rank of the 2n pooled scores in units (each of r's twice)
    pooled = np.sort(np.abs(np.concatenate([r, r])), axis=0)[_k(2 * n, 0.2) - 1]
    np.testing.assert_allclose(half[0], pooled, rtol=1e-12)
    # the same for a quantile forecast's calibration
    band = np.array([-0.1, 0.0, 0.1])
    q_cal = np.concatenate([np.broadcast_to(band, (n, H, 3)),
                            np.broadcast_to(1000 * band, (n, H, 3))])
    test = np.stack([np.broadcast_to(band, (H, 3)), np.broadcast_to(1000 * band, (H, 3))])
    got = Q.calibrate(q_cal, y_cal, test, LEVELS, u_cal, np.array([1.0, 1000.0]))
    np.testing.assert_allclose(got[1] - got[1][..., 1:2], 1000 * (got[0] - got[0][..., 1:2]),
                               rtol=1e-12)
    e = np.maximum(-0.1 - r, r - 0.1)
    m = np.sort(np.concatenate([e, e]), axis=0)[_k(2 * n, 0.2) - 1]
    np.testing.assert_allclose(got[0, :, 2], 0.1 + m, rtol=1e-12)


def test_margins_by_hand_on_a_tiny_calibration_set():
    """Levels 0.025, 0.1, 0.5, 0.9, 0.975; nine calibration windows of one step, intervals
    [-2, 2] (95 %) and [-1, 1] (80 %) around 0, in units of each window (unit 1 except the
    last two, unit 2). y: 0, 0.5, -1.5, 3, -2.5, 1, 0.2, 8, -6.
    95 % scores max(-2 - y, y - 2) / u: -2, -1.5, -0.5, 1, 0.5, -1, -1.8, 3, 2 ->
    rank ceil(10 x 0.95) = 10 -> min(10, 9) = 9: the largest, 3.
    80 % scores max(-1 - y, y - 1) / u: -1, -0.5, 0.5, 2, 1.5, 0, -0.8, 3.5, 2.5 ->
    rank ceil(10 x 0.8) = 8: sorted -1, -0.8, -0.5, 0, 0.5, 1.5, 2, 2.5, 3.5 -> 2.5.
    That is the rule ``largest``; nine windows are too few for the 95 % rank (19), and the
    default rule (pooled: one step pools nothing more) carries the 80 % margin out along the
    normal distribution: 2.5 x z(0.975) / z(0.9) = 2.5 x 1.959964 / 1.281552 = 3.823420."""
    levels = (0.025, 0.1, 0.5, 0.9, 0.975)
    y = np.array([0.0, 0.5, -1.5, 3.0, -2.5, 1.0, 0.2, 8.0, -6.0])[:, None]
    q_cal = np.broadcast_to(np.array([-2.0, -1.0, 0.0, 1.0, 2.0]), (9, 1, 5))
    u = np.r_[np.ones(7), 2.0, 2.0]
    m = Q.margins(q_cal, y, levels, u, few="largest")
    assert m.shape == (1, 2)        # (H, P), the widest pair first
    np.testing.assert_allclose(m, [[3.0, 2.5]])
    for few in ("pooled", "gaussian"):
        np.testing.assert_allclose(Q.margins(q_cal, y, levels, u, few=few),
                                   [[2.5 * 1.959964 / 1.281552, 2.5]], rtol=1e-6)
    # widened, in a window of unit 10: the 95 % pair by 30, the 80 % pair by 25
    got = Q.widen(np.array([[[-2.0, -1.0, 0.0, 1.0, 2.0]]]), m, levels, np.array([10.0]))
    np.testing.assert_allclose(got, [[[-32.0, -26.0, 0.0, 26.0, 32.0]]])


def test_too_few_windows_pool_the_steps_then_take_the_normal_tail():
    """Five windows of four steps, a point forecast (its quantiles at the point): 5 windows are
    too few for the 95 % rank (19) but the 20 scores of the four steps are not. Pooled: each
    step's scores over their step's root mean square, the pool's 95 % rank (ceil(21 x 0.95)
    = 20: its largest), times each step's scale; the 80 % pair has windows enough (4) and
    stays per step. Gaussian: the 80 % margin carried out by z(0.975) / z(0.9). Every level
    keeps its own width."""
    rng = np.random.default_rng(0)
    levels = (0.025, 0.1, 0.5, 0.9, 0.975)
    y = rng.normal(0, 1, (5, 4)) * np.array([1.0, 2.0, 3.0, 4.0])
    q = np.zeros((5, 4, 5))
    s = np.abs(y)
    scale = np.sqrt(np.mean(s ** 2, axis=0))
    pooled = Q.margins(q, y, levels, few="pooled")
    np.testing.assert_allclose(pooled[:, 0], np.max(s / scale) * scale)
    np.testing.assert_allclose(pooled[:, 1], np.sort(s, axis=0)[4])   # rank ceil(6 x 0.8) = 5
    gauss = Q.margins(q, y, levels, few="gaussian")
    np.testing.assert_allclose(gauss[:, 0], pooled[:, 1] * 1.959964 / 1.281552, rtol=1e-6)
    largest = Q.margins(q, y, levels, few="largest")
    np.testing.assert_allclose(largest[:, 0], s.max(axis=0))
    for m in (pooled, gauss):
        assert (m[:, 0] > m[:, 1]).all()              # the 95 % interval wider than the 80 %


def test_widened_quantiles_never_cross_whatever_the_margins():
    """Margins of nested pairs may cross (80 % wider than 95 %) or be negative (narrower than
    the median allows): the result stays sorted along the levels, the median unchanged."""
    from attn_forecast.forecasters.protocol import gaussian
    rng = np.random.default_rng(5)
    levels = (0.025, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.975)
    q = gaussian(rng.normal(size=(30, 4)), rng.uniform(0.1, 2.0, size=(30, 4)), levels)
    for _ in range(20):
        m = rng.normal(0, 3.0, size=(4, len(central_intervals(levels))))
        got = Q.widen(q, m, levels, rng.uniform(0.5, 2.0, size=30))
        assert (np.diff(got, axis=-1) >= 0).all()
        np.testing.assert_array_equal(got[..., 5], q[..., 5])
    # a pair whose margin is the largest moves out by it
    m = np.zeros((4, 5))
    m[:, 0] = 1.0                      # the 95 % pair only, by 1 unit
    got = Q.widen(q, m, levels, np.full(30, 2.0))
    np.testing.assert_allclose(got[..., 0], q[..., 0] - 2.0)
    np.testing.assert_allclose(got[..., 10], q[..., 10] + 2.0)
    np.testing.assert_allclose(got[..., 1:10], q[..., 1:10])
