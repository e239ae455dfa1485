"""Unit tests for attn_forecast.data.long_table: the long table reads back bit for bit."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from attn_forecast.data import sources
from attn_forecast.errors import UserInputError
from attn_forecast.data.csv import FEATURE_PREFIX
from attn_forecast.data.long_table import read_long, write_long
from unit.data.helpers import _csv, _day, _read, _same


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
    assert _same(raw.y, whole["value"].to_numpy(np.float64))
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
    assert np.signbit(raw.y[2]) and raw.y[3] == 5e-324
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
    assert raw.y.tolist() == [1.5, 2.5, 1.0, 3.0]
    assert raw.features[:, 0].tolist() == [20, 10, 5, 30]
