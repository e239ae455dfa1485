"""Unit tests for attn_forecast.forecasters.run: every part forecast, the fallbacks."""
from __future__ import annotations

import numpy as np

from attn_forecast.forecasters.ridge import Ridge as RidgeForecaster
from attn_forecast.forecasters.run import run
from attn_forecast.forecasters.simple import Mean, Naive, SeasonalNaive
from attn_forecast.forecasters.registry import Unavailable
from attn_forecast.forecasters.statistical import Stat
from unit.forecasters.helpers import LEVELS, _series, _store


def test_a_saved_and_memory_mapped_store_forecasts_as_the_built_one(tmp_path):
    from attn_forecast.data.store_io import load, save
    series = [_series(60, seed=21), _series(70, seed=22, level=80, scale=4)]
    built = _store(series, window=5, horizon=2, test=0.2, cal=0.2)
    save(tmp_path / "prepared", built)
    loaded = load(tmp_path / "prepared")
    assert isinstance(loaded.y, np.memmap)
    made = [Naive(), SeasonalNaive(12), Mean(), RidgeForecaster(1.0), Stat("theta", 12)]
    a = run(built, made, ("test", "cal"), LEVELS, season=0)
    b = run(loaded, made, ("test", "cal"), LEVELS, season=0)
    for name in a.names():
        for part in ("test", "cal"):
            np.testing.assert_array_equal(a.forecasts[name][part].point,
                                          b.forecasts[name][part].point, err_msg=name)


def test_run_forecasts_every_part_and_a_forecaster_that_fits_nothing_takes_the_fallback():
    v = _series(70, seed=20)
    s = _store([v], window=4, horizon=2, test=0.2, cal=0.2)
    fs = run(s, [Naive(), Mean(), Stat("ets", 0)], ("test", "cal"), LEVELS, {"k": 1}, season=0)
    for part in ("test", "cal"):
        e = s.ends(part)
        np.testing.assert_array_equal(fs.ends[part], e)
        np.testing.assert_array_equal(fs.forecasts["naive"][part].point,
                                      np.repeat(v[e - 1][:, None], 2, axis=1))
        assert fs.forecasts["naive"][part].quantiles.shape == (len(e), 2, 3)
        np.testing.assert_allclose(fs.forecasts["mean"][part].point[:, 0],
                                   [v[:k].mean() for k in e], rtol=1e-12)   # all before it
    assert fs.names() == ["naive", "mean", "ets"] and fs.levels == LEVELS and fs.record == {"k": 1}
    tiny = _store([np.sin(np.arange(9.0)) + 3], window=2, horizon=1, test=0.34)
    fs = run(tiny, [Naive(), Stat("ets", 0)], ("test",), LEVELS, season=0)
    ets, naive = fs.forecasts["ets"]["test"], fs.forecasts["naive"]["test"]
    np.testing.assert_array_equal(ets.point, naive.point)       # Naive2 without a season
    np.testing.assert_array_equal(ets.quantiles, naive.quantiles)   # its interval too
    assert ets.failed.all()
    assert "ets could not be fitted on 1 of 1 series" in fs.warnings[0]
    assert "naive2's stands in for them" in fs.warnings[1]
    # a baseline that cannot run here (no season) stays n/a, with its reason
    fs = run(tiny, [Unavailable("seasonal_naive", "no season")], ("test",), season=0)
    assert fs.forecasts["seasonal_naive"] == {"test": None}
