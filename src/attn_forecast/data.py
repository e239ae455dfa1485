"""Series sources: built-in synthetic series and a user's CSV file.

Every source returns a DataFrame with columns ``t`` (step index, or the CSV's time column),
``value`` (the series) and ``signal`` (the noise-free value of a synthetic series; empty for
data without one). Synthetic series are seeded, so the same params give the same bytes.
"""
from __future__ import annotations

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


def _time_key(col: pd.Series, name: str) -> pd.Series:
    """Numbers stay numbers; anything else must parse as dates."""
    as_num = pd.to_numeric(col, errors="coerce")
    if as_num.notna().all():
        return as_num
    as_date = pd.to_datetime(col, errors="coerce", format="mixed")
    bad = as_date.isna()
    if bad.any():
        row = int(np.flatnonzero(bad.to_numpy())[0]) + 2  # +1 header, +1 one-based
        raise DataError(f"{name}: time column value {col.iloc[row - 2]!r} on line {row} is "
                        "neither a number nor a date")
    return as_date


PARAM_KEYS = ("data.csv_path", "data.csv_column", "data.csv_time_column")


def read_csv_series(path: str | Path, column: str, time_column: str = "",
                    missing: str = "error", keys: tuple[str, str, str] = PARAM_KEYS
                    ) -> pd.DataFrame:
    """A user's series from a CSV file, checked and sorted by its time column.

    ``keys`` name the file, column and time column in error messages (params keys for the
    generate stage, command-line flags for the forecast command).
    """
    path = Path(path)
    if not path.is_file():
        raise DataError(f"{keys[0]}: file not found: {path}")
    try:
        # blank lines are empty cells of a one-column file, not lines to skip
        raw = pd.read_csv(path, dtype=str, keep_default_na=False, skip_blank_lines=False)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as err:
        first = str(err).strip().splitlines()[0] if str(err).strip() else "empty file"
        raise DataError(f"{path}: not a readable CSV file ({first})") from None
    for key, name in ((keys[1], column), (keys[2], time_column)):
        if name and name not in raw.columns:
            have = ", ".join(map(str, raw.columns)) or "none"
            raise DataError(f"{key}: column {name!r} not in {path} (columns: {have})")

    text = raw[column].str.strip()
    empty = text == ""
    values = pd.to_numeric(text.where(~empty), errors="coerce")
    bad = values.isna() & ~empty
    if bad.any():
        i = int(np.flatnonzero(bad.to_numpy())[0])
        raise DataError(f"{path}: column {column!r} has a non-numeric value {text.iloc[i]!r} "
                        f"on line {i + 2}")
    if np.isinf(values).any():
        i = int(np.flatnonzero(np.isinf(values.to_numpy()))[0])
        raise DataError(f"{path}: column {column!r} has an infinite value on line {i + 2}")

    t = raw[time_column].str.strip() if time_column else pd.Series(np.arange(len(raw)))
    if time_column:
        key = _time_key(t, str(path))
        dup = key.duplicated(keep=False)
        if dup.any():
            i = int(np.flatnonzero(dup.to_numpy())[0])
            raise DataError(f"{path}: time column {time_column!r} has duplicate value "
                            f"{t.iloc[i]!r} (line {i + 2}); each time must appear once")
        order = np.argsort(key.to_numpy(), kind="stable")
        values, t, empty = values.iloc[order], t.iloc[order], empty.iloc[order]
    values = values.reset_index(drop=True)
    t = t.reset_index(drop=True)
    empty = empty.reset_index(drop=True)

    if empty.any():
        if missing == "error":
            i = int(np.flatnonzero(empty.to_numpy())[0])
            raise DataError(f"{path}: column {column!r} has {int(empty.sum())} empty cell(s), "
                            f"the first at sorted row {i + 1}; set data.missing to interpolate "
                            "or drop to accept them")
        if missing == "drop":
            keep = ~empty
            values, t = values[keep].reset_index(drop=True), t[keep].reset_index(drop=True)
        else:  # interpolate linearly between neighbours, hold the ends
            values = values.interpolate(limit_direction="both")
    if values.isna().all() or len(values) == 0:
        raise DataError(f"{path}: column {column!r} holds no values")
    return _frame(values.to_numpy(dtype=np.float64), None, t=t.to_numpy())


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
    return read_csv_series(p.csv_path, p.csv_column, p.csv_time_column, p.missing)
