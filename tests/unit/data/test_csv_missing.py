"""Unit tests of the CSV reader's empty cells (data.csv, data.missing): error, drop, ffill."""
from __future__ import annotations

import numpy as np
import pytest

from attn_forecast.data import sources
from attn_forecast.data.csv import FEATURE_PREFIX
from attn_forecast.errors import DataError
from unit.data.helpers import FLAGS, _csv, _read

# ---------------------------------------------------------------- empty cells
EMPTY = "d,value\n3,\n1,1\n2,\n4,7\n5,\n"  # sorted by d: 1, '', '', 7, ''


def test_empty_cells_error_names_the_count_and_the_settings(tmp_path):
    with pytest.raises(DataError) as info:
        _read(_csv(tmp_path, EMPTY), "value", time_column="d", missing="error")
    msg = str(info.value)
    assert "3 row(s) with an empty cell" in msg and "ffill" in msg and "drop" in msg
    assert "data.missing" in msg
    with pytest.raises(DataError, match="set --missing to ffill or drop"):
        _read(_csv(tmp_path, EMPTY), "value", time_column="d", keys=FLAGS)


def test_empty_cells_dropped(tmp_path):
    got = _read(_csv(tmp_path, EMPTY), "value", time_column="d", missing="drop")
    assert got["value"].tolist() == [1.0, 7.0]
    assert got["t"].tolist() == [1, 4]


def test_drop_never_loses_a_whole_id_without_a_word(tmp_path):
    text = "id,t,value\na,1,1\na,2,2\nb,1,\nb,2,\nc,1,3\n"
    with pytest.raises(DataError, match=r"id 'b' has no row without an empty cell; "
                                        r"data.missing drop removes rows, not whole series"):
        _read(_csv(tmp_path, text), "value", id_column="id", time_column="t", missing="drop")
    got = _read(_csv(tmp_path, "id,t,value\na,1,1\na,2,\nb,1,4\n", "ok.csv"), "value",
                id_column="id", time_column="t", missing="drop")
    assert got["value"].tolist() == [1.0, 4.0]


def test_empty_cells_carried_forward_in_time_order(tmp_path):
    got = _read(_csv(tmp_path, EMPTY), "value", time_column="d", missing="ffill")
    assert got["value"].tolist() == [1.0, 1.0, 1.0, 7.0, 7.0]   # the last earlier time's
    # leading gaps have no past value: refused, naming the line and the key
    with pytest.raises(DataError, match=r"starts with empty cells on line 2.*data.missing"):
        _read(_csv(tmp_path, "value,x\n,a\n,b\n4,c\n6,d\n", "lead.csv"), "value",
              missing="ffill")


def test_filled_values_depend_on_the_past_only(tmp_path):
    """No filled value may change when a later observation changes: so no input of a window
    depends on a value at or after its first target."""
    rng = np.random.default_rng(3)
    n = 40
    base = rng.normal(size=n).round(3)
    gaps = {5, 6, 17, 30, 31, 32, 39}

    def filled(values):
        cells = ["" if i in gaps else f"{v}" for i, v in enumerate(values)]
        path = _csv(tmp_path, "value\n" + "\n".join(cells) + "\n", "g.csv")
        return _read(path, "value", missing="ffill")["value"].to_numpy()
    ref = filled(base)
    last = np.maximum.accumulate(np.where([i in gaps for i in range(n)], 0, np.arange(n)))
    np.testing.assert_array_equal(ref, base[last])              # by hand
    for j in range(1, n):
        later = base.copy()
        later[j:] = 1e6                                          # every observation from j on
        assert np.array_equal(filled(later)[:j], ref[:j]), j


def test_ffill_never_carries_a_value_from_one_id_into_the_next(tmp_path):
    path = _csv(tmp_path, "id,t,value\n" "a,3,\n" "a,1,1\n" "a,2,2\n" "b,2,\n" "b,1,10\n"
                "b,3,30\n", "gaps.csv")
    got = _read(path, "value", time_column="t", id_column="id", missing="ffill")
    assert got["value"].tolist() == [1, 2, 2, 10, 10, 30]
    # an id whose first time is empty has no value to carry, even right after another id's
    lead = _csv(tmp_path, "id,t,value\n" "a,1,1\n" "a,2,2\n" "b,1,\n" "b,2,5\n", "lead.csv")
    with pytest.raises(DataError, match=r"'value' starts with empty cells on line 4 "
                                        r"\(id 'b'\)"):
        _read(lead, "value", time_column="t", id_column="id", missing="ffill")
    got = _read(lead, "value", time_column="t", id_column="id", missing="drop")
    assert got["id"].tolist() == ["a", "a", "b"] and got["value"].tolist() == [1, 2, 5]
    with pytest.raises(DataError, match=r"2 row\(s\) with an empty cell, the first in "
                                        r"column 'value' on line 2 \(id 'a'\)"):
        _read(path, "value", time_column="t", id_column="id", missing="error")


def test_empty_feature_cells_follow_missing(tmp_path):
    bars = sources.ohlcv(30, 0)
    bars.loc[5, "volume"] = np.nan
    path = tmp_path / "bars.csv"
    bars.to_csv(path, index=False)
    with pytest.raises(DataError, match=r"1 row\(s\) with an empty cell, the first in "
                                        r"column 'volume' on line 7"):
        _read(path, "close", time_column="date", features=["volume"])
    filled = _read(path, "close", time_column="date", features=["volume"], missing="ffill")
    assert filled[FEATURE_PREFIX + "volume"][5] == bars["volume"][4]   # from the past
    dropped = _read(path, "close", time_column="date", features=["volume"], missing="drop")
    np.testing.assert_array_equal(dropped["value"], bars["close"].drop(index=5))


def test_blank_lines_of_a_one_column_file_are_empty_cells(tmp_path):
    path = _csv(tmp_path, "value\n1\n\n3\n")
    with pytest.raises(DataError, match=r"1 row\(s\) with an empty cell, the first in "
                                           r"column 'value' on line 3"):
        _read(path, "value", missing="error")
    assert _read(path, "value", missing="ffill")["value"].tolist() == [1.0, 1.0, 3.0]
    assert _read(path, "value", missing="drop")["value"].tolist() == [1.0, 3.0]
    # line 1 header, 2 '1', 3 empty, 4 'abc': the blank line counts
    with pytest.raises(DataError, match="'abc' on line 4"):
        _read(_csv(tmp_path, "value\n1\n\nabc\n", "b.csv"), "value", missing="drop")


def test_a_column_without_values_is_an_error(tmp_path):
    path = _csv(tmp_path, "value,x\n,1\n,2\n")
    with pytest.raises(DataError, match="column 'value' holds no values"):
        _read(path, "value", missing="drop")
    with pytest.raises(DataError, match="'value' starts with empty cells on line 2"):
        _read(path, "value", missing="ffill")
