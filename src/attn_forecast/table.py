"""The one CSV reader (a user's file: one series, or many in long format), and the generate
stage's long table (``id, t, value, signal``, features as ``feature:<name>``), written and read
back in blocks so a large dataset is never held as a DataFrame.

Without an id column a file is a panel of one id. Rows are grouped by id (in order of first
appearance) and sorted by time inside each id; the time column is read with ONE format for the
whole file; empty cells follow ``missing`` inside each id, from the past only. Error messages
name the settings through ``keys`` (params keys for the stages, flags for the forecast
command): ``path, column, time_column, time_format, sep, decimal, thousands, missing,
features, id_column, time_gaps``.
"""
from __future__ import annotations

import re
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

from .errors import UserInputError
from .io import atomic_path

FEATURE_PREFIX = "feature:"


class DataError(UserInputError):
    """The input data cannot be used as it is."""


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


def parse_times(text: pd.Series, fmt: str, where: str, column: str, key: str) -> pd.Series:
    """The time column as numbers, or as dates read with ONE format for every row: ``auto``
    (numbers stay numbers; dates take the format inferred from the first value, which must
    read every row and not be ambiguous between day-first and month-first) or a strftime
    format. Never a per-row (mixed-format) parse."""
    if fmt == "auto":
        as_num = pd.to_numeric(text, errors="coerce")
        if as_num.notna().all():
            return as_num
        formats = _guess_formats(text.iloc[0])
        if not formats:
            i = _first(as_num.isna())
            raise DataError(f"{where}: time column {column!r} value {text.iloc[i]!r} on line "
                            f"{text.index[i] + 2} is neither a number nor a date in a format "
                            f"that can be inferred; set {key} (e.g. '%d/%m/%Y %H:%M')")
    else:
        formats = [fmt]
    # times with UTC offsets (a daylight-saving change gives two) are read as UTC
    parsed = {f: pd.to_datetime(text, format=f, errors="coerce", utc="%z" in f)
              for f in formats}
    full = {f: v for f, v in parsed.items() if v.notna().all()}
    if not full:
        f, v = max(parsed.items(), key=lambda kv: int(kv[1].notna().sum()))
        i = _first(v.isna())
        how = f"does not match {key} {fmt!r}" if fmt != "auto" else \
            f"does not match the format {f!r} inferred from line 2 ({text.iloc[0]!r})"
        raise DataError(f"{where}: time column {column!r} value {text.iloc[i]!r} on line "
                        f"{text.index[i] + 2} {how}; every row must use one format: fix the "
                        f"file or set {key} to a strftime format")
    if len(full) > 1:
        (f1, v1), (f2, v2) = list(full.items())[:2]
        if not v1.equals(v2):
            i = _first(v1 != v2)
            raise DataError(f"{where}: time column {column!r} is ambiguous: {text.iloc[i]!r} "
                            f"(line {text.index[i] + 2}) reads as {v1.iloc[i]:%Y-%m-%d} with "
                            f"{f1!r} and as {v2.iloc[i]:%Y-%m-%d} with {f2!r}; set {key} to the "
                            "one the file uses")
    out = next(iter(full.values()))
    if out.dt.tz is not None:
        out = out.dt.tz_convert("UTC").dt.tz_localize(None)
    return out


def _numbers(text: pd.Series, column: str, decimal: str, thousands: str, where: str,
             keys: dict) -> np.ndarray:
    """Numbers from text cells in the file's dialect; empty cells become NaN."""
    clean = text.str.replace(thousands, "", regex=False) if thousands else text
    if decimal != ".":
        clean = clean.str.replace(decimal, ".", regex=False)
    empty = text == ""
    values = pd.to_numeric(clean.where(~empty), errors="coerce").to_numpy(np.float64)
    bad = np.isnan(values) & ~empty.to_numpy()
    if bad.any():
        i = _first(bad)
        hint = (f" (a decimal comma or thousands separator? set {keys['decimal']} or "
                f"{keys['thousands']})" if re.fullmatch(r"[+-]?[\d.,\s']+", text.iloc[i])
                else "")
        raise DataError(f"{where}: column {column!r} has a non-numeric value "
                        f"{text.iloc[i]!r} on line {text.index[i] + 2}{hint}")
    if np.isinf(values).any():
        raise DataError(f"{where}: column {column!r} has an infinite value on line "
                        f"{text.index[_first(np.isinf(values))] + 2}")
    return values


def _separator_hint(columns: list[str], keys: dict) -> str:
    header = ",".join(columns)
    for sep, name in ((";", "';'"), ("\t", "'\\t' (a tab)"), ("|", "'|'")):
        if sep in header:
            return f"; the header looks separated by {name}: set {keys['sep']} to {name}"
    return ""


def _fill(frame: pd.DataFrame, cols: dict, missing: str, path: Path, keys: dict,
          ids: np.ndarray) -> pd.DataFrame:
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
                        f"in column {name!r} on line {r['line']}{of}; set {keys['missing']} to "
                        "ffill or drop to accept them")
    if missing == "drop":
        return frame[~empty].reset_index(drop=True)
    for out, name in cols.items():
        frame[out] = frame.groupby("code")[out].ffill()
        lead = frame[out].isna().to_numpy()
        if lead.any():
            r = frame.iloc[_first(lead)]
            raise DataError(f"{path}: column {name!r} starts with empty cells on line "
                            f"{r['line']}{of}, with no earlier value to carry forward; remove "
                            f"them or set {keys['missing']} to drop")
    return frame


def read_table(path: str | Path, column: str, *, time_column: str = "", id_column: str = "",
               missing: str = "error", time_format: str = "auto", sep: str = ",",
               decimal: str = ".", thousands: str = "", features: list[str] = (),
               default_id: str = "series", keys: dict) -> pd.DataFrame:
    """A user's CSV as ``id, t, value, signal`` (and ``feature:<name>`` columns), grouped by id
    and sorted by time inside each. Without ``id_column`` every row is series ``default_id``;
    without ``time_column`` the rows keep the file's order, numbered 0, 1, ..."""
    path = Path(path)
    if not path.is_file():
        raise DataError(f"{keys['path']}: file not found: {path}")
    try:  # blank lines are empty cells of a one-column file, not lines to skip
        raw = pd.read_csv(path, sep=sep, dtype=str, keep_default_na=False,
                          skip_blank_lines=False, engine="c")
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as err:
        first = str(err).strip().splitlines()[0] if str(err).strip() else "empty file"
        raise DataError(f"{path}: not a readable CSV file ({first})") from None
    raw.columns = [str(c).strip() for c in raw.columns]
    if raw.shape[1] > 1:  # a blank line of a file of several columns is no row at all; the
        raw = raw[(raw != "").any(axis=1)]     # index keeps each row's line (index + 2)
    wanted = [(keys["column"], column), (keys["time_column"], time_column),
              (keys["id_column"], id_column), *((keys["features"], f) for f in features)]
    for key, name in wanted:
        if name and name not in raw.columns:
            have = ", ".join(map(str, raw.columns)) or "none"
            raise DataError(f"{key}: column {name!r} not in {path} (columns: {have})"
                            + _separator_hint(list(raw.columns), keys))
    if id_column and not time_column:
        raise DataError(f"{keys['time_column']} must name the time column of a file with "
                        f"{keys['id_column']} ({path} holds many series, and rows alone do "
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
                               time_column, keys["time_format"]).to_numpy() if time_column \
        else np.arange(len(raw), dtype=np.float64)
    cols = {"value": column, **{FEATURE_PREFIX + f: f for f in features}}
    empty = np.zeros(len(raw), dtype=bool)
    for out, name in cols.items():
        text = raw[name].str.strip()
        frame[out] = _numbers(text, name, decimal, thousands, str(path), keys)
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
    frame = _fill(frame, cols, missing, path, keys, ids)
    if not len(frame) or np.isnan(frame["value"].to_numpy()).all():
        raise DataError(f"{path}: column {column!r} holds no values")
    out = pd.DataFrame({"id": ids[frame["code"].to_numpy()], "t": frame["key"].to_numpy(),
                        "value": frame["value"].to_numpy(np.float64), "signal": np.nan})
    for name in cols:
        if name != "value":
            out[name] = frame[name].to_numpy(np.float64)
    return out


# ---------------------------------------------------------------- regular time steps
def _step_kind(t: np.ndarray, d: np.ndarray) -> tuple[str, np.ndarray, str]:
    """How consecutive times ``t[:-1] -> t[1:]`` (differences ``d``) are measured: the kind,
    each step in its unit, and the unit's name, from the most common difference."""
    if t.dtype.kind != "M":
        vals, n = np.unique(d, return_counts=True)
        step = vals[np.argmax(n)]
        return "steps", d / step, f"{step:g}"
    sec = d.astype("timedelta64[s]").astype(np.int64)
    vals, n = np.unique(sec, return_counts=True)
    mode = int(vals[np.argmax(n)])
    day = 86400
    months = t.astype("datetime64[M]").astype(np.int64)
    dm = np.diff(months)
    if mode >= 28 * day:  # a calendar step: one or several months (a quarter, a year...)
        vals, n = np.unique(dm, return_counts=True)
        step = int(vals[np.argmax(n)])
        if step >= 1:
            name = {1: "one month", 3: "one quarter", 12: "one year"}.get(step,
                                                                      f"{step} months")
            return "months", dm / step, name
    days = t.astype("datetime64[D]")
    if mode == day and (np.is_busday(days)).all() and (sec == 3 * day).any():
        return "business days", np.busday_count(days[:-1], days[1:]).astype(np.float64), \
            "one business day"
    return "steps", sec / mode, _duration(mode)


def _duration(seconds: int) -> str:
    """A step's length in words: one day, 7 days, one hour, 30 minutes, 15 s."""
    for size, unit in ((86400, "day"), (3600, "hour"), (60, "minute")):
        if seconds % size == 0:
            k = seconds // size
            return f"one {unit}" if k == 1 else f"{k} {unit}s"
    return f"{seconds} s"


def check_frame_regular(frame: pd.DataFrame, where: str, keys: dict) -> None:
    """:func:`check_regular` on a table of :func:`read_table` (each id's rows together)."""
    ids = frame["id"].to_numpy()
    starts = np.flatnonzero(np.r_[True, ids[1:] != ids[:-1]])
    check_regular(ids[starts], np.r_[starts, len(ids)], frame["t"].to_numpy(), where, keys)


def check_regular(ids: np.ndarray, offsets: np.ndarray, t: np.ndarray, where: str,
                  keys: dict) -> None:
    """Every series' times must advance by one step of the file's frequency (the most common
    difference: a number, or a day, business day, month, quarter, year...): name the first
    gap or irregular step."""
    if len(t) < 3:
        return
    inside = np.ones(len(t) - 1, dtype=bool)
    inside[np.asarray(offsets[1:-1]) - 1] = False           # no step across two series
    kind, steps, unit = _step_kind(t, np.diff(t))
    bad = inside & ~np.isclose(steps, 1.0)
    if not bad.any():
        return
    r = _first(bad)
    if t.dtype.kind == "M":   # dates alone when every time is midnight
        width = 10 if (t == t.astype("datetime64[D]")).all() else 19
        show = lambda x: str(x)[:width].replace("T", " ")  # noqa: E731
    else:
        show = lambda x: f"{x:g}"  # noqa: E731
    i = int(np.searchsorted(offsets, r, side="right") - 1)
    of = f" of id '{ids[i]}'" if len(ids) > 1 else ""
    what = (f"{steps[r] - 1:g} step(s) of {unit} missing" if steps[r] > 1 else
            f"a step of {steps[r]:g} x {unit}")
    raise DataError(f"{where}: the time column{of} is not regular: after {show(t[r])} comes "
                    f"{show(t[r + 1])} ({what}); fill the rows, or set {keys['time_gaps']} to "
                    "allow (for data that skips days by design, such as trading days)")


# ---------------------------------------------------------------- the generate stage's table
def iso_times(times: np.ndarray) -> np.ndarray:
    """datetime64 as ISO 8601 strings (date only when every time is midnight)."""
    s = pd.Series(times)
    fmt = "%Y-%m-%d" if (s == s.dt.normalize()).all() else \
        "%Y-%m-%dT%H:%M:%S" if (s == s.dt.floor("s")).all() else "%Y-%m-%dT%H:%M:%S.%f"
    return s.dt.strftime(fmt).to_numpy(dtype=object)


def write_long(path: str | Path, chunks, rows: int = 1_000_000) -> tuple[int, int]:
    """Write ``id, t, value, signal[, feature:...]`` DataFrames (each id's rows together, in
    time order) to one CSV, atomically, ``rows`` at a time; returns the rows and the ids."""
    import pyarrow as pa
    import pyarrow.csv as pacsv
    n = n_ids = 0
    last = None
    with atomic_path(path) as tmp:
        writer = None
        for whole in chunks:
            for start in range(0, len(whole), rows):
                frame = whole.iloc[start:start + rows]
                if frame["t"].dtype.kind == "M":
                    frame = frame.assign(t=iso_times(frame["t"].to_numpy()))
                ids = frame["id"].to_numpy()
                n_ids += int((ids[1:] != ids[:-1]).sum()) + int(ids[0] != last)
                last = ids[-1]
                table = pa.Table.from_pandas(frame.astype({"id": str}), preserve_index=False)
                if writer is None:
                    writer = pacsv.CSVWriter(str(tmp), table.schema)
                writer.write_table(table)
                n += len(frame)
        if writer is not None:
            writer.close()
    return n, n_ids


def _max_rows(path: str | Path) -> int:
    """An upper bound of a CSV file's data rows: its lines, less the header."""
    lines, last = 0, b"\n"
    with open(path, "rb") as fh:
        while block := fh.read(16 << 20):
            lines += block.count(b"\n")
            last = block[-1:]
    return lines + (last != b"\n") - 1


def read_long(path: str | Path, features: list[str] = ()):
    """The generate stage's table as a store.Raw, read in blocks into arrays allocated once
    (a 20M-row table needs its columns in memory, no more)."""
    import pyarrow as pa
    import pyarrow.csv as pacsv

    from .store import Raw
    with open(path) as fh:   # a competition's series also carry their horizon and period
        header = fh.readline().strip().replace('"', "").split(",")
    extra = [c for c in ("horizon", "period") if c in header]
    cols = ["id", "t", "value", "signal", *(FEATURE_PREFIX + f for f in features), *extra]
    types = {"id": pa.string(), **{c: pa.float64() for c in cols[2:]}}
    read = pacsv.ReadOptions(block_size=1 << 20)  # 8 MiB blocks peak at 280 MiB of buffers
    try:
        opts = pacsv.ConvertOptions(column_types=types, include_columns=cols)
        reader = pacsv.open_csv(str(path), convert_options=opts, read_options=read)
        if pa.types.is_integer(reader.schema.field("t").type):  # 0.5 may come later
            opts.column_types = {**types, "t": pa.float64()}
            reader = pacsv.open_csv(str(path), convert_options=opts, read_options=read)
    except (pa.ArrowInvalid, KeyError):
        raise UserInputError(f"{path} is not the table this version writes (columns "
                             f"{', '.join(cols)}); run the generate stage again (dvc repro)") \
            from None
    t_type = reader.schema.field("t").type
    if not (pa.types.is_floating(t_type) or pa.types.is_date(t_type)
            or pa.types.is_timestamp(t_type) or pa.types.is_null(t_type)):
        raise UserInputError(f"{path}: column 't' holds {t_type} values, not numbers or ISO "
                             "dates; run the generate stage again (dvc repro)")
    cap = max(_max_rows(path), 0)
    value, signal = np.empty(cap), np.empty(cap)
    feats = np.empty((cap, len(features))) if features else None
    more = {c: np.empty(cap) for c in extra}
    t = None
    ids: list[str] = []
    bounds: list[int] = []
    row = 0
    for batch in reader:
        enc = batch.column(0).dictionary_encode()
        codes = enc.indices.to_numpy(zero_copy_only=False)
        names = enc.dictionary.to_pylist()
        for s in np.flatnonzero(np.diff(codes, prepend=-1)):
            if not (s == 0 and ids and ids[-1] == names[codes[s]]):  # not the last block's
                ids.append(names[codes[s]])
                bounds.append(row + int(s))
        times = batch.column(1)
        if pa.types.is_date(times.type) or pa.types.is_timestamp(times.type):
            times = times.cast(pa.timestamp("us"))
        times = times.to_numpy(zero_copy_only=False)
        if t is None:
            t = np.empty(cap, dtype=times.dtype if times.dtype.kind == "M" else np.float64)
        k = batch.num_rows
        t[row:row + k] = times
        value[row:row + k] = batch.column(2).to_numpy(zero_copy_only=False)
        signal[row:row + k] = batch.column(3).to_numpy(zero_copy_only=False)
        for j in range(len(features)):
            feats[row:row + k, j] = batch.column(4 + j).to_numpy(zero_copy_only=False)
        for j, c in enumerate(extra):
            more[c][row:row + k] = batch.column(4 + len(features) + j).to_numpy(
                zero_copy_only=False)
        row += k
    if len(set(ids)) != len(ids):
        raise UserInputError(f"{path}: the rows of each id must be together (id "
                             f"{next(i for i in ids if ids.count(i) > 1)!r} appears in two "
                             "places); run the generate stage again (dvc repro)")
    offsets = np.array(bounds + [row], dtype=np.int64)
    t = np.zeros(0) if t is None else t
    per = {c: more[c][offsets[:-1]].astype(np.int64) for c in extra}  # each series' first row
    return Raw(np.array(ids, dtype=str), offsets, t[:row], value[:row], signal[:row],
               None if feats is None else feats[:row], tuple(features),
               per.get("horizon"), per.get("period"))
