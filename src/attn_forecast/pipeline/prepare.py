"""Stage prepare's step: every series cut into its parts, transformed and scaled by its
training part, with what ``auto`` chose from the data (window, season, horizon); the store
saved, its lines printed."""
from __future__ import annotations

import copy
import dataclasses
import sys

import numpy as np

from ..config.checks import check_patches
from ..config.load import load_with_choices
from ..config.schema import Params
from ..data import seasons, splits, transforms
from ..data.build import build
from ..data.horizon import FoldPlan, Shares, auto_horizon
from ..data.long_table import Raw, raw_of, read_long
from ..data.store import Store
from ..data.store_io import save
from ..errors import ParamsError, named
from ..setup.folds import backtest_folds, fold_parts
from ..setup.forecasting import check_data, check_norm
from .generate import chunks, source_record
from ..setup.keys import PARAMS_KEYS


def fracs(p: Params) -> dict:
    return {"test": p.prepare.test_frac, "val": p.prepare.val_frac, "cal": p.prepare.cal_frac,
            "blend": bool(p.evaluate.blend)}   # the validation part's second half: the blend's


def horizon_of(p: Params, raw: Raw) -> int | None:
    """``prepare.horizon``: a number, or auto: the competition's horizon of its series, or
    None (a real series': its frequency's, chosen by :func:`auto_horizon_of`)."""
    h = p.prepare.horizon
    if raw.horizons is None:
        return int(h) if h != "auto" else None
    found = int(raw.horizons.max())
    if h != "auto" and (raw.horizons != h).any():
        raise ParamsError(f"data.kind competition forecasts each series' whole test part at "
                          f"once: set prepare.horizon to {found} (the {p.data.subset} horizon) "
                          f"or auto, got {h}")
    return found


def cutting(p: Params) -> tuple[Shares, FoldPlan | None]:
    """How params cut each series, and the backtest's folds (None without a backtest)."""
    pp, b = p.prepare, p.backtest
    shares = Shares(test=pp.test_frac, val=pp.val_frac, cal=pp.cal_frac,
                    blend=bool(p.evaluate.blend), off=transforms.offset(pp.transform),
                    min_context=pp.min_context)
    folds = FoldPlan(b.folds, fold_size=b.fold_size, train_size=b.train_size, gap=b.gap,
                     wanted=fold_parts(p)) if b.folds else None
    return shares, folds


def auto_horizon_of(p: Params, raw: Raw, season: int, window: int) -> dict:
    """``prepare.horizon: auto`` on real data (data/horizon.py's rule, the backtest's folds
    as params set them), its reason worded with params keys."""
    got = auto_horizon(raw, season, window, *cutting(p))
    return {**got, "reason": named(got["reason"], PARAMS_KEYS)}


def fit_norm(p: Params, season: int, window: int, profile: dict, auto_keys) -> dict:
    """What ``auto`` chose must fit what the user set: a seasonal instance norm reads one
    season of each window, so with a season longer than the window, an auto-chosen seasonal
    norm becomes the last value's (recorded in the profile every later stage resolves by, and
    returned as ``{key: why}``), and one the user set is refused here, before any training.
    (A fine-tuned prior keeps its own norm.)"""
    norm = p.model.instance_norm
    if p.train.init == "pretrained" or norm != "seasonal" or not season or season <= window:
        return {}
    if "model.instance_norm" not in auto_keys:
        check_norm(norm, season, window)
    profile["resolved"]["values"]["model.instance_norm"] = "last"
    return {"model.instance_norm": f"last, not seasonal: season {season} > window {window}"}


def prepare(p: Params, raw: Raw, profile: dict, auto_keys=frozenset()) -> Store:
    """The prepared store of the long table ``raw``: ``auto`` window and season chosen from
    the training parts (recorded with their reasons and the params' ``profile``, which
    :func:`fit_norm` may adjust to what the user set; ``auto_keys``: the params keys ``auto``
    chose, every other one counts as set by the user)."""
    pp, m = p.prepare, p.model
    if pp.time_features and raw.t.dtype.kind != "M":
        raise ParamsError("prepare.time_features needs dates in the time column "
                          "(data.csv_time_column), but this data is indexed by step numbers; "
                          "set prepare.time_features to [] or read a CSV with a date column")
    horizon = horizon_of(p, raw)
    n_train = splits.cut(np.diff(raw.offsets), pp.test_frac, pp.val_frac, pp.cal_frac,
                         raw.horizons).val_start
    auto = seasons.choose(raw.y, raw.offsets, n_train, pp.window, m.patch_len,
                          m.patch_stride, periods=raw.periods)  # the training parts only
    window = auto["window"]["window"] if "window" in auto else pp.window
    check_patches(window, m.patch_len, m.patch_stride)
    season = auto["season"]["season"] if p.evaluate.season == "auto" else p.evaluate.season
    if horizon is None:           # auto on real data: the frequency's, where the parts hold it
        auto["horizon"] = auto_horizon_of(p, raw, int(season or 0), window)
        horizon = auto["horizon"]["horizon"]
    if raw.periods is None:       # MASE's and MSIS's scale: the in-sample seasonal naive error
        raw = dataclasses.replace(raw, periods=np.full(len(raw.ids), max(int(season or 0), 1),
                                                       dtype=np.int64))
    profile = copy.deepcopy(profile)
    adjusted = fit_norm(p, int(season or 0), window, profile, auto_keys)
    auto["profile"] = profile
    if adjusted:
        auto["adjusted"] = adjusted
    store = build(raw, window=window, horizon=horizon, fracs=fracs(p), scaler=pp.scaler,
                  transform=pp.transform, time_features=pp.time_features,
                  feature_transforms=pp.feature_transforms, source=source_record(p.data),
                  auto=auto, test_size=raw.horizons, context=pp.min_context)
    check_data(p, store)          # a season the series cannot hold: refused before any work
    if p.backtest.folds:          # and folds without a window in a part they need
        backtest_folds(p, store)
    return store



def prepared(p: Params, profile: dict, inputs: str = "data/external") -> Store:
    """generate and prepare in memory (the competition pipeline's stages, and a
    competition's calibration cut in the default pipeline's: :func:`cut_of`)."""
    import pandas as pd
    features = list(p.data.csv_feature_columns) if p.data.kind == "csv" else []
    frame = pd.concat(list(chunks(p.data, inputs)), ignore_index=True)
    return prepare(p, raw_of(frame, features), profile)


def cut_of(p: Params, store: Store) -> Store | None:
    """A competition run's calibration cut (the default pipeline's, data.kind competition):
    the subset's series prepared as ``store`` was (its params and profile) but ending one
    horizon before the validation cut, so that a run on it forecasts the cut as the
    competition pipeline's stages do; None for other data (and for the cut itself)."""
    if p.data.kind != "competition" or p.data.holdout == "calibration":
        return None
    cut = p.model_copy(update={"data": p.data.model_copy(update={"holdout": "calibration"})})
    return prepared(cut, store.auto["profile"])


def report(store: Store, p: Params, profile: str, chosen: dict) -> tuple[list[str], list[str]]:
    """prepare's lines: the windows, what auto chose, the season; and its warnings (series
    left out)."""
    pp, d = p.prepare, p.data
    n = store.meta()["n_windows"]
    auto = store.auto
    feats = f", features {', '.join(store.features)}" if store.features else ""
    blend = f"{n['blend']} blend / " if n.get("blend") else ""
    lines = [f"prepare: {store.n_series} series, {n['train']} train / {n['val']} val / {blend}"
             f"{n['cal']} cal / {n['test']} test windows of {store.window} -> {store.horizon}, "
             f"scaler {pp.scaler}, transform {pp.transform}{feats}"]
    if chosen:
        adjusted = auto.get("adjusted", {})
        lines.append(f"prepare: auto for {profile} data (data.kind {d.kind}): "
                     + ", ".join(f"{k} {adjusted.get(k, v)}" for k, v in chosen.items())
                     + ("; the prior, fine-tuned, keeps its own model.* architecture and norm"
                        " (train prints the model that ran)"
                        if p.train.init == "pretrained" and any(k.startswith("model.")
                                                                for k in chosen) else ""))
    lines.append(f"prepare: season of the training parts: {auto['season']['season'] or 'none'}"
                 f" ({auto['season']['reason']})"
                 + (f"; window {store.window} ({auto['window']['reason']})"
                    if "window" in auto else ""))
    if "horizon" in auto:       # an auto horizon of real data: the frequency's
        h = auto["horizon"]
        lines.append(f"prepare: horizon {h['horizon']} ({h['reason']})")
    warnings = [f"prepare: warning: {store.dropped['count']} series too short for a window in "
                f"every part were left out (first: {', '.join(store.dropped['ids'])})"] \
        if store.dropped["count"] else []
    return lines, warnings



def step(params: str, series: str, out: str) -> None:
    """prepare: the long table ``series`` -> the store folder ``out``; its lines on stdout,
    its warnings (series left out) on stderr."""
    p, chosen, prof = load_with_choices(params)
    profile = {"name": prof["profile"], "resolved": prof}   # what every later stage resolves by
    d = p.data
    raw = read_long(series, d.csv_feature_columns if d.kind == "csv" else [])
    store = prepare(p, raw, profile, auto_keys=set(chosen))
    del raw
    save(out, store)
    lines, warnings = report(store, p, profile["name"], chosen)
    lines[0] += f" -> {out}"
    print("\n".join(lines))
    for line in warnings:
        print(line, file=sys.stderr)
