"""Unit tests for attn_forecast.evaluation.calibration and the simple forecasters' intervals.

The simple baselines' quantiles against the standard error formulas (Hyndman and
Athanasopoulos, 5.5) written out here with scipy's normal quantiles (and statsmodels'
classical decomposition for Naive2's seasonal indices); the rule that gives every forecaster
its intervals (calibrated on a calibration set, its own, or the fallback's spread around its
point, counted) by hand; split-conformal coverage on exchangeable synthetic series; and a
future forecast's margins past the calibrated horizon."""
from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import norm

from attn_forecast.data.build import build
from attn_forecast.data.long_table import Raw
from attn_forecast.evaluation import intervals as Q
from attn_forecast.evaluation.calibration import (UNIT, CalibrationSet, calibration_of,
                                                  future_quantiles, intervals, margins_record,
                                                  scales, with_point_quantiles)
from attn_forecast.evaluation.scoring import evaluate
from attn_forecast.forecasters.protocol import Forecast
from attn_forecast.forecasters.run import run
from attn_forecast.forecasters.saved import ForecastSet
from attn_forecast.forecasters.simple import Mean, Naive, Naive2, SeasonalNaive, fallback_for

LEVELS = (0.025, 0.1, 0.5, 0.9, 0.975)
Z = norm.ppf(LEVELS)


# ---------------------------------------------------------------- helpers
def _raw(series) -> Raw:
    series = [np.asarray(s, dtype=np.float64) for s in series]
    offsets = np.r_[0, np.cumsum([len(s) for s in series])].astype(np.int64)
    return Raw(np.array([f"s{i}" for i in range(len(series))]), offsets,
               np.concatenate([np.arange(len(s), dtype=np.float64) for s in series]),
               np.concatenate(series), np.full(int(offsets[-1]), np.nan))


def _store(series, *, window=8, horizon=3, test=0.2, cal=0.0):
    return build(_raw(series), window=window, horizon=horizon,
                 fracs={"test": test, "val": 0.0, "cal": cal}, scaler="zscore",
                 transform="none")


def _walk(n, seed, level=50.0, scale=1.0):
    rng = np.random.default_rng(seed)
    return level + scale * np.cumsum(rng.normal(size=n))


def _train(store, i):
    """Series i's training part, by its cuts (rows 0 .. val_start of the series)."""
    a = int(store.offsets[i])
    return store.y[a:a + int(store.cuts.val_start[i])]


class _PointOnly:
    """A forecaster with point forecasts only (naive's point, no quantiles whatever the levels)."""
    name = "pointy"

    def fit(self, store):
        return []

    def forecast(self, store, ends, levels=()):
        return Forecast(np.repeat(store.last(ends)[:, None], store.horizon, axis=1))


# ---------------------------------------------------------------- the simple forecasters
def test_naives_quantiles_are_the_random_walk_formula():
    """sigma = the std (ddof 1) of the training part's one-step changes; step k's quantile
    at tau: the last value + sigma sqrt(k) z_tau."""
    series = [_walk(60, 1), _walk(80, 2, level=500, scale=20)]
    store = _store(series, horizon=5)
    f = Naive()
    f.fit(store)
    ends = store.ends("test")
    fc = f.forecast(store, ends, LEVELS)
    sid = store.series_of(ends)
    k = np.arange(1, 6)
    for i in range(2):
        sigma = np.std(np.diff(_train(store, i)), ddof=1)
        r = sid == i
        last = store.y[ends[r] - 1]
        want = last[:, None, None] + sigma * np.sqrt(k)[None, :, None] * Z[None, None, :]
        np.testing.assert_allclose(fc.quantiles[r], want, rtol=1e-12)
        np.testing.assert_allclose(fc.point[r], np.repeat(last[:, None], 5, axis=1))
    # the median is the point forecast; the 95 % half-width at step 4 is 2 x step 1's
    np.testing.assert_allclose(fc.quantiles[..., 2], fc.point, rtol=1e-12)
    half = fc.quantiles[..., 4] - fc.point
    np.testing.assert_allclose(half[:, 3], 2 * half[:, 0], rtol=1e-12)


def test_seasonal_naives_quantiles_grow_with_the_seasons_ahead():
    """m = 4, steps 1..8: the point is the value one season before (steps 5..8 repeat steps
    1..4: y[e - 4 + (k - 1) % 4]); sd = sigma_4 sqrt(ceil(k / 4)): 1, 1, 1, 1, sqrt 2, ...,
    sigma_4 the std (ddof 1) of the training part's changes over 4 steps."""
    rng = np.random.default_rng(3)
    t = np.arange(72)
    series = [20 + 5 * np.sin(2 * np.pi * t / 4) + rng.normal(0, 1, 72),
              300 + 40 * np.cos(2 * np.pi * t / 4) + rng.normal(0, 6, 72)]
    store = _store(series, horizon=8, test=0.25)
    f = SeasonalNaive(4)
    f.fit(store)
    ends = store.ends("test")
    fc = f.forecast(store, ends, LEVELS)
    sid = store.series_of(ends)
    k = np.arange(1, 9)
    seasons = np.array([1, 1, 1, 1, 2, 2, 2, 2])
    assert (seasons == np.ceil(k / 4)).all()
    for i in range(2):
        tr = _train(store, i)
        sigma4 = np.std(tr[4:] - tr[:-4], ddof=1)
        r = np.flatnonzero(sid == i)
        point = store.y[ends[r][:, None] - 4 + (k[None, :] - 1) % 4]
        np.testing.assert_allclose(fc.point[r], point, rtol=1e-12)
        want = point[..., None] + sigma4 * np.sqrt(seasons)[None, :, None] * Z
        np.testing.assert_allclose(fc.quantiles[r], want, rtol=1e-12)


def test_naive2s_quantiles_are_naives_on_the_adjusted_series_with_the_season_put_back():
    """A multiplicative quarterly series: the seasonal indices by statsmodels' classical
    decomposition of the training part (normalised to mean 1); the point: the last value
    adjusted, times the target's index; sd: the adjusted series' one-step sigma sqrt(k) times
    the target's index."""
    from statsmodels.tsa.seasonal import seasonal_decompose
    rng = np.random.default_rng(4)
    t = np.arange(64)
    season = np.array([0.7, 1.2, 1.4, 0.7])
    y = (100 + 0.8 * t) * season[t % 4] * (1 + rng.normal(0, 0.02, 64))
    store = _store([y], horizon=6, test=0.25)
    f = Naive2(4)
    f.fit(store)
    ends = store.ends("test")
    fc = f.forecast(store, ends, LEVELS)
    tr = _train(store, 0)
    si = np.asarray(seasonal_decompose(tr, model="multiplicative", period=4).seasonal[:4])
    assert abs(si.mean() - 1) < 1e-12 and si[2] > 1.2 and si[3] < 0.8   # a clear season
    sigma = np.std(np.diff(tr / si[np.arange(len(tr)) % 4]), ddof=1)
    k = np.arange(1, 7)
    last = ends - 1                                   # the last known row (one series)
    target = si[(last[:, None] + k[None, :]) % 4]
    point = (y[last] / si[last % 4])[:, None] * target
    np.testing.assert_allclose(fc.point, point, rtol=1e-10)
    want = point[..., None] + (sigma * np.sqrt(k)[None, :] * target)[..., None] * Z
    np.testing.assert_allclose(fc.quantiles, want, rtol=1e-10)
    # without a season the fallback is plain naive
    plain = fallback_for(0)
    plain.fit(store)
    naive = Naive()
    naive.fit(store)
    np.testing.assert_allclose(plain.forecast(store, ends, LEVELS).quantiles,
                               naive.forecast(store, ends, LEVELS).quantiles, rtol=1e-12)


def test_means_quantiles_are_the_historic_mean_and_sd_times_sqrt_1_plus_1_over_t():
    """Each window's mean is every value of its series before its origin (T of them); its
    spread the training part's standard deviation times sqrt(1 + 1 / T)."""
    rng = np.random.default_rng(5)
    series = [rng.normal(10, 2, 50), rng.normal(-40, 15, 70)]
    store = _store(series, horizon=4)
    f = Mean()
    f.fit(store)
    ends = store.ends("test")
    fc = f.forecast(store, ends, LEVELS)
    sid = store.series_of(ends)
    for k, e in enumerate(ends):
        i = sid[k]
        before = store.y[store.offsets[i]:e]
        sd = np.std(_train(store, i), ddof=1) * math.sqrt(1 + 1 / len(before))
        np.testing.assert_allclose(fc.quantiles[k], np.broadcast_to(before.mean() + sd * Z,
                                                                    (4, 5)), rtol=1e-10)


# ---------------------------------------------------------------- the intervals rule
def test_intervals_by_hand_calibrated_own_and_fallback():
    """Two series, one step, levels 0.1, 0.5, 0.9. A point forecaster's calibration
    residuals |y - point| / unit: 1, 3, 2, 0.5 -> rank ceil(5 x 0.8) = 4: the largest, 3;
    on the scored windows (units 1 and 10) its interval is the point -+ 3 and -+ 30. A
    forecaster without any quantiles takes the fallback's spread around its own point."""
    levels = (0.1, 0.5, 0.9)
    point_cal = np.zeros((4, 1))
    y_cal = np.array([[1.0], [-3.0], [2.0], [-0.5]])
    cal = CalibrationSet({"pt": Forecast(point_cal, Q.at_point(point_cal, 3)),
                          "bare": Forecast(point_cal)}, y_cal, np.ones(4))
    point = np.array([[100.0], [200.0]])
    unit = np.array([1.0, 10.0])
    sid = np.array([0, 1])
    fb = Forecast(np.array([[7.0], [8.0]]), np.array([[[5.0, 7.0, 10.0]], [[6.0, 8.0, 9.0]]]))
    fcs = {"pt": Forecast(point, Q.at_point(point, 3)), "bare": Forecast(point), "gone": None}
    iv = intervals(fcs, levels, unit, sid, fb, cal)
    np.testing.assert_allclose(iv.quantiles["pt"], [[[97.0, 100.0, 103.0]],
                                                    [[170.0, 200.0, 230.0]]])
    assert iv.how["pt"] == "calibrated" and "pt" not in iv.fallback
    np.testing.assert_allclose(iv.margins["pt"], [[3.0]])
    # no quantiles of its own: the fallback's spread (-2, 0, +3; -2, 0, +1) around its point
    np.testing.assert_allclose(iv.quantiles["bare"], [[[98.0, 100.0, 103.0]],
                                                      [[198.0, 200.0, 201.0]]])
    assert iv.how["bare"] == "fallback" and iv.fallback["bare"] == 2
    assert "gone" not in iv.quantiles
    rec = margins_record(iv, levels, cal)
    assert rec["pairs"] == [80] and rec["calibrated_on"] == "the calibration part"
    assert rec["forecasters"]["pt"] == {"how": "calibrated", "margins": [[3.0]], "windows": 4}
    assert rec["forecasters"]["bare"] == {"how": "fallback", "margins": None}
    # without a calibration set: own quantiles stand, a point forecast takes the fallback's
    own_q = np.array([[[90.0, 100.0, 111.0]], [[150.0, 200.0, 260.0]]])
    iv = intervals({"own": Forecast(point, own_q), "bare": Forecast(point)}, levels, unit, sid,
                   fb, None)
    np.testing.assert_array_equal(iv.quantiles["own"], own_q)
    assert iv.how["own"] == "own" and "own" not in iv.fallback and iv.margins == {}
    assert iv.how["bare"] == "fallback" and iv.fallback["bare"] == 2


def test_evaluate_calibrates_a_point_forecaster_or_gives_it_the_fallbacks_counted():
    series = [_walk(90, 6), _walk(100, 7, level=900, scale=30), _walk(110, 8, level=5,
                                                                      scale=0.2)]
    store = _store(series, horizon=3, test=0.2, cal=0.3)
    fs = run(store, [Naive(), _PointOnly()], ("test", "cal"), LEVELS, season=0)
    assert fs.forecasts["pointy"]["test"].quantiles is None
    ends = fs.ends["test"]
    sid = store.series_of(ends)
    # no calibration: naive keeps its own, the point forecaster gets naive2's (here naive's:
    # no season) spread around its point, counted for every series
    ev = evaluate(store, fs, noise_std=None, season=0, conformal="none")
    np.testing.assert_array_equal(ev.quantiles["naive"], fs.forecasts["naive"]["test"].quantiles)
    assert ev.metrics["naive"]["intervals"] == "own"
    assert ev.metrics["naive"]["n_interval_fallback"] == 0
    assert ev.metrics["pointy"]["intervals"] == "fallback"
    assert ev.metrics["pointy"]["n_interval_fallback"] == store.n_series == 3
    sig = np.array([np.std(np.diff(_train(store, i)), ddof=1) for i in range(3)])
    spread = sig[sid][:, None, None] * np.sqrt([1, 2, 3])[None, :, None] * Z
    np.testing.assert_allclose(ev.quantiles["pointy"],
                               fs.forecasts["pointy"]["test"].point[..., None] + spread,
                               rtol=1e-10)
    assert any("pointy has no interval of its own for 3 of 3 series" in w for w in ev.warnings)
    # split conformal on the calibration part: both calibrated, none counted
    ev = evaluate(store, with_point_quantiles(fs), noise_std=None, season=0, conformal="split")
    for name in ("naive", "pointy"):
        assert ev.metrics[name]["intervals"] == "calibrated"
        assert ev.metrics[name]["n_interval_fallback"] == 0
    # the point forecaster's margin by hand: the rank of its calibration residuals in units
    # (calibration's: each series' training part's in-sample naive error, MASE's scale)
    cal = fs.ends["cal"]
    u = np.array([np.mean(np.abs(np.diff(_train(store, i)))) for i in range(3)])
    np.testing.assert_allclose(scales(store, UNIT), u, rtol=1e-12)
    res = np.abs(store.targets(cal) - store.y[cal - 1][:, None]) / u[store.series_of(cal)][
        :, None]
    n = len(cal)
    srt = np.sort(res, axis=0)
    m95 = srt[min(math.ceil((n + 1) * 0.95), n) - 1]
    m80 = srt[min(math.ceil((n + 1) * 0.8), n) - 1]
    got = np.array(ev.intervals["forecasters"]["pointy"]["margins"])
    np.testing.assert_allclose(got, np.stack([m95, m80], axis=1), rtol=1e-7)
    q = ev.quantiles["pointy"]
    p = fs.forecasts["pointy"]["test"].point
    np.testing.assert_allclose(q[..., 4] - p, m95[None, :] * u[sid][:, None], rtol=1e-10)
    np.testing.assert_allclose(p - q[..., 1], m80[None, :] * u[sid][:, None], rtol=1e-10)
    # its scores in the metrics, by the definitions: MSIS (M4: per series the mean 95 %
    # interval score over its targets, over its scale; then the mean over series), WQL
    y = ev.actual
    lo, hi = q[..., 0], q[..., 4]
    score = hi - lo + 40 * np.maximum(lo - y, 0) + 40 * np.maximum(y - hi, 0)
    naive = np.array([np.mean(np.abs(np.diff(_train(store, i)))) for i in range(3)])
    np.testing.assert_allclose(scales(store), naive, rtol=1e-12)   # MSIS's: MASE's scale
    msis = np.mean([score[sid == i].mean() / naive[i] for i in range(3)])
    assert ev.metrics["pointy"]["msis"] == pytest.approx(msis, rel=1e-10)
    wql = np.mean([2 * np.sum(np.maximum(t * (y - q[..., k]), (t - 1) * (y - q[..., k])))
                   / np.abs(y).sum() for k, t in enumerate(LEVELS)])   # no nine: all five
    assert ev.metrics["pointy"]["wql"] == pytest.approx(wql, rel=1e-10)
    assert ev.metrics["pointy"]["coverage_80"] == pytest.approx(
        np.mean((y >= q[..., 1]) & (y <= q[..., 3])))
    # the calibration set is the calibration part, its targets and each window's unit
    cs = calibration_of(fs, store)
    np.testing.assert_array_equal(cs.actual, store.targets(cal))
    np.testing.assert_allclose(cs.unit, u[store.series_of(cal)], rtol=1e-12)


def test_calibrated_coverage_on_exchangeable_series_is_nominal():
    """300 series of iid noise (each on its own scale): every window's errors are
    exchangeable, so intervals calibrated on the calibration part cover 80 % and 95 % of the
    test targets. Naive's own intervals (a random walk's, growing with sqrt(k)) are far too
    wide here: calibration narrows them."""
    rng = np.random.default_rng(12)
    S, n = 300, 60
    scale = np.exp(rng.uniform(-2, 3, S))
    series = [10 * s + s * rng.normal(size=n) for s in scale]
    store = _store(series, horizon=3, test=0.2, cal=0.3)
    fs = run(store, [Naive(), Mean()], ("test", "cal"), LEVELS, season=0)
    own = evaluate(store, fs, noise_std=None, conformal="none")
    ev = evaluate(store, with_point_quantiles(fs), noise_std=None, conformal="split")
    for name in ("naive", "mean"):
        m = ev.metrics[name]
        assert m["intervals"] == "calibrated"
        assert abs(m["coverage_80"] - 0.8) < 0.03, (name, m["coverage_80"])
        assert abs(m["coverage_95"] - 0.95) < 0.02, (name, m["coverage_95"])
    # naive's own intervals cover far more than 80 %: calibration changed them
    assert own.metrics["naive"]["coverage_80"] > 0.87
    assert own.metrics["naive"]["intervals"] == "own"
    # coverage counted here: the share of targets inside the calibrated 80 % interval
    q = ev.quantiles["naive"]
    inside = (ev.actual >= q[..., 1]) & (ev.actual <= q[..., 3])
    assert ev.metrics["naive"]["coverage_80"] == pytest.approx(inside.mean())


# ---------------------------------------------------------------- a future forecast
def test_future_quantiles_grow_the_last_calibrated_spread_by_sqrt_k_over_h_past_h():
    """Margins calibrated for H = 2 steps: 1 and 2 (80 % pair) in units; unit 3; raw bounds
    -+1. Steps 1, 2: -+(1 + 3 x 1), -+(1 + 3 x 2); step k > 2: step 2's calibrated distance
    from the median, 7, times sqrt(k / 2)."""
    levels = (0.1, 0.5, 0.9)
    raw = np.zeros((5, 3))
    raw[:, 0], raw[:, 2] = -1.0, 1.0
    got = future_quantiles(raw, np.array([[1.0], [2.0]]), levels, 3.0)
    half = np.array([4.0, 7.0, 7 * math.sqrt(1.5), 7 * math.sqrt(2.0), 7 * math.sqrt(2.5)])
    np.testing.assert_allclose(got[:, 2], half, rtol=1e-12)
    np.testing.assert_allclose(got[:, 0], -half, rtol=1e-12)
    np.testing.assert_array_equal(got[:, 1], 0.0)
    # within the calibrated horizon: exactly the calibrated margins
    got = future_quantiles(raw[:2], np.array([[1.0], [2.0]]), levels, 3.0)
    np.testing.assert_allclose(got[:, 2], [4.0, 7.0], rtol=1e-12)


def test_a_narrowing_margin_never_shrinks_an_interval_past_the_horizon_to_nothing():
    """A calibrated margin below zero (raw bounds too wide) narrows the interval, at most to
    the median; past the horizon the calibrated spread only grows (before, -m x sqrt(k / H)
    crossed the median and was clipped to zero width)."""
    levels = (0.025, 0.1, 0.5, 0.9, 0.975)
    raw = np.array([[-4.0, -2.0, 0.0, 2.0, 4.0]] * 12)
    margins = np.array([[-1.0, -0.5]] * 3)          # (H, P): 95 % and 80 %, narrowing
    got = future_quantiles(raw, margins, levels, 1.0)
    width80 = got[:, 3] - got[:, 1]
    width95 = got[:, 4] - got[:, 0]
    assert (width80 > 0).all() and (width95 >= width80).all()
    assert (np.diff(width80[2:]) > 0).all()          # steps 3 .. 12 widen
    np.testing.assert_allclose(width80[:3], 3.0)     # -+(2 - 0.5) inside the horizon


def test_with_point_quantiles_gives_only_point_forecasts_their_point_at_every_level():
    point = np.arange(6.0).reshape(2, 3)
    own = np.repeat(point[..., None], 5, axis=-1) + np.array([-2, -1, 0, 1, 2.0])
    fs = ForecastSet({"test": np.array([10, 11])},
                     {"p": {"test": Forecast(point)}, "q": {"test": Forecast(point, own)},
                      "none": {"test": None}}, LEVELS)
    out = with_point_quantiles(fs)
    np.testing.assert_array_equal(out.forecasts["p"]["test"].quantiles,
                                  np.repeat(point[..., None], 5, axis=-1))
    np.testing.assert_array_equal(out.forecasts["q"]["test"].quantiles, own)
    assert out.forecasts["none"]["test"] is None
