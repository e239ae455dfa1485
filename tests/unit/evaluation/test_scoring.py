"""Unit tests for attn_forecast.evaluation (and the summary of report.py): nothing after the
split reaches any forecaster's fit, a panel of one series is scored as that series alone, a
forecaster that cannot be fitted is null or left out of its aggregate, intervals are
calibrated per step in units of each series, and the significance tests and tables.

A series is evaluated twice: as it is, and with every value from the end of its training
part on set to huge numbers ("poisoned"). Whatever was fitted on the training part (the
scaler, the ridge, the training mean, the MASE scale) must come out the same, and so must
every forecast whose inputs lie before the poisoned values.
"""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from dieboldmariano import dm_test
from sklearn.metrics import mean_squared_error

from attn_forecast.forecasters.protocol import Forecast
from attn_forecast.forecasters.run import run
from attn_forecast.forecasters.saved import ForecastSet, merge
from attn_forecast.forecasters.registry import baselines
from attn_forecast.evaluation.calibration import UNIT, scales, with_point_quantiles
from attn_forecast.evaluation.scoring import evaluate, units
from attn_forecast.evaluation.tables import tables
from attn_forecast.data.build import build
from attn_forecast.data.long_table import Raw
from attn_forecast.data.csv import read_table

LEVELS = (0.1, 0.5, 0.9)
N, W = 240, 12


# ---------------------------------------------------------------- helpers
def _raw(series, ids=None) -> Raw:
    series = [np.asarray(s, dtype=np.float64) for s in series]
    ids = np.array(ids if ids is not None else [f"s{i}" for i in range(len(series))], dtype=str)
    offsets = np.r_[0, np.cumsum([len(s) for s in series])].astype(np.int64)
    y = np.concatenate(series)
    t = np.concatenate([np.arange(len(s), dtype=np.float64) for s in series])
    return Raw(ids, offsets, t, y, np.full(len(y), np.nan))


def _store(series=None, *, raw=None, window=W, horizon=1, test=0.25, val=0.0, cal=0.0,
           transform="none"):
    return build(raw if raw is not None else _raw(series), window=window, horizon=horizon,
                 fracs={"test": test, "val": val, "cal": cal}, scaler="zscore",
                 transform=transform)


def _series(n=N, seed=5, level=10.0, scale=1.0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    t = np.arange(n)
    return level + scale * (np.sin(2 * np.pi * t / 24) + 0.01 * t + rng.normal(0, 0.1, n))


def _baselines(store, names, season, parts=("test",), levels=()):
    chosen, unavailable = baselines(names, season=season, ridge_alpha=1.0, features=False)
    return run(store, chosen, parts, levels, {"unavailable": unavailable}, season=season)


def _with_model(store, fs, seed=0, noise=0.05):
    """fs with a "model": the naive forecast plus a little noise, in each series' units."""
    rng = np.random.default_rng(seed)
    parts = {}
    for part, e in fs.ends.items():
        last = store.last(e)
        unit = units(store)[store.series_of(e)]
        parts[part] = Forecast(last[:, None] + noise * unit[:, None]
                                 * rng.normal(size=(len(e), store.horizon)))
    return merge(ForecastSet(fs.ends, {"model": parts}, fs.levels), fs)


def _sk_rmse(y, p) -> float:
    return math.sqrt(mean_squared_error(np.ravel(y), np.ravel(p)))


# ---------------------------------------------------------------- no leak from the future
BASELINES = ["naive", "seasonal_naive", "mean", "ridge", "ets"]
CASES = [dict(horizon=1, transform="none", season=0, val=0.0),
         dict(horizon=3, transform="diff", season=24, val=0.1),
         dict(horizon=2, transform="log_return", season=24, val=0.0)]


def _model_series(v, transform):
    if transform == "none":
        return v.copy()
    return np.r_[0.0, np.diff(v) if transform == "diff" else np.diff(np.log(v))]


def _ridge_by_hand(v, vs, ts, H, transform):
    """sklearn's Ridge on the training windows of the scaled model series, applied to the
    test windows, back in levels."""
    from sklearn.linear_model import Ridge
    off = 0 if transform == "none" else 1
    m = _model_series(v, transform)
    c, s = m[off:vs].mean(), m[off:vs].std()
    z = ((m - c) / s).astype(np.float32)
    z[:off] = 0
    train = [e for e in range(len(v)) if e - W >= off and e + H <= vs]
    test = [e for e in range(ts, len(v) - H + 1) if e - W >= off]

    def xy(ends):
        return (np.stack([z[e - W:e] for e in ends]).astype(np.float64),
                np.stack([z[e:e + H] for e in ends]).astype(np.float64))
    zp = Ridge(alpha=1.0).fit(*xy(train)).predict(xy(test)[0]).reshape(-1, H) * s + c
    last = v[np.array(test) - 1][:, None]
    if transform == "none":
        return zp
    return last + np.cumsum(zp, axis=1) if transform == "diff" else \
        last * np.exp(np.cumsum(zp, axis=1))


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"h{c['horizon']}-{c['transform']}")
def test_poisoned_future_changes_no_fit(case):
    H, transform, season = case["horizon"], case["transform"], case["season"]
    kw = dict(horizon=H, transform=transform, val=case["val"])
    y = _series()
    store = _store([y], **kw)
    clean = evaluate(store, _baselines(store, BASELINES, season), noise_std=None)
    vs, ts = int(store.cuts.val_start[0]), int(store.cuts.test_start[0])
    assert ts == 180 and vs == (156 if case["val"] else 180)

    # everything from the first level after the training part poisoned: the fits on the
    # training part are the same
    poisoned = y.copy()
    poisoned[vs:] = 1e6 + np.arange(N - vs)
    bad_store = _store([poisoned], **kw)
    bad = evaluate(bad_store, _baselines(bad_store, BASELINES, season), noise_std=None)
    assert bad_store.cuts == store.cuts
    assert bad_store.scalers.center[0] == store.scalers.center[0]
    assert bad_store.scalers.scale[0] == store.scalers.scale[0]
    # (the mean, like naive, averages the values before each origin: the poisoned ones too)
    scale = np.mean(np.abs(np.diff(y[:vs])))           # MASE's denominator
    for name, f in bad.forecasts.items():
        m = bad.metrics[name]
        if f is None:
            assert name == "seasonal_naive" and season == 0 and m is None
            continue
        assert m["mase"] == pytest.approx(m["mae"] / scale, rel=1e-9), name
    # (float32 inputs, amplified by the poisoned levels: a few in 1e5 apart)
    np.testing.assert_allclose(bad.forecasts["ridge"],
                               _ridge_by_hand(poisoned, vs, ts, H, transform), rtol=1e-4)

    # the test part alone poisoned: the first test window's inputs and every forecaster's
    # forecast for it are the same
    poisoned = y.copy()
    poisoned[ts:] = 1e6
    bad_store = _store([poisoned], **kw)
    bad = evaluate(bad_store, _baselines(bad_store, BASELINES, season), noise_std=None)
    names = ["naive", "mean", "ridge", "ets"] + (["seasonal_naive"] if season else [])
    assert {n for n, f in clean.forecasts.items() if f is not None} == set(names)
    for name in names:
        np.testing.assert_array_equal(bad.forecasts[name][0], clean.forecasts[name][0],
                                      err_msg=name)
    assert not np.array_equal(bad.actual[0], clean.actual[0])  # its targets were poisoned


# ---------------------------------------------------------------- one series is a panel of one
def _raw_of(frame: pd.DataFrame) -> Raw:
    ids = pd.unique(frame["id"])
    n = frame.groupby("id", sort=False).size().loc[ids].to_numpy()
    return Raw(np.asarray(ids, dtype=str), np.r_[0, np.cumsum(n)].astype(np.int64),
               frame["t"].to_numpy(np.float64), frame["value"].to_numpy(np.float64),
               frame["signal"].to_numpy(np.float64))


def test_a_panel_of_one_series_is_scored_exactly_as_that_series_alone(tmp_path):
    v = _series(150, seed=8)
    alone = tmp_path / "alone.csv"
    pd.DataFrame({"t": np.arange(150), "value": v}).to_csv(alone, index=False)
    panel = tmp_path / "panel.csv"
    pd.DataFrame({"id": "A", "t": np.arange(150), "value": v}).to_csv(panel, index=False)
    frames = [read_table(alone, "value", time_column="t", default_id="value"),
              read_table(panel, "value", time_column="t", id_column="id")]
    evs = []
    for frame in frames:
        store = _store(raw=_raw_of(frame), horizon=2, test=0.2, cal=0.2)
        fs = _with_model(store, _baselines(store, ["naive", "seasonal_naive", "mean", "ridge",
                                                   "theta"], 24, ("test", "cal"), LEVELS))
        evs.append((store, evaluate(store, fs, noise_std=None, conformal="split")))
    (s1, one), (s2, two) = evs
    assert s1.ids.tolist() == ["value"] and s2.ids.tolist() == ["A"]
    assert one.metrics == two.metrics
    pd.testing.assert_frame_equal(one.by_series.drop(columns="id"),
                                  two.by_series.drop(columns="id"))
    # ... and those are the series' own scores
    e = one.ends
    np.testing.assert_array_equal(one.actual, v[e[:, None] + np.arange(2)])
    assert one.metrics["naive"]["rmse"] == pytest.approx(
        _sk_rmse(one.actual, np.repeat(v[e - 1][:, None], 2, axis=1)), rel=1e-12)
    assert one.metrics["n_series"] == 1 and one.metrics["n_test"] == len(e)
    assert "mase_mean" not in one.metrics["naive"] and "coverage_80" in one.metrics["naive"]


# ---------------------------------------------------------------- forecasters not fitted
def test_a_baseline_that_cannot_be_fitted_anywhere_keeps_its_row_on_the_fallbacks():
    """A real failure: ETS needs more than 6 training values; this series has 5. Naive2
    (naive: no season) stands in for every series, each counted as failed: the row stays,
    scored exactly as the fallback."""
    store = _store([np.sin(np.arange(9.0)) + 3], window=2, test=0.34)
    fs = _with_model(store, _baselines(store, ["naive", "ets", "theta"], 0))
    ev = evaluate(store, fs, noise_std=None)
    np.testing.assert_array_equal(ev.forecasts["ets"], ev.forecasts["naive"])
    assert ev.metrics["ets"]["n_failed"] == 1 and ev.metrics["ets"]["rmse"] == \
        ev.metrics["naive"]["rmse"]
    assert isinstance(ev.metrics["theta"], dict)
    assert "ets could not be fitted on 1 of 1 series" in ev.warnings[0]
    assert "naive2's stands in for them (counted in ets.n_failed)" in ev.warnings[1]
    assert "ets" in ev.metrics["significance"] and "theta" in ev.metrics["significance"]
    out = tables(ev, store)
    assert "ets" in out["predictions"] and "ets" in out["horizon"]


def test_a_series_a_forecaster_could_not_fit_is_scored_on_naive2s_forecast_and_counted():
    """ETS cannot fit the 9-value series: Naive2 (here naive: no season) stands in there, so
    ETS's mean covers the same three series as naive's, on the fallback's errors."""
    series = [_series(60, seed=1), np.sin(np.arange(9.0)) + 3, _series(50, seed=2, level=40)]
    store = _store(series, window=2, test=0.34)
    ev = evaluate(store, _baselines(store, ["naive", "ets"], 0), noise_std=None)
    sid = store.series_of(ev.ends)
    r = sid == 1
    np.testing.assert_array_equal(ev.forecasts["ets"][r], ev.forecasts["naive"][r])
    assert ev.metrics["ets"]["n_series"] == ev.metrics["naive"]["n_series"] == 3
    assert ev.metrics["ets"]["n_failed"] == 1 and ev.metrics["naive"]["n_failed"] == 0
    assert any("ets gave no forecast for 1 of 3 series (first: 's1'); naive2's stands in"
               in w for w in ev.warnings)
    mase = []
    for i in range(3):
        r = sid == i
        vs = int(store.cuts.val_start[i])
        scale = np.mean(np.abs(np.diff(series[i][:vs])))
        mase.append(np.mean(np.abs(ev.forecasts["ets"][r] - ev.actual[r])) / scale)
    assert ev.metrics["ets"]["mase_mean"] == pytest.approx(np.mean(mase), rel=1e-12)
    assert ev.by_series["ets_mase"][1] == ev.by_series["naive_mase"][1]


# ---------------------------------------------------------------- units and intervals
def test_units_are_each_series_naive_error_relative_to_their_mean():
    a, b, flat = _series(80, seed=3), _series(80, seed=4, scale=50), np.full(80, 7.0)
    one = _store([a], test=0.2)
    np.testing.assert_array_equal(units(one), [1.0])
    many = _store([a, b, flat], test=0.2)
    sa, sb = (np.mean(np.abs(np.diff(x[:64]))) for x in (a, b))
    # a flat series (no naive error) takes the mean of the others
    want = np.array([sa, sb, (sa + sb) / 2])
    np.testing.assert_allclose(units(many), want / want.mean(), rtol=1e-12)


def test_conformal_intervals_are_pooled_in_each_series_units():
    """The second series is the first times 1000: its calibrated intervals are 1000 times
    as wide, each step with its own margin: the rank of the pooled residuals in units."""
    a = _series(200, seed=6)
    store = _store([a, 1000 * a], horizon=3, test=0.2, cal=0.3)
    fs = _baselines(store, ["naive", "mean"], 0, ("test", "cal"), LEVELS)
    point_mean = fs.forecasts["mean"]["past"].point    # fits nothing: every past window
    u = scales(store, UNIT)                   # calibration's unit (the mean absolute level)
    np.testing.assert_allclose(u, [u[0], 1000 * u[0]], rtol=1e-12)
    ev = evaluate(store, with_point_quantiles(fs), noise_std=None, conformal="split")
    q = ev.quantiles
    sid = store.series_of(fs.ends["test"])
    for name in ("naive", "mean"):
        np.testing.assert_allclose(q[name][sid == 1], 1000 * q[name][sid == 0], rtol=1e-9)
        assert ev.metrics[name]["intervals"] == "calibrated"
    # a point forecast's interval by hand (its quantiles made its point): the point -+ the
    # ceil((n + 1) 0.8)-th pooled absolute residual in units
    fs.forecasts["mean"] = {part: Forecast(f.point) for part, f in fs.forecasts["mean"].items()}
    ev = evaluate(store, with_point_quantiles(fs), noise_std=None, conformal="split")
    cal = fs.ends["past"]
    res = np.abs(store.targets(cal) - point_mean) / u[store.series_of(cal)][:, None]
    k = math.ceil((len(cal) + 1) * 0.8)
    margin = np.sort(res, axis=0)[k - 1]
    got = ev.quantiles["mean"][sid == 0]
    np.testing.assert_allclose(got[..., 2] - got[..., 1],
                               np.broadcast_to(margin * u[0], ((sid == 0).sum(), 3)), rtol=1e-9)
    np.testing.assert_allclose(ev.intervals["forecasters"]["mean"]["margins"][0][0], margin[0],
                               rtol=1e-6)
    # without conformal calibration: each forecaster's own quantiles
    base = _baselines(store, ["naive"], 0, ("test", "cal"), LEVELS)
    own = evaluate(store, base, noise_std=None)
    np.testing.assert_array_equal(own.quantiles["naive"],
                                  base.forecasts["naive"]["test"].quantiles)
    assert own.metrics["naive"]["intervals"] == "own"


# ---------------------------------------------------------------- significance and tables
def test_significance_is_pooled_in_units_and_per_series_in_the_table():
    series = [_series(120, seed=9), _series(150, seed=10, level=300, scale=40)]
    store = _store(series, window=6, test=0.25)
    fs = _with_model(store, _baselines(store, ["naive", "mean"], 0), noise=0.5)
    ev = evaluate(store, fs, noise_std=None)
    sid = store.series_of(ev.ends)
    u = units(store)[sid]
    y, m, nv = ev.actual[:, 0] / u, ev.forecasts["model"][:, 0] / u, ev.forecasts["naive"][:, 0] / u
    stat, p = dm_test(list(y), list(m), list(nv), h=1)
    assert ev.metrics["significance"]["naive"]["statistic"] == pytest.approx(stat, rel=1e-9)
    assert ev.metrics["significance"]["naive"]["p_value"] == pytest.approx(p, rel=1e-6)
    for i in range(2):
        r = sid == i
        _, p_i = dm_test(list(ev.actual[r, 0]), list(ev.forecasts["model"][r, 0]),
                         list(ev.forecasts["mean"][r, 0]), h=1)
        assert ev.by_series["mean_dm_p"][i] == pytest.approx(p_i, rel=1e-6)


def test_tables_hold_first_steps_the_median_series_steps_ahead_and_coverage():
    series = [_series(100, seed=11), _series(140, seed=12, level=50, scale=3),
              _series(120, seed=13, level=5, scale=0.3)]
    store = _store(series, window=8, horizon=3, test=0.2, cal=0.2)
    fs = _with_model(store, _baselines(store, ["naive", "mean"], 0, ("test", "cal"), LEVELS))
    ev = evaluate(store, fs, noise_std=None, conformal="split")
    out = tables(ev, store)
    pred = out["predictions"]
    assert list(pred.columns) == ["id", "t", "actual", "predicted", "naive", "mean",
                                  "predicted_q10", "predicted_q90", "naive_q10", "naive_q90",
                                  "mean_q10", "mean_q90"]
    sid = store.series_of(ev.ends)
    assert pred["id"].tolist() == [f"s{i}" for i in sid]
    np.testing.assert_array_equal(pred["t"], ev.ends - store.offsets[sid])
    assert pred["t"].dtype.kind == "i"
    np.testing.assert_array_equal(pred["actual"], store.y[ev.ends])
    # the median series by the model's MASE
    mase = [np.mean(np.abs(ev.forecasts["model"][sid == i] - ev.actual[sid == i]))
            / np.mean(np.abs(np.diff(series[i][:int(store.cuts.val_start[i])])))
            for i in range(3)]
    median = int(np.argsort(mase)[1])
    plot = out["predictions_plot"]
    np.testing.assert_array_equal(plot["actual"], ev.actual[sid == median, 0])
    # steps ahead: each series' RMSE at that step, averaged over the series
    for k in range(3):
        want = np.mean([_sk_rmse(ev.actual[sid == i, k], ev.forecasts["mean"][sid == i, k])
                        for i in range(3)])
        assert out["horizon"]["mean"][k] == pytest.approx(want, rel=1e-12)
    cal = out["calibration"]
    assert cal["nominal"].tolist() == [0.8]
    q = ev.quantiles["naive"]
    inside = np.mean((ev.actual >= q[..., 0]) & (ev.actual <= q[..., 2]))
    assert cal["naive"][0] == pytest.approx(inside) and cal["ridge"].isna().all()


# ---------------------------------------------------------------- the summary
def test_the_summary_names_an_unavailable_baseline_and_a_failed_one():
    from attn_forecast.config.schema import Params
    from attn_forecast.report.summary import summary_markdown
    store = _store([np.sin(np.arange(9.0)) + 3], window=2, test=0.34)
    base = _baselines(store, ["naive", "seasonal_naive", "ets"], 0)
    ev = evaluate(store, _with_model(store, base), noise_std=None)
    assert ev.metrics["seasonal_naive"] is None and ev.forecasts["seasonal_naive"] is None
    ev.metrics["unavailable"] = base.record["unavailable"]
    md = summary_markdown(ev.metrics, Params())
    assert "| seasonal_naive | n/a | n/a |" in md and "| ets | n/a |" not in md
    assert "seasonal_naive is n/a: no season." in md
    assert "Scored on a fallback's forecasts (naive2) where they gave none: ets on 1 series" \
        in md
    assert "### Test metrics (" in md and "over 1 series" not in md


def test_the_evaluate_stage_refuses_forecasts_made_with_other_settings():
    from attn_forecast.setup.forecasting import baselines_record
    from attn_forecast.errors import UserInputError
    from attn_forecast.config.schema import Params
    from attn_forecast.pipeline import evaluate as stage
    p = Params()
    store = _store([_series(120, seed=14)], test=0.2)
    made = baselines_record(p, store, 24)
    model = ForecastSet({"test": store.ends("test")}, {}, record={"data": store.key()})
    base = ForecastSet({"test": store.ends("test")}, {}, record=made)
    stage.check_fresh(model, base, made)                       # what it was made for

    def changed(**kw):
        return p.model_copy(update={"evaluate": p.evaluate.model_copy(update=kw)})
    other = changed(ridge_alpha=100.0)
    with pytest.raises(UserInputError, match=rf"ridge_alpha {p.evaluate.ridge_alpha!r} "
                                             r"\(now 100.0\)"):
        stage.check_fresh(model, base, baselines_record(other, store, 24))
    fewer = changed(baselines=["naive"])
    with pytest.raises(UserInputError, match=r"baselines \[.*\] \(now \['naive'\]\)"):
        stage.check_fresh(model, base, baselines_record(fewer, store, 24))
    with pytest.raises(UserInputError, match=r"season 24 \(now 12\)"):
        stage.check_fresh(model, base, baselines_record(p, store, 12))
    moved = _store([_series(120, seed=14)], window=W + 4, test=0.2)
    with pytest.raises(UserInputError, match="the model's forecasts are of other prepared"):
        stage.check_fresh(model, base, baselines_record(p, moved, 24))
