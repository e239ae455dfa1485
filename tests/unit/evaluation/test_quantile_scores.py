"""Unit tests for attn_forecast.evaluation.intervals' scores of quantiles: WQL as fev defines it,
CRPS, MSIS as M4 and coverage, each checked by hand or from its definition."""
from __future__ import annotations


import numpy as np
import pytest
from scipy.stats import norm

from attn_forecast.evaluation import intervals as Q

LEVELS = (0.1, 0.5, 0.9)


# ---------------------------------------------------------------- WQL, MSIS, coverage
# (independent checks: every expected value is written out by hand or computed in the test
# from the definitions, never by the function under test)
NINE = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)
ELEVEN = (0.025,) + NINE + (0.975,)


def test_wql_by_hand_on_two_series_of_two_steps_without_the_outer_levels():
    """y = [[2, -1], [3, 4]] (sum |y| = 10); every one of the nine levels at the point
    m = [[1, 0], [3, 6]]: y - m = 1, -1, 0, -2, so level tau's summed pinball loss is
    tau * 1 + (1 - tau) * 1 + 0 + (1 - tau) * 2 = 3 - 2 tau, its WQL (3 - 2 tau) / 5:
    tau 0.1 -> 2 * 2.8 / 10 = 0.56, ..., tau 0.9 -> 2 * 1.2 / 10 = 0.24; mean 0.4.
    The 0.025 and 0.975 levels sit at -100 and 100: were they averaged in, level 0.025 would
    add 2 * 0.025 * (102 + 99 + 103 + 104) / 10 = 2.04 and level 0.975 2 * 0.025 * (98 + 101
    + 97 + 96) / 10 = 1.96, and WQL would be (9 * 0.4 + 4.0) / 11 = 0.6909."""
    y = np.array([[2.0, -1.0], [3.0, 4.0]])
    m = np.array([[1.0, 0.0], [3.0, 6.0]])
    q = np.concatenate([np.full((2, 2, 1), -100.0), np.repeat(m[..., None], 9, axis=-1),
                        np.full((2, 2, 1), 100.0)], axis=-1)
    per_level = [0.56, 0.52, 0.48, 0.44, 0.40, 0.36, 0.32, 0.28, 0.24]
    assert np.mean(per_level) == pytest.approx(0.4)
    assert Q.wql(y, q, ELEVEN) == pytest.approx(0.4, abs=1e-12)
    num, den = Q.wql_parts(y, q, ELEVEN)
    assert den == pytest.approx(10.0)
    np.testing.assert_allclose(num / den, per_level, atol=1e-12)
    # the nine alone, without the outer two, give the same
    assert Q.wql(y, q[..., 1:10], NINE) == pytest.approx(0.4, abs=1e-12)
    # what averaging in the outer two would have given: the test can tell the two apart
    assert (9 * 0.4 + 2.04 + 1.96) / 11 == pytest.approx(0.690909, abs=1e-6)


def test_wql_with_three_levels_averages_those_three_by_hand():
    """Levels 0.25, 0.5, 0.75 (not fev's nine): the mean over those three. y = [[2, -1], [3,
    4]], sum |y| = 10; q_0.25 = y - 1 (each target above by 1: 0.25 x 1, summed 1.0, WQL
    2 x 1 / 10 = 0.2), q_0.5 = y (0), q_0.75 = y + 2 (each below by 2: 0.25 x 2, summed 2.0,
    WQL 0.4): the mean (0.2 + 0 + 0.4) / 3 = 0.2."""
    y = np.array([[2.0, -1.0], [3.0, 4.0]])
    q = np.stack([y - 1, y, y + 2], axis=-1)
    assert Q.wql(y, q, (0.25, 0.5, 0.75)) == pytest.approx(0.2, abs=1e-12)
    # all-zero targets: no WQL
    assert Q.wql(np.zeros((2, 2)), q, (0.25, 0.5, 0.75)) is None


def test_wql_matches_the_fev_formula_written_out_on_random_quantiles():
    rng = np.random.default_rng(11)
    y = rng.normal(5.0, 3.0, size=(7, 3))
    q = np.sort(rng.normal(5.0, 3.0, size=(7, 3, 11)), axis=-1)
    want = []
    for k, tau in enumerate(ELEVEN):
        if tau not in NINE:
            continue
        d = y - q[..., k]
        want.append(2 * np.sum(np.maximum(tau * d, (tau - 1) * d)) / np.sum(np.abs(y)))
    assert len(want) == 9
    assert Q.wql(y, q, ELEVEN) == pytest.approx(float(np.mean(want)), rel=1e-12)
    s = Q.interval_scores(y, q, ELEVEN)
    assert s["wql"] == pytest.approx(float(np.mean(want)), rel=1e-12)
    # and pinball averages over all eleven levels
    d = y[..., None] - q
    t = np.asarray(ELEVEN)
    pin = np.mean(np.maximum(t * d, (t - 1) * d))
    assert s["pinball"] == pytest.approx(pin, rel=1e-12)


def test_crps_is_within_a_tenth_of_a_percent_of_the_exact_value_on_a_normal():
    """CRPS of N(mu, sd) at y: sd (z (2 Phi(z) - 1) + 2 phi(z) - 1 / sqrt(pi)), z = (y - mu) /
    sd (Gneiting and Raftery 2007). From the eleven levels every forecaster gives, read off a
    dense grid: within 0.1 %; twice the mean pinball loss over the eleven reads 6 % low."""
    from scipy.stats import norm
    rng = np.random.default_rng(4)
    mu, sd = rng.normal(size=(500, 3)), rng.uniform(0.5, 3.0, size=(500, 3))
    y = mu + sd * rng.normal(size=(500, 3)) * 1.3
    q = mu[..., None] + sd[..., None] * norm.ppf(ELEVEN)
    z = (y - mu) / sd
    exact = np.mean(sd * (z * (2 * norm.cdf(z) - 1) + 2 * norm.pdf(z) - 1 / np.sqrt(np.pi)))
    assert Q.crps(y, q, ELEVEN) == pytest.approx(exact, rel=1e-3)
    assert 2 * Q.pinball(y, q, ELEVEN) < 0.96 * exact


def test_msis_by_hand_two_series_with_different_scales():
    """Levels 0.025, 0.5, 0.975; H = 2. Series A (scale 2), one window: [L, U] = [0, 10],
    y = 5 (inside: 10) and y = -2 (below L by 2: 10 + 40 x 2 = 90): mean 50, / 2 = 25.
    Series B (scale 4), two windows: [0, 4] with y = 7 (above U by 3: 4 + 40 x 3 = 124) and
    y = 2 (inside: 4); [1, 3] with y = 2, 2 (2 each): mean over its four targets
    (124 + 4 + 2 + 2) / 4 = 33, / 4 = 8.25. MSIS = (25 + 8.25) / 2 = 16.625 (the mean over
    windows instead would be (25 + 16 + 0.5) / 3 = 13.83)."""
    levels = (0.025, 0.5, 0.975)
    y = np.array([[5.0, -2.0], [7.0, 2.0], [2.0, 2.0]])
    lo = np.array([[0.0, 0.0], [0.0, 0.0], [1.0, 1.0]])
    hi = np.array([[10.0, 10.0], [4.0, 4.0], [3.0, 3.0]])
    q = np.stack([lo, (lo + hi) / 2, hi], axis=-1)
    scale = np.array([2.0, 4.0, 4.0])
    sid = np.array([0, 1, 1])
    s = Q.interval_scores(y, q, levels, scale, sid)
    assert s["msis"] == pytest.approx(16.625, abs=1e-12)
    np.testing.assert_allclose(Q.msis_per_window(y, q, levels, scale), [25.0, 16.0, 0.5])
    # coverage, width and Winkler of the 95 % interval over all six targets
    assert s["coverage_95"] == pytest.approx(4 / 6)
    assert s["width_95"] == pytest.approx((10 + 10 + 4 + 4 + 2 + 2) / 6)
    assert s["winkler_95"] == pytest.approx((10 + 90 + 124 + 4 + 2 + 2) / 6)
    assert set(s) == {"pinball", "crps", "wql", "coverage_95", "width_95", "winkler_95", "msis"}
    # without scales, or without the 0.025 / 0.975 levels: no MSIS
    assert "msis" not in Q.interval_scores(y, q, levels)
    q80 = np.stack([lo, (lo + hi) / 2, hi], axis=-1)
    assert "msis" not in Q.interval_scores(y, q80, (0.1, 0.5, 0.9), scale, sid)
    assert Q.msis_per_window(y, q80, (0.1, 0.5, 0.9), scale) is None


def test_the_exact_normal_quantiles_cover_at_their_nominal_levels_and_score_best():
    rng = np.random.default_rng(2024)
    y = rng.normal(size=(20_000, 1))
    exact = np.broadcast_to(norm.ppf(ELEVEN), (20_000, 1, 11))
    s = Q.interval_scores(y, exact, ELEVEN)
    assert abs(s["coverage_80"] - 0.8) < 0.01
    assert abs(s["coverage_95"] - 0.95) < 0.005
    # the share inside, counted here
    assert s["coverage_80"] == pytest.approx(np.mean(np.abs(y) <= norm.ppf(0.9)))
    shifted = exact + 0.5
    narrow = 0.5 * exact
    for wrong in (shifted, narrow):
        w = Q.interval_scores(y, wrong, ELEVEN)
        assert s["wql"] < w["wql"] and s["crps"] < w["crps"]
    # too narrow covers far less
    assert Q.interval_scores(y, narrow, ELEVEN)["coverage_80"] < 0.6
