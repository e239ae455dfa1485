"""Series sources: built-in synthetic series and a user's CSV file.

Every source returns a DataFrame with columns ``t`` (step index, or the CSV's time column),
``value`` (the series) and ``signal`` (the noise-free value of a synthetic series; empty for
data without one). Synthetic series are seeded, so the same params give the same bytes.
"""
from __future__ import annotations

import re
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

from .errors import UserInputError
from .params import DataParams


class DataError(UserInputError):
    """The input series cannot be used as it is."""


def sine(n_points: int, noise_std: float, seed: int) -> pd.DataFrame:
    """The source's noisy sine: ``sin(x) + N(0, noise_std^2)``, x over two periods."""
    x = np.linspace(0, 4 * np.pi, n_points)
    signal = np.sin(x)
    # RandomState(seed).normal draws the same numbers as np.random.seed(seed); np.random.normal
    noise = np.random.RandomState(seed).normal(scale=noise_std, size=n_points)
    return _frame(signal + noise, signal)


def seasonal(p: DataParams) -> pd.DataFrame:
    """Linear trend plus two seasonal components plus Gaussian noise."""
    t = np.arange(p.n_points, dtype=np.float64)
    signal = (p.trend * t
              + p.amplitude1 * np.sin(2 * np.pi * t / p.period1)
              + p.amplitude2 * np.sin(2 * np.pi * t / p.period2))
    noise = np.random.RandomState(p.seed).normal(scale=p.noise_std, size=p.n_points)
    return _frame(signal + noise, signal)


def random_walk(p: DataParams) -> pd.DataFrame:
    """Geometric Brownian motion price path; unpredictable by construction, so no signal.

    log S_t = log S_0 + sum_i (drift - volatility^2 / 2) + volatility * eps_i
    """
    eps = np.random.RandomState(p.seed).standard_normal(p.n_points - 1)
    steps = (p.drift - 0.5 * p.volatility ** 2) + p.volatility * eps
    log_price = np.log(p.start_price) + np.concatenate([[0.0], np.cumsum(steps)])
    return _frame(np.exp(log_price), None)


def _frame(value: np.ndarray, signal: np.ndarray | None, t=None) -> pd.DataFrame:
    n = len(value)
    return pd.DataFrame({
        "t": np.arange(n) if t is None else t,
        "value": value,
        "signal": np.full(n, np.nan) if signal is None else signal,
    })


# the params keys, or the forecast command's flags, that error messages name
PARAM_KEYS = {"path": "data.csv_path", "column": "data.csv_column",
              "time_column": "data.csv_time_column", "time_format": "data.csv_time_format",
              "sep": "data.csv_sep", "decimal": "data.csv_decimal",
              "thousands": "data.csv_thousands", "missing": "data.missing",
              "features": "data.csv_feature_columns"}
FEATURE_PREFIX = "feature:"  # the raw series CSV's column of each feature (feature:volume)


def _line(mask: pd.Series) -> int:
    """Index of the first True entry (the file's line is this + 2: header, one-based)."""
    return int(np.flatnonzero(mask.to_numpy())[0])


def _guess_formats(sample: str) -> list[str]:
    """strftime formats pandas infers for one value, month-first and day-first."""
    from pandas.tseries.api import guess_datetime_format
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        found = [guess_datetime_format(sample, dayfirst=d) for d in (False, True)]
    out = [f for f in dict.fromkeys(found) if f]
    # year-first dates are never day-before-month (2024-01-03 is not 1 March)
    return [f for f in out if not f.startswith("%Y-%d") and not f.startswith("%Y/%d")]


def parse_times(text: pd.Series, fmt: str, where: str, column: str,
                key: str = "data.csv_time_format") -> pd.Series:
    """The time column as numbers or as dates read with ONE format for every row.

    ``fmt`` is ``auto`` (numbers stay numbers; dates use the format inferred from the first
    value, which must read every row, and must not be ambiguous between day-first and
    month-first) or a strftime format. Never a per-row (mixed-format) parse.
    """
    if fmt == "auto":
        as_num = pd.to_numeric(text, errors="coerce")
        if as_num.notna().all():
            return as_num
        formats = _guess_formats(text.iloc[0])
        if not formats:
            bad = as_num.isna()
            i = _line(bad)
            raise DataError(f"{where}: time column {column!r} value {text.iloc[i]!r} on line "
                            f"{i + 2} is neither a number nor a date in a format that can be "
                            f"inferred; set {key} (e.g. '%d/%m/%Y %H:%M')")
    else:
        formats = [fmt]
    parsed = {f: pd.to_datetime(text, format=f, errors="coerce") for f in formats}
    full = {f: v for f, v in parsed.items() if v.notna().all()}
    if not full:
        f, v = max(parsed.items(), key=lambda kv: int(kv[1].notna().sum()))
        i = _line(v.isna())
        how = f"does not match {key} {fmt!r}" if fmt != "auto" else \
            f"does not match the format {f!r} inferred from line 2 ({text.iloc[0]!r})"
        raise DataError(f"{where}: time column {column!r} value {text.iloc[i]!r} on line "
                        f"{i + 2} {how}; every row must use one format: fix the file or set "
                        f"{key} to a strftime format")
    if len(full) > 1:
        (f1, v1), (f2, v2) = list(full.items())[:2]
        if not v1.equals(v2):
            i = _line(v1 != v2)
            raise DataError(f"{where}: time column {column!r} is ambiguous: {text.iloc[i]!r} "
                            f"(line {i + 2}) reads as {v1.iloc[i]:%Y-%m-%d} with {f1!r} and "
                            f"as {v2.iloc[i]:%Y-%m-%d} with {f2!r}; set {key} to the one the "
                            "file uses")
    return next(iter(full.values()))


def iso_times(times: pd.Series) -> np.ndarray:
    """Parsed dates as ISO 8601 strings (date only when every time is midnight), so later
    stages read them back unambiguously."""
    if times.dt.tz is not None:
        times = times.dt.tz_convert("UTC").dt.tz_localize(None)
    fmt = "%Y-%m-%d" if (times == times.dt.normalize()).all() else "%Y-%m-%dT%H:%M:%S"
    return times.dt.strftime(fmt).to_numpy(dtype=object)


def _to_numbers(text: pd.Series, column: str, decimal: str, thousands: str, where: str,
                keys: dict) -> pd.Series:
    """Numbers from text cells in the file's dialect; empty cells become NaN."""
    clean = text
    if thousands:
        clean = clean.str.replace(thousands, "", regex=False)
    if decimal != ".":
        clean = clean.str.replace(decimal, ".", regex=False)
    empty = text == ""
    values = pd.to_numeric(clean.where(~empty), errors="coerce")
    bad = values.isna() & ~empty
    if bad.any():
        i = _line(bad)
        hint = ""
        if re.fullmatch(r"[+-]?[\d.,\s']+", text.iloc[i]):
            hint = (f" (a decimal comma or thousands separator? set {keys['decimal']} or "
                    f"{keys['thousands']})")
        raise DataError(f"{where}: column {column!r} has a non-numeric value "
                        f"{text.iloc[i]!r} on line {i + 2}{hint}")
    if np.isinf(values).any():
        i = _line(pd.Series(np.isinf(values.to_numpy())))
        raise DataError(f"{where}: column {column!r} has an infinite value on line {i + 2}")
    return values


def _separator_hint(columns: list[str], keys: dict) -> str:
    header = ",".join(columns)
    for sep, name in ((";", "';'"), ("\t", "a tab ('\\t')"), ("|", "'|'")):
        if sep in header:
            return f"; the header looks {name}-separated: set {keys['sep']} to {name}"
    return ""


def _fill(values: pd.Series, t: pd.Series, empty: pd.Series, missing: str, where: str,
          keys: dict) -> tuple[pd.Series, pd.Series]:
    """Empty cells of the time-sorted series, from the past only (never a later value, which
    could be a window's own target): ``ffill`` carries the last value forward, ``drop`` removes
    the rows, ``error`` refuses. Leading empty cells have no past to fill from: refused."""
    if empty.all():
        raise DataError(f"{where} holds no values")
    if missing == "error":
        i = _line(empty)
        raise DataError(f"{where} has {int(empty.sum())} empty cell(s), the first at sorted row "
                        f"{i + 1}; set {keys['missing']} to ffill or drop to accept them")
    if missing == "drop":
        keep = ~empty
        return values[keep].reset_index(drop=True), t[keep].reset_index(drop=True)
    lead = int(np.argmin(empty.to_numpy())) if not empty.all() else len(empty)
    if lead:
        raise DataError(f"{where}: the first {lead} sorted row(s) are empty, with no earlier "
                        f"value to carry forward; remove them or set {keys['missing']} to drop")
    return values.ffill(), t


def read_csv_series(path: str | Path, column: str = "value", time_column: str = "",
                    missing: str = "error", *, time_format: str = "auto", sep: str = ",",
                    decimal: str = ".", thousands: str = "", features: list[str] = (),
                    keys: dict | None = None) -> pd.DataFrame:
    """A user's series from a CSV file, checked and sorted by its time column.

    ``sep``, ``decimal`` and ``thousands`` are pandas' dialect options (``thousands`` ''
    for none); ``time_format`` is ``auto`` or a strftime format (see :func:`parse_times`).
    ``features``: more numeric columns read beside ``column`` (past covariates), returned as
    ``feature:<name>`` columns; their empty cells follow ``missing`` like the value's (with
    ``drop``, a row with any empty cell goes).
    ``keys`` name the settings in error messages (params keys for the generate stage,
    command-line flags for the forecast command).
    """
    keys = {**PARAM_KEYS, **(keys or {})}
    path = Path(path)
    if not path.is_file():
        raise DataError(f"{keys['path']}: file not found: {path}")
    try:
        # blank lines are empty cells of a one-column file, not lines to skip
        raw = pd.read_csv(path, sep=sep, dtype=str, keep_default_na=False,
                          skip_blank_lines=False, engine="c")
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as err:
        first = str(err).strip().splitlines()[0] if str(err).strip() else "empty file"
        raise DataError(f"{path}: not a readable CSV file ({first})") from None
    raw.columns = [str(c).strip() for c in raw.columns]
    wanted = [(keys["column"], column), (keys["time_column"], time_column)]
    for key, name in wanted + [(keys["features"], f) for f in features]:
        if name and name not in raw.columns:
            have = ", ".join(map(str, raw.columns)) or "none"
            raise DataError(f"{key}: column {name!r} not in {path} (columns: {have})"
                            + _separator_hint(list(raw.columns), keys))

    text = raw[column].str.strip()
    values = _to_numbers(text, column, decimal, thousands, str(path), keys)
    empty = text == ""
    extra = {}
    for name in features:
        cells = raw[name].str.strip()
        extra[name] = (_to_numbers(cells, name, decimal, thousands, str(path), keys),
                       cells == "")

    t = raw[time_column].str.strip() if time_column else pd.Series(np.arange(len(raw)))
    if time_column:
        key = parse_times(t, time_format, str(path), time_column, keys["time_format"])
        dup = key.duplicated(keep=False)
        if dup.any():
            i = _line(dup)
            raise DataError(f"{path}: time column {time_column!r} has duplicate value "
                            f"{t.iloc[i]!r} (line {i + 2}); each time must appear once")
        order = np.argsort(key.to_numpy(), kind="stable")
        key = key.iloc[order].reset_index(drop=True)
        values, empty = values.iloc[order], empty.iloc[order]
        extra = {n: (v.iloc[order], e.iloc[order]) for n, (v, e) in extra.items()}
        t = pd.Series(iso_times(key)) if key.dtype.kind == "M" else key
    values = values.reset_index(drop=True)
    t = t.reset_index(drop=True)
    empty = empty.reset_index(drop=True)
    extra = {n: (v.reset_index(drop=True), e.reset_index(drop=True))
             for n, (v, e) in extra.items()}

    keep = ~(empty | np.logical_or.reduce([e for _, e in extra.values()])) if extra else None
    if missing == "drop" and keep is not None and not keep.all():  # one row set for all
        if not keep.any():
            raise DataError(f"{path}: every row has an empty cell in {column!r} or a feature")
        values, t, empty = (x[keep].reset_index(drop=True) for x in (values, t, empty))
        extra = {n: (v[keep].reset_index(drop=True), e[keep].reset_index(drop=True))
                 for n, (v, e) in extra.items()}
    filled = {}
    for name, (v, e) in extra.items():
        filled[name] = _fill(v, t, e, missing, f"{path}: column {name!r}", keys)[0] \
            if e.any() else v
    if empty.any():
        values, t = _fill(values, t, empty, missing, f"{path}: column {column!r}", keys)
    if values.isna().all() or len(values) == 0:
        raise DataError(f"{path}: column {column!r} holds no values")
    frame = _frame(values.to_numpy(dtype=np.float64), None, t=t.to_numpy())
    for name, v in filled.items():
        frame[FEATURE_PREFIX + name] = v.to_numpy(dtype=np.float64)
    return frame


def check_inside(csv_path: str | Path, folder: str | Path) -> None:
    """The CSV must sit in the folder DVC tracks for the generate stage, so that editing it
    reruns the pipeline."""
    path, root = Path(csv_path).resolve(), Path(folder).resolve()
    if root != path and root not in path.parents:
        raise DataError(f"data.csv_path must be inside {folder}/ (the folder the generate stage "
                        f"depends on, so edits rerun the pipeline), got {csv_path!r}")


def load_series(p: DataParams) -> pd.DataFrame:
    """The series that ``data.kind`` names."""
    if p.kind == "sine":
        return sine(p.n_points, p.noise_std, p.seed)
    if p.kind == "seasonal":
        return seasonal(p)
    if p.kind == "random_walk":
        return random_walk(p)
    return read_csv_series(p.csv_path, p.csv_column, p.csv_time_column, p.missing,
                           features=p.csv_feature_columns, **csv_dialect(p))


def source_settings(p: DataParams) -> dict:
    """What the forecast command needs to read a file as the training did (in the checkpoint)."""
    return {"kind": p.kind, "column": p.csv_column if p.kind == "csv" else "value",
            "time_column": p.csv_time_column if p.kind == "csv" else
            ("t" if p.kind == "panel" else ""),
            "missing": p.missing, "features": list(p.csv_feature_columns), **csv_dialect(p),
            **({"id_column": p.csv_id_column if p.kind == "csv" else "id"}
               if p.is_panel else {})}


def csv_dialect(p: DataParams) -> dict:
    """The CSV reading options of ``data`` params, as read_csv_series keywords (also saved in
    the checkpoint, so the forecast command reads the file the same way)."""
    return {"time_format": p.csv_time_format, "sep": p.csv_sep, "decimal": p.csv_decimal,
            "thousands": p.csv_thousands}


def ohlcv(n_points: int, seed: int, lead: float = 0.0, volatility: float = 0.01,
          start_price: float = 100.0) -> pd.DataFrame:
    """Daily bars ``date, open, high, low, close, volume`` of a geometric random walk.

    ``lead`` 0: the volume is drawn apart from the prices, so nothing in the bars tells the
    next close (no skill can exist). ``lead`` > 0: the next bar's log return is
    ``lead * volatility * u`` plus noise of std ``volatility``, where ``u`` is this bar's
    standardized log volume: the volume leads the price by design. Seeded.
    """
    rs = np.random.RandomState(seed)
    u = rs.standard_normal(n_points)                       # standardized log volume
    eps = rs.standard_normal(n_points) * volatility
    r = eps.copy()
    r[1:] += lead * volatility * u[:-1]                     # yesterday's volume, today's move
    r[0] = 0.0
    close = start_price * np.exp(np.cumsum(r))
    open_ = np.concatenate([[start_price], close[:-1]]) * np.exp(
        rs.standard_normal(n_points) * volatility * 0.2)
    wick = np.abs(rs.standard_normal((2, n_points))) * volatility * 0.5
    high = np.maximum(open_, close) * np.exp(wick[0])
    low = np.minimum(open_, close) * np.exp(-wick[1])
    volume = np.round(np.exp(13.0 + 0.5 * u))
    dates = pd.bdate_range("2015-01-02", periods=n_points).strftime("%Y-%m-%d")
    return pd.DataFrame({"date": dates, "open": open_, "high": high, "low": low,
                         "close": close, "volume": volume})
