"""Unit tests for attn_forecast.data.frequency: regular time steps and a forecast's times."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from attn_forecast.data import sources
from attn_forecast.errors import naming
from attn_forecast.setup.keys import PARAMS_KEYS
from attn_forecast.config.schema import DataParams
from attn_forecast.data.frequency import check_regular
from attn_forecast.errors import DataError
from attn_forecast.data.frequency import next_times
from unit.data.helpers import FLAGS, _csv



def _regular(t, lengths=None, ids=None, keys=PARAMS_KEYS) -> str | None:
    """check_regular on series of ``lengths`` laid one after the other in ``t`` (its note of
    calendar gaps, if any)."""
    t = np.asarray(t)
    lengths = [len(t)] if lengths is None else lengths
    ids = np.array(ids or [f"s{i}" for i in range(len(lengths))], dtype=object)
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    with naming(keys):
        return check_regular(ids, offsets, t, "f.csv")


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


def test_the_generate_stage_checks_gaps_unless_allowed(tmp_path):
    from attn_forecast.pipeline import generate
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


# ---------------------------------------------------------------- time stamps of the forecast
def test_next_times_continue_numbers_by_the_usual_step():
    assert next_times(np.array([0.0, 1.0, 2.0, 3.0]), 3).tolist() == [4.0, 5.0, 6.0]
    assert next_times(np.array([10, 20, 30, 50, 60]), 2).tolist() == [70, 80]
    assert next_times(np.array([7.0]), 2).tolist() == [8.0, 9.0]


@pytest.mark.parametrize("stamps, expected", [
    (["2024-01-29", "2024-01-30", "2024-01-31"], ["2024-02-01", "2024-02-02"]),
    (["2024-01-31", "2024-02-29", "2024-03-31", "2024-04-30"], ["2024-05-31", "2024-06-30"]),
    # business days with a holiday (Jan 1) left out continue as business days
    (["2023-12-28", "2023-12-29", "2024-01-02", "2024-01-03", "2024-01-04", "2024-01-05"],
     ["2024-01-08", "2024-01-09"]),
    (["2024-03-01T22:00:00", "2024-03-01T23:00:00", "2024-03-02T00:00:00"],
     ["2024-03-02T01:00:00", "2024-03-02T02:00:00"]),
])
def test_next_times_continue_dates_at_their_frequency(stamps, expected):
    assert next_times(np.array(stamps, dtype=object), 2).tolist() == expected
    assert next_times(np.array(stamps, dtype="datetime64[s]"), 2).tolist() == expected
