"""Unit tests of the data's way in: the one CSV reader (``table.read_table``: a file of one
series is a panel of one id; a long file is grouped by id and sorted by time within each),
``table.check_regular`` (time gaps), the generate stage's long table (``write_long`` /
``read_long``, bit for bit) and the built-in synthetic sources.

Every expected value is worked out by hand, with numpy or with pandas, never taken from the
code under test.
"""
from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from attn_forecast.data import sources
from attn_forecast.errors import UserInputError, naming
from attn_forecast.pipeline.keys import PARAMS_KEYS
from attn_forecast.config.schema import DataParams
from attn_forecast.data.csv import FEATURE_PREFIX, read_table
from attn_forecast.data.frequency import check_regular
from attn_forecast.data.long_table import read_long, write_long
from attn_forecast.errors import DataError

ROOT = Path(__file__).resolve().parents[3]
# keys as another caller (the forecast command) names its settings: messages must use them
FLAGS = {"path": "--csv", "column": "--column", "time_column": "--time-column",
         "time_format": "--time-format", "sep": "--sep", "decimal": "--decimal",
         "thousands": "--thousands", "missing": "--missing", "features": "--features",
         "id_column": "--id-column", "time_gaps": "--time-gaps"}


# ---------------------------------------------------------------- helpers
def _csv(tmp_path: Path, text: str, name: str = "s.csv") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def _read(path: Path, column: str, **kw) -> pd.DataFrame:
    """read_table, its errors naming the settings as the stages (or, ``keys=FLAGS``, the
    forecast command) name them."""
    with naming(kw.pop("keys", PARAMS_KEYS)):
        return read_table(path, column, **kw)


def _day(*dates: str) -> list[np.datetime64]:
    return [np.datetime64(d) for d in dates]


def _same(a: np.ndarray, b: np.ndarray) -> bool:
    """Bit-identical: same dtype, shape and bytes (NaNs and signed zeros included)."""
    a, b = np.asarray(a), np.asarray(b)
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


def _regular(t, lengths=None, ids=None, keys=PARAMS_KEYS) -> str | None:
    """check_regular on series of ``lengths`` laid one after the other in ``t`` (its note of
    calendar gaps, if any)."""
    t = np.asarray(t)
    lengths = [len(t)] if lengths is None else lengths
    ids = np.array(ids or [f"s{i}" for i in range(len(lengths))], dtype=object)
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    with naming(keys):
        return check_regular(ids, offsets, t, "f.csv")


@pytest.fixture
def global_rng_restored():
    state = np.random.get_state()
    yield
    np.random.set_state(state)


# ---------------------------------------------------------------- one series: a panel of one
def test_a_file_without_id_column_is_one_series_named_default_id(tmp_path):
    path = _csv(tmp_path, "date,value,other\n2024-01-03,3.5,x\n2024-01-01,1,y\n"
                          "2024-01-02, 2 ,z\n2023-12-31,0,w\n")
    got = _read(path, "value", time_column="date", default_id="close")
    assert list(got.columns) == ["id", "t", "value", "signal"]
    assert got["id"].tolist() == ["close"] * 4
    assert got["value"].tolist() == [0.0, 1.0, 2.0, 3.5]
    assert got["t"].tolist() == _day("2023-12-31", "2024-01-01", "2024-01-02", "2024-01-03")
    assert got["signal"].isna().all()
    assert _read(path, "value", time_column="date")["id"].tolist() == ["series"] * 4


def test_numeric_times_are_sorted_as_numbers(tmp_path):
    got = _read(_csv(tmp_path, "step,value\n10,1\n9,2\n100,3\n"), "value", time_column="step")
    assert got["value"].tolist() == [2.0, 1.0, 3.0]     # 9 < 10 < 100, not '10' < '100' < '9'
    assert got["t"].tolist() == [9.0, 10.0, 100.0]


def test_without_time_column_the_rows_keep_the_files_order(tmp_path):
    got = _read(_csv(tmp_path, "value\n3\n1\n2\n"), "value")
    assert got["value"].tolist() == [3.0, 1.0, 2.0]
    assert got["t"].tolist() == [0, 1, 2]


def test_feature_columns_are_read_sorted_with_the_value(tmp_path):
    bars = sources.ohlcv(30, 0)
    path = tmp_path / "bars.csv"
    bars.sample(frac=1.0, random_state=1).to_csv(path, index=False)
    names = ["open", "high", "low", "volume"]
    got = _read(path, "close", time_column="date", features=names)
    assert list(got.columns) == ["id", "t", "value", "signal"] + [FEATURE_PREFIX + n
                                                                    for n in names]
    np.testing.assert_array_equal(got["value"], bars["close"])
    for n in names:
        np.testing.assert_array_equal(got[FEATURE_PREFIX + n], bars[n])
    assert got["t"].tolist() == pd.to_datetime(bars["date"]).tolist()


# ---------------------------------------------------------------- many series: a long file
def test_a_long_file_is_grouped_by_id_in_first_appearance_and_sorted_by_time(tmp_path):
    path = _csv(tmp_path, "id,t,value\n"
                "b,3,13\n" "a,2,2\n" "b,1,11\n" "c,10,100\n" "a,1,1\n" "b,2,12\n"
                "a,3,3\n" "c,9,99\n")
    got = _read(path, "value", time_column="t", id_column="id")
    assert list(got.columns) == ["id", "t", "value", "signal"]
    assert got["id"].tolist() == ["b"] * 3 + ["a"] * 3 + ["c"] * 2
    assert got["t"].tolist() == [1, 2, 3, 1, 2, 3, 9, 10]
    assert got["value"].tolist() == [11, 12, 13, 1, 2, 3, 99, 100]
    assert got["signal"].isna().all()


def test_a_long_file_sorts_dates_by_time_not_by_text(tmp_path):
    path = _csv(tmp_path, "day;who;price\n"
                "02/02/2024;x;2\n" "03/01/2024;x;1\n" "01/03/2024;x;3\n" "15/01/2024;y;7\n")
    got = _read(path, "price", time_column="day", id_column="who", time_format="%d/%m/%Y",
                sep=";")
    assert got["id"].tolist() == ["x", "x", "x", "y"]
    assert got["t"].tolist() == _day("2024-01-03", "2024-02-02", "2024-03-01", "2024-01-15")
    assert got["value"].tolist() == [1, 2, 3, 7]


def test_ids_are_read_as_text_and_stripped(tmp_path):
    path = _csv(tmp_path, "id,t,value\n007,1,1\n 7 ,1,2\n007,2,3\n")
    got = _read(path, "value", time_column="t", id_column="id")
    assert got["id"].tolist() == ["007", "007", "7"]     # '007' is not the number 7
    assert got["value"].tolist() == [1, 3, 2]


def test_a_long_file_needs_a_time_column_and_ids_in_every_row(tmp_path):
    path = _csv(tmp_path, "id,t,value\na,1,1\nb,1,2\n")
    with pytest.raises(DataError, match="data.csv_time_column must name the time column "
                                        "of a file with data.csv_id_column"):
        _read(path, "value", id_column="id")
    with pytest.raises(DataError, match=r"id column 'id' is empty on line 3"):
        _read(_csv(tmp_path, "id,t,value\na,1,1\n  ,2,2\n", "e.csv"), "value",
              time_column="t", id_column="id")


# ---------------------------------------------------------------- duplicates
@pytest.mark.parametrize("text", ["date,value\n2024-01-03,3\n2024-01-01,1\n2024-01-03,2\n",
                                  "step,value\n1,3\n2,1\n1.0,2\n"])
def test_a_time_twice_in_a_series_is_refused(tmp_path, text):
    column = text.split(",")[0]
    with pytest.raises(DataError, match=r"twice \(line 2\); each time must appear once"):
        _read(_csv(tmp_path, text), "value", time_column=column)


def test_a_time_twice_in_one_id_is_refused_but_not_in_two_ids(tmp_path):
    dup = _csv(tmp_path, "id,t,value\na,1,1\nb,1,5\nb,2,6\nb,1,7\na,2,2\n", "dup.csv")
    with pytest.raises(DataError, match=r"id 'b' has the time '1' twice \(line 3\)"):
        _read(dup, "value", time_column="t", id_column="id")
    ok = _csv(tmp_path, "id,t,value\na,1,1\nb,1,5\nb,2,6\na,2,2\n", "ok.csv")
    got = _read(ok, "value", time_column="t", id_column="id")
    assert got["id"].tolist() == ["a", "a", "b", "b"] and got["value"].tolist() == [1, 2, 5, 6]


# ---------------------------------------------------------------- one time format per file
DAY_FIRST = "date,close\n" + "".join(f"{d:02d}/01/2022,{100 + d}\n" for d in range(3, 14))
AMBIGUOUS = "date,close\n" + "".join(f"{d:02d}/01/2022,{d}\n" for d in range(3, 12))


def test_day_first_dates_read_with_one_format(tmp_path):
    # 03/01 .. 12/01 alone would read month first; 13/01 settles it for the whole column
    got = _read(_csv(tmp_path, DAY_FIRST), "close", time_column="date")
    assert got["t"].tolist() == [np.datetime64(f"2022-01-{d:02d}") for d in range(3, 14)]
    assert got["value"].tolist() == [100.0 + d for d in range(3, 14)]


def test_ambiguous_day_month_order_is_an_error_naming_the_key(tmp_path):
    path = _csv(tmp_path, AMBIGUOUS)
    with pytest.raises(DataError) as info:
        _read(path, "close", time_column="date")
    msg = str(info.value)
    assert "ambiguous" in msg and "data.csv_time_format" in msg and "'date'" in msg
    assert "'03/01/2022' (line 2)" in msg and "\n" not in msg
    with pytest.raises(DataError, match=r"ambiguous.*set --time-format"):
        _read(path, "close", time_column="date", keys=FLAGS)
    got = _read(path, "close", time_column="date", time_format="%d/%m/%Y")
    assert got["t"].iloc[0] == np.datetime64("2022-01-03")
    assert got["t"].iloc[-1] == np.datetime64("2022-01-11")
    got = _read(path, "close", time_column="date", time_format="%m/%d/%Y")
    assert got["t"].iloc[0] == np.datetime64("2022-03-01")
    assert got["t"].iloc[-1] == np.datetime64("2022-11-01")


def test_mixed_formats_are_refused_never_parsed_row_by_row(tmp_path):
    path = _csv(tmp_path, "date,close\n2022-01-03,1\n2022-01-04,2\n05/01/2022,3\n")
    with pytest.raises(DataError) as info:
        _read(path, "close", time_column="date")
    msg = str(info.value)
    assert "'05/01/2022'" in msg and "line 4" in msg and "data.csv_time_format" in msg


def test_an_explicit_time_format_must_match_every_row(tmp_path):
    with pytest.raises(DataError, match=r"'03/01/2022' on line 2 does not match "
                                        r"data.csv_time_format '%Y-%m-%d'"):
        _read(_csv(tmp_path, DAY_FIRST), "close", time_column="date", time_format="%Y-%m-%d")


def test_a_time_that_is_neither_number_nor_date_names_its_line(tmp_path):
    with pytest.raises(DataError, match=r"'yesterday' on line 3 does not match the format"):
        _read(_csv(tmp_path, "date,value\n2024-01-01,1\nyesterday,2\n"), "value",
              time_column="date")
    with pytest.raises(DataError, match=r"'yesterday' on line 2 is neither a number nor a "
                                        r"date.*set data.csv_time_format"):
        _read(_csv(tmp_path, "date,value\nyesterday,1\n2024-01-01,2\n", "b.csv"), "value",
              time_column="date")


def test_iso_dates_with_times_are_not_read_day_first(tmp_path):
    got = _read(_csv(tmp_path, "when,v\n2024-02-01 10:00,1\n2024-01-02 09:30,2\n"), "v",
                time_column="when")
    assert got["t"].tolist() == _day("2024-01-02T09:30", "2024-02-01T10:00")
    assert got["value"].tolist() == [2.0, 1.0]


def test_times_with_one_utc_offset_are_read_as_utc(tmp_path):
    path = _csv(tmp_path, "when,v\n2024-01-01T10:00:00+02:00,1\n2024-01-01T09:30:00+02:00,2\n")
    got = _read(path, "v", time_column="when")
    assert got["t"].tolist() == _day("2024-01-01T07:30", "2024-01-01T08:00")
    assert got["value"].tolist() == [2.0, 1.0]


def test_times_across_a_daylight_saving_change_are_read_as_utc(tmp_path):
    # local time jumps from 02:00 (+01:00) to 03:00 (+02:00): one hour apart, in UTC
    path = _csv(tmp_path, "when,v\n2024-03-31 03:00:00+02:00,2\n2024-03-31 01:00:00+01:00,1\n")
    got = _read(path, "v", time_column="when")
    assert got["t"].tolist() == _day("2024-03-31T00:00", "2024-03-31T01:00")
    assert got["value"].tolist() == [1.0, 2.0]


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


# ---------------------------------------------------------------- values and dialects
@pytest.mark.parametrize("bad", ["abc", "nan", "1,5"])
def test_a_non_numeric_value_names_its_line(tmp_path, bad):
    with pytest.raises(DataError) as info:
        _read(_csv(tmp_path, f'value\n1\n2\n"{bad}"\n4\n'), "value")
    assert "line 4" in str(info.value) and repr(bad) in str(info.value)


@pytest.mark.parametrize("bad", ["inf", "-inf", "Infinity", "1e400"])
def test_an_infinite_value_is_refused(tmp_path, bad):
    with pytest.raises(DataError, match="infinite value on line 3"):
        _read(_csv(tmp_path, f"value\n1\n{bad}\n3\n"), "value")


def test_semicolon_decimal_comma_and_thousands(tmp_path):
    path = _csv(tmp_path, "date;close\n2022-01-04;2.003,60\n2022-01-03;1.234,5\n")
    got = _read(path, "close", time_column="date", sep=";", decimal=",", thousands=".")
    assert got["value"].tolist() == [1234.5, 2003.6]
    # without the separator: the missing column's message says which separator to set
    with pytest.raises(DataError, match=r"looks separated by ';': set data.csv_sep to ';'"):
        _read(path, "close", time_column="date")
    with pytest.raises(DataError, match=r"set --sep to ';'"):
        _read(path, "close", time_column="date", keys=FLAGS)
    # without the decimal settings: the bad value's message points at them
    with pytest.raises(DataError, match=r"set data.csv_decimal or data.csv_thousands"):
        _read(path, "close", time_column="date", sep=";")
    with pytest.raises(DataError, match=r"set --decimal or --thousands"):
        _read(path, "close", time_column="date", sep=";", keys=FLAGS)
    us = _csv(tmp_path, 'close\n"2,003.60"\n"1,234.50"\n', "us.csv")
    assert _read(us, "close", thousands=",")["value"].tolist() == [2003.6, 1234.5]


def test_a_tab_separated_header_gets_a_hint(tmp_path):
    path = _csv(tmp_path, "date\tclose\n2022-01-03\t1\n")
    with pytest.raises(DataError, match=r"tab"):
        _read(path, "close", time_column="date")
    assert _read(path, "close", time_column="date", sep="\t")["value"].tolist() == [1.0]


def test_a_semicolon_long_file_read_with_commas_names_the_separator(tmp_path):
    path = _csv(tmp_path, "sensor;time;temp\ns-a;2024-03-01 14:00;20,5\n")
    with pytest.raises(DataError, match="looks separated by ';': set data.csv_sep to ';'"):
        _read(path, "temp", time_column="time", id_column="sensor")
    got = _read(path, "temp", time_column="time", id_column="sensor", sep=";", decimal=",")
    assert got["value"].tolist() == [20.5] and got["id"].tolist() == ["s-a"]
    assert got["t"].tolist() == _day("2024-03-01T14:00")


# ---------------------------------------------------------------- errors name the keys
@pytest.mark.parametrize("keys", [PARAMS_KEYS, FLAGS], ids=["params", "flags"])
def test_a_missing_column_names_its_key_and_lists_the_columns(tmp_path, keys):
    path = _csv(tmp_path, "date,close,volume\n1,2,3\n")
    for kw, key in ((dict(column="value"), "column"),
                    (dict(column="close", time_column="when"), "time_column"),
                    (dict(column="close", time_column="date", id_column="who"), "id_column"),
                    (dict(column="close", features=["volume", "vol"]), "features")):
        with pytest.raises(DataError) as info:
            with naming(keys):
                read_table(path, **kw)
        msg = str(info.value)
        assert msg.startswith(f"{keys[key]}: column ") and "not in" in msg, msg
        assert "(columns: date, close, volume)" in msg


def test_a_missing_or_unreadable_file(tmp_path):
    with pytest.raises(DataError, match=r"data.csv_path: file not found"):
        _read(tmp_path / "nope.csv", "value")
    with pytest.raises(DataError, match=r"--csv: file not found"):
        _read(tmp_path / "nope.csv", "value", keys=FLAGS)
    with pytest.raises(DataError, match="not a readable CSV file"):
        _read(_csv(tmp_path, ""), "value")
    assert issubclass(DataError, UserInputError)


# ---------------------------------------------------------------- regular time steps
def test_a_monthly_series_with_a_gap_names_the_first_gap():
    months = pd.date_range("2020-01-01", periods=12, freq="MS").to_numpy()
    t = np.delete(months, [4, 8])                        # May and September missing
    with pytest.raises(DataError) as info:
        _regular(t)
    msg = str(info.value)
    assert "after 2020-04-01 comes 2020-06-01" in msg
    assert "1 step(s) of one month missing" in msg and "data.time_gaps" in msg
    with pytest.raises(DataError, match="set --time-gaps to allow"):
        _regular(t, keys=FLAGS)


US_HOLIDAYS_2023 = ["2023-01-02", "2023-01-16", "2023-02-20", "2023-04-07", "2023-05-29",
                    "2023-06-19", "2023-07-04", "2023-09-04", "2023-11-23", "2023-12-25"]


def test_a_price_file_skipping_market_holidays_passes_with_a_note():
    """A year of trading days: weekends and the exchange's holidays skipped."""
    days = pd.bdate_range("2023-01-02", "2023-12-29").to_numpy()
    assert _regular(days) is None                                # weekends alone: no note
    trading = days[~np.isin(days, np.array(US_HOLIDAYS_2023, dtype="datetime64[ns]"))]
    note = _regular(trading)
    # the first holiday, 2 January, is before the first row: nine gaps inside the year
    assert note == ("f.csv: the time column skips 9 business day(s) in 9 gap(s) (holidays), "
                    "the first after 2023-01-13; each row is read as the next step")


def test_business_day_gaps_no_calendar_explains_stay_errors():
    days = pd.bdate_range("2023-01-02", "2023-12-29").to_numpy()
    with pytest.raises(DataError, match=r"\(6 step\(s\) of one business day missing"):
        _regular(np.delete(days, range(40, 46)))                 # more than a week gone
    short = pd.bdate_range("2023-12-20", periods=15).to_numpy()
    with pytest.raises(DataError, match=r"after 2023-12-29 comes 2024-01-02 "
                                        r"\(1 step\(s\) of one business day missing"):
        _regular(short[short != np.datetime64("2024-01-01")])    # 1 of 14 steps: too many


def test_an_hourly_file_missing_the_daylight_saving_hour_passes_with_a_note():
    hours = pd.date_range("2024-01-01", "2024-12-31 23:00", freq="h").to_numpy()
    spring = np.datetime64("2024-03-31T02:00")                   # a Sunday (Europe)
    note = _regular(hours[hours != spring])
    assert "skips 1 hour(s) (a daylight-saving change), the first after 2024-03-31 01:00" \
        in note
    wednesday = np.datetime64("2024-03-27T02:00")
    with pytest.raises(DataError, match=r"1 step\(s\) of one hour missing"):
        _regular(hours[hours != wednesday])


@pytest.mark.parametrize("freq", ["D", "W", "MS", "ME", "QS", "YS", "h", "min"])
def test_regular_calendar_steps_pass(freq):
    """A regular calendar passes without a note; the same calendar with one step gone does
    not pass silently (so the check reads these steps at all)."""
    t = pd.date_range("2019-11-30", periods=30, freq=freq).to_numpy()
    assert _regular(t) is None
    with pytest.raises(DataError, match=r"1 step\(s\) of .* missing"):
        _regular(np.delete(t, 15))


@pytest.mark.parametrize("freq", ["2MS", "6MS"])
def test_regular_steps_of_several_months_pass(freq):
    """Every two months, every half year: whole months apart, as regular as monthly data
    (the days between vary: 59 to 62, 181 to 184)."""
    t = pd.date_range("2000-01-01", periods=20, freq=freq).to_numpy()
    assert _regular(t) is None
    with pytest.raises(DataError, match=r"missing"):
        _regular(np.delete(t, 10))


@pytest.mark.parametrize("freq, missing", [("D", "2024-01-06"), ("W", "2024-02-04"),
                                           ("QS", "2025-01-01"), ("YS", "2027-01-01")])
def test_a_missing_step_of_each_frequency_is_a_gap(freq, missing):
    t = pd.date_range("2024-01-01", periods=10, freq=freq).to_numpy()
    assert np.datetime64(missing) in t
    with pytest.raises(DataError, match=r"1 step\(s\) of .* missing"):
        _regular(t[t != np.datetime64(missing)])


def test_steps_are_named_in_words_and_times_of_day_only_when_there_are_any():
    days = pd.date_range("2021-04-01", periods=12, freq="D").to_numpy()
    with pytest.raises(DataError, match=r"after 2021-04-04 comes 2021-04-06 \(1 step\(s\) of "
                                        r"one day missing\)"):
        _regular(np.delete(days, 4))
    hours = pd.date_range("2021-04-01 06:00", periods=12, freq="6h").to_numpy()
    with pytest.raises(DataError, match=r"after 2021-04-01 18:00:00 comes 2021-04-02 06:00:00 "
                                        r"\(1 step\(s\) of 6 hours missing\)"):
        _regular(np.delete(hours, 3))
    weeks = pd.date_range("2021-01-03", periods=12, freq="W").to_numpy()
    with pytest.raises(DataError, match=r"2 step\(s\) of 7 days missing"):
        _regular(np.delete(weeks, [5, 6]))


def test_numeric_steps():
    _regular(np.arange(10) * 0.5)
    _regular(np.arange(10.0) + 1000)
    with pytest.raises(DataError, match=r"after 2 comes 4 \(1 step\(s\) of 1 missing\)"):
        _regular(np.delete(np.arange(10.0), 3))
    with pytest.raises(DataError, match=r"after 2 comes 2.5 \(a step of 0.5 x 1\)"):
        _regular(np.r_[0.0, 1, 2, 2.5, 3.5, 4.5, 5.5])


def test_no_step_across_two_series_counts():
    a = pd.date_range("2024-01-01", periods=6, freq="D").to_numpy()
    b = pd.date_range("2023-06-01", periods=6, freq="D").to_numpy()     # earlier than a
    c = pd.date_range("2024-03-01", periods=6, freq="D").to_numpy()     # long after b
    _regular(np.r_[a, b, c], [6, 6, 6])
    _regular(np.r_[np.arange(5.0), np.arange(5.0) + 100], [5, 5])
    # a gap inside the second series names it (ids as the generate stage passes them)
    with pytest.raises(DataError, match=r"the time column of id 'b' is not regular: after "
                                        r"2023-06-02 comes 2023-06-04"):
        _regular(np.r_[a, np.delete(b, 2)], [6, 5], ids=["a", "b"])


def test_the_generate_stage_checks_gaps_unless_allowed(tmp_path, monkeypatch):
    monkeypatch.setenv("ATTN_FORECAST_NATIVE_CPU", "1")     # importing the stage pins nothing
    spec = importlib.util.spec_from_file_location("generate_stage", ROOT / "stages" /
                                                  "generate.py")
    generate = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(generate)
    path = _csv(tmp_path, "who,day,v\nx,2024-01-01,1\nx,2024-01-02,2\ny,2024-01-01,3\n"
                          "y,2024-01-03,4\ny,2024-01-04,5\n")
    d = DataParams(kind="csv", csv_path=str(path), csv_column="v", csv_time_column="day",
                   csv_id_column="who")
    with pytest.raises(DataError, match=r"of id 'y' is not regular: after 2024-01-01 comes"):
        generate.chunks(d, str(tmp_path))
    (frame,) = generate.chunks(d.model_copy(update={"time_gaps": "allow"}), str(tmp_path))
    assert frame["id"].tolist() == ["x", "x", "y", "y", "y"]
    assert frame["value"].tolist() == [1, 2, 3, 4, 5]
    # the default data: the source's noisy sine, seed 42
    (sine,) = generate.chunks(DataParams(), str(tmp_path))
    pd.testing.assert_frame_equal(sine, sources.sine(300, 0.15, 42))


# ---------------------------------------------------------------- the generate stage's table
def _frame(sid: str, t, value, signal=None, **features) -> pd.DataFrame:
    n = len(value)
    out = pd.DataFrame({"id": sid, "t": t, "value": value,
                        "signal": np.full(n, np.nan) if signal is None else signal})
    for name, col in features.items():
        out[FEATURE_PREFIX + name] = col
    return out


def _check_raw(raw, whole: pd.DataFrame, features=()) -> None:
    names = whole["id"].drop_duplicates().tolist()
    assert raw.ids.tolist() == names
    sizes = [int((whole["id"] == n).sum()) for n in names]
    assert raw.offsets.dtype == np.int64
    assert raw.offsets.tolist() == np.r_[0, np.cumsum(sizes)].tolist()
    assert _same(raw.levels, whole["value"].to_numpy(np.float64))
    assert _same(raw.signal, whole["signal"].to_numpy(np.float64))
    if features:
        want = whole[[FEATURE_PREFIX + f for f in features]].to_numpy(np.float64)
        assert _same(raw.features, want) and raw.feature_names == tuple(features)
    else:
        assert raw.features is None


def test_the_long_table_reads_back_bit_for_bit(tmp_path):
    rs = np.random.default_rng(0)
    awkward = np.array([0.1, 1 / 3, -0.0, 5e-324, 1.7976931348623157e308, 123456789.125,
                        -2.5e-300, np.pi])
    frames = [_frame(sid, np.arange(8), rs.permutation(awkward) if k else awkward,
                     np.where(np.arange(8) % 3, rs.normal(size=8), np.nan),
                     vol=rs.lognormal(10, 1, 8), open=rs.normal(size=8) * 1e-9)
              for k, sid in enumerate(["NA", "001", "nan", "null", "1e3", "TRUE"])]
    path = tmp_path / "series.csv"
    assert write_long(path, frames) == (48, 6)
    raw = read_long(path, ["vol", "open"])
    whole = pd.concat(frames, ignore_index=True)
    _check_raw(raw, whole, ("vol", "open"))
    assert _same(raw.t, np.tile(np.arange(8, dtype=np.float64), 6))
    assert np.signbit(raw.levels[2]) and raw.levels[3] == 5e-324
    assert read_long(path).features is None                 # features only when asked for


def test_dates_and_times_read_back(tmp_path):
    days = pd.date_range("2024-01-30", periods=5, freq="D").to_numpy()
    hours = pd.date_range("2024-03-31 22:00", periods=5, freq="h").to_numpy()
    for name, t in (("days", days), ("hours", hours)):
        frame = _frame("x", t, np.arange(5.0))
        path = tmp_path / f"{name}.csv"
        write_long(path, [frame])
        raw = read_long(path)
        assert raw.t.dtype == np.dtype("datetime64[us]")
        np.testing.assert_array_equal(raw.t, t.astype("datetime64[us]"))
    assert (tmp_path / "days.csv").read_text().splitlines()[1].startswith('"x","2024-01-30",')


def test_two_times_of_a_file_never_read_back_as_one(tmp_path):
    """A user's file with sub-second times: the reader keeps them apart (it refuses a time
    twice), and so must the long table between generate and prepare."""
    path = _csv(tmp_path, "t,v\n2024-01-01 10:00:00.250,1\n2024-01-01 10:00:00.750,2\n")
    frame = _read(path, "v", time_column="t")
    assert frame["t"].nunique() == 2
    write_long(tmp_path / "series.csv", [frame])
    raw = read_long(tmp_path / "series.csv")
    assert len(np.unique(raw.t)) == 2 and (np.diff(raw.t) > np.timedelta64(0)).all(), raw.t


def test_a_series_running_across_chunks_and_blocks_reads_back(tmp_path):
    """Over 8 MiB: read_long reads it in several blocks, and series run across chunk and
    block boundaries; the rows of a series written in two chunks are one series."""
    import pyarrow.csv as pacsv
    args = (40, 6000, 0, 9, 0.1, 0.01)
    path = tmp_path / "panel.csv"
    rows, n_ids = write_long(path, sources.panel(*args, rows=5000))
    whole = pd.concat(sources.panel(*args), ignore_index=True)
    assert (rows, n_ids) == (len(whole), 40)
    blocks = sum(1 for _ in pacsv.open_csv(str(path),
                                           read_options=pacsv.ReadOptions(block_size=8 << 20)))
    assert blocks > 1
    raw = read_long(path)
    _check_raw(raw, whole)
    assert _same(raw.t, whole["t"].to_numpy(np.float64))


def test_numbers_that_turn_fractional_after_the_first_block_read_back(tmp_path):
    """pyarrow types a column from its first block: whole numbers there, 0.5 later."""
    n = 45_000
    long_id = "a" * 200                                     # 45 000 rows of > 200 bytes
    frames = [_frame(long_id, np.arange(n), np.ones(n)),
              _frame("b", np.arange(5) + 0.5, np.full(5, 2.0))]
    path = tmp_path / "raw.csv"
    write_long(path, frames)
    assert path.stat().st_size > 8 << 20
    raw = read_long(path)
    assert raw.ids.tolist() == [long_id, "b"] and raw.offsets.tolist() == [0, n, n + 5]
    assert _same(raw.t, np.r_[np.arange(n, dtype=np.float64), np.arange(5) + 0.5])


def test_an_id_in_two_places_is_refused(tmp_path):
    path = tmp_path / "panel.csv"
    frame = pd.concat(sources.panel(3, 20, 0, 1, 0.1, 0.0), ignore_index=True)
    write_long(path, [frame, frame[frame["id"] == "s0"]])
    with pytest.raises(UserInputError, match="'s0' appears in two places"):
        read_long(path)


def test_a_table_of_another_layout_is_refused(tmp_path):
    path = _csv(tmp_path, "t,value\n0,1\n")
    with pytest.raises(UserInputError, match="not the table this version writes"):
        read_long(path)


def test_a_users_file_round_trips_through_the_long_table(tmp_path):
    path = _csv(tmp_path, "id,t,value,vol\nb,2024-01-02,2.5,10\na,2024-01-01,1,5\n"
                          "b,2024-01-01,1.5,20\na,2024-01-02,3,30\n")
    frame = _read(path, "value", time_column="t", id_column="id", features=["vol"])
    out = tmp_path / "series.csv"
    assert write_long(out, [frame]) == (4, 2)
    raw = read_long(out, ["vol"])
    assert raw.ids.tolist() == ["b", "a"] and raw.offsets.tolist() == [0, 2, 4]
    np.testing.assert_array_equal(raw.t, _day("2024-01-01", "2024-01-02") * 2)
    assert raw.levels.tolist() == [1.5, 2.5, 1.0, 3.0]
    assert raw.features[:, 0].tolist() == [20, 10, 5, 30]


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
