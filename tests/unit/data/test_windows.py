"""Unit tests for attn_forecast.data.windows: windows gathered on the fly, as the source's loop."""
from __future__ import annotations

import numpy as np
import pytest

from attn_forecast.data.windows import concat_ranges, flat_inputs, gather, gather_side, spread
from unit.data.helpers import _same


# ---------------------------------------------------------------- windows
def _naive_windows(data, window, horizon):
    """The source's loop: X.append(data[i:i+w]); Y.append(data[i+w:i+w+h])."""
    x = [list(data[i:i + window]) for i in range(len(data) - window - horizon + 1)]
    y = [list(data[i + window:i + window + horizon])
         for i in range(len(data) - window - horizon + 1)]
    return np.array(x), np.array(y)


def test_gather_equals_the_source_loop_numpy():
    data = np.random.default_rng(1).normal(size=57)
    for window, horizon in ((10, 1), (6, 3)):
        x_ref, y_ref = _naive_windows(data, window, horizon)
        x, y = gather(data, np.arange(window, len(data) - horizon + 1), window, horizon)
        assert np.array_equal(x, x_ref) and np.array_equal(y, y_ref)
    ends = np.array([40, 12, 99 - 4])
    big = np.arange(100, dtype=np.float64) * 1.5
    x, y = gather(big, ends, 12, 4)
    for row, e in enumerate(ends):
        assert np.array_equal(x[row], big[e - 12:e]) and np.array_equal(y[row], big[e:e + 4])


def test_gather_and_gather_side_equal_the_loop_torch():
    torch = pytest.importorskip("torch")
    g = torch.Generator().manual_seed(3)
    data = torch.randn(41, generator=g)
    side = torch.randn(41, 3, generator=g)
    window, horizon = 6, 3
    x_ref, y_ref = _naive_windows(data.numpy(), window, horizon)
    ends = torch.arange(window, len(data) - horizon + 1)
    x, y = gather(data, ends, window, horizon)
    assert isinstance(x, torch.Tensor)
    assert np.array_equal(x.numpy(), x_ref) and np.array_equal(y.numpy(), y_ref)
    cin, cout = gather_side(side, ends, window, horizon)
    assert cin.shape == (len(ends), window, 3) and cout.shape == (len(ends), horizon, 3)
    for k, e in enumerate(ends.tolist()):
        assert torch.equal(cin[k], side[e - window:e]) and torch.equal(cout[k], side[e:e + horizon])


def test_gather_side_and_flat_inputs_numpy():
    rs = np.random.default_rng(5)
    series, side = rs.normal(size=40), rs.normal(size=(40, 4))
    ends = np.array([7, 20, 36])
    cin, cout = gather_side(side, ends, 7, 4)
    for k, e in enumerate(ends):
        assert np.array_equal(cin[k], side[e - 7:e]) and np.array_equal(cout[k], side[e:e + 4])
    assert gather_side(None, ends, 7, 4) is None
    assert gather_side(np.zeros((40, 0)), ends, 7, 4) is None
    flat = flat_inputs(series, side, ends, 7, 4, side_from=2)
    want = np.stack([np.r_[series[e - 7:e], side[e - 7:e, 2:].ravel()] for e in ends])
    assert np.array_equal(flat, want)
    assert np.array_equal(flat_inputs(series, side, ends, 7, 4, side_from=4),
                          np.stack([series[e - 7:e] for e in ends]))
    assert np.array_equal(flat_inputs(series, None, ends, 7, 4),
                          np.stack([series[e - 7:e] for e in ends]))


def test_spread_keeps_at_most_k_evenly_spaced():
    ends = np.arange(100, 200)
    assert _same(spread(ends, 500), ends)
    got = spread(ends, 5)
    assert got.tolist() == [100, 125, 150, 174, 199]      # round(0, 24.75, 49.5, 74.25, 99)
    assert spread(ends, 1).tolist() == [100]


def test_concat_ranges_is_the_loop():
    rs = np.random.default_rng(0)
    for size in (0, 1, 2, 7, 50):
        starts = rs.integers(-5, 40, size)
        stops = starts + rs.integers(-4, 6, size)              # some empty or reversed
        want = np.concatenate([np.arange(a, b) for a, b in zip(starts, stops)]
                              + [np.zeros(0, np.int64)]).astype(np.int64)
        got = concat_ranges(starts, stops)
        assert got.dtype == np.int64
        np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(concat_ranges(np.array([3, 3, 9]), np.array([3, 1, 9])), [])
