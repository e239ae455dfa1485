"""Unit tests of the data's one CSV reader (``csv.read_table``): a file of one series is a
panel of one id; a long file is grouped by id and sorted by time within each; a time twice;
one time format per file; values and dialects; errors that name the settings' keys. (Its empty
cells: test_csv_missing.py.)

Every expected value is worked out by hand, with numpy or with pandas, never taken from the
code under test.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from attn_forecast.data import sources
from attn_forecast.errors import UserInputError, naming
from attn_forecast.setup.keys import PARAMS_KEYS
from attn_forecast.data.csv import FEATURE_PREFIX, read_table
from attn_forecast.errors import DataError
from unit.data.helpers import FLAGS, _csv, _day, _read


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


# ---------------------------------------------------------------- values and dialects
@pytest.mark.parametrize("bad", ["abc", "nan", "1,5"])
def test_a_non_numeric_value_names_its_line(tmp_path, bad):
    with pytest.raises(DataError) as info:
        _read(_csv(tmp_path, f'value\n1\n2\n"{bad}"\n4\n'), "value")
    assert "line 4" in str(info.value) and repr(bad) in str(info.value)


@pytest.mark.parametrize("missing", ["error", "ffill", "drop"])
def test_the_hint_for_a_word_in_a_value_column_fits_the_missing_setting(tmp_path, missing):
    with pytest.raises(DataError) as info:
        _read(_csv(tmp_path, "value\n1\nn/a\n3\n"), "value", missing=missing)
    msg = str(info.value)
    if missing == "error":
        assert msg.endswith("(then set data.missing to ffill or drop)")
    else:
        assert msg.endswith(f"empty this cell, and data.missing ({missing}) handles it")


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


# ---------------------------------------------------------------- calendars written as periods
@pytest.mark.parametrize("column,first,second,words", [
    (["1700", "1701", "1702"], "1700-01-01", "1701-01-01", "years"),
    (["1700.0", "1701.0", "1702.0"], "1700-01-01", "1701-01-01", "years"),
    (["2020Q4", "2021Q1", "2021Q2"], "2020-10-01", "2021-01-01", "quarters"),
    (["2020-Q4", "2021-Q1", "2021-Q2"], "2020-10-01", "2021-01-01", "quarters"),
    (["2020 q4", "2021 q1", "2021 q2"], "2020-10-01", "2021-01-01", "quarters"),
    (["2020-W53", "2021-W01", "2021-W02"], "2020-12-28", "2021-01-04", "ISO weeks"),
    (["1990/11", "1990/12", "1991/01"], "1990-11-01", "1990-12-01", "year and month"),
    (["1990-11", "1990-12", "1991-01"], "1990-11-01", "1990-12-01", "dates in the format"),
])
def test_a_calendar_written_as_periods_reads_as_their_first_days(tmp_path, column, first,
                                                                  second, words):
    """Years as numbers (statsmodels' and spreadsheets' 1700.0), quarters, ISO weeks and
    months are a calendar (each period's first day; a week's Monday), and the reading is
    said in words."""
    from attn_forecast.data.csv import time_reading
    path = _csv(tmp_path, "t,v\n" + "".join(f"{c},{k}\n" for k, c in enumerate(column)))
    got = _read(path, "v", time_column="t")
    assert [str(x)[:10] for x in got["t"][:2]] == [first, second]
    assert got.attrs["time_reading"].startswith(words)
    assert time_reading(pd.Series(column)).startswith(words)


@pytest.mark.parametrize("column", [["0", "1", "2"], ["1990", "1995", "2000"],
                                    ["3000", "3001", "3002"], ["1990.5", "1991.5", "1992.5"]])
def test_numbers_that_are_not_years_stay_step_numbers(tmp_path, column):
    path = _csv(tmp_path, "t,v\n" + "".join(f"{c},{k}\n" for k, c in enumerate(column)))
    got = _read(path, "v", time_column="t")
    assert got["t"].dtype.kind in "iuf" and got.attrs["time_reading"].startswith("step numbers")


def test_a_period_column_of_two_forms_names_the_line(tmp_path):
    path = _csv(tmp_path, "t,v\n2020Q1,1\n2020-04,2\n")
    with pytest.raises(DataError, match=r"value '2020-04' on line 3 is not of the form of line "
                                        r"2 \('2020Q1': quarters"):
        _read(path, "v", time_column="t")
