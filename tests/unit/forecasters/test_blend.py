"""The blend: each series' weights learned on its validation part only (inverse MSE over the
members within 3x the best), applied to every part; the test part never read; and the
forecast command's members refitted on a whole series."""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from attn_forecast.data.build import build
from attn_forecast.data.long_table import Raw
from attn_forecast.evaluation.scoring import evaluate
from attn_forecast.forecasters.combination import (blends_of, inverse_error_weights,
                                                   learn_blend, with_combinations)
from attn_forecast.forecasters.future import FUTURE_MEMBERS, future
from attn_forecast.forecasters.run import run
from attn_forecast.forecasters.simple import Mean, Naive, SeasonalNaive
from attn_forecast.forecasters.statistical import FitFailed

H, SEASON = 2, 6


def _store(val=0.2):
    """Three series: a seasonal one (seasonal naive best), a random walk (naive best) and a
    level with noise (the mean best)."""
    rs = np.random.default_rng(0)
    n = 120
    t = np.arange(n)
    series = [50 + 10 * np.sin(2 * np.pi * t / SEASON) + rs.normal(0, 0.3, n),
              100 + np.cumsum(rs.normal(0, 1, n)),
              20 + rs.normal(0, 1, n)]
    raw = Raw(np.array(["seasonal", "walk", "level"]), np.r_[0, n, 2 * n, 3 * n],
              np.tile(t.astype(float), 3), np.concatenate(series), np.full(3 * n, np.nan))
    return build(raw, window=12, horizon=H, fracs={"test": 0.2, "val": val, "cal": 0.0},
                 scaler="zscore", transform="none", context=0)


def _forecasts(store):
    members = [Naive(), SeasonalNaive(SEASON), Mean()]
    return run(store, members, ("test", "val"))


def test_weights_are_the_inverse_error_of_the_members_near_the_best():
    w = inverse_error_weights(np.array([[1.0, 2.0, 4.5], [np.nan, np.nan, np.nan],
                                        [0.0, 1.0, 2.0], [np.nan, 1.0, 1.0]]))
    np.testing.assert_allclose(w, [[2 / 3, 1 / 3, 0], [1 / 3, 1 / 3, 1 / 3], [1, 0, 0],
                                   [0, 0.5, 0.5]])
    np.testing.assert_allclose(w.sum(axis=1), 1.0)


def test_each_series_weighs_the_member_that_forecast_its_validation_part_best():
    store = _store()
    fs = with_combinations(_forecasts(store), [], store, blends_of(["naive", "seasonal_naive",
                                                                      "mean"]))
    weights = np.array(fs.record["blend"]["series"]["seasonal"])
    assert weights.argmax() == 1                      # seasonal naive on the seasonal series
    assert np.array(fs.record["blend"]["series"]["walk"]).argmax() == 0
    assert np.array(fs.record["blend"]["series"]["level"]).argmax() == 2
    assert fs.record["blend"]["line"].startswith("blend of ")
    ev = evaluate(store, fs, noise_std=None)
    # each series' best member differs: on the test part the blend beats every single one
    assert ev.metrics["blend"]["mase_mean"] < min(ev.metrics[m]["mase_mean"] for m in
                                                  ("naive", "seasonal_naive", "mean"))


def test_the_blend_never_reads_the_test_part():
    store = _store()
    clean = with_combinations(_forecasts(store), [], store, blends_of(["naive", "mean"]))
    levels = np.array(store.levels)
    for i in range(store.n_series):
        a = int(store.offsets[i])
        levels[a + int(store.cuts.test_start[i]):a + int(store.cuts.test_end[i])] = 1e9
    bad_store = replace(store, levels=levels)
    bad = with_combinations(_forecasts(bad_store), [], bad_store, blends_of(["naive", "mean"]))
    assert bad.record["blend"]["series"] == clean.record["blend"]["series"]
    # each series' first test window (its history ends before the test part) is unchanged
    ends = store.ends("test")
    first = np.r_[True, np.diff(store.series_of(ends)) != 0]
    np.testing.assert_array_equal(bad.forecasts["blend"]["test"].point[first],
                                  clean.forecasts["blend"]["test"].point[first])


def test_without_a_validation_part_every_member_weighs_the_same():
    store = _store(val=0.0)
    fs = run(store, [Naive(), Mean()], ("test",))
    b = learn_blend(fs, store, ["naive", "mean", "absent"])
    assert b.members == ["naive", "mean"] and "equal weights" in b.rule
    np.testing.assert_allclose(b.weights, 0.5)


def test_a_member_the_blend_cannot_use_is_left_out_not_the_blend():
    store = _store()
    fs = with_combinations(_forecasts(store), [], store, blends_of(["naive", "ets_missing"]))
    assert fs.record["blend"]["members"] == ["naive"]


# ---------------------------------------------------------------- the forecast command's members
def test_future_members_refitted_on_the_whole_series():
    y = np.r_[np.tile([1.0, 2.0, 3.0], 10)]
    np.testing.assert_array_equal(future("naive", 3, y, 4), [3, 3, 3, 3])
    np.testing.assert_array_equal(future("seasonal_naive", 3, y, 4), [1, 2, 3, 1])
    np.testing.assert_allclose(future("mean", 3, y, 2), [2, 2])
    np.testing.assert_allclose(future("naive2", 3, y, 3), [1, 2, 3])   # the season put back
    with pytest.raises(FitFailed):
        future("seasonal_naive", 0, y, 2)
    assert set(FUTURE_MEMBERS) >= {"ets", "theta", "arima"}


def test_a_statistical_members_future_is_statsforecasts_own_forecast_of_the_whole_series():
    from statsforecast.models import AutoETS
    rs = np.random.default_rng(1)
    y = 10 + np.cumsum(rs.normal(0, 1, 80))
    own = AutoETS(season_length=1).forecast(y, h=3)["mean"]
    np.testing.assert_allclose(future("ets", 1, y, 3), own, rtol=1e-9)


def test_the_blends_quantiles_are_the_models_spread_centred_on_the_blend():
    """With the model a member (here naive's forecast with quantiles in the model's place),
    the blend's quantiles keep the model's spread around the blend's own point, so its
    intervals are scored (or calibrated) like every forecaster's."""
    store = _store()
    fs = run(store, [Naive(), Mean()], ("test", "val"), taus=(0.1, 0.5, 0.9))
    fs.forecasts["model"] = fs.forecasts.pop("naive")
    fs = with_combinations(fs, [], store, blends_of(["model", "mean"]))
    model, blend = fs.forecasts["model"]["test"], fs.forecasts["blend"]["test"]
    np.testing.assert_allclose(blend.quantiles - blend.point[..., None],
                               model.quantiles - model.point[..., None])
    assert not np.allclose(blend.point, model.point)
    alone = with_combinations(run(store, [Naive(), Mean()], ("test", "val")), [], store,
                              blends_of(["naive", "mean"]))
    assert alone.forecasts["blend"]["test"].quantiles is None   # no model: no quantiles
