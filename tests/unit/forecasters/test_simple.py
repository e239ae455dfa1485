"""Unit tests for attn_forecast.forecasters.simple: naive, seasonal naive and mean."""
from __future__ import annotations

import numpy as np
from scipy.stats import norm

from attn_forecast.forecasters.simple import Mean, Naive, SeasonalNaive
from unit.forecasters.helpers import LEVELS, _series, _store


# ---------------------------------------------------------------- naive, seasonal naive, mean
def test_naive_repeats_the_last_value_with_random_walk_quantiles():
    v = _series(80, seed=1)
    s = _store([v], window=5, horizon=3, test=0.25)
    ends = s.ends("test")
    f = Naive()
    assert f.fit(s) == []
    got = f.forecast(s, ends, LEVELS)
    np.testing.assert_array_equal(got.point, np.repeat(v[ends - 1][:, None], 3, axis=1))
    sigma = np.std(np.diff(v[:60]), ddof=1)            # the training part: rows 0..59
    want = v[ends - 1][:, None, None] + sigma * np.sqrt(np.arange(1, 4))[None, :, None] \
        * norm.ppf(LEVELS)[None, None, :]
    np.testing.assert_allclose(got.quantiles, want, rtol=1e-12)
    assert f.forecast(s, ends).quantiles is None


def test_naive_has_zero_error_on_a_piecewise_constant_series():
    y = np.repeat(np.array([3.0, -1.0, 7.5, 2.0]), 10)   # constant blocks of 10
    s = _store([y], window=1, horizon=3, test=0.25)
    first = np.array([b * 10 + k for b in range(4) for k in range(1, 8)])
    got = Naive().forecast(s, first).point
    assert got.shape == (len(first), 3)
    np.testing.assert_array_equal(got, s.targets(first))
    # a window that straddles a block change has an error
    assert np.abs(Naive().forecast(s, np.array([9])).point - s.targets(np.array([9]))).max() \
        > 0


def test_seasonal_naive_picks_one_season_back():
    y = np.arange(30, dtype=np.float64) * 10              # value = 10 x row
    s = _store([y], window=4, horizon=6, test=0.3)
    got = SeasonalNaive(4).forecast(s, np.array([10, 17])).point
    # last known row 9: targets 10..15 take rows 6, 7, 8, 9 (one season back), then 6, 7
    assert got.tolist() == [[60, 70, 80, 90, 60, 70], [130, 140, 150, 160, 130, 140]]
    # season 1 is the naive forecast
    np.testing.assert_array_equal(SeasonalNaive(1).forecast(s, np.array([10, 17])).point,
                                  Naive().forecast(s, np.array([10, 17])).point)
    # a horizon shorter than the season: v[target - season]
    short = _store([y], window=4, horizon=2, test=0.3)
    assert SeasonalNaive(5).forecast(short, np.array([12])).point.tolist() == [[70, 80]]


def test_seasonal_naive_is_exact_on_a_periodic_series():
    pattern = np.array([1.0, 4.0, -2.0, 0.5, 3.0, 3.0, -1.0])
    y = np.tile(pattern, 6)
    s = _store([y], window=7, horizon=10, test=0.3)
    first = np.arange(7, 30)
    np.testing.assert_array_equal(SeasonalNaive(7).forecast(s, first).point,
                                  s.targets(first))


def test_seasonal_naive_never_reads_another_series():
    a, b = np.arange(20, dtype=np.float64), 100 + np.arange(20, dtype=np.float64)
    s = _store([a, b], window=2, horizon=1, test=0.25)
    # series b starts at row 20; its window ending at local row 3 has no value 5 back
    got = SeasonalNaive(5).forecast(s, np.array([23, 26])).point
    assert np.isnan(got[0, 0]) and got[1, 0] == 101.0          # row 26 - 5 = local row 1


def test_mean_is_each_series_mean_of_every_value_before_the_origin():
    a, b = _series(60, seed=2), _series(90, seed=3, level=500, scale=20)
    s = _store([a, b], window=4, horizon=2, test=0.2, val=0.1)
    ends = s.ends("test")
    f = Mean()
    f.fit(s)
    got = f.forecast(s, ends).point
    sid = s.series_of(ends)
    want = [(a if i == 0 else b)[:e - s.offsets[i]].mean() for i, e in zip(sid, ends)]
    np.testing.assert_allclose(got, np.repeat(np.array(want)[:, None], 2, axis=1), rtol=1e-12)


def test_the_mean_at_an_origin_on_the_training_parts_start_averages_what_came_before():
    """A rolling backtest's training part can start inside a series; an origin at (or
    before) its start has no training values to average, so the mean reads the values
    before it from the series' start, never an empty sum's 0."""
    import dataclasses
    v = _series(60, seed=4, level=50)
    s = _store([v], window=4, horizon=2, test=0.25)
    object.__setattr__(s, "cuts", dataclasses.replace(s.cuts, train_start=np.array([10])))
    f = Mean()
    f.fit(s)
    ends = np.array([8, 10, 11, 20])
    got = f.forecast(s, ends).point[:, 0]
    np.testing.assert_allclose(got, [v[:8].mean(), v[:10].mean(), v[10:11].mean(),
                                     v[10:20].mean()], rtol=1e-12)
    assert (got > 0).all()
