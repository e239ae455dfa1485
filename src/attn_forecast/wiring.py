"""What the stages share between ``params.yaml`` and the library: the keys that error messages
name, the library's arguments read from the params, and the checks of params against the
prepared data (the model's side, which needs torch, is wiring_torch.py). The rest of the
library takes plain arguments and knows no params key.
"""
from __future__ import annotations

from .params import DataParams, Params, ParamsError

# the settings the CSV reader names in its errors
CSV_KEYS = {"path": "data.csv_path", "column": "data.csv_column",
            "time_column": "data.csv_time_column", "time_format": "data.csv_time_format",
            "sep": "data.csv_sep", "decimal": "data.csv_decimal",
            "thousands": "data.csv_thousands", "missing": "data.missing",
            "features": "data.csv_feature_columns", "id_column": "data.csv_id_column",
            "time_gaps": "data.time_gaps"}
PREPARE_KEYS = {"window": "prepare.window", "horizon": "prepare.horizon",
                "transform": "prepare.transform"}


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


def fracs(p: Params) -> dict:
    return {"test": p.prepare.test_frac, "val": p.prepare.val_frac, "cal": p.prepare.cal_frac}


def season(p: Params, auto: dict) -> int:
    """``evaluate.season``, with ``auto`` read from what prepare found in the training parts."""
    if p.evaluate.season == "auto":
        return int(auto.get("season", {}).get("season", 0))
    return int(p.evaluate.season)


def check_data(p: Params, store) -> int:
    """Params that the prepared data rules out, before any work; returns the season."""
    s = season(p, store.auto)
    first = int(store.cuts.test_start.min())  # the earliest test target, in its series
    if s > first:
        raise ParamsError(f"evaluate.season ({s}) reaches before the start of a series; it "
                          f"must be <= {first} here")
    if p.model.instance_norm == "seasonal" and s > store.window:
        raise ParamsError(
            f"model.instance_norm seasonal needs a season of at most prepare.window "
            f"({store.window}), got evaluate.season {s}")
    return s


DEFAULT_LEVELS = (0.1, 0.5, 0.9)  # conformal intervals of a point forecast: the 80 % interval


def taus(p: Params) -> tuple:
    """The quantile levels intervals are scored at: the model's, or the conformal default."""
    return tuple(p.model.quantiles) or (DEFAULT_LEVELS if p.evaluate.conformal == "split"
                                        else ())


def parts(p: Params) -> tuple:
    """The parts whose windows every forecaster forecasts: the test part, and the
    calibration part when intervals are calibrated on it."""
    return ("test", "cal") if p.evaluate.conformal == "split" else ("test",)


def check_inside(csv_path: str, folder: str) -> None:
    """The CSV must sit in the folder the generate stage depends on, so that editing it
    reruns the pipeline."""
    from pathlib import Path
    path, root = Path(csv_path).resolve(), Path(folder).resolve()
    if root != path and root not in path.parents:
        raise ParamsError(f"data.csv_path must be inside {folder}/ (the folder the generate "
                          f"stage depends on, so edits rerun the pipeline), got {csv_path!r}")


def baselines_record(p: Params, store, season: int) -> dict:
    """What the baselines are fitted with; the evaluate stage checks its own against it."""
    e = p.evaluate
    return {"baselines": list(e.baselines), "taus": list(taus(p)),
            "ridge_alpha": e.ridge_alpha, "season": season, "parts": list(parts(p)),
            "data": store.key()}


def device(p: Params, section=None):
    """``train.device`` (or that of ``section``, e.g. ``params.pretrain``) on this machine,
    with the settings it cannot run caught first."""
    import shutil

    import torch
    t = p.train if section is None else section
    name = "train" if section is None else "pretrain"
    if t.device == "cuda" and not torch.cuda.is_available():
        raise ParamsError(f"{name}.device is cuda but no CUDA device is available; use auto "
                          "or cpu")
    dev = torch.device("cuda" if t.device == "cuda" or (t.device == "auto" and
                                                         torch.cuda.is_available()) else "cpu")
    if dev.type == "cuda" and t.nproc > torch.cuda.device_count():
        raise ParamsError(f"{name}.nproc is {t.nproc} but only {torch.cuda.device_count()} CUDA "
                          "device(s) are visible; use at most one process per GPU")
    if t.compile and dev.type == "cpu" and not any(shutil.which(c) for c in
                                                   ("cc", "gcc", "clang")):
        raise ParamsError(f"{name}.compile on CPU needs a C/C++ compiler (cc, gcc or clang) "
                          f"on PATH; install one or set {name}.compile false")
    return dev
