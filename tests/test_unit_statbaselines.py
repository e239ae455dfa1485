"""Unit tests for attn_forecast.statbaselines against direct StatsForecast calls, and the
evaluation's handling of a baseline that cannot be fitted."""
from __future__ import annotations

import numpy as np
import pytest

from attn_forecast import statbaselines as S

N, TRAIN, H = 160, 128, 3


def _series(season=12):
    rng = np.random.default_rng(2)
    t = np.arange(N)
    return 20 + 0.05 * t + 2 * np.sin(2 * np.pi * t / season) + rng.normal(0, 0.3, N)


def _library(name, season):
    from statsforecast.models import AutoARIMA, AutoETS, Theta
    if name == "ets":
        return AutoETS(season_length=season, model="AAA" if season > 1 else "AAN")
    if name == "theta":
        return Theta(season_length=season)
    return AutoARIMA(season_length=season)


@pytest.mark.parametrize("name", S.STAT_BASELINES)
@pytest.mark.parametrize("season", [0, 12])
def test_forecasts_equal_direct_library_calls(name, season):
    y = _series()
    origins = np.array([TRAIN, TRAIN + 5, N - H])
    ours = S.forecast(name, y, TRAIN, origins, H, season)
    m = _library(name, max(season, 1))
    m.fit(y[:TRAIN])                                   # parameters from the training part
    # at the training part's end, forward is the fitted model's own forecast
    np.testing.assert_allclose(ours[0], m.predict(h=H)["mean"], rtol=1e-9)
    for row, o in zip(ours, origins):                  # later: the known history, no refit
        np.testing.assert_allclose(row, m.forward(y[:o], h=H)["mean"], rtol=1e-9)


def test_later_values_do_not_change_the_fit():
    y = _series()
    poisoned = y.copy()
    poisoned[TRAIN:] = 1e6
    origin = np.array([TRAIN])
    for name in S.STAT_BASELINES:
        np.testing.assert_allclose(S.forecast(name, y, TRAIN, origin, H, 12),
                                   S.forecast(name, poisoned, TRAIN, origin, H, 12), rtol=1e-12)


def test_a_series_too_short_fails_cleanly():
    with pytest.raises(S.BaselineFailed, match="tiny"):
        S.forecast("ets", np.arange(6.0), 5, np.array([5]), 1, 0)


def test_evaluation_reports_a_failed_baseline_as_null_with_a_warning():
    """A real failure: ETS needs more than 8 training values; this series has 7."""
    import torch

    from attn_forecast import evaluation
    from attn_forecast.model import ModelSettings, build_model
    from attn_forecast.windows import prepare

    y = np.sin(np.arange(12.0))
    prep = prepare(y, np.full(12, np.nan), np.arange(12), window=2, horizon=1, test_frac=0.4,
                   val_frac=0.0, scaler="zscore", transform="none")
    torch.manual_seed(0)
    ev = evaluation.evaluate(prep, build_model(ModelSettings(window=2, d_model=8, ffn_dim=8)),
                             baselines=["naive", "ets", "theta"], ridge_alpha=1.0, season=0,
                             noise_std=None)
    assert ev.metrics["ets"] is None and ev.forecasts["ets"] is None
    assert isinstance(ev.metrics["theta"], dict)
    assert ev.warnings == ["warning: baseline ets could not be fitted (NotImplementedError: "
                           "tiny datasets); it is reported as null"]
    assert "ets" not in ev.metrics["significance"]
    tables = evaluation.tables(ev, ModelSettings(window=2, d_model=8, ffn_dim=8))
    assert "ets" not in tables["predictions"] and "theta" in tables["predictions"]
