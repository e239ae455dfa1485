"""Unit tests for attn_forecast.data.calendar: the calendar inputs of each time stamp."""
from __future__ import annotations

import numpy as np
import pytest

from attn_forecast.data.calendar import time_features
from attn_forecast.errors import UserInputError


# ---------------------------------------------------------------- calendar
def test_calendar_features_depend_on_each_time_stamp_only():
    t = np.array(["2024-03-01T00:00:00", "2024-03-01T06:00:00", "2024-03-02T12:00:00"],
                 dtype=object)
    f = time_features(t, ["hour", "dayofweek"])
    assert f.shape == (3, 4) and f.dtype == np.float32
    np.testing.assert_allclose(f[0, :2], [0, 1], atol=1e-7)             # 00:00
    np.testing.assert_allclose(f[1, :2], [1, 0], atol=1e-7)             # 06:00
    np.testing.assert_allclose(f[2, :2], [0, -1], atol=1e-7)            # 12:00
    friday, saturday = 2 * np.pi * 4 / 7, 2 * np.pi * 5 / 7
    np.testing.assert_allclose(f[:, 2:], [[np.sin(friday), np.cos(friday)]] * 2
                               + [[np.sin(saturday), np.cos(saturday)]], atol=1e-7)
    t2 = t.copy()
    t2[2] = "2024-03-05T18:00:00"
    g = time_features(t2, ["hour", "dayofweek"])
    assert np.array_equal(f[:2], g[:2]) and not np.array_equal(f[2], g[2])
    as_dates = time_features(t.astype("datetime64[s]"), ["hour", "dayofweek"])
    assert np.array_equal(as_dates, f)
    assert time_features(t, []).shape == (3, 0)
    with pytest.raises(UserInputError, match="need dates in the time column"):
        time_features(np.arange(3.0), ["hour"])


def test_calendar_cycles_put_december_next_to_january():
    t = np.array(["2023-12-01", "2024-01-01", "2024-06-01"], dtype="datetime64[s]")
    f = time_features(t, ["month", "dayofmonth", "dayofyear", "minute"]).astype(np.float64)
    month = f[:, :2]
    assert np.linalg.norm(month[0] - month[1]) == pytest.approx(2 * np.sin(np.pi / 12), rel=1e-6)
    np.testing.assert_allclose(month[1], [0, 1], atol=1e-7)            # January: phase 0
    np.testing.assert_allclose(month[2], [np.sin(np.pi * 5 / 6), np.cos(np.pi * 5 / 6)],
                               atol=1e-7)
    np.testing.assert_allclose(f[:, 2:4], [[0, 1]] * 3, atol=1e-7)     # the 1st of the month
    np.testing.assert_allclose(f[1, 4:6], [0, 1], atol=1e-7)           # 1 January
    np.testing.assert_allclose(f[:, 6:], [[0, 1]] * 3, atol=1e-7)      # minute 0
