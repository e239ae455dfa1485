"""Unit tests for attn_forecast.metrics against scikit-learn and hand-computed cases: the
per-window metrics, the per-series table, the aggregate over series (for one series its own
scores), the headline and the ranking of series."""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import (
    mean_absolute_error, mean_absolute_percentage_error, mean_squared_error, r2_score,
)

from attn_forecast.evaluation import metrics as M
from attn_forecast.io import rounded

SCORE_KEYS = {"mse", "rmse", "mae", "mape", "smape", "mase", "r2", "directional_accuracy",
              "skill_vs_naive", "signal_rmse", "noise_floor_ratio"}


@pytest.fixture
def yp():
    rng = np.random.default_rng(5)
    y = rng.normal(3.0, 2.0, size=(40, 3))
    y[np.abs(y) < 0.1] = 0.5  # no zeros for MAPE
    p = y + rng.normal(0, 0.7, size=y.shape)
    return y, p


def _sk_rmse(y, p) -> float:
    return math.sqrt(mean_squared_error(np.ravel(y), np.ravel(p)))


# ---------------------------------------------------------------- per window
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
    naive = np.repeat(last[:, None], 1, axis=1)
    assert M.directional_accuracy(y, naive, last) is None
    # one predicted move is enough to have a direction
    # moves 0, -0.5, 0 against +0.5, -1, 0: wrong, right, right
    assert M.directional_accuracy(y, np.array([[1.0], [1.5], [3.0]]), last) == \
        pytest.approx(2 / 3)


def test_score_keys_and_none_handling(yp):
    y, p = yp
    last = y[:, 0] - 0.1
    out = M.score(y, p, last, train_y=np.array([1.0, 1.0]), signal=None, noise_var=None,
                  naive_rmse=0.0)
    assert set(out) == SCORE_KEYS | {"rmse_step1", "rmse_step2", "rmse_step3"}
    assert out["mase"] is None and out["skill_vs_naive"] is None
    assert out["signal_rmse"] is None and out["noise_floor_ratio"] is None
    assert out["rmse"] == pytest.approx(_sk_rmse(y, p))
    for k in range(3):
        assert out[f"rmse_step{k + 1}"] == pytest.approx(_sk_rmse(y[:, k], p[:, k]))
    out2 = M.score(y, p, last, train_y=np.array([1.0, 2.0]), signal=y, noise_var=0.25,
                   naive_rmse=2 * out["rmse"])
    assert out2["skill_vs_naive"] == pytest.approx(0.5)
    assert out2["noise_floor_ratio"] == pytest.approx(out["mse"] / 0.25)
    assert out2["signal_rmse"] == pytest.approx(_sk_rmse(y, p))
    assert out2["mase"] == pytest.approx(mean_absolute_error(y.ravel(), p.ravel()))
    # one step ahead: no per-step columns
    one = M.score(y[:, :1], p[:, :1], last, train_y=np.array([1.0, 2.0]), signal=None,
                  noise_var=None, naive_rmse=None)
    assert set(one) == SCORE_KEYS


def test_rounded_keeps_significant_digits_in_nested_records():
    got = rounded({"a": 0.000123456789, "b": [123456.789, 2, None, float("nan")],
                     "c": {"d": 1.23456789}}, digits=4)
    assert got["a"] == 0.0001235 and got["b"][:3] == [123500.0, 2, None]
    assert math.isnan(got["b"][3]) and got["c"] == {"d": 1.235}


# ---------------------------------------------------------------- per series, over series
def _panel(seed=0):
    """Three series' test windows (H = 2), each on its own scale, and their forecasts."""
    rng = np.random.default_rng(seed)
    ids = np.array(["a", "b", "c"])
    sizes, scales = [6, 9, 4], [1.0, 100.0, 0.01]
    sid = np.repeat(np.arange(3), sizes)
    unit = np.array(scales)[sid][:, None]
    actual = unit * rng.normal(5, 1, (len(sid), 2))
    last = actual[:, 0] - unit[:, 0] * rng.normal(0, 1, len(sid))
    train = [s * np.cumsum(rng.normal(0, 1, 30)) for s in scales]
    good = actual + unit * rng.normal(0, 0.3, actual.shape)
    bad = actual + unit * rng.normal(0, 2.0, actual.shape)
    return ids, sid, actual, last, train, {"model": good, "ridge": bad}


def test_per_series_scores_each_series_on_its_own_windows_like_sklearn():
    ids, sid, actual, last, train, fc = _panel()
    naive = np.repeat(last[:, None], 2, axis=1)
    table = M.per_series(ids, sid, actual, last, {**fc, "naive": naive}, lambda i: train[i],
                         None, None)
    assert table["id"].tolist() == ["a", "b", "c"] and table["n_test"].tolist() == [6, 9, 4]
    for i in range(3):
        r = sid == i
        scale = np.mean(np.abs(np.diff(train[i])))
        for name, f in {**fc, "naive": naive}.items():
            rmse = _sk_rmse(actual[r], f[r])
            mae = mean_absolute_error(actual[r].ravel(), f[r].ravel())
            assert table[f"{name}_rmse"][i] == pytest.approx(rmse, rel=1e-12)
            assert table[f"{name}_mase"][i] == pytest.approx(mae / scale, rel=1e-12)
            assert table[f"{name}_skill_vs_naive"][i] == pytest.approx(
                1 - rmse / _sk_rmse(actual[r], naive[r]), rel=1e-9, abs=1e-12)
            assert table[f"{name}_rmse_step2"][i] == pytest.approx(
                _sk_rmse(actual[r, 1], f[r, 1]), rel=1e-12)
    assert M.series_slices(sid) == [(0, slice(0, 6)), (1, slice(6, 15)), (2, slice(15, 19))]
    assert M.series_slices(np.zeros(0, dtype=int)) == []


def test_for_one_series_the_aggregate_is_the_series_own_scores():
    ids, sid, actual, last, train, fc = _panel(1)
    r = sid == 1
    table = M.per_series(ids[1:2], np.zeros(r.sum(), dtype=int), actual[r], last[r],
                         {n: f[r] for n, f in fc.items()}, lambda i: train[1], None, None)
    agg = M.aggregate(table, ["model", "ridge", "ets"])
    assert agg["ets"] is None                             # no column: not fitted
    for name, f in fc.items():
        assert set(agg[name]) == SCORE_KEYS | {"rmse_step1", "rmse_step2"}, name
        assert agg[name]["rmse"] == pytest.approx(_sk_rmse(actual[r], f[r]), rel=1e-12)
        assert agg[name]["r2"] == pytest.approx(r2_score(actual[r].ravel(), f[r].ravel()),
                                                rel=1e-12)
        assert agg[name]["signal_rmse"] is None
    assert set(M.headline(agg)["model"]) == {"rmse", "mase"}
    assert M.headline(agg)["ets"] is None


def test_for_one_series_a_forecaster_whose_name_begins_another_keeps_its_own_scores():
    """ridge and ridge_features: ridge's scores are ridge's alone."""
    ids, sid, actual, last, train, fc = _panel(2)
    r = sid == 0
    table = M.per_series(ids[:1], np.zeros(r.sum(), dtype=int), actual[r], last[r],
                         {"ridge": fc["ridge"][r], "ridge_features": fc["model"][r]},
                         lambda i: train[0], None, None)
    agg = M.aggregate(table, ["ridge", "ridge_features"])
    assert set(agg["ridge"]) == SCORE_KEYS | {"rmse_step1", "rmse_step2"}
    assert agg["ridge"]["rmse"] == pytest.approx(_sk_rmse(actual[r], fc["ridge"][r]))


def test_over_many_series_the_aggregate_is_mean_and_median_over_series():
    ids, sid, actual, last, train, fc = _panel(3)
    naive = np.repeat(last[:, None], 2, axis=1)
    forecasts = {**fc, "naive": naive}
    table = M.per_series(ids, sid, actual, last, forecasts, lambda i: train[i], None, None)
    agg = M.aggregate(table, list(forecasts))
    for name, f in forecasts.items():
        mase = [mean_absolute_error(actual[sid == i].ravel(), f[sid == i].ravel())
                / np.mean(np.abs(np.diff(train[i]))) for i in range(3)]
        rmse = [_sk_rmse(actual[sid == i], f[sid == i]) for i in range(3)]
        assert agg[name]["mase_mean"] == pytest.approx(np.mean(mase), rel=1e-12)
        assert agg[name]["mase_median"] == pytest.approx(np.median(mase), rel=1e-12)
        assert agg[name]["rmse_mean"] == pytest.approx(np.mean(rmse), rel=1e-12)
        assert agg[name]["rmse_median"] == pytest.approx(np.median(rmse), rel=1e-12)
        assert agg[name]["n_series"] == 3
        assert agg[name]["signal_rmse_mean"] is None
        if name != "naive":
            naive_mase = [mean_absolute_error(actual[sid == i].ravel(), naive[sid == i].ravel())
                          / np.mean(np.abs(np.diff(train[i]))) for i in range(3)]
            assert agg[name]["beats_naive"] == pytest.approx(
                np.mean(np.array(mase) < np.array(naive_mase)))
    assert "beats_naive" not in agg["naive"]
    assert agg["model"]["beats_naive"] == 1.0                  # the good forecaster
    head = M.headline(agg)
    assert set(head["model"]) == {"mase_mean", "smape_mean"}


def test_aggregates_leave_out_series_without_a_score():
    table = pd.DataFrame({"id": ["a", "b", "c"], "model_rmse": [1.0, 2.0, 3.0],
                          "model_mase": [0.5, np.nan, 2.0], "naive_rmse": [1.0, 1.0, 1.0],
                          "naive_mase": [1.0, np.nan, 1.0]})
    agg = M.aggregate(table, ["model", "naive"])
    assert agg["model"]["n_series"] == 2 and agg["model"]["mase_mean"] == 1.25
    assert agg["model"]["beats_naive"] == 0.5           # of the two series both score
    assert agg["model"]["rmse_mean"] == 2.0


def test_a_series_a_forecaster_could_not_fit_leaves_it_no_mean_over_fewer_series():
    """A NaN forecast is never left out (nor a zero error): the forecaster's mean is None, so
    it cannot score better than one that forecast every series (forecasters.run fills such
    series with a named fallback before they are scored)."""
    ids, sid, actual, last, train, fc = _panel(4)
    ets = fc["ridge"].copy()
    ets[sid == 1] = np.nan                                   # not fitted on series b
    table = M.per_series(ids, sid, actual, last, {"model": fc["model"], "ets": ets},
                         lambda i: train[i], None, None)
    agg = M.aggregate(table, ["model", "ets"])
    assert agg["ets"]["n_series"] == agg["model"]["n_series"] == 3
    assert agg["ets"]["mase_mean"] is None and agg["ets"]["smape_mean"] is None
    assert agg["ets"]["rmse_mean"] is None
    assert agg["model"]["mase_mean"] == pytest.approx(np.mean([
        mean_absolute_error(actual[sid == i].ravel(), fc["model"][sid == i].ravel())
        / np.mean(np.abs(np.diff(train[i]))) for i in range(3)]), rel=1e-12)
    # a forecaster with no series fitted at all is None
    nothing = M.per_series(ids, sid, actual, last, {"ets": np.full_like(ets, np.nan)},
                           lambda i: train[i], None, None)
    assert M.aggregate(nothing, ["ets"]) == {"ets": None}


def test_ranked_picks_the_best_median_and_worst_series():
    table = pd.DataFrame({"model_mase": [0.9, 0.2, np.nan, 1.5, 0.7]})
    # finite, sorted: 0.2 (row 1), 0.7 (row 4), 0.9 (row 0), 1.5 (row 3); NaN last
    assert M.ranked(table) == {"best": 1, "median": 4, "worst": 3}
    ties = pd.DataFrame({"model_mase": [1.0, 1.0, 1.0]})
    assert M.ranked(ties) == {"best": 0, "median": 1, "worst": 2}
    assert M.ranked(pd.DataFrame({"model_mase": [3.0, 1.0, 2.0]}), "model_mase") == \
        {"best": 1, "median": 2, "worst": 0}
