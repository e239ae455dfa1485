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
from attn_forecast.forecasters.combination import (FEW, SHRINK, TRIM, Blend, blended,
                                                   blends_of, inverse_error_weights,
                                                   learn_blend, rule, with_combinations)
from attn_forecast.forecasters.future import FUTURE_MEMBERS, future
from attn_forecast.forecasters.run import run
from attn_forecast.forecasters.simple import Mean, Naive, SeasonalNaive
from attn_forecast.forecasters.statistical import FitFailed, Stat

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
    return build(raw, window=12, horizon=H, fracs={"test": 0.2, "val": val, "cal": 0.0,
                                                    "blend": True},
                 scaler="zscore", transform="none", context=0)


def _forecasts(store):
    members = [Naive(), SeasonalNaive(SEASON), Mean()]
    return run(store, members, ("test", "blend"), season=0)


def test_weights_are_the_inverse_error_of_the_members_near_the_best():
    w = inverse_error_weights(np.array([[1.0, 2.0, 4.5], [np.nan, np.nan, np.nan],
                                        [0.0, 1.0, 2.0], [np.nan, 1.0, 1.0]]))
    np.testing.assert_allclose(w, [[2 / 3, 1 / 3, 0], [1 / 3, 1 / 3, 1 / 3], [1, 0, 0],
                                   [0, 0.5, 0.5]])
    np.testing.assert_allclose(w.sum(axis=1), 1.0)


def test_each_series_weighs_the_member_that_forecast_its_validation_part_best():
    """The weights as learned, before any shrinkage (shrink 0)."""
    store = _store()
    fs = with_combinations(_forecasts(store), [], store,
                           {"blend": (["naive", "seasonal_naive", "mean"], TRIM, 0.0)})
    weights = np.array(fs.record["blend"]["series"]["seasonal"])
    assert weights.argmax() == 1                      # seasonal naive on the seasonal series
    assert np.array(fs.record["blend"]["series"]["walk"]).argmax() == 0
    assert np.array(fs.record["blend"]["series"]["level"]).argmax() == 2
    assert fs.record["blend"]["line"].startswith("blend of ")
    ev = evaluate(store, fs, noise_std=None)
    # each series' best member differs: on the test part the blend beats every single one
    assert ev.metrics["blend"]["mase_mean"] < min(ev.metrics[m]["mase_mean"] for m in
                                                  ("naive", "seasonal_naive", "mean"))


def _fitted(store):
    """Members that fit on the training part (ETS, Theta) beside naive and mean: a member
    whose fit read past its training part would change its forecasts of the blend's part."""
    return run(store, [Naive(), Stat("ets", SEASON), Stat("theta", SEASON), Mean()],
               ("test", "blend"), season=0)


def test_the_blend_never_reads_the_test_part():
    members = ["naive", "ets", "theta", "mean"]
    store = _store()
    clean = with_combinations(_fitted(store), [], store, blends_of(members))
    y = np.array(store.y)
    for i in range(store.n_series):
        a = int(store.offsets[i])
        y[a + int(store.cuts.test_start[i]):a + int(store.cuts.test_end[i])] = 1e9
    bad_store = replace(store, y=y)
    bad = with_combinations(_fitted(bad_store), [], bad_store, blends_of(members))
    assert bad.record["blend"]["series"] == clean.record["blend"]["series"]
    # each series' first test window (its history ends before the test part) is unchanged
    ends = store.ends("test")
    first = np.r_[True, np.diff(store.series_of(ends)) != 0]
    np.testing.assert_array_equal(bad.forecasts["blend"]["test"].point[first],
                                  clean.forecasts["blend"]["test"].point[first])


def test_without_a_validation_part_every_member_weighs_the_same():
    store = _store(val=0.0)
    fs = run(store, [Naive(), Mean()], ("test",), season=0)
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
    np.testing.assert_array_equal(future("naive", 3, y, 4)[0], [3, 3, 3, 3])
    np.testing.assert_array_equal(future("seasonal_naive", 3, y, 4)[0], [1, 2, 3, 1])
    np.testing.assert_allclose(future("mean", 3, y, 2)[0], [2, 2])
    np.testing.assert_allclose(future("naive2", 3, y, 3)[0], [1, 2, 3])  # the season put back
    with pytest.raises(FitFailed):
        future("seasonal_naive", 0, y, 2)
    assert set(FUTURE_MEMBERS) >= {"ets", "theta", "arima"}


@pytest.mark.parametrize("name", ["naive", "seasonal_naive", "naive2", "mean"])
def test_a_simple_members_future_intervals_are_the_pipelines_on_the_same_history(name):
    """The forecast command's member on a history is the pipeline's forecaster fitted on that
    history as its training part, forecasting the window right after it: points and
    quantiles alike."""
    from attn_forecast.forecasters.registry import baselines
    store = _store(val=0.0)
    levels = (0.025, 0.1, 0.5, 0.9, 0.975)
    chosen, _ = baselines([name], season=SEASON, ridge_alpha=1.0, features=False)
    f = chosen[0]
    f.fit(store)
    ends = store.ends("test")
    for i in range(store.n_series):
        first = ends[store.series_of(ends) == i][0]       # right after the training part
        y = store.train_y(i)
        want = f.forecast(store, np.array([first]), levels)
        point, quant = future(name, SEASON, y, store.horizon, levels)
        np.testing.assert_allclose(point, want.point[0], rtol=1e-12)
        np.testing.assert_allclose(quant, want.quantiles[0], rtol=1e-12)


def test_a_statistical_members_future_is_statsforecasts_own_forecast_of_the_whole_series():
    from statsforecast.models import AutoETS
    rs = np.random.default_rng(1)
    y = 10 + np.cumsum(rs.normal(0, 1, 80))
    own = AutoETS(season_length=1).forecast(y, h=3, level=[80, 95])
    point, quant = future("ets", 1, y, 3, (0.025, 0.1, 0.5, 0.9, 0.975))
    np.testing.assert_allclose(point, own["mean"], rtol=1e-9)
    np.testing.assert_allclose(quant, np.stack([own["lo-95"], own["lo-80"], own["mean"],
                                                own["hi-80"], own["hi-95"]], axis=1),
                               rtol=1e-9)


def test_the_blends_quantiles_are_its_members_weighted_level_by_level():
    """The blend's quantiles are its members' quantiles averaged level by level with each
    series' weights: a member of weight 0 adds nothing to them (its spread included)."""
    store = _store()
    levels = (0.1, 0.5, 0.9)
    fs = run(store, [Naive(), Mean()], ("test", "blend"), levels=levels, season=0)
    fs = with_combinations(fs, [], store, blends_of(["naive", "mean"]))
    w = np.asarray(list(fs.record["blend"]["series"].values()))[
        store.series_of(fs.ends["test"])]
    want = w[:, 0, None, None] * fs.forecasts["naive"]["test"].quantiles \
        + w[:, 1, None, None] * fs.forecasts["mean"]["test"].quantiles
    np.testing.assert_allclose(fs.forecasts["blend"]["test"].quantiles, want, rtol=1e-6)
    # a member that takes no weight on a series: the blend there is the other's, spread too
    zero = Blend(["naive", "mean"], np.tile([1.0, 0.0], (store.n_series, 1)), "test")
    fs.forecasts["mean"]["test"].quantiles[:] = np.nan      # never read where its weight is 0
    got = blended(fs, store, zero)["test"]
    np.testing.assert_array_equal(got.quantiles, fs.forecasts["naive"]["test"].quantiles)
    # a member without quantiles: the blend has none (a point only)
    alone = with_combinations(run(store, [Naive(), Mean()], ("test", "blend"), season=0), [],
                              store, blends_of(["naive", "mean"]))
    assert alone.forecasts["blend"]["test"].quantiles is None


def test_an_exact_member_shares_the_weight_below_the_floor_and_a_flat_series_weighs_alike():
    """An MSE below the floor (FLOOR x the series' squared naive error) counts as the floor:
    a member exact on the validation part no longer takes all the weight from one that is
    nearly so; the trim is on MSE (3x the best)."""
    floor = np.array([1.0, 1.0])
    w = inverse_error_weights(np.array([[0.0, 0.5, 2.0], [0.0, 4.0, 2.0]]), floor=floor)
    # row 0: 0 and 0.5 both count as 1.0, 2.0 is within 3x: weights 1, 1, 0.5
    np.testing.assert_allclose(w[0], np.array([1, 1, 0.5]) / 2.5)
    # row 1: 4.0 is more than 3x the floored best (1.0): left out
    np.testing.assert_allclose(w[1], np.array([1, 0, 0.5]) / 1.5)
    assert "3x the best MSE (about 1.7x its RMSE)" in rule()


def test_the_blends_failed_rows_are_those_of_members_with_weight():
    """A member that failed on a series (the fallback's forecast there) marks the blend's
    rows failed only where it has weight on that series; its NaN never reaches the blend."""
    store = _store()
    levels = (0.1, 0.5, 0.9)
    fs = run(store, [Naive(), Mean()], ("test", "blend"), levels=levels, season=0)
    ends = fs.ends["test"]
    sid = store.series_of(ends)
    mean = fs.forecasts["mean"]["test"]
    mean.failed = sid == 0
    mean.point[sid == 0] = np.nan
    b = Blend(["naive", "mean"], np.array([[1.0, 0.0], [0.5, 0.5], [0.0, 1.0]]), "test")
    got = blended(fs, store, b)["test"]
    np.testing.assert_array_equal(got.failed, np.zeros(len(ends), dtype=bool))
    assert np.isfinite(got.point).all()
    b = Blend(["naive", "mean"], np.array([[0.5, 0.5], [0.5, 0.5], [0.0, 1.0]]), "test")
    np.testing.assert_array_equal(blended(fs, store, b)["test"].failed, sid == 0)


def test_the_blend_learns_on_its_own_part_never_on_the_early_stopping_windows():
    """The validation part's first half chooses the model's best epoch, its second half (the
    blend's part) the blend's weights: poisoning every forecast and target of the first half
    leaves the weights as they were; poisoning the blend's part moves them."""
    store = _store()
    n = store.meta()["n_windows"]
    assert n["val"] > 0 and n["blend"] > 0
    assert (store.cuts.val_start < store.cuts.blend_start).all()
    assert (store.cuts.blend_start < store.cuts.cal_start).all()
    fs = run(store, [Naive(), SeasonalNaive(SEASON), Mean()], ("test", "val", "blend"),
             season=0)
    members = ["naive", "seasonal_naive", "mean"]
    clean = learn_blend(fs, store, members)
    for m in members:
        fs.forecasts[m]["val"].point[:] = 1e9 * (1 + members.index(m))
    y = np.array(store.y)
    for i in range(store.n_series):
        a = int(store.offsets[i])
        y[a + int(store.cuts.val_start[i]):a + int(store.cuts.blend_start[i])] = -1e9
    poisoned = learn_blend(fs, replace(store, y=y), members)
    np.testing.assert_array_equal(poisoned.weights, clean.weights)
    fs.forecasts["seasonal_naive"]["blend"].point[:] = 1e9
    assert not np.allclose(learn_blend(fs, store, members).weights, clean.weights)


def test_few_windows_shrink_the_weights_toward_equal_by_their_count():
    """A series' learned weights count n / (n + shrink) of its n validation windows: the
    blend of one series with the same members equals that mix of the unshrunk weights and
    equal weights; with shrink 0 they are the learned ones; the record lists the series
    learned on fewer than FEW windows."""
    store = _store()
    members = ["naive", "seasonal_naive", "mean"]
    learned = learn_blend(_forecasts(store), store, members, shrink=0.0)
    shrunk = learn_blend(_forecasts(store), store, members, shrink=SHRINK, toward="equal")
    n = learned.windows[:, None]
    np.testing.assert_allclose(shrunk.weights, n / (n + SHRINK) * learned.weights
                               + SHRINK / (n + SHRINK) / len(members))
    assert np.allclose(shrunk.weights.sum(axis=1), 1.0)
    assert (np.abs(shrunk.weights - 1 / 3) <= np.abs(learned.weights - 1 / 3) + 1e-12).all()
    assert shrunk.few(store.ids) == [str(i) for i, k in zip(store.ids, learned.windows)
                                     if k < FEW]
    assert f"n / (n + {SHRINK:g})" in shrunk.rule



def test_shrinking_toward_the_kept_members_leaves_a_trimmed_member_out():
    """``toward`` kept: the learned weights mix with equal weights over the members the trim
    kept, so a member the trim left out keeps no weight however few the windows."""
    store = _store()
    members = ["naive", "seasonal_naive", "mean"]
    learned = learn_blend(_forecasts(store), store, members, shrink=0.0)
    kept = learn_blend(_forecasts(store), store, members, shrink=SHRINK, toward="kept")
    n, on = learned.windows[:, None], learned.weights > 0
    np.testing.assert_allclose(kept.weights, n / (n + SHRINK) * learned.weights
                               + SHRINK / (n + SHRINK) * on / on.sum(axis=1, keepdims=True))
    assert (kept.weights[~on] == 0).all() and (~on).any()
    assert np.allclose(kept.weights.sum(axis=1), 1.0)
