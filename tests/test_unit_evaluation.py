"""Unit tests for attn_forecast.evaluation: nothing after the split reaches any forecaster's fit.

A series is evaluated twice: as it is, and with every value from the validation/test part on
set to huge numbers ("poisoned"). Whatever was fitted on the training part (the scaler, the
ridge baseline, the training mean, the MASE scale) must come out the same, and so must every
forecast whose inputs lie before the split (the first test window's).
"""
from __future__ import annotations

import numpy as np
import pytest
import torch

from attn_forecast import metrics as M
from attn_forecast.evaluation import evaluate
from attn_forecast.model import ModelSettings, build_model
from attn_forecast.windows import gather_windows, prepare, to_levels

pytestmark = pytest.mark.usefixtures("one_torch_thread")

N, W = 240, 12
BASELINES = ["naive", "seasonal_naive", "mean", "ridge", "ets"]


def _series() -> np.ndarray:
    rng = np.random.default_rng(5)
    t = np.arange(N)
    return 10 + np.sin(2 * np.pi * t / 24) + 0.01 * t + rng.normal(0, 0.1, N)


def _evaluate(levels, *, horizon, transform, season, val_frac):
    prep = prepare(levels, np.full(len(levels), np.nan), np.arange(len(levels)), window=W,
                   horizon=horizon, test_frac=0.25, val_frac=val_frac, scaler="zscore",
                   transform=transform)
    torch.manual_seed(0)
    model = build_model(ModelSettings(window=W, horizon=horizon, d_model=8, ffn_dim=16))
    return prep, evaluate(prep, model, baselines=BASELINES, ridge_alpha=1.0, season=season,
                          noise_std=None)


CASES = [dict(horizon=1, transform="none", season=0, val_frac=0.0),
         dict(horizon=3, transform="diff", season=24, val_frac=0.1),
         dict(horizon=2, transform="log_return", season=24, val_frac=0.0)]


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"h{c['horizon']}-{c['transform']}")
def test_poisoned_future_changes_no_fit(case):
    levels = _series()
    prep, clean = _evaluate(levels, **case)
    H, off = case["horizon"], prep.offset

    # everything after the training part poisoned: the fits on the training part are the same
    first_after = prep.split.train_end + off
    poisoned = levels.copy()
    poisoned[first_after:] = 1e6 + np.arange(N - first_after)
    prep_p, bad = _evaluate(poisoned, **case)
    assert prep_p.split == prep.split
    assert prep_p.scaler == prep.scaler
    assert np.array_equal(bad.forecasts["mean"], clean.forecasts["mean"])
    scale = M.naive_scale(levels[:first_after])           # MASE's denominator
    for name in bad.forecasts:
        m = bad.metrics[name]
        assert m["mase"] == pytest.approx(m["mae"] / scale, rel=1e-9), name
    # ridge: a scikit-learn Ridge fitted on the training windows alone, applied to the
    # (poisoned) test windows
    from sklearn.linear_model import Ridge
    x_tr, y_tr = gather_windows(prep_p.z, prep_p.split.ends("train"), W, H)
    test = prep_p.split.ends("test")
    x_te, _ = gather_windows(prep_p.z, test, W, H)
    z_hat = Ridge(alpha=1.0).fit(x_tr, y_tr).predict(x_te).reshape(len(test), H)
    last = poisoned[test + off - 1]
    expect = to_levels(prep_p.scaler.inverse(z_hat.astype(np.float64)), last, case["transform"])
    np.testing.assert_allclose(bad.forecasts["ridge"], expect, rtol=1e-9)

    # the test part alone poisoned: the first test window's inputs and every forecaster's
    # forecast for it are the same
    test_start = prep.split.val_end + off
    poisoned = levels.copy()
    poisoned[test_start:] = 1e6
    _, bad = _evaluate(poisoned, **case)
    names = ["model", "naive", "mean", "ridge", "ets"] + \
        (["seasonal_naive"] if case["season"] else [])
    assert set(names) == set(clean.forecasts)
    for name in names:
        assert np.array_equal(bad.forecasts[name][0], clean.forecasts[name][0]), name
    assert not np.array_equal(bad.actual[0], clean.actual[0])  # its targets were poisoned


def test_saved_baselines_refuse_other_settings_or_data(tmp_path):
    from attn_forecast.baselines import (check_matches, fit_baselines, load_baselines,
                                         save_baselines)
    from attn_forecast.errors import UserInputError

    def prep_of(window):
        levels = _series()
        return prepare(levels, np.full(N, np.nan), np.arange(N), window=window, horizon=1,
                       test_frac=0.25, val_frac=0.0, scaler="zscore", transform="none")
    prep = prep_of(W)
    save_baselines(tmp_path / "b.npz", fit_baselines(prep, ["naive", "ridge"], ridge_alpha=1.0,
                                                     season=24))
    b = load_baselines(tmp_path / "b.npz")
    check_matches(b, ["naive", "ridge"], (), prep, 1.0, 24)   # what it was fitted for
    with pytest.raises(UserInputError, match=r"ridge_alpha 1.0 \(now 100.0\)"):
        check_matches(b, ["naive", "ridge"], (), prep, 100.0, 24)
    with pytest.raises(UserInputError, match=r"season 24 \(now 12\)"):
        check_matches(b, ["naive", "ridge"], (), prep, 1.0, 12)
    with pytest.raises(UserInputError, match="prepared"):
        check_matches(b, ["naive", "ridge"], (), prep_of(W + 4), 1.0, 24)
    with pytest.raises(UserInputError, match="fitted for"):
        check_matches(b, ["naive"], (), prep, 1.0, 24)
