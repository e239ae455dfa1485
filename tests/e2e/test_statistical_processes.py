"""End-to-end: the statistical forecasters in worker processes equal one process, bit for bit."""
from __future__ import annotations

import numpy as np
import pytest

from attn_forecast.forecasters.statistical import MIN_ORIGINS, Stat
from unit.forecasters.helpers import LEVELS, _series, _store


def test_stat_in_worker_processes_equals_one_process():
    series = [_series(50, seed=16), _series(60, seed=17), _series(55, seed=18)]
    s = _store(series, window=4, horizon=2, test=0.2)
    ends = s.ends("test")
    one = Stat("theta", 12, jobs=1).forecast(s, ends, LEVELS)
    two = Stat("theta", 12, jobs=2).forecast(s, ends, LEVELS)
    np.testing.assert_array_equal(one.point, two.point)
    np.testing.assert_array_equal(one.quantiles, two.quantiles)


@pytest.mark.parametrize("name", ["arima", "ets"])
def test_one_long_series_split_among_processes_equals_one_process(name):
    """Fewer series than processes: a series' origins are split among them (each part
    fitting the same parameters), and the forecasts are those of one process, bit for bit."""
    s = _store([_series(1000, seed=31)], window=4, horizon=2, test=0.45)
    ends = s.ends("test")
    assert len(ends) >= 2 * MIN_ORIGINS
    one = Stat(name, 12, jobs=1).forecast(s, ends, LEVELS)
    two = Stat(name, 12, jobs=2).forecast(s, ends, LEVELS)
    np.testing.assert_array_equal(one.point, two.point)
    np.testing.assert_array_equal(one.quantiles, two.quantiles)
