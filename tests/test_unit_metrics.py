"""Unit tests for attn_forecast.metrics against scikit-learn and hand-computed cases."""
from __future__ import annotations

import math

import numpy as np
import pytest
from sklearn.metrics import (
    mean_absolute_error, mean_absolute_percentage_error, mean_squared_error, r2_score,
)

from attn_forecast import metrics as M


@pytest.fixture
def yp():
    rng = np.random.default_rng(5)
    y = rng.normal(3.0, 2.0, size=(40, 3))
    y[np.abs(y) < 0.1] = 0.5  # no zeros for MAPE
    p = y + rng.normal(0, 0.7, size=y.shape)
    return y, p


def test_against_sklearn(yp):
    y, p = yp
    yf, pf = y.ravel(), p.ravel()
    assert M.mse(y, p) == pytest.approx(mean_squared_error(yf, pf), rel=1e-12)
    assert M.rmse(y, p) == pytest.approx(math.sqrt(mean_squared_error(yf, pf)), rel=1e-12)
    assert M.mae(y, p) == pytest.approx(mean_absolute_error(yf, pf), rel=1e-12)
    assert M.r2(y, p) == pytest.approx(r2_score(yf, pf), rel=1e-12)
    assert M.mape(y, p) == pytest.approx(100 * mean_absolute_percentage_error(yf, pf),
                                         rel=1e-12)


def test_r2_edge_cases_like_sklearn():
    y = np.array([[2.0], [2.0], [2.0]])
    assert M.r2(y, y.copy()) == r2_score(y.ravel(), y.ravel()) == 1.0
    p = np.array([[1.0], [2.0], [3.0]])
    assert M.r2(y, p) == r2_score(y.ravel(), p.ravel()) == 0.0


def test_mape_skips_zero_targets():
    y = np.array([[0.0, 2.0], [4.0, 0.0]])
    p = np.array([[5.0, 3.0], [3.0, 9.0]])
    # only 2 -> 3 (50 %) and 4 -> 3 (25 %) count
    assert M.mape(y, p) == pytest.approx(37.5)


def test_mape_all_zero_is_none():
    assert M.mape(np.zeros((3, 2)), np.ones((3, 2))) is None


def test_smape_hand_computed():
    y = np.array([[1.0], [0.0], [2.0], [-1.0]])
    p = np.array([[3.0], [0.0], [2.0], [1.0]])
    # terms: 2*2/4 = 1 ; both zero -> 0 ; 0 ; 2*2/2 = 2  -> mean 0.75 -> 75 %
    assert M.smape(y, p) == pytest.approx(75.0)


def test_mase_hand_computed():
    train = np.array([1.0, 3.0, 2.0, 6.0])  # |diffs| 2, 1, 4 -> scale 7/3
    y = np.array([[5.0], [7.0]])
    p = np.array([[6.0], [4.0]])  # MAE (1 + 3) / 2 = 2
    assert M.naive_scale(train) == pytest.approx(7 / 3)
    assert M.mase(y, p, M.naive_scale(train)) == pytest.approx(2 / (7 / 3))
    assert M.mase(y, p, 0.0) is None
    assert M.naive_scale(np.array([4.0])) == 0.0


def test_directional_accuracy_edge_cases():
    last = np.array([1.0, 1.0, 1.0, 1.0, 1.0])
    y = np.array([[1.0], [2.0], [0.0], [2.0], [1.0]])
    p = np.array([[1.0], [1.0], [0.5], [0.5], [1.5]])
    # flat/flat ok ; flat pred vs up wrong ; down/down ok ; down pred vs up wrong ;
    # up pred vs flat actual wrong
    assert M.directional_accuracy(y, p, last) == pytest.approx(2 / 5)
    # only the first step counts
    y2 = np.array([[2.0, -50.0]])
    p2 = np.array([[3.0, 50.0]])
    assert M.directional_accuracy(y2, p2, np.array([1.0])) == 1.0


def test_directional_accuracy_is_null_for_a_forecaster_that_never_moves():
    last = np.array([1.0, 2.0, 3.0])
    y = np.array([[1.5], [1.0], [3.0]])
    assert M.directional_accuracy(y, M.naive_forecast(last, 1), last) is None
    # one predicted move is enough to have a direction
    # moves 0, -0.5, 0 against +0.5, -1, 0: wrong, right, right
    assert M.directional_accuracy(y, np.array([[1.0], [1.5], [3.0]]), last) == \
        pytest.approx(2 / 3)


def test_naive_forecast_zero_error_on_piecewise_constant_series():
    levels = np.repeat(np.array([3.0, -1.0, 7.5, 2.0]), 10)  # constant blocks of 10
    H = 3
    # windows whose last known value and targets lie within one block
    first = np.array([b * 10 + k for b in range(4) for k in range(1, 8)])
    actual = levels[first[:, None] + np.arange(H)[None, :]]
    naive = M.naive_forecast(levels[first - 1], H)
    assert naive.shape == (len(first), H)
    assert M.mse(actual, naive) == 0.0 and M.mae(actual, naive) == 0.0
    # and a window that straddles a block change has an error
    straddle = np.array([9])
    act = levels[straddle[:, None] + np.arange(H)[None, :]]
    assert M.mae(act, M.naive_forecast(levels[straddle - 1], H)) > 0


def test_seasonal_naive_picks_one_season_back():
    levels = np.arange(30, dtype=np.float64) * 10  # value = 10 * index
    first = np.array([10, 17])
    got = M.seasonal_naive_forecast(levels, first, horizon=6, season=4)
    # last known T = 9: targets 10..15 -> 6, 7, 8, 9 (one season back), then 6, 7 again
    assert got.tolist() == [[60, 70, 80, 90, 60, 70], [130, 140, 150, 160, 130, 140]]
    # season 1 is the naive forecast
    assert np.array_equal(M.seasonal_naive_forecast(levels, first, 3, 1),
                          M.naive_forecast(levels[first - 1], 3))
    # horizon shorter than the season: v[target - season]
    got = M.seasonal_naive_forecast(levels, np.array([12]), horizon=2, season=5)
    assert got.tolist() == [[70, 80]]


def test_seasonal_naive_exact_on_periodic_series():
    season = 7
    pattern = np.array([1.0, 4.0, -2.0, 0.5, 3.0, 3.0, -1.0])
    levels = np.tile(pattern, 6)
    first = np.arange(7, 30)
    H = 10
    actual = levels[first[:, None] + np.arange(H)[None, :]]
    assert np.array_equal(M.seasonal_naive_forecast(levels, first, H, season), actual)


def test_mean_forecast():
    assert np.array_equal(M.mean_forecast(np.array([1.0, 2.0, 6.0]), 2, 3), np.full((2, 3), 3.0))


def test_score_keys_and_none_handling(yp):
    y, p = yp
    last = y[:, 0] - 0.1
    out = M.score(y, p, last, train_levels=np.array([1.0, 1.0]), signal=None, noise_var=None,
                  naive_rmse=0.0)
    assert out["mase"] is None and out["skill_vs_naive"] is None
    assert out["signal_rmse"] is None and out["noise_floor_ratio"] is None
    assert out["rmse"] == pytest.approx(math.sqrt(mean_squared_error(y.ravel(), p.ravel())))
    for k in range(3):
        assert out[f"rmse_step{k + 1}"] == pytest.approx(
            math.sqrt(mean_squared_error(y[:, k], p[:, k])))
    out2 = M.score(y, p, last, train_levels=np.array([1.0, 2.0]), signal=y, noise_var=0.25,
                   naive_rmse=2 * out["rmse"])
    assert out2["skill_vs_naive"] == pytest.approx(0.5)
    assert out2["noise_floor_ratio"] == pytest.approx(out["mse"] / 0.25)
