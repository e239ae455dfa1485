"""The one CSV reader (a user's file: one series, or many in long format), and the generate
stage's long table (``id, t, value, signal``, features as ``feature:<name>``), written and read
back in blocks so a large dataset is never held as a DataFrame.

Without an id column a file is a panel of one id. Rows are grouped by id (in order of first
appearance) and sorted by time inside each id; the time column is read with ONE format for the
whole file; empty cells follow ``missing`` inside each id, from the past only. Error messages
name the settings by role (``<time_column>``: errors.SettingError), which the stages and the
forecast command re-word as their params keys or flags.
"""
from __future__ import annotations

import re
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

from ..errors import DataError

FEATURE_PREFIX = "feature:"


def _first(mask) -> int:
    return int(np.flatnonzero(np.asarray(mask))[0])


def _guess_formats(sample: str) -> list[str]:
    """strftime formats pandas infers for one value, month-first and day-first."""
    from pandas.tseries.api import guess_datetime_format
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        found = [guess_datetime_format(sample, dayfirst=d) for d in (False, True)]
    out = [f for f in dict.fromkeys(found) if f]
    # year-first dates are never day-before-month (2024-01-03 is not 1 March)
    return [f for f in out if not f.startswith("%Y-%d") and not f.startswith("%Y/%d")]


# calendars written as periods, read as each period's first day: (what a value looks like,
# how it reads, the reading in words)
PERIODS = (
    (re.compile(r"^\d{4}[-\s]?[Qq][1-4]$"), "quarter",
     "quarters (2020Q1, 2020-Q1: each quarter's first day)"),
    (re.compile(r"^\d{4}-?W\d{2}$"), "week", "ISO weeks (2020-W05: each week's Monday)"),
    (re.compile(r"^\d{4}[/.]\d{1,2}$"), "month", "year and month (1990/01: each month's "
     "first day)"),
)
YEARS = (1000, 2999)    # integral numbers in this range, a year apart: years


def _years(values: pd.Series) -> bool:
    """Whether numbers are years: integral, four digits, mostly one apart (1700, 1701.0 ...
    as statsmodels and spreadsheets write them), not step numbers."""
    v = values.to_numpy(dtype=np.float64)
    if len(v) < 2 or not np.all(v == np.round(v)) or not np.all((v >= YEARS[0])
                                                                 & (v <= YEARS[1])):
        return False
    d = np.diff(np.sort(v))
    return bool(np.median(d[d > 0]) == 1) if (d > 0).any() else False


def _period_dates(text: pd.Series, kind: str) -> pd.Series:
    if kind == "quarter":
        compact = text.str.replace(r"[-\s]", "", regex=True).str.upper()
        return pd.Series(pd.PeriodIndex(compact, freq="Q").to_timestamp(), index=text.index)
    if kind == "week":
        iso = text.str.replace(r"^(\d{4})-?W", r"\1-W", regex=True) + "-1"
        return pd.to_datetime(iso, format="%G-W%V-%u")
    return pd.to_datetime(text.str.replace(".", "/", regex=False), format="%Y/%m")


def time_reading(text: pd.Series, fmt: str = "auto") -> str:
    """How :func:`parse_times` reads a time column, in words (for the stages' lines)."""
    if fmt != "auto":
        return f"dates in the format {fmt!r}"
    as_num = pd.to_numeric(text, errors="coerce")
    if as_num.notna().all():
        return ("years (integral numbers a year apart, each year's 1 January)"
                if _years(as_num) else "step numbers (no calendar)")
    first = text.iloc[0] if len(text) else ""
    for pattern, _, words in PERIODS:
        if pattern.match(first):
            return words
    formats = _guess_formats(first)
    return f"dates in the format {formats[0]!r}" if formats else "dates"


def parse_times(text: pd.Series, fmt: str, where: str, column: str) -> pd.Series:
    """The time column as numbers, or as dates read with ONE format for every row: ``auto``
    (numbers stay numbers, but years, integral four-digit numbers a year apart, are read as
    each year's 1 January; periods such as 2020Q1, 2020-W05 and 1990/01 as each period's
    first day; dates take the format inferred from the first value, which must read every row
    and not be ambiguous between day-first and month-first) or a strftime format. Never a
    per-row (mixed-format) parse."""
    if fmt == "auto":
        as_num = pd.to_numeric(text, errors="coerce")
        if as_num.notna().all():
            if _years(as_num):
                return pd.to_datetime(as_num.round().astype(np.int64).astype(str),
                                      format="%Y")
            return as_num
        for pattern, kind, words in PERIODS:
            if pattern.match(text.iloc[0]):
                bad = ~text.str.match(pattern)
                if bad.any():
                    i = _first(bad)
                    raise DataError(f"{where}: time column {column!r} value {text.iloc[i]!r} "
                                    f"on line {text.index[i] + 2} is not of the form of line 2 "
                                    f"({text.iloc[0]!r}: {words}); every row must use one "
                                    "form")
                return _period_dates(text, kind)
        formats = _guess_formats(text.iloc[0])
        if not formats:
            i = _first(as_num.isna())
            raise DataError(f"{where}: time column {column!r} value {text.iloc[i]!r} on line "
                            f"{text.index[i] + 2} is neither a number nor a date in a format "
                            "that can be inferred; set <time_format> (e.g. '%d/%m/%Y %H:%M')")
    else:
        formats = [fmt]
    # times with UTC offsets (a daylight-saving change gives two) are read as UTC
    parsed = {f: pd.to_datetime(text, format=f, errors="coerce", utc="%z" in f)
              for f in formats}
    full = {f: v for f, v in parsed.items() if v.notna().all()}
    if not full:
        f, v = max(parsed.items(), key=lambda kv: int(kv[1].notna().sum()))
        i = _first(v.isna())
        how = f"does not match <time_format> {fmt!r}" if fmt != "auto" else \
            f"does not match the format {f!r} inferred from line 2 ({text.iloc[0]!r})"
        raise DataError(f"{where}: time column {column!r} value {text.iloc[i]!r} on line "
                        f"{text.index[i] + 2} {how}; every row must use one format: fix the "
                        f"file or set <time_format> to a strftime format")
    if len(full) > 1:
        (f1, v1), (f2, v2) = list(full.items())[:2]
        if not v1.equals(v2):
            i = _first(v1 != v2)
            raise DataError(f"{where}: time column {column!r} is ambiguous: {text.iloc[i]!r} "
                            f"(line {text.index[i] + 2}) reads as {v1.iloc[i]:%Y-%m-%d} with "
                            f"{f1!r} and as {v2.iloc[i]:%Y-%m-%d} with {f2!r}; "
                            "set <time_format> to the "
                            "one the file uses")
    out = next(iter(full.values()))
    if out.dt.tz is not None:
        out = out.dt.tz_convert("UTC").dt.tz_localize(None)
    return out


def _numbers(text: pd.Series, column: str, decimal: str, thousands: str, where: str,
             missing: str = "error") -> np.ndarray:
    """Numbers from text cells in the file's dialect; empty cells become NaN (``missing``:
    how they are then treated, named in the hint only where it would help)."""
    clean = text.str.replace(thousands, "", regex=False) if thousands else text
    if decimal != ".":
        clean = clean.str.replace(decimal, ".", regex=False)
    empty = text == ""
    values = pd.to_numeric(clean.where(~empty), errors="coerce").to_numpy(np.float64)
    bad = np.isnan(values) & ~empty.to_numpy()
    if bad.any():
        i = _first(bad)
        hint = (" (a decimal comma or thousands separator? set <decimal> or "
                "<thousands>)" if re.fullmatch(r"[+-]?[\d.,\s']+", text.iloc[i])
                else "; a cell holds a number, or nothing where the value is missing"
                + (" (then set <missing> to ffill or drop)" if missing == "error" else
                   f": empty this cell, and <missing> ({missing}) handles it"))
        raise DataError(f"{where}: column {column!r} has a non-numeric value "
                        f"{text.iloc[i]!r} on line {text.index[i] + 2}{hint}")
    if np.isinf(values).any():
        raise DataError(f"{where}: column {column!r} has an infinite value on line "
                        f"{text.index[_first(np.isinf(values))] + 2}")
    return values


def _separator_hint(columns: list[str]) -> str:
    header = ",".join(columns)
    for sep, name in ((";", "';'"), ("\t", "'\\t' (a tab)"), ("|", "'|'")):
        if sep in header:
            return f"; the header looks separated by {name}: set <sep> to {name}"
    return ""


def _fill(frame: pd.DataFrame, cols: dict, missing: str, path: Path, ids: np.ndarray
          ) -> pd.DataFrame:
    """Empty cells, from the past only (never a later value, which could be a window's own
    target): ``ffill`` carries the id's last value forward, ``drop`` removes the rows (a row
    with any empty cell), ``error`` refuses. An id's leading empty cells are refused."""
    empty = frame["empty"].to_numpy()
    if not empty.any():
        return frame
    r = frame.iloc[_first(empty)]
    name = next(c for out, c in cols.items() if np.isnan(r[out]))
    of = f" (id {ids[r['code']]!r})" if len(ids) > 1 else ""
    if missing == "error":
        raise DataError(f"{path} has {int(empty.sum())} row(s) with an empty cell, the first "
                        f"in column {name!r} on line {r['line']}{of}; set <missing> to "
                        "ffill or drop to accept them")
    if missing == "drop":
        kept = np.unique(frame["code"].to_numpy()[~empty])
        gone = [ids[c] for c in np.unique(frame["code"].to_numpy()) if c not in kept]
        if gone and len(kept):   # dropping every row of an id would lose it without a word
            raise DataError(f"{path}: id {gone[0]!r} has no row without an empty cell"
                            + (f" (and {len(gone) - 1} more id(s))" if len(gone) > 1 else "")
                            + "; <missing> drop removes rows, not whole series: remove its "
                            "rows from the file or fill them")
        return frame[~empty].reset_index(drop=True)
    for out, name in cols.items():
        frame[out] = frame.groupby("code")[out].ffill()
        lead = frame[out].isna().to_numpy()
        if lead.any():
            r = frame.iloc[_first(lead)]
            raise DataError(f"{path}: column {name!r} starts with empty cells on line "
                            f"{r['line']}{of}, with no earlier value to carry forward; remove "
                            f"them or set <missing> to drop")
    return frame


def read_table(path: str | Path, column: str, *, time_column: str = "", id_column: str = "",
               missing: str = "error", time_format: str = "auto", sep: str = ",",
               decimal: str = ".", thousands: str = "", features: list[str] = (),
               default_id: str = "series") -> pd.DataFrame:
    """A user's CSV as ``id, t, value, signal`` (and ``feature:<name>`` columns), grouped by id
    and sorted by time inside each. Without ``id_column`` every row is series ``default_id``;
    without ``time_column`` the rows keep the file's order, numbered 0, 1, ..."""
    path = Path(path)
    if not path.is_file():
        raise DataError(f"<path>: file not found: {path}")
    try:  # blank lines are empty cells of a one-column file, not lines to skip
        raw = pd.read_csv(path, sep=sep, dtype=str, keep_default_na=False,
                          skip_blank_lines=False, engine="c")
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as err:
        first = str(err).strip().splitlines()[0] if str(err).strip() else "empty file"
        raise DataError(f"{path}: not a readable CSV file ({first})") from None
    raw.columns = [str(c).strip() for c in raw.columns]
    if raw.shape[1] > 1:  # a blank line of a file of several columns is no row at all; the
        raw = raw[(raw != "").any(axis=1)]     # index keeps each row's line (index + 2)
    wanted = [("column", column), ("time_column", time_column), ("id_column", id_column),
              *(("features", f) for f in features)]
    for role, name in wanted:
        if name and name not in raw.columns:
            have = ", ".join(map(str, raw.columns)) or "none"
            raise DataError(f"<{role}>: column {name!r} not in {path} (columns: {have})"
                            + _separator_hint(list(raw.columns)))
    if id_column and not time_column:
        raise DataError(f"<time_column> must name the time column of a file with "
                        f"<id_column> ({path} holds many series, and rows alone do "
                        "not order them)")
    if id_column:
        id_text = raw[id_column].str.strip()
        if (id_text == "").any():
            raise DataError(f"{path}: id column {id_column!r} is empty on line "
                            f"{id_text.index[_first(id_text == '')] + 2}")
        codes, ids = pd.factorize(id_text, sort=False)
        ids = np.asarray(ids, dtype=object)
    else:
        codes, ids = np.zeros(len(raw), dtype=np.int64), np.array([default_id], dtype=object)
    frame = pd.DataFrame({"code": codes, "line": raw.index.to_numpy() + 2})
    frame["key"] = parse_times(raw[time_column].str.strip(), time_format, str(path),
                               time_column).to_numpy() if time_column \
        else np.arange(len(raw), dtype=np.float64)
    cols = {"value": column, **{FEATURE_PREFIX + f: f for f in features}}
    empty = np.zeros(len(raw), dtype=bool)
    for out, name in cols.items():
        text = raw[name].str.strip()
        frame[out] = _numbers(text, name, decimal, thousands, str(path), missing)
        empty |= (text == "").to_numpy()
    frame["empty"] = empty
    frame = frame.sort_values(["code", "key"], kind="stable").reset_index(drop=True)
    dup = frame.duplicated(["code", "key"], keep=False).to_numpy()
    if dup.any():
        r = frame.iloc[_first(dup)]
        of = f"id {ids[r['code']]!r} has " if id_column else "has "
        raise DataError(f"{path}: time column {time_column!r} {of}the time "
                        f"{raw[time_column].loc[r['line'] - 2].strip()!r} twice (line "
                        f"{r['line']}); each time must appear once")
    frame = _fill(frame, cols, missing, path, ids)
    if not len(frame) or np.isnan(frame["value"].to_numpy()).all():
        raise DataError(f"{path}: column {column!r} holds no values")
    out = pd.DataFrame({"id": ids[frame["code"].to_numpy()], "t": frame["key"].to_numpy(),
                        "value": frame["value"].to_numpy(np.float64), "signal": np.nan})
    for name in cols:
        if name != "value":
            out[name] = frame[name].to_numpy(np.float64)
    if time_column:     # how the time column was read, for the stages' lines
        out.attrs["time_reading"] = time_reading(raw[time_column].str.strip(), time_format)
    return out
