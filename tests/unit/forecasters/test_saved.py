"""Unit tests for attn_forecast.forecasters.saved: a ForecastSet saved, loaded and merged."""
from __future__ import annotations

import numpy as np
import pytest

from attn_forecast.forecasters.protocol import Forecast
from attn_forecast.forecasters.saved import ForecastSet, load, merge, save
from unit.forecasters.helpers import LEVELS


# ---------------------------------------------------------------- the saved set
def _set(test_ends, seed=0) -> ForecastSet:
    rng = np.random.default_rng(seed)
    n, m = len(test_ends), 4
    return ForecastSet(
        {"test": np.asarray(test_ends, dtype=np.int64), "cal": np.arange(m, dtype=np.int64)},
        {"model": {"test": Forecast(rng.normal(size=(n, 2)), rng.normal(size=(n, 2, 3)),
                                      rng.normal(size=(5, n, 2))),
                   "cal": Forecast(rng.normal(size=(m, 2)))},
         "ets": {"test": None, "cal": None},
         "naive": {"test": Forecast(rng.normal(size=(n, 2))), "cal": None}},
        LEVELS, ["warning: one", "warning: two"], {"data": "abc", "season": 12, "x": [1, 2]})


def test_a_forecast_set_saves_and_loads_without_pickles(tmp_path):
    fs = _set(np.arange(10, 17))
    save(tmp_path / "f.npz", fs)
    with np.load(tmp_path / "f.npz", allow_pickle=False) as z:    # refuses object arrays
        assert all(z[k].dtype.kind != "O" for k in z.files)
    back = load(tmp_path / "f.npz")
    assert back.names() == ["model", "ets", "naive"]
    assert back.levels == LEVELS and back.warnings == fs.warnings and back.record == fs.record
    for part in ("test", "cal"):
        np.testing.assert_array_equal(back.ends[part], fs.ends[part])
    for name, parts in fs.forecasts.items():
        for part, fc in parts.items():
            got = back.forecasts[name][part]
            if fc is None:
                assert got is None, (name, part)
                continue
            for attr in ("point", "quantiles", "members"):
                want = getattr(fc, attr)
                if want is None:
                    assert getattr(got, attr) is None, (name, part, attr)
                else:
                    np.testing.assert_array_equal(getattr(got, attr), want)


def test_merge_keeps_the_order_and_refuses_other_windows():
    a, b = _set(np.arange(10, 17), 1), _set(np.arange(10, 17), 2)
    b.forecasts = {"ridge": b.forecasts["naive"]}
    b.warnings = ["warning: three"]
    b.record = {"other": True}
    m = merge(a, b)
    assert m.names() == ["model", "ets", "naive", "ridge"]
    assert m.forecasts["ridge"] == b.forecasts["ridge"] and m.record == a.record
    assert m.warnings == ["warning: one", "warning: two", "warning: three"]
    c = _set(np.arange(11, 18), 3)
    with pytest.raises(ValueError, match="different test windows"):
        merge(a, c)
    d = _set(np.arange(10, 17), 4)
    d.ends["cal"] = np.arange(1, 5)
    with pytest.raises(ValueError, match="different cal windows"):
        merge(a, d)


def test_another_stores_windows_ride_along_as_a_part_and_come_back_out(tmp_path):
    """A competition's calibration cut: its forecasts saved beside the set's own as the part
    CUT (ends of the cut's store), split back out as a set of its own whose test part they
    are; the set without it is the set as it was."""
    from attn_forecast.forecasters.saved import CUT, split_part, with_part
    own, cut = _set(np.arange(10, 17)), _set(np.arange(3, 6), seed=1)
    save(tmp_path / "f.npz", with_part(own, CUT, cut))
    rest, alone = split_part(load(tmp_path / "f.npz"), CUT)
    assert rest.ends.keys() == own.ends.keys() and rest.record == own.record
    np.testing.assert_array_equal(alone.ends["test"], cut.ends["test"])
    np.testing.assert_array_equal(alone.forecasts["model"]["test"].point,
                                  cut.forecasts["model"]["test"].point)
    np.testing.assert_array_equal(rest.forecasts["model"]["test"].point,
                                  own.forecasts["model"]["test"].point)
    assert "ets" not in alone.forecasts        # no forecast of the cut: not in its set
    assert split_part(own, CUT) == (own, None)
