"""Stage generate's step: the long table (``id, t, value, signal``, past covariates as
``feature:<name>``) of the data ``data.kind`` names, the built-in synthetic series or the
user's CSV, written in blocks; and how a CSV is read (kept in the checkpoint, so the forecast
command reads a file the same way)."""
from __future__ import annotations

import os
from pathlib import Path

from ..config.load import load_params
from ..config.schema import DataParams
from ..data import sources
from ..data.csv import read_table
from ..data.frequency import check_frame_regular
from ..data.long_table import write_long
from ..errors import ParamsError


def csv_options(d: DataParams) -> dict:
    """How ``data`` reads a CSV, as read_table keywords (saved in the checkpoint, so the
    forecast command reads a file the same way)."""
    return {"column": d.csv_column, "time_column": d.csv_time_column,
            "id_column": d.csv_id_column, "missing": d.missing,
            "time_format": d.csv_time_format, "sep": d.csv_sep, "decimal": d.csv_decimal,
            "thousands": d.csv_thousands, "features": list(d.csv_feature_columns),
            "default_id": d.csv_column}

def source_record(d: DataParams) -> dict:
    """What the data was, for the checkpoint and the summary."""
    if d.kind == "csv":
        return {"kind": "csv", "path": d.csv_path, **csv_options(d), "time_gaps": d.time_gaps}
    # the generate stage's own table (data/raw/series.csv) reads back as it was written
    many = d.kind in ("panel", "competition")
    return {"kind": d.kind, "column": "value", "time_column": "t",
            "id_column": "id" if many else "",
            **({"competition": d.competition, "subset": d.subset, "holdout": d.holdout}
               if d.kind == "competition" else {})}

def check_inside(csv_path: str, folder: str) -> None:
    """The CSV must sit in the folder the generate stage depends on, so that editing it
    reruns the pipeline."""
    path, root = Path(csv_path).resolve(), Path(folder).resolve()
    if root != path and root not in path.parents:
        raise ParamsError(f"data.csv_path must be inside {folder}/ (the folder the generate "
                          f"stage depends on, so edits rerun the pipeline), got {csv_path!r}")

def check_visible(csv_path: str) -> None:
    """A CSV an experiment run in a temporary copy of the repository cannot see: `dvc exp run
    --temp` (or --queue) copies what git holds, and a new file the user has not committed is
    in their workspace (DVC_ROOT) only."""
    root = os.environ.get("DVC_ROOT")
    if Path(csv_path).exists() or not root or not os.environ.get("DVC_EXP_BASELINE_REV") \
            or Path(root).resolve() == Path.cwd().resolve():
        return
    if (Path(root) / csv_path).is_file():
        raise ParamsError(
            f"data.csv_path: {csv_path} is in your workspace but not in git, and a --temp or "
            f"--queue experiment runs in a copy of what git holds: `git add {csv_path}` and "
            "commit it (or `dvc add` it), or run `dvc exp run` without --temp")

def chunks(d: DataParams, inputs: str):
    """The data ``data.kind`` names, as DataFrames of the long table (a note on stdout of the
    calendar gaps a CSV's time column skips)."""
    if d.kind == "csv":
        check_inside(d.csv_path, inputs)
        check_visible(d.csv_path)
        frame = read_table(d.csv_path, **csv_options(d))
        if d.csv_time_column and d.time_gaps == "error":
            note = check_frame_regular(frame, d.csv_path)
            if note:
                print(f"note: {note}")
        return [frame]
    if d.kind == "competition":
        return [sources.competition(d.competition, d.subset, d.holdout)]
    if d.kind == "panel":
        return sources.panel(d.n_series, d.n_points, d.panel_min_points, d.seed, d.noise_std,
                             d.trend)
    if d.kind == "seasonal":
        return [sources.seasonal(d.n_points, d.noise_std, d.seed, trend=d.trend,
                                 period1=d.period1, amplitude1=d.amplitude1,
                                 period2=d.period2, amplitude2=d.amplitude2)]
    if d.kind == "random_walk":
        return [sources.random_walk(d.n_points, d.seed, start_price=d.start_price,
                                    drift=d.drift, volatility=d.volatility)]
    return [sources.sine(d.n_points, d.noise_std, d.seed)]


def step(params: str, inputs: str, out: str) -> None:
    """generate: the long table of ``params``' data (a CSV read from ``inputs``) -> ``out``;
    its line says how a CSV's time column was read (step numbers, dates, years...)."""
    d = load_params(params).data
    parts = chunks(d, inputs)
    read = parts[0].attrs.get("time_reading") if d.kind == "csv" else None
    rows, ids = write_long(out, parts)
    how = f" (time column {d.csv_time_column!r} read as {read})" if read else ""
    print(f"generate: {rows} points of {d.kind} data in {ids} series{how} -> {out}")
