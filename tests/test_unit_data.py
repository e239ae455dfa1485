"""Unit tests for attn_forecast.data: synthetic series and CSV reading."""
from __future__ import annotations

import numpy as np
import pytest

from attn_forecast.data import (
    DataError, check_inside, load_series, random_walk, read_csv_series, seasonal, sine,
)
from attn_forecast.errors import UserInputError
from attn_forecast.params import DataParams


@pytest.fixture
def global_rng_restored():
    state = np.random.get_state()
    yield
    np.random.set_state(state)


# ---------------------------------------------------------------- synthetic
@pytest.mark.parametrize("n,noise,seed", [(300, 0.15, 42), (57, 0.4, 7)])
def test_sine_is_the_source_series(global_rng_restored, n, noise, seed):
    # the source: x = linspace(0, 4 pi, n); np.random.seed(seed); sin(x) + normal(scale)
    np.random.seed(seed)
    expected = np.sin(np.linspace(0, 4 * np.pi, n)) + np.random.normal(scale=noise, size=n)
    df = sine(n, noise, seed)
    assert list(df.columns) == ["t", "value", "signal"]
    assert np.array_equal(df["value"].to_numpy(), expected)
    assert np.array_equal(df["signal"].to_numpy(), np.sin(np.linspace(0, 4 * np.pi, n)))
    assert np.array_equal(df["t"].to_numpy(), np.arange(n))


def test_sine_does_not_touch_global_rng(global_rng_restored):
    np.random.seed(1)
    before = np.random.get_state()[1].copy()
    sine(50, 0.1, 3)
    assert np.array_equal(np.random.get_state()[1], before)


def test_seasonal_shape_and_components():
    p = DataParams(kind="seasonal", n_points=600)
    df = seasonal(p)
    assert df.shape == (600, 3) and list(df.columns) == ["t", "value", "signal"]
    noise = df["value"] - df["signal"]
    assert abs(noise.std() - p.noise_std) < 0.02
    assert abs(noise.mean()) < 0.03
    # noise-free: value is the signal
    clean = seasonal(DataParams(kind="seasonal", n_points=200, noise_std=0.0))
    assert np.array_equal(clean["value"], clean["signal"])
    # only the trend: a straight line through 0 with slope trend
    line = seasonal(DataParams(kind="seasonal", n_points=100, noise_std=0.0, amplitude1=0.0,
                               amplitude2=0.0, trend=0.5))
    assert np.allclose(line["value"], 0.5 * np.arange(100), atol=1e-12)
    # one component without trend repeats after its period
    per = seasonal(DataParams(kind="seasonal", n_points=300, noise_std=0.0, trend=0.0,
                              amplitude2=0.0, period1=50.0))["value"].to_numpy()
    assert np.allclose(per[50:], per[:-50], atol=1e-9)
    assert per.max() == pytest.approx(np.sin(2 * np.pi * 12 / 50), abs=1e-12)
    # same seed same values, another seed other values
    assert np.array_equal(seasonal(p)["value"], df["value"])
    assert not np.array_equal(seasonal(DataParams(kind="seasonal", n_points=600,
                                                  seed=1))["value"], df["value"])


def test_random_walk_shape_and_properties():
    p = DataParams(kind="random_walk", n_points=5000)
    df = random_walk(p)
    v = df["value"].to_numpy()
    assert df.shape == (5000, 3)
    assert (v > 0).all()
    assert v[0] == pytest.approx(p.start_price)
    assert df["signal"].isna().all()
    r = np.diff(np.log(v))
    assert abs(r.std() - p.volatility) < 0.001
    assert abs(r.mean() - (p.drift - p.volatility ** 2 / 2)) < 0.0005
    assert np.array_equal(random_walk(p)["value"], v)
    assert not np.array_equal(random_walk(DataParams(kind="random_walk", n_points=5000,
                                                     seed=43))["value"], v)
    flat = random_walk(DataParams(kind="random_walk", n_points=20, volatility=0.0,
                                  drift=0.01, start_price=10.0))["value"].to_numpy()
    assert np.allclose(flat, 10.0 * np.exp(0.01 * np.arange(20)), rtol=1e-12)


def test_load_series_dispatch(tmp_path):
    assert np.array_equal(load_series(DataParams())["value"], sine(300, 0.15, 42)["value"])
    f = tmp_path / "s.csv"
    f.write_text("close\n1\n2\n3\n")
    df = load_series(DataParams(kind="csv", csv_path=str(f), csv_column="close"))
    assert df["value"].tolist() == [1.0, 2.0, 3.0]


# ---------------------------------------------------------------- CSV
def _csv(tmp_path, text, name="s.csv"):
    f = tmp_path / name
    f.write_text(text)
    return f


def test_csv_sorted_by_date_column(tmp_path):
    f = _csv(tmp_path, "date,value,other\n2024-01-03,3.5,x\n2024-01-01,1,y\n"
                       "2024-01-02, 2 ,z\n2023-12-31,0,w\n")
    df = read_csv_series(f, "value", "date")
    assert df["value"].tolist() == [0.0, 1.0, 2.0, 3.5]
    assert df["t"].tolist() == ["2023-12-31", "2024-01-01", "2024-01-02", "2024-01-03"]
    assert df["signal"].isna().all()


def test_csv_numeric_time_sorted_as_numbers(tmp_path):
    f = _csv(tmp_path, "step,value\n10,1\n9,2\n100,3\n")
    df = read_csv_series(f, "value", "step")
    assert df["value"].tolist() == [2.0, 1.0, 3.0]  # 9 < 10 < 100, not '10' < '100' < '9'


def test_csv_without_time_column_keeps_file_order(tmp_path):
    f = _csv(tmp_path, "value\n3\n1\n2\n")
    df = read_csv_series(f, "value")
    assert df["value"].tolist() == [3.0, 1.0, 2.0]
    assert df["t"].tolist() == [0, 1, 2]


@pytest.mark.parametrize("text", ["date,value\n2024-01-03,3\n2024-01-01,1\n2024-01-03,2\n",
                                  "date,value\n2024-01-01,3\n2024-01-01 00:00,1\n"])
def test_csv_duplicate_times_rejected(tmp_path, text):
    with pytest.raises(DataError, match="duplicate"):
        read_csv_series(_csv(tmp_path, text), "value", "date")


def test_csv_missing_column_lists_columns(tmp_path):
    f = _csv(tmp_path, "date,close,volume\n1,2,3\n")
    with pytest.raises(DataError) as info:
        read_csv_series(f, "value")
    msg = str(info.value)
    assert "'value'" in msg and "date" in msg and "close" in msg and "volume" in msg
    with pytest.raises(DataError, match="csv_time_column"):
        read_csv_series(f, "close", "when")


@pytest.mark.parametrize("bad", ["abc", "nan", "1,5"])
def test_csv_non_numeric_value_names_line(tmp_path, bad):
    f = _csv(tmp_path, f'value\n1\n2\n"{bad}"\n4\n')
    with pytest.raises(DataError) as info:
        read_csv_series(f, "value")
    assert "line 4" in str(info.value) and bad in str(info.value)


@pytest.mark.parametrize("bad", ["inf", "-inf", "Infinity", "1e400"])
def test_csv_infinite_rejected(tmp_path, bad):
    f = _csv(tmp_path, f"value\n1\n{bad}\n3\n")
    with pytest.raises(DataError, match="infinite") as info:
        read_csv_series(f, "value")
    assert "line 3" in str(info.value)


EMPTY = "d,value\n3,\n1,1\n2,\n4,7\n5,\n"  # sorted by d: 1, '', '', 7, ''


def test_csv_empty_cells_error(tmp_path):
    with pytest.raises(DataError) as info:
        read_csv_series(_csv(tmp_path, EMPTY), "value", "d", missing="error")
    msg = str(info.value)
    assert "3 empty" in msg and "ffill" in msg and "drop" in msg


def test_csv_empty_cells_drop(tmp_path):
    df = read_csv_series(_csv(tmp_path, EMPTY), "value", "d", missing="drop")
    assert df["value"].tolist() == [1.0, 7.0]
    assert df["t"].tolist() == [1, 4]  # a numeric time column stays numeric


def test_csv_empty_cells_carried_forward(tmp_path):
    df = read_csv_series(_csv(tmp_path, EMPTY), "value", "d", missing="ffill")
    # sorted: 1, '', '', 7, '': each gap holds the last value before it
    assert df["value"].tolist() == [1.0, 1.0, 1.0, 7.0, 7.0]
    # leading gaps have no past value: refused, naming the rows and the key
    with pytest.raises(DataError, match=r"first 2 sorted row\(s\) are empty.*data.missing"):
        read_csv_series(_csv(tmp_path, "value,x\n,a\n,b\n4,c\n6,d\n", "lead.csv"),
                        "value", missing="ffill")


def test_filled_values_depend_on_the_past_only(tmp_path):
    """No filled value may change when a later observation changes: so no input of a window
    depends on a value at or after its first target."""
    rng = np.random.default_rng(3)
    n = 60
    base = rng.normal(size=n).round(3)
    gaps = {5, 6, 17, 30, 31, 32, 45, 59}
    def filled(values):
        cells = ["" if i in gaps else f"{v}" for i, v in enumerate(values)]
        f = _csv(tmp_path, "value\n" + "\n".join(cells) + "\n", "g.csv")
        return read_csv_series(f, "value", missing="ffill")["value"].to_numpy()
    ref = filled(base)
    assert not np.isnan(ref).any()
    for j in range(1, n):
        later = base.copy()
        later[j:] = 1e6  # every observation from j on, poisoned
        assert np.array_equal(filled(later)[:j], ref[:j]), j



def test_one_column_csv_empty_cell_is_an_error(tmp_path):
    with pytest.raises(DataError, match="empty"):
        read_csv_series(_csv(tmp_path, "value\n1\n\n3\n"), "value", missing="error")


def test_one_column_csv_empty_cell_carried_forward(tmp_path):
    df = read_csv_series(_csv(tmp_path, "value\n1\n\n3\n"), "value", missing="ffill")
    assert df["value"].tolist() == [1.0, 1.0, 3.0]


def test_one_column_csv_line_number_after_empty_cell(tmp_path):
    # line 1 header, 2 '1', 3 empty, 4 'abc'
    with pytest.raises(DataError, match="line 4"):
        read_csv_series(_csv(tmp_path, "value\n1\n\nabc\n"), "value", missing="drop")


def test_csv_all_empty_is_an_error(tmp_path):
    f = _csv(tmp_path, "value,x\n,1\n,2\n")
    for missing in ("drop", "ffill"):
        with pytest.raises(DataError, match="no values"):
            read_csv_series(f, "value", missing=missing)


def test_csv_missing_file_and_bad_time(tmp_path):
    with pytest.raises(DataError, match="not found"):
        read_csv_series(tmp_path / "nope.csv", "value")
    f = _csv(tmp_path, "date,value\n2024-01-01,1\nyesterday,2\n")
    with pytest.raises(DataError, match="line 3"):
        read_csv_series(f, "value", "date")
    assert issubclass(DataError, UserInputError)


def test_check_inside(tmp_path, monkeypatch):
    folder = tmp_path / "data" / "external"
    (folder / "sub").mkdir(parents=True)
    check_inside(folder / "prices.csv", folder)
    check_inside(folder / "sub" / "p.csv", folder)
    monkeypatch.chdir(tmp_path)
    check_inside("data/external/prices.csv", "data/external")
    for bad in ("prices.csv", "data/externalx/p.csv", "data/external/../p.csv",
                str(tmp_path / "elsewhere" / "p.csv")):
        with pytest.raises(DataError, match="data.csv_path") as info:
            check_inside(bad, "data/external")
        assert "\n" not in str(info.value)


# ---------------------------------------------------------------- dates and dialects
DAY_FIRST = "date,close\n" + "".join(f"{d:02d}/01/2022,{100 + d}\n" for d in range(3, 14))


def test_day_first_dates_read_with_one_format(tmp_path):
    # 03/01 .. 12/01 alone would read month first; 13/01 settles it for the whole column
    df = read_csv_series(_csv(tmp_path, DAY_FIRST), "close", "date")
    assert df["t"].tolist() == [f"2022-01-{d:02d}" for d in range(3, 14)]
    assert df["value"].tolist() == [100.0 + d for d in range(3, 14)]


def test_ambiguous_day_month_order_is_an_error_naming_the_key(tmp_path):
    text = "date,close\n" + "".join(f"{d:02d}/01/2022,{d}\n" for d in range(3, 12))
    with pytest.raises(DataError) as info:
        read_csv_series(_csv(tmp_path, text), "close", "date")
    msg = str(info.value)
    assert "ambiguous" in msg and "data.csv_time_format" in msg and "'date'" in msg
    assert "line 2" in msg and "\n" not in msg
    df = read_csv_series(_csv(tmp_path, text), "close", "date", time_format="%d/%m/%Y")
    assert df["t"].iloc[0] == "2022-01-03" and df["t"].iloc[-1] == "2022-01-11"
    df = read_csv_series(_csv(tmp_path, text), "close", "date", time_format="%m/%d/%Y")
    assert df["t"].iloc[0] == "2022-03-01"


def test_mixed_formats_are_refused_never_parsed_row_by_row(tmp_path):
    text = "date,close\n2022-01-03,1\n2022-01-04,2\n05/01/2022,3\n"
    with pytest.raises(DataError) as info:
        read_csv_series(_csv(tmp_path, text), "close", "date")
    msg = str(info.value)
    assert "'05/01/2022'" in msg and "line 4" in msg and "data.csv_time_format" in msg


def test_explicit_time_format_must_match_every_row(tmp_path):
    with pytest.raises(DataError, match=r"line 2 does not match data.csv_time_format"):
        read_csv_series(_csv(tmp_path, DAY_FIRST), "close", "date", time_format="%Y-%m-%d")


def test_iso_dates_with_times_are_not_read_day_first(tmp_path):
    text = "when,v\n2024-02-01 10:00,1\n2024-01-02 09:30,2\n"
    df = read_csv_series(_csv(tmp_path, text), "v", "when")
    assert df["t"].tolist() == ["2024-01-02T09:30:00", "2024-02-01T10:00:00"]
    assert df["value"].tolist() == [2.0, 1.0]


def test_semicolon_decimal_comma_and_thousands(tmp_path):
    text = "date;close\n2022-01-04;2.003,60\n2022-01-03;1.234,5\n"
    f = _csv(tmp_path, text)
    df = read_csv_series(f, "close", "date", sep=";", decimal=",", thousands=".")
    assert df["value"].tolist() == [1234.5, 2003.6]
    # without the separator: the missing column's message says which separator to set
    with pytest.raises(DataError, match=r"data.csv_sep to ';'"):
        read_csv_series(f, "close", "date")
    # without the decimal settings: the bad value's message points at them
    with pytest.raises(DataError, match=r"data.csv_decimal or data.csv_thousands"):
        read_csv_series(f, "close", "date", sep=";")
    us = _csv(tmp_path, 'close\n"2,003.60"\n"1,234.50"\n', "us.csv")
    assert read_csv_series(us, "close", thousands=",")["value"].tolist() == [2003.6, 1234.5]


def test_tab_separated_header_hint(tmp_path):
    f = _csv(tmp_path, "date\tclose\n2022-01-03\t1\n")
    with pytest.raises(DataError, match=r"tab"):
        read_csv_series(f, "close", "date")
    assert read_csv_series(f, "close", "date", sep="\t")["value"].tolist() == [1.0]
