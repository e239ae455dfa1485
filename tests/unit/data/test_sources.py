"""Unit tests for attn_forecast.data.sources: the built-in synthetic series."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from attn_forecast.data import sources
from unit.data.helpers import _same


@pytest.fixture
def global_rng_restored():
    state = np.random.get_state()
    yield
    np.random.set_state(state)


# ---------------------------------------------------------------- synthetic sources
@pytest.mark.parametrize("n, noise, seed", [(300, 0.15, 42), (57, 0.4, 7)])
def test_sine_is_the_source_series(global_rng_restored, n, noise, seed):
    # the source: x = linspace(0, 4 pi, n); np.random.seed(seed); sin(x) + normal(scale)
    np.random.seed(seed)
    expected = np.sin(np.linspace(0, 4 * np.pi, n)) + np.random.normal(scale=noise, size=n)
    got = sources.sine(n, noise, seed)
    assert list(got.columns) == ["id", "t", "value", "signal"]
    assert (got["id"] == "sine").all()
    assert _same(got["value"].to_numpy(), expected)
    assert _same(got["signal"].to_numpy(), np.sin(np.linspace(0, 4 * np.pi, n)))
    np.testing.assert_array_equal(got["t"], np.arange(n))


def test_sources_do_not_touch_the_global_rng(global_rng_restored):
    np.random.seed(1)
    before = np.random.get_state()[1].copy()
    sources.sine(50, 0.1, 3)
    sources.seasonal(50, 0.1, 3, trend=0.0, period1=5, amplitude1=1, period2=3, amplitude2=1)
    sources.random_walk(50, 3, start_price=1.0, drift=0.0, volatility=0.1)
    list(sources.panel(3, 20, 5, 3, 0.1, 0.0))
    assert np.array_equal(np.random.get_state()[1], before)


SEASONAL = dict(trend=0.002, period1=50.0, amplitude1=1.0, period2=12.0, amplitude2=0.5)


def test_seasonal_shape_and_components():
    got = sources.seasonal(600, 0.15, 42, **SEASONAL)
    assert got.shape == (600, 4) and (got["id"] == "seasonal").all()
    noise = got["value"] - got["signal"]
    assert abs(noise.std() - 0.15) < 0.02 and abs(noise.mean()) < 0.03
    t = np.arange(600.0)
    want = 0.002 * t + np.sin(2 * np.pi * t / 50) + 0.5 * np.sin(2 * np.pi * t / 12)
    np.testing.assert_allclose(got["signal"], want, rtol=0, atol=1e-12)
    clean = sources.seasonal(200, 0.0, 42, **SEASONAL)
    assert np.array_equal(clean["value"], clean["signal"])
    line = sources.seasonal(100, 0.0, 42, **{**SEASONAL, "amplitude1": 0.0, "amplitude2": 0.0,
                                             "trend": 0.5})
    np.testing.assert_allclose(line["value"], 0.5 * np.arange(100), rtol=0, atol=1e-12)
    assert np.array_equal(sources.seasonal(600, 0.15, 42, **SEASONAL)["value"], got["value"])
    assert not np.array_equal(sources.seasonal(600, 0.15, 1, **SEASONAL)["value"],
                              got["value"])


def test_random_walk_shape_and_properties():
    got = sources.random_walk(5000, 42, start_price=100.0, drift=0.0002, volatility=0.01)
    v = got["value"].to_numpy()
    assert got.shape == (5000, 4) and (got["id"] == "random_walk").all()
    assert (v > 0).all() and v[0] == pytest.approx(100.0) and got["signal"].isna().all()
    r = np.diff(np.log(v))
    assert abs(r.std() - 0.01) < 0.001
    assert abs(r.mean() - (0.0002 - 0.01 ** 2 / 2)) < 0.0005
    flat = sources.random_walk(20, 42, start_price=10.0, drift=0.01, volatility=0.0)
    np.testing.assert_allclose(flat["value"], 10.0 * np.exp(0.01 * np.arange(20)), rtol=1e-12)
    assert not np.array_equal(sources.random_walk(5000, 43, start_price=100.0, drift=0.0002,
                                                  volatility=0.01)["value"], v)


def test_synthetic_panel_chunks_do_not_depend_on_the_chunk_size_or_the_number_of_series():
    args = dict(n_points=60, min_points=20, seed=3, noise_std=0.1, trend=0.01)
    big = list(sources.panel(10, rows=1_000_000, **args))
    small = list(sources.panel(10, rows=50, **args))
    assert len(big) == 1 and len(small) > 3
    seen: set = set()
    for chunk in small:   # whole series, at most ``rows`` rows unless one series is longer
        assert len(chunk) <= 50 or chunk["id"].nunique() == 1
        assert not seen & set(chunk["id"])
        seen |= set(chunk["id"])
    whole = big[0]
    pd.testing.assert_frame_equal(pd.concat(small, ignore_index=True), whole, check_exact=True)
    lengths = whole.groupby("id", sort=False).size()
    assert lengths.min() >= 20 and lengths.max() <= 60 and lengths.nunique() > 1
    for _, rows in whole.groupby("id", sort=False):
        np.testing.assert_array_equal(rows["t"], np.arange(len(rows)))
    # series i of a 5-series panel is series i of the 10-series one
    five = pd.concat(sources.panel(5, **args), ignore_index=True)
    assert five["id"].unique().tolist() == [f"s{i}" for i in range(5)]
    pd.testing.assert_frame_equal(five, whole.iloc[:len(five)].reset_index(drop=True),
                                  check_exact=True)
    other = pd.concat(sources.panel(5, **{**args, "seed": 4}), ignore_index=True)
    assert not np.array_equal(other["value"].to_numpy()[:20], five["value"].to_numpy()[:20])


def test_generated_volume_leads_the_next_return_only_when_asked():
    for lead, low, high in ((0.0, -0.1, 0.1), (0.8, 0.55, 0.75)):
        bars = sources.ohlcv(4000, 3, lead=lead)
        r = np.diff(np.log(bars["close"].to_numpy()))       # r[i]: into bar i + 1
        u = np.log(bars["volume"].to_numpy())
        corr = np.corrcoef(u[:-1][1:], r[1:])[0, 1]         # bar i's volume, next return
        assert low < corr < high, (lead, corr)
        assert (bars["high"] >= bars[["open", "close"]].max(axis=1)).all()
        assert (bars["low"] <= bars[["open", "close"]].min(axis=1)).all()
