"""Unit tests for the scores at each step ahead (evaluation.scoring.by_step), quantiles made
nested without reordering (forecasters.protocol.nested), and the split-conformal counts and
ranks at their boundaries (evaluation.intervals: needed, too_few, conformal_margin)."""
from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from attn_forecast.evaluation import intervals as Q
from attn_forecast.evaluation.scoring import by_step
from attn_forecast.forecasters.protocol import nested

LEVELS = (0.025, 0.1, 0.5, 0.9, 0.975)


# ---------------------------------------------------------------- scores at each step
def _tiny():
    """Two series, three windows (two of series 0, one of series 1), two steps ahead; each
    window's quantiles at LEVELS are [lo95, lo80, median, hi80, hi95]."""
    y = np.array([[10.0, 12.0], [11.0, 13.0], [20.0, 22.0]])
    f = np.array([[11.0, 12.0], [10.0, 15.0], [24.0, 21.0]])
    q = np.array([[[7.0, 9.0, 11.0, 13.0, 15.0], [11.0, 11.5, 12.0, 12.5, 13.0]],
                  [[9.5, 9.8, 10.0, 10.5, 10.9], [10.0, 14.0, 15.0, 16.0, 20.0]],
                  [[18.0, 21.0, 24.0, 27.0, 30.0], [16.0, 19.0, 21.0, 23.0, 26.0]]])
    scale = np.array([2.0, 2.0, 4.0])        # series 0's naive error 2, series 1's 4
    sid = np.array([0, 0, 1])
    return y, f, q, scale, sid


def test_mase_at_each_step_is_the_mean_over_series_of_each_series_mean_by_hand():
    """|f - y| = [[1, 0], [1, 2], [4, 1]]. Step 1: series 0 (1 + 1) / 2 / 2 = 0.5, series 1
    4 / 4 = 1, mean 0.75 (the mean over windows, 2/3, would weigh series 0 twice). Step 2:
    series 0 (0 + 2) / 2 / 2 = 0.5, series 1 1 / 4 = 0.25, mean 0.375."""
    y, f, q, scale, sid = _tiny()
    got = by_step(y, {"m": f}, {}, LEVELS, scale, sid)["m"]
    assert got["mase"] == pytest.approx([0.75, 0.375])
    assert set(got) == {"mase", "smape", "rmse"}       # no quantiles: no interval scores


def test_smape_and_rmse_at_each_step_by_hand():
    """sMAPE, step 1: 2 x 1 / 21, 2 x 1 / 21, 2 x 4 / 44; step 2: 0, 2 x 2 / 28, 2 x 1 / 43
    (in percent, the mean over windows). RMSE, step 1: sqrt((1 + 1 + 16) / 3) = sqrt(6);
    step 2: sqrt((0 + 4 + 1) / 3)."""
    y, f, q, scale, sid = _tiny()
    got = by_step(y, {"m": f}, {}, LEVELS, scale, sid)["m"]
    assert got["smape"] == pytest.approx([100 * (2 / 21 + 2 / 21 + 8 / 44) / 3,
                                          100 * (0 + 4 / 28 + 2 / 43) / 3])
    assert got["rmse"] == pytest.approx([math.sqrt(6), math.sqrt(5 / 3)])


def test_coverage_at_each_step_by_hand():
    """Step 1: y = 10 in [9, 13] and [7, 15]; y = 11 above 10.5 and 10.9; y = 20 below 21,
    inside [18, 30]: 80 % covers 1 of 3, 95 % 2 of 3. Step 2: y = 12 inside both; y = 13
    below 14, inside [10, 20]; y = 22 inside [19, 23]: 80 % covers 2 of 3, 95 % all."""
    y, f, q, scale, sid = _tiny()
    got = by_step(y, {"m": f}, {"m": q}, LEVELS, scale, sid)["m"]
    assert got["coverage_80"] == pytest.approx([1 / 3, 2 / 3])
    assert got["coverage_95"] == pytest.approx([2 / 3, 1.0])


def test_msis_at_each_step_by_the_m4_formula_by_hand():
    """(U - L) + 2 / 0.05 x the miss, over the series' scale, each series' mean, then the
    mean over series. Step 1: (15 - 7) / 2 = 4; (10.9 - 9.5 + 40 x 0.1) / 2 = 2.7;
    (30 - 18) / 4 = 3: series 0 (4 + 2.7) / 2 = 3.35, series 1 3, mean 3.175. Step 2:
    2 / 2 = 1, 10 / 2 = 5, 10 / 4 = 2.5: series 0 3, series 1 2.5, mean 2.75."""
    y, f, q, scale, sid = _tiny()
    got = by_step(y, {"m": f}, {"m": q}, LEVELS, scale, sid)["m"]
    assert got["msis"] == pytest.approx([3.175, 2.75])


def test_wql_at_each_step_is_the_wql_of_that_steps_column():
    """Without all nine of fev's levels, WQL averages over the five given: for each level,
    2 x the pinball loss summed over the step's targets over their summed |y|."""
    y, f, q, scale, sid = _tiny()
    got = by_step(y, {"m": f}, {"m": q}, LEVELS, scale, sid)["m"]
    for k in range(2):
        per_level = []
        for j, tau in enumerate(LEVELS):
            loss = sum(max(tau * (y[i, k] - q[i, k, j]), (tau - 1) * (y[i, k] - q[i, k, j]))
                       for i in range(3))
            per_level.append(2 * loss / np.abs(y[:, k]).sum())
        assert got["wql"][k] == pytest.approx(np.mean(per_level))
        assert got["wql"][k] == pytest.approx(Q.wql(y[:, k:k + 1], q[:, k:k + 1], LEVELS))


def test_every_forecaster_is_scored_on_its_own():
    y, f, q, scale, sid = _tiny()
    got = by_step(y, {"m": f, "perfect": y.copy()}, {"m": q}, LEVELS, scale, sid)
    assert set(got) == {"m", "perfect"}
    assert got["perfect"] == {"mase": [0.0, 0.0], "smape": [0.0, 0.0], "rmse": [0.0, 0.0]}
    assert got["m"]["mase"] == pytest.approx([0.75, 0.375])


# ---------------------------------------------------------------- nested quantiles
def _nested_by_loop(row, levels) -> list[float]:
    """Outward from the median, one level at a time: below it each at most the one inside,
    above it each at least the one inside."""
    out = [float(v) for v in row]
    mid = list(levels).index(0.5)
    for i in range(mid - 1, -1, -1):
        out[i] = min(out[i], out[i + 1])
    for i in range(mid + 1, len(out)):
        out[i] = max(out[i], out[i - 1])
    return out


def test_nested_quantiles_already_in_order_are_unchanged():
    q = np.array([[[1.0, 2.0, 3.0, 4.0, 5.0], [-3.0, -3.0, 0.0, 0.0, 8.0]]])
    got = nested(q, LEVELS)
    np.testing.assert_array_equal(got, q)
    assert got.dtype == np.float64 and got is not q


def test_a_crossing_80_bound_pushes_the_95_bound_out_instead_of_swapping():
    """Upper: the 80 % bound 6 lies above the 95 % bound 5; a sort would swap them (80 % at
    5, 95 % at 6), nested keeps the 80 % bound and moves the 95 % one out to it: both 6.
    Lower: the 80 % bound 1 below the 95 % bound 2: the 95 % one moves down to 1."""
    q = np.array([[1.0, 2.0, 3.0, 6.0, 5.0],
                  [2.0, 1.0, 3.0, 4.0, 5.0]])
    np.testing.assert_array_equal(nested(q, LEVELS), [[1.0, 2.0, 3.0, 6.0, 6.0],
                                                    [1.0, 1.0, 3.0, 4.0, 5.0]])
    assert not np.array_equal(nested(q, LEVELS), np.sort(q, axis=-1))


def test_a_bound_across_the_median_is_pulled_to_it_and_the_median_stays():
    """The 80 % lower bound 3.5 above the median 3 becomes 3; the 80 % upper bound 2.5 below
    it becomes 3 too, and the 95 % one (2) then 3: the median never moves."""
    q = np.array([[1.0, 3.5, 3.0, 2.5, 2.0]])
    np.testing.assert_array_equal(nested(q, LEVELS), [[1.0, 3.0, 3.0, 3.0, 3.0]])


def test_nested_matches_the_level_by_level_rule_on_random_quantiles():
    rng = np.random.default_rng(4)
    levels = (0.025, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.975)
    q = rng.normal(0, 1, (40, 3, len(levels)))
    before = q.copy()
    got = nested(q, levels)
    want = np.array([[_nested_by_loop(r, levels) for r in w] for w in q])
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(got[..., 5], q[..., 5])          # the median stays
    assert (np.diff(got, axis=-1) >= 0).all()
    np.testing.assert_array_equal(nested(got, levels), got)          # nested twice: the same
    assert not np.array_equal(q, got)                               # crossings were mended
    np.testing.assert_array_equal(q, before)                        # on a copy


# ---------------------------------------------------------------- conformal counts and ranks
def _needed_exactly(alpha: Fraction) -> int:
    """The fewest n with ceil((n + 1)(1 - alpha)) <= n, in exact fractions."""
    n = 1
    while math.ceil((n + 1) * (1 - alpha)) > n:
        n += 1
    return n


def test_needed_by_hand_and_by_exact_fractions():
    assert Q.needed(0.05) == 19       # ceil(20 x 0.95) = 19 <= 19; ceil(19 x 0.95) = 19 > 18
    assert Q.needed(0.2) == 4         # ceil(5 x 0.8) = 4 <= 4
    for pct in range(1, 100):
        # as the callers pass it: 1 - pct / 100 in floating point
        assert Q.needed(1 - pct / 100) == _needed_exactly(1 - Fraction(pct, 100)), pct


def test_too_few_names_the_intervals_n_windows_cannot_calibrate():
    assert Q.too_few(10, LEVELS) == [95]          # 95 % needs 19; 80 % needs 4
    assert Q.too_few(3, LEVELS) == [95, 80]
    assert Q.too_few(4, LEVELS) == [95]
    assert Q.too_few(18, LEVELS) == [95]
    assert Q.too_few(19, LEVELS) == []


def test_nineteen_scores_at_alpha_005_give_the_largest_the_exact_boundary():
    """ceil(20 x 0.95) = 19: the 19th of 19, however 20 x 0.95 rounds in floating point."""
    rng = np.random.default_rng(0)
    scores = np.stack([rng.permutation(np.arange(1.0, 20.0)),
                       10 * rng.permutation(np.arange(1.0, 20.0))], axis=1)
    for alpha in (0.05, 1 - 95 / 100, 1 - 0.95):
        np.testing.assert_array_equal(Q.conformal_margin(scores, alpha), [19.0, 190.0])
    # one window fewer: the rank lies past the scores, and the largest stands in
    np.testing.assert_array_equal(Q.conformal_margin(scores[:18], 0.05),
                                  np.sort(scores[:18], axis=0)[-1])


def test_ten_scores_at_alpha_005_give_the_largest():
    scores = np.array([[3.0], [9.0], [1.0], [7.0], [4.0], [10.0], [2.0], [6.0], [8.0], [5.0]])
    np.testing.assert_array_equal(Q.conformal_margin(scores, 0.05), [10.0])
    assert Q.too_few(len(scores), LEVELS) == [95]


@pytest.mark.parametrize("pct", (20, 30, 40, 55, 60, 80, 90, 95))
def test_the_conformal_rank_is_the_exact_fractions_rank_for_every_n(pct):
    """Scores 1..n: the margin is the rank itself, checked against the exact rank
    min(ceil((n + 1)(1 - alpha)), n) for every n up to 400. (At 30 %, 1 - (1 - 0.3) is
    0.30000000000000004: n = 9 would give ceil(3.0000000000000004) = 4, not 3.)"""
    alpha = 1 - pct / 100
    for n in range(1, 401):
        scores = np.arange(1.0, n + 1)[:, None]
        k = min(math.ceil((n + 1) * Fraction(pct, 100)), n)
        assert Q.conformal_margin(scores, alpha)[0] == k, (n, pct)
