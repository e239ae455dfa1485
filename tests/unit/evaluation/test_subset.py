"""evaluation/subset.py: a competition stage calibrates its own forecasters on the calibration
cut (no output of the cut's forecasts of its own), the leaderboard a combination across stages
from its members' forecasts before calibration; checked by hand on M3 other (174 series) with simple
forecasters, through the compact committed files."""
from __future__ import annotations

import math

import numpy as np
import pytest

from attn_forecast.evaluation.calibration import (CUT, RAW, calibrated_set, scales)
from attn_forecast.evaluation.subset import combinations, evaluated
from attn_forecast.forecasters.protocol import Forecast
from attn_forecast.forecasters.run import run
from attn_forecast.forecasters.saved import ForecastSet, load, save
from attn_forecast.forecasters.simple import Naive, Naive2
from attn_forecast.pipeline.competition import field_store, subset_params
from attn_forecast.setup.forecasting import check_data
from conftest import ROOT

PARAMS = ROOT / "competitions" / "params.yaml"
LEVELS = (0.025, 0.1, 0.5, 0.9, 0.975)


class _Drift:
    """A point forecaster (no quantiles): the last value plus the mean one-step change of the
    window's series so far, step by step."""
    name = "model"

    def fit(self, store):
        return []

    def forecast(self, store, ends, levels=()):
        sid = store.series_of(ends)
        start = store.offsets[sid]
        slope = (store.y[ends - 1] - store.y[start]) / np.maximum(ends - 1 - start, 1)
        k = np.arange(1, store.horizon + 1)
        return Forecast(store.y[ends - 1][:, None] + slope[:, None] * k[None, :])


@pytest.fixture(scope="module")
def other():
    p, prof = subset_params(PARAMS, "other")
    cp, cprof = subset_params(PARAMS, "other", holdout="calibration")
    store, cut_store = field_store(p, prof), field_store(cp, cprof)
    season = check_data(p, store)

    def made(st):
        return run(st, [_Drift(), Naive(), Naive2(season)], ("test",), LEVELS, season=season)
    return p, store, cut_store, season, made(store), made(cut_store)


def _margin(scores: np.ndarray, pct: int) -> np.ndarray:
    """The split-conformal rank by hand, per step: ceil((n + 1) x coverage) of n."""
    n = len(scores)
    k = min(math.ceil((n + 1) * pct / 100 - 1e-9), n)
    return np.sort(scores, axis=0)[k - 1]


def test_a_stage_calibrates_each_forecaster_on_the_cut_in_each_series_naive_error(other):
    p, store, cut_store, season, fs, cut = other
    out = calibrated_set(store, fs, cut_store, cut, season, ["model", "naive"], {"model"},
                         "naive_error")
    assert set(out.forecasts) == {"model", "naive"}        # naive2 is not kept
    # the point forecaster by hand: the point -+ the conformal margin of |y - point| / u at
    # the cut, per step, times each scored series' u (the in-sample seasonal naive error)
    u_cut, u = scales(cut_store, "naive_error"), scales(store, "naive_error")
    ce = cut.ends["test"]
    res = np.abs(cut_store.targets(ce) - cut.forecasts["model"]["test"].point) \
        / u_cut[cut_store.series_of(ce)][:, None]
    ends = fs.ends["test"]
    sid = store.series_of(ends)
    point = fs.forecasts["model"]["test"].point
    q = out.forecasts["model"]["test"].quantiles
    for j, pct in ((0, 95), (1, 80)):
        half = _margin(res, pct)[None, :] * u[sid][:, None]
        np.testing.assert_allclose(q[..., -1 - j], point + half, rtol=1e-9)
        np.testing.assert_allclose(q[..., j], point - half, rtol=1e-9)
    np.testing.assert_array_equal(q[..., 2], point)
    rec = out.record["intervals"]["forecasters"]["model"]
    assert rec["how"] == "calibrated" and rec["windows"] == len(ce)
    # a member of a combination across stages keeps its forecasts before calibration
    np.testing.assert_array_equal(out.forecasts["model"][RAW].point, point)
    np.testing.assert_array_equal(out.forecasts["model"][CUT].point,
                                  cut.forecasts["model"]["test"].point)
    assert out.forecasts["naive"][RAW] is None
    assert out.record["cut_ids"] == [str(i) for i in cut_store.ids[cut_store.series_of(ce)]]


def test_the_leaderboard_calibrates_a_combination_across_stages_from_its_members(
        other, tmp_path):
    """model+naive2: the mean of the two before calibration, of the scored windows and of
    the cut, calibrated on the cut (by hand), scored from the compact files the stages
    commit, as they read back."""
    p, store, cut_store, season, fs, cut = other
    p = p.model_copy(update={"evaluate": p.evaluate.model_copy(
        update={"combinations": ["model+naive2"]})})
    sets = {}
    for stage, keep in (("model", ["model"]), ("field", ["naive", "naive2"])):
        part = calibrated_set(store, fs, cut_store, cut, season, keep, {"model", "naive2"})
        save(tmp_path / f"{stage}.npz", part, compact=True)
        sets[stage] = load(tmp_path / f"{stage}.npz")
    sets["zeroshot"] = ForecastSet({"test": fs.ends["test"]}, {}, LEVELS)
    combos = combinations(p.evaluate.combinations, store, sets, cut_store, season,
                          "naive_error")
    ev = evaluated(store, sets, cut_store, season, unit_name="naive_error", combos=combos)
    # scored as the leaderboard commits it: the compact file reads back what was scored
    save(tmp_path / "combinations.npz", combos, compact=True)
    np.testing.assert_array_equal(ev.quantiles["model+naive2"], load(
        tmp_path / "combinations.npz").forecasts["model+naive2"]["test"].quantiles)
    # by hand, from the committed files
    m, n2 = sets["model"].forecasts["model"], sets["field"].forecasts["naive2"]
    raw_q = (m[RAW].quantiles + n2[RAW].quantiles) / 2
    cut_q = (m[CUT].quantiles + n2[CUT].quantiles) / 2
    failed = n2[CUT].failed if n2[CUT].failed is not None else np.zeros(len(cut_q), bool)
    ce = cut.ends["test"]
    y = cut_store.targets(ce)
    u_cut = scales(cut_store, "naive_error")[cut_store.series_of(ce)][:, None]
    sid = store.series_of(fs.ends["test"])
    u = scales(store, "naive_error")[sid][:, None]
    got = combos.forecasts["model+naive2"]["test"].quantiles
    for lo, hi, pct in ((0, 4, 95), (1, 3, 80)):
        scores = np.maximum(cut_q[..., lo] - y, y - cut_q[..., hi])[~failed] / u_cut[~failed]
        mk = _margin(scores, pct)[None, :] * u
        np.testing.assert_allclose(got[..., lo], np.minimum(raw_q[..., lo] - mk, raw_q[..., 2]),
                                   rtol=1e-9)
        np.testing.assert_allclose(got[..., hi], np.maximum(raw_q[..., hi] + mk, raw_q[..., 2]),
                                   rtol=1e-9)
    assert ev.metrics["model+naive2"]["intervals"] == "calibrated"
    # every other forecaster is scored on its quantiles as committed
    np.testing.assert_array_equal(ev.quantiles["naive"], sets["field"].forecasts["naive"][
        "test"].quantiles)
    actual = store.targets(fs.ends["test"])
    q = ev.quantiles["naive"]
    assert ev.metrics["naive"]["coverage_80"] == pytest.approx(
        np.mean((actual >= q[..., 1]) & (actual <= q[..., 3])))


def test_the_audit_refuses_a_row_whose_median_is_not_its_point():
    from attn_forecast.errors import UserInputError
    from attn_forecast.evaluation.subset import check_medians
    point = np.array([[417.0, 264.8]])
    levels = (0.1, 0.5, 0.9)
    good = np.stack([point - 1, point, point + 1], axis=-1)
    fs = ForecastSet({"test": np.array([7])},
                     {"theta": {"test": Forecast(point, good)},
                      "naive": {"test": Forecast(point, None)}}, levels)
    check_medians(fs, "field.npz")                    # a median that is the point passes
    bad = good.copy()
    bad[0, 0, 1] = 6.5
    fs.forecasts["theta"]["test"] = Forecast(point, bad)
    with pytest.raises(UserInputError, match=r"field.npz: theta's median is not its point in "
                                             r"1 of 2 forecasts"):
        check_medians(fs, "field.npz")


def test_the_audit_refuses_a_calibrated_row_outside_its_coverage_but_shows_a_raw_one():
    from attn_forecast.errors import UserInputError
    from attn_forecast.evaluation.subset import check_coverage
    from attn_forecast.evaluation.scoring import Evaluation
    metrics = {"theta": {"intervals": "calibrated", "coverage_80": 0.81},
               "naive": {"intervals": "calibrated, fallback for some series",
                         "coverage_80": 0.66},
               "nf_patchtst_raw": {"intervals": "its own quantiles", "coverage_80": 0.135},
               "n_series": 174}
    ev = Evaluation(metrics, None, np.arange(1), np.zeros((1, 1)), {})
    check_coverage(ev, "other")                       # inside the bounds; a raw row is shown
    for cov, shown in ((0.64, "64.0 %"), (0.96, "96.0 %"), (None, "nothing scored")):
        metrics["naive"]["coverage_80"] = cov
        with pytest.raises(UserInputError, match=rf"other: naive's calibrated 80 % interval "
                                                 rf"covers {shown} of the targets, outside "
                                                 r"the 65-95 %"):
            check_coverage(ev, "other")
