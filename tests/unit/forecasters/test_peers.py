"""Unit tests for attn_forecast.forecasters.peers: NeuralForecast's networks as forecasters of
the field, run for real (NeuralForecast, the peers extra, which CI installs: .ci/run) on a tiny
panel with a few optimizer steps."""
from __future__ import annotations

import sys

import numpy as np
import pytest

from attn_forecast.errors import UserInputError
from attn_forecast.forecasters.names import NAMES, PEERS
from attn_forecast.forecasters.peers import Peer, _level, library
from attn_forecast.forecasters.registry import baselines
from attn_forecast.forecasters.run import run
from unit.forecasters.helpers import _series, _store

LEVELS = (0.025, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.975)


def _panel():
    return _store([_series(80, seed=s, level=10 * (s + 1)) for s in range(4)],
                  window=12, horizon=3, test=0.2, val=0.1, cal=0.1)


@pytest.fixture(scope="module")
def fitted():
    """One NHITS fitted on the tiny panel (5 optimizer steps), shared by the checks below."""
    pytest.importorskip("neuralforecast")
    store = _panel()
    f = Peer("nf_nhits", input_size=12, max_steps=5, seed=1, levels=LEVELS)
    assert f.fit(store) == []
    return f, store


def test_every_peer_is_a_baseline_by_name_and_none_is_built_without_its_settings():
    assert set(PEERS) <= set(NAMES)
    assert set(PEERS.values()) == {"NHITS", "NBEATS", "LSTM", "PatchTST"}
    chosen, _ = baselines(list(PEERS), season=1, ridge_alpha=1.0, features=False)
    assert chosen == []            # given by whoever runs them (pipeline/baselines.py)


def test_an_mqloss_column_names_its_level():
    assert _level("NHITS-median", "NHITS") == 0.5
    assert _level("NHITS-lo-80.0", "NHITS") == 0.1
    assert _level("PatchTST-hi-95.0", "PatchTST") == 0.975
    assert _level("LSTM-lo-20.0", "LSTM") == 0.4


def test_without_the_library_the_error_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "neuralforecast", None)     # import fails
    with pytest.raises(UserInputError, match=r"pip install .*\[peers\]") as err:
        library()
    assert "\n" not in str(err.value)


def test_a_peer_forecasts_every_window_with_nested_quantiles_around_its_median(fitted):
    f, store = fitted
    ends = store.ends("test")
    fc = f.forecast(store, ends, LEVELS)
    assert fc.point.shape == (len(ends), 3) and fc.quantiles.shape == (len(ends), 3, 11)
    assert np.isfinite(fc.quantiles).all()
    assert np.all(np.diff(fc.quantiles, axis=-1) >= 0)
    assert np.allclose(fc.quantiles[..., LEVELS.index(0.5)], fc.point)
    assert f.settings()["library"].startswith("NeuralForecast ")


def test_a_window_is_forecast_from_the_values_before_its_origin_only(fitted):
    """Changing every value from a window's origin on leaves its forecast as it was."""
    f, store = fitted
    ends = store.ends("test")
    e = int(ends[0])
    before = f.forecast(store, ends[:1]).point
    store.y[e:] += 1000.0
    try:
        after = f.forecast(store, ends[:1]).point
    finally:
        store.y[e:] -= 1000.0
    assert np.allclose(before, after)


def test_a_peer_scores_the_same_windows_as_every_other_forecaster(fitted):
    from attn_forecast.forecasters.simple import Naive
    f, store = fitted
    fs = run(store, [Naive(), f], ("test", "cal"), LEVELS, season=1)
    for part in ("test", "cal"):
        assert fs.forecasts["nf_nhits"][part].point.shape == \
            fs.forecasts["naive"][part].point.shape
    assert np.array_equal(fs.ends["test"], store.ends("test"))


@pytest.mark.parametrize("name", sorted(set(PEERS) - {"nf_nhits"}))
def test_each_other_network_trains_and_forecasts(name):
    pytest.importorskip("neuralforecast")
    store = _panel()
    f = Peer(name, input_size=12, max_steps=2, seed=1, levels=(0.1, 0.5, 0.9))
    f.fit(store)
    fc = f.forecast(store, store.ends("test"), (0.1, 0.5, 0.9))
    assert np.isfinite(fc.point).all() and fc.quantiles.shape[-1] == 3


def test_the_same_seed_gives_the_same_forecasts():
    pytest.importorskip("neuralforecast")
    store = _panel()
    got = []
    for _ in range(2):
        f = Peer("nf_nbeats", input_size=12, max_steps=3, seed=7)
        f.fit(store)
        got.append(f.forecast(store, store.ends("test")).point)
    assert np.array_equal(got[0], got[1])


def test_a_run_naming_a_peer_without_the_library_is_refused_before_any_fitting(monkeypatch):
    from attn_forecast.config.schema import Params
    from attn_forecast.pipeline.baselines import field_of
    monkeypatch.setitem(sys.modules, "neuralforecast", None)
    p = Params.model_validate({"evaluate": {"baselines": ["naive", "nf_patchtst"]}})
    with pytest.raises(UserInputError, match=r"nf_patchtst.*\[peers\]"):
        field_of(p, season=1, features=False, prior=None, jobs=1)
