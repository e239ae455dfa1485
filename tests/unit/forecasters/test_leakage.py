"""No forecaster reads a test target: every one, fitted and forecasting on a competition-style
panel (each series forecast once, over its last horizon), gives the same forecasts when the
test part's values are replaced by huge numbers or by NaN. Covers the model (trained from
scratch and fine-tuned from the prior), every baseline (naive, seasonal naive, Naive2, mean,
ridge, SES, ETS, Theta, DOT, CES, ARIMA, Comb, the zero-shot prior) and the combinations.

And a failed forecast never scores: a NaN is never a zero error, a series a forecaster could
not forecast gets the named fallback's forecast, counted, and is never left out of its mean.
"""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch

from attn_forecast.forecasters.combination import with_combinations
from attn_forecast.forecasters.protocol import Forecast
from attn_forecast.forecasters.run import run
from attn_forecast.forecasters.saved import load, merge, save
from attn_forecast.forecasters.simple import Naive2
from attn_forecast.evaluation import metrics as M
from attn_forecast.forecasters.registry import baselines
from attn_forecast.forecasters.zeroshot import ZeroShot
from attn_forecast.evaluation.scoring import evaluate
from attn_forecast.model.settings import ModelSettings
from attn_forecast.training.settings import TrainSettings
from attn_forecast.data.build import build
from attn_forecast.data.long_table import Raw
from attn_forecast.forecasters.neural import ModelForecaster
from attn_forecast.training.batches import to_device
from attn_forecast.training.members import QUIET, train_model
from attn_forecast.setup.training import prior

pytestmark = pytest.mark.usefixtures("one_torch_thread")

ROOT = Path(__file__).resolve().parents[3]
PRIOR = ROOT / "models" / "pretrained.pt"
H, SEASON, WINDOW = 4, 4, 12
FIELD = ["naive", "seasonal_naive", "naive2", "mean", "ridge", "ses", "ets", "theta", "dot",
         "ces", "arima", "comb", "zeroshot"]


def _panel() -> Raw:
    """Six quarterly-like series of 36 to 56 values, trending and seasonal, all positive."""
    rs = np.random.default_rng(3)
    series = []
    for i, n in enumerate((36, 40, 44, 48, 52, 56)):
        t = np.arange(n)
        series.append(100 + 2 * i + 0.8 * t + 6 * np.sin(2 * np.pi * t / SEASON + i)
                      + rs.normal(0, 1.0, n))
    lengths = [len(s) for s in series]
    S = len(series)
    return Raw(np.array([f"q{i}" for i in range(S)]), np.r_[0, np.cumsum(lengths)],
               np.concatenate([np.arange(n, dtype=float) for n in lengths]),
               np.concatenate(series), np.full(sum(lengths), np.nan),
               horizons=np.full(S, H), periods=np.full(S, SEASON))


def _store():
    raw = _panel()
    return build(raw, window=WINDOW, horizon=H, fracs={"test": 0.2, "val": 0.0, "cal": 0.0},
                 scaler="zscore", transform="none", test_size=raw.horizons, context=0)


def _poisoned(store, value: float):
    """The same store with every test target (and its scaled model value) set to ``value``."""
    y, z = np.array(store.y), np.array(store.z)
    for i in range(store.n_series):
        a = int(store.offsets[i])
        rows = slice(a + int(store.cuts.test_start[i]), a + int(store.cuts.test_end[i]))
        y[rows] = value
        z[rows] = value
    return replace(store, y=y, z=z)


def _train(store, init=None) -> torch.nn.Module:
    p = TrainSettings(epochs=3, lr=0.003, batch_size=32, augment_noise=0.1, ensemble=2,
                    loss="smape")
    s = ModelSettings(window=WINDOW, horizon=H, d_model=8, ffn_dim=16, n_heads=2, n_layers=1,
                      residual=True, pooling="flatten", instance_norm="revin")
    data = to_device(store, torch.device("cpu"))
    settings = init.settings if init is not None else s
    model, _ = train_model(settings, data, p, QUIET, init=init)
    return model


def _every_forecast(store) -> dict[str, np.ndarray]:
    chosen, _ = baselines(FIELD, season=SEASON, ridge_alpha=1.0, features=False, jobs=1,
                          given={"zeroshot": ZeroShot(str(PRIOR))})
    fs = run(store, chosen, ("test",), season=SEASON)
    models = run(store, [ModelForecaster(_train(store))], ("test",), season=SEASON)
    tuned = ModelForecaster(_train(store, init=prior(str(PRIOR), store)))
    tuned.name = "model_finetuned"
    fs = merge(models, run(store, [tuned], ("test",), season=SEASON), fs)
    fs = with_combinations(fs, ["model+comb", "model+ets+theta", "model_finetuned+comb"])
    return {name: parts["test"].point for name, parts in fs.forecasts.items()}


@pytest.fixture(scope="module")
def clean():
    return _every_forecast(_store())


def _store_of_poisoned_raw(value: float):
    """The store built from data whose test part is ``value`` before anything is fitted: the
    scalers (fitted on the training parts) must come out the same."""
    raw = _panel()
    y = np.array(raw.y)
    for i in range(len(raw.ids)):
        end = int(raw.offsets[i + 1])
        y[end - H:end] = value
    return build(replace(raw, y=y), window=WINDOW, horizon=H,
                 fracs={"test": 0.2, "val": 0.0, "cal": 0.0}, scaler="zscore",
                 transform="none", test_size=raw.horizons, context=0)


@pytest.mark.parametrize("value", [1e9, np.nan], ids=["huge", "nan"])
def test_no_forecaster_reads_the_test_part(clean, value):
    """Poisoned before the store is built (a huge value: the store is built from it, so the
    scalers are fitted again; NaN cannot be built, so it is poisoned in the built store)."""
    store = _store()
    poisoned = _store_of_poisoned_raw(value) if np.isfinite(value) else \
        _poisoned(store, value)
    np.testing.assert_array_equal(poisoned.scalers.center, store.scalers.center)
    np.testing.assert_array_equal(poisoned.scalers.scale, store.scalers.scale)
    assert np.isnan(poisoned.y).any() or poisoned.y.max() == value
    bad = _every_forecast(poisoned)
    assert set(clean) == set(FIELD + ["ets", "model", "model_finetuned", "model+comb",
                                      "model+ets+theta", "model_finetuned+comb"])
    assert set(bad) == set(clean)
    for name, point in clean.items():
        assert point.shape == (store.n_series, H), name
        assert np.isfinite(point).all(), name
        np.testing.assert_array_equal(bad[name], point, err_msg=name)


# ---------------------------------------------------------------- a failed forecast never scores
class _FailsOn:
    """A forecaster that is naive except on the series ``bad``, where it gives NaN (as a
    statistical model that cannot be fitted there does)."""

    def __init__(self, bad: int, name: str = "flaky") -> None:
        self.bad, self.name = bad, name

    def fit(self, store):
        return []

    def forecast(self, store, ends, levels=()):
        point = np.repeat(store.last(ends)[:, None], store.horizon, axis=1)
        point[store.series_of(ends) == self.bad] = np.nan
        return Forecast(point)


def test_smape_of_a_missing_forecast_is_nan_never_zero():
    assert np.isnan(M.smape(np.array([1.0, 2.0]), np.array([1.0, np.nan])))
    assert M.smape(np.zeros(2), np.zeros(2)) == 0.0             # both zero: no error


def test_a_series_without_a_score_leaves_no_mean_rather_than_a_better_one():
    table = pd.DataFrame({"id": ["a", "b", "c"], "n_test": 1,
                          "good_rmse": [1.0, 1.0, 9.0], "good_smape": [5.0, 5.0, 50.0],
                          "good_mase": [1.0, 1.0, 9.0], "good_mae": [1.0, 1.0, 9.0],
                          "bad_rmse": [1.0, 1.0, np.nan], "bad_smape": [5.0, 5.0, np.nan],
                          "bad_mase": [1.0, 1.0, np.nan], "bad_mae": [1.0, 1.0, np.nan]})
    agg = M.aggregate(table, ["good", "bad"])
    assert agg["good"]["smape_mean"] == pytest.approx(20.0)
    assert agg["bad"]["smape_mean"] is None and agg["bad"]["mase_mean"] is None
    assert agg["bad"]["n_series"] == agg["good"]["n_series"] == 3


def test_a_failed_series_is_forecast_by_the_named_fallback_and_counted():
    store = _store()
    fs = run(store, [Naive2(SEASON), _FailsOn(bad=2)], ("test",), season=SEASON)
    assert any("flaky gave no forecast for 1 of 6 series (first: 'q2'); naive2's stands in"
               in w for w in fs.warnings)
    flaky, two = fs.forecasts["flaky"]["test"], fs.forecasts["naive2"]["test"]
    rows = store.series_of(fs.ends["test"]) == 2
    np.testing.assert_array_equal(flaky.point[rows], two.point[rows])
    np.testing.assert_array_equal(flaky.failed, rows)
    ev = evaluate(store, fs, noise_std=None)
    assert ev.metrics["flaky"]["n_failed"] == 1 and ev.metrics["naive2"]["n_failed"] == 0
    assert ev.metrics["flaky"]["n_series"] == ev.metrics["naive2"]["n_series"] == 6
    # saved and read back, the count survives
    assert np.isfinite(ev.by_series["flaky_smape"]).all()


def test_a_nan_forecast_can_never_lower_a_score(tmp_path):
    """Whichever series fails, the forecaster is scored on every series, the failed one on
    the fallback's forecast (Naive2's): its mean sMAPE is exactly that, by hand, whether the
    fallback is worse or better than it there, never its mean over the other series."""
    store = _store()
    ends = store.ends("test")
    sid, y = store.series_of(ends), store.targets(ends)
    fallback = run(store, [Naive2(SEASON)], ("test",), season=SEASON)
    fb = fallback.forecasts["naive2"]["test"].point
    naive = np.repeat(store.last(ends)[:, None], H, axis=1)
    for bad in range(store.n_series):
        fs = run(store, [_FailsOn(bad, "flaky")], ("test",), season=SEASON)
        save(tmp_path / "f.npz", fs)
        ev = evaluate(store, load(tmp_path / "f.npz"), noise_std=None)
        m = ev.metrics["flaky"]
        assert m["n_failed"] == 1 and m["n_series"] == store.n_series
        used = np.where((sid == bad)[:, None], fb, naive)
        per = [M.smape(y[sid == i], used[sid == i]) for i in range(store.n_series)]
        assert m["smape_mean"] == pytest.approx(np.mean(per), rel=1e-12)
        others = np.mean([v for i, v in enumerate(per) if i != bad])
        assert m["smape_mean"] != pytest.approx(others)   # not the mean without the series


def test_the_fields_all_is_the_mean_over_every_forecast_beside_the_mean_over_series():
    """Theta's published M3 subsets (16.90, 8.96, 13.85, 4.41) pool to its published "all"
    13.01 over the 37,014 forecasts; over the 3,003 series alike they give 12.73."""
    subsets = {"yearly": (645, 6, 16.90), "quarterly": (756, 8, 8.96),
               "monthly": (1428, 18, 13.85), "other": (174, 8, 4.41)}
    tables = [pd.DataFrame({"n_test": np.ones(n), "theta_smape": np.full(n, v),
                            "theta_mase": np.ones(n), "naive2_smape": np.full(n, 20.0),
                            "naive2_mase": np.ones(n)}) for n, _, v in subsets.values()]
    out = M.pooled(tables, [h for _, h, _ in subsets.values()], ["theta", "naive2"])
    assert round(out["theta"]["smape"], 2) == 13.01
    assert round(out["theta"]["smape_series"], 2) == 12.73
    assert out["theta"]["n_forecasts"] == 37014 and out["theta"]["n_series"] == 3003
    assert out["theta"]["owa"] == pytest.approx(0.5 * (out["theta"]["smape"] / 20.0 + 1.0))


# ---------------------------------------------------------------- intervals: no test target read
# Poison the test part: the calibrated intervals stay. Every forecaster's test intervals,
# calibrated by split conformal on the calibration part (evaluate(..., conformal="split")
# after combined(): point forecasts given their point at every level, then the
# combinations), are made again from a store rebuilt from the raw data with every test target
# set to a huge number (or NaN): the scalers, the fitted baselines and the model are all
# refitted on it. The quantiles, their spread around the point forecasts and the margins
# must come out identical. Poisoning the calibration part instead must change the margins,
# so the check can fail.
CAL_LEVELS = (0.025, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.975)
CAL_FIELD = ["naive", "seasonal_naive", "naive2", "mean", "ridge", "ses", "ets", "theta", "dot"]
CAL_COMBOS = ["model+ets+theta", "model+naive2"]


def _cal_store(raw: Raw):
    """A competition-style store (one test window a series, its last horizon) with a
    calibration part before it."""
    return build(raw, window=WINDOW, horizon=H, fracs={"test": 0.2, "val": 0.0, "cal": 0.3},
                 scaler="zscore", transform="none", test_size=raw.horizons, context=0)


def _poisoned_raw(raw: Raw, part: str, value: float) -> Raw:
    """The raw data with every target of ``part`` (by the clean store's cuts) set to
    ``value``."""
    cuts = _cal_store(raw).cuts
    lo, hi = cuts.bounds(part)
    y = np.array(raw.y, copy=True)
    for i in range(len(raw.ids)):
        a = int(raw.offsets[i])
        y[a + int(lo[i]):a + int(hi[i])] = value
    return replace(raw, y=y)


def _calibrated(raw: Raw):
    """Build, fit and forecast everything on ``raw``; the evaluation with split-conformal
    intervals, and the store."""
    from attn_forecast.config.schema import Params
    from attn_forecast.pipeline.evaluate import combined
    store = _cal_store(raw)
    chosen, _ = baselines(CAL_FIELD, season=SEASON, ridge_alpha=1.0, features=False, jobs=1)
    chosen.append(ZeroShot(str(PRIOR)))
    base = run(store, chosen, ("test", "cal"), CAL_LEVELS, season=SEASON)
    p = TrainSettings(epochs=2, lr=0.003, batch_size=32, augment_noise=0.1, ensemble=1,
                    loss="smape")
    s = ModelSettings(window=WINDOW, horizon=H, d_model=8, ffn_dim=16, n_heads=2, n_layers=1,
                      residual=True, pooling="flatten", instance_norm="revin")
    data = to_device(store, torch.device("cpu"))
    net, _ = train_model(s, data, p, QUIET)
    model = run(store, [ModelForecaster(net)], ("test", "cal"), CAL_LEVELS, season=SEASON)
    # a point model: its intervals come from its point at every level, calibrated
    assert model.forecasts["model"]["test"].quantiles is None
    params = Params.model_validate({"evaluate": {"combinations": CAL_COMBOS,
                                                 "blend": ["model", "naive", "ets"]}})
    fs = combined(params, store, model, base, calibrating=True)
    return evaluate(store, fs, noise_std=None, season=SEASON, conformal="split"), store


@pytest.fixture(scope="module")
def clean_intervals(one_torch_thread):
    return _calibrated(_panel())


def _spread(ev, name):
    return ev.quantiles[name] - ev.forecasts[name][..., None]


def test_poison_the_test_part_intervals_unchanged(clean_intervals):
    """(NaN test targets are refused by build itself, "transform none gives a value that is
    not finite", so only huge numbers are tried here.)"""
    value = 1e9
    ev, store = clean_intervals
    bad, bad_store = _calibrated(_poisoned_raw(_panel(), "test", value))
    names = set(CAL_FIELD + ["zeroshot", "model", "blend"] + CAL_COMBOS)
    assert names <= set(ev.quantiles) and set(bad.quantiles) == set(ev.quantiles)
    # the poison reached the rebuilt store (levels and scaled values), not its scalers
    ts = store.ends("test")
    np.testing.assert_array_equal(ev.actual, store.targets(ts))
    assert np.isfinite(ev.actual).all()
    assert (bad.actual == value).all()
    assert (np.abs(bad_store.z[ts[:, None] + np.arange(H)]) > 1e6).all()
    assert bad_store.scalers.to_dict() == store.scalers.to_dict()
    np.testing.assert_array_equal(bad.ends, ev.ends)
    for name in sorted(names):
        m = ev.metrics[name]
        assert m["intervals"] == "calibrated" and m["n_interval_fallback"] == 0, name
        assert bad.metrics[name]["intervals"] == "calibrated", name
        q = ev.quantiles[name]
        assert q.shape == (store.n_series, H, len(CAL_LEVELS)) and np.isfinite(q).all(), name
        assert (np.diff(q, axis=-1) >= 0).all(), name
        np.testing.assert_array_equal(_spread(bad, name), _spread(ev, name), err_msg=name)
        np.testing.assert_array_equal(bad.quantiles[name], q, err_msg=name)
        margins = ev.intervals["forecasters"][name]["margins"]
        assert margins is not None and np.shape(margins) == (H, 5), name   # 95 80 60 40 20
        assert bad.intervals["forecasters"][name]["margins"] == margins, name
        assert bad.intervals["forecasters"][name]["how"] == "calibrated", name


PAST_ONLY = {"naive", "seasonal_naive", "mean", "zeroshot"}   # calibrated on every past window


def test_poison_the_calibration_part_the_margins_change(clean_intervals):
    """The counter-check: the margins are read from the calibration part, so poisoning it
    changes every forecaster's margins (the test above can fail); a forecaster that fits
    nothing is calibrated on every window before the test part (the next test)."""
    ev, store = clean_intervals
    bad, bad_store = _calibrated(_poisoned_raw(_panel(), "cal", 1e9))
    assert bad_store.scalers.to_dict() == store.scalers.to_dict()
    cal = store.ends("cal")
    assert (bad_store.targets(cal) == 1e9).all()
    for name in sorted(set(CAL_FIELD + ["zeroshot", "model", "blend"] + CAL_COMBOS)
                       - PAST_ONLY):
        clean_m = np.array(ev.intervals["forecasters"][name]["margins"])
        bad_m = bad.intervals["forecasters"][name]["margins"]
        assert bad_m is not None, name
        assert not np.array_equal(np.array(bad_m), clean_m), name
        # far wider: the poisoned targets are a billion, the series' units a few
        assert np.max(bad_m) > 1e3 * max(1.0, np.max(np.abs(clean_m))), name


def test_a_forecaster_fitting_nothing_is_calibrated_on_every_past_window(clean_intervals):
    """Naive, seasonal naive, the historic mean and the zero-shot prior read only the values
    before each origin: their margins come from every window before the test part, so
    poisoning the training part's last targets changes them too (and they record it)."""
    ev, store = clean_intervals
    raw = _panel()
    cuts = _cal_store(raw).cuts
    y = np.array(raw.y, copy=True)
    for i in range(len(raw.ids)):      # the training part's last 4 targets of every series
        a = int(raw.offsets[i])
        y[a + int(cuts.val_start[i]) - 4:a + int(cuts.val_start[i])] = 1e9
    bad, _ = _calibrated(replace(raw, y=y))
    for name in sorted(PAST_ONLY):
        rec = ev.intervals["forecasters"][name]
        assert rec["windows_of"] == "every window before the test part", name
        assert rec["windows"] > len(store.ends("cal")), name
        assert not np.allclose(bad.intervals["forecasters"][name]["margins"], rec["margins"],
                               rtol=0.01), name
