"""Forecast the next values of a series with a trained model.

    attn-forecast forecast --model models/model.pt --csv bars.csv --steps 20
    (or python -m attn_forecast.forecast ...)

Reads the series the way the training read it (column, time column, CSV dialect and gap
handling are saved in the checkpoint; every flag overrides its saved value), applies the
model's own transform and scaler, and forecasts ``--steps`` values, feeding predictions back in
when ``--steps`` exceeds the model's horizon. Writes ``step, time, forecast`` CSV, where
``time`` continues the series' time column at its inferred frequency.
"""
from __future__ import annotations

import argparse
import pickle
import sys

import numpy as np
import pandas as pd
import torch

from .calendar import time_features
from .data import FEATURE_PREFIX, read_csv_series
from .errors import UserInputError, run_cli
from .io import write_csv
from .model import model_from_payload
from .windows import Scaler, apply_features, to_levels, to_model_series, transform_offset


def _inputs(meta: dict, times: np.ndarray | None, features: np.ndarray | None, n: int,
            extra: int) -> tuple[np.ndarray | None, np.ndarray | None]:
    """The model's per-step side inputs for a history of ``n`` levels: calendar features of
    the history's and the next ``extra`` time stamps (level-aligned), and the past covariates
    of the history (z-aligned, scaled as in training). None where the model has none."""
    names, feats = meta.get("time_features") or [], meta.get("features") or []
    cal = fz = None
    if names:
        if times is None:
            raise UserInputError("this model takes calendar features "
                                 f"({', '.join(names)}): give the series' time column")
        future = next_times(np.asarray(times), extra)
        cal = time_features(np.concatenate([np.asarray(times).astype(str), future]), names)
    if feats:
        if features is None or features.shape[1] != len(feats):
            raise UserInputError(f"this model takes the feature columns {', '.join(feats)}: "
                                 "the CSV must hold them")
        fz = apply_features(features[:n], meta)
    return cal, fz


def _side(cal: np.ndarray | None, fz: np.ndarray | None, n: int, off: int, window: int,
          horizon: int) -> tuple | None:
    """(inputs (1, W, C + F), targets (1, H, C + F)) for the window ending after level n - 1;
    the target times' feature columns are zeros (the model never reads them)."""
    if cal is None and fz is None:
        return None
    parts_x, parts_y = [], []
    if cal is not None:  # level-aligned: the inputs are levels n - W .. n - 1
        parts_x.append(cal[n - window:n])
        parts_y.append(cal[n:n + horizon])
    if fz is not None:   # z-aligned (z row j is level j + off)
        parts_x.append(fz[n - off - window:n - off])
        parts_y.append(np.zeros((horizon, fz.shape[1]), dtype=np.float32))
    return (torch.from_numpy(np.concatenate(parts_x, axis=1))[None],
            torch.from_numpy(np.concatenate(parts_y, axis=1))[None])


def forecast_levels(model: torch.nn.Module, meta: dict, levels: np.ndarray,
                    steps: int, times: np.ndarray | None = None,
                    features: np.ndarray | None = None) -> np.ndarray:
    """The next ``steps`` levels after ``levels``, recursively in chunks of the horizon.
    A model with calendar inputs also needs the series' ``times`` (ISO 8601), one with past
    covariates their raw columns ``features`` (n_levels, F); their future values are not
    known, so such a model forecasts its horizon at most."""
    window, kind, horizon = meta["window"], meta["transform"], meta["horizon"]
    if meta.get("features") and steps > horizon:
        raise UserInputError(f"--steps must be <= {horizon} (the model's horizon) for a model "
                             f"with feature columns ({', '.join(meta['features'])}): their "
                             "future values are not known, so it cannot feed forecasts back in")
    scaler = Scaler(**meta["scaler"])
    off = transform_offset(kind)
    need = window + off
    if len(levels) < need:
        raise UserInputError(f"the series has {len(levels)} values; this model needs at "
                             f"least {need} (window {window}"
                             + (f" + 1 for the {kind} transform)" if need > window else ")"))
    cal, fz = _inputs(meta, times, features, len(levels), steps + horizon)
    hist = levels.astype(np.float64).copy()
    out: list[float] = []
    model.eval()
    with torch.no_grad():
        while len(out) < steps:
            z = scaler.transform(to_model_series(hist[-need:], kind))[-window:]
            x = torch.tensor(z, dtype=torch.float32)[None, :]
            c = _side(cal, fz, len(hist), off, window, horizon)
            z_pred = scaler.inverse(model(x, cal=c)[0].double().numpy())
            new = to_levels(z_pred, hist[-1:], kind)[0]
            out.extend(new.tolist())
            hist = np.concatenate([hist, new])
    return np.asarray(out[:steps])


def forecast_quantiles(model: torch.nn.Module, meta: dict, levels: np.ndarray,
                       times: np.ndarray | None = None,
                       features: np.ndarray | None = None) -> np.ndarray:
    """(H, Q) quantiles of the next H levels from the series' last window (a model with a
    quantile head). Recursion past the horizon is not sampled: beyond H only the median is
    forecast (by :func:`forecast_levels`)."""
    window, kind, horizon = meta["window"], meta["transform"], meta["horizon"]
    scaler = Scaler(**meta["scaler"])
    off = transform_offset(kind)
    need = window + off
    if len(levels) < need:
        forecast_levels(model, meta, levels, 1, times, features)  # raises the clear message
    hist = levels.astype(np.float64)
    z = scaler.transform(to_model_series(hist[-need:], kind))[-window:]
    cal, fz = _inputs(meta, times, features, len(hist), horizon)
    c = _side(cal, fz, len(hist), off, window, horizon)
    model.eval()
    with torch.no_grad():
        zq = model(torch.tensor(z, dtype=torch.float32)[None, :], cal=c,
                   quantiles=True)[0][0].double().numpy()          # (H, Q)
    zq = scaler.inverse(zq)
    return np.stack([to_levels(zq[None, :, k], hist[-1:], kind)[0]
                     for k in range(zq.shape[-1])], axis=-1)


def next_times(t: np.ndarray, steps: int) -> np.ndarray:
    """The ``steps`` time stamps after the series' last one, at its inferred frequency.

    Numbers continue by the most common step. ISO date strings continue by pandas' inferred
    frequency (over the last 100 stamps); business days with a holiday missing continue as
    business days; otherwise by the most common gap.
    """
    if t.dtype.kind in "iuf":
        steps_seen = np.diff(t[-100:]) if len(t) > 1 else np.ones(1)
        vals, counts = np.unique(steps_seen, return_counts=True)
        step = vals[np.argmax(counts)]
        return t[-1] + step * np.arange(1, steps + 1)
    times = pd.DatetimeIndex(pd.to_datetime(pd.Series(t[-100:].astype(str)), format="ISO8601"))
    freq = None
    if len(times) >= 3:
        with pd.option_context("future.infer_freq_returns_offset", True):
            freq = pd.infer_freq(times)  # an offset (MonthEnd, Hour...) or None
    if freq is None and len(times) > 1:
        gaps = times[1:] - times[:-1]
        if (times.day_of_week < 5).all() and set(gaps.days) <= {1, 2, 3, 4} and \
                (gaps == pd.Timedelta(days=1)).mean() > 0.5:
            freq = "B"  # weekdays, with holidays left out
        else:
            freq = pd.Series(gaps).mode().iloc[0]
    future = pd.date_range(times[-1], periods=steps + 1, freq=freq or "D")[1:]
    fmt = "%Y-%m-%d" if (times == times.normalize()).all() else "%Y-%m-%dT%H:%M:%S"
    return np.asarray(future.strftime(fmt))


def load_payload(path: str) -> dict:
    try:
        payload = torch.load(path, map_location="cpu", weights_only=True)
    except FileNotFoundError:
        raise UserInputError(f"--model: file not found: {path}") from None
    except (RuntimeError, ValueError, KeyError, TypeError, EOFError,
            pickle.UnpicklingError) as err:  # what torch.load raises on a foreign file
        raise UserInputError(f"--model: {path} is not a PyTorch checkpoint "
                             f"({type(err).__name__})") from None
    if not (isinstance(payload, dict) and {"settings", "state_dict", "prepare"} <= set(payload)):
        raise UserInputError(f"--model: {path} is not a checkpoint of this project's "
                             "train stage (no settings, state_dict and prepare entries)")
    return payload


FLAGS = {"path": "--csv", "column": "--column", "time_column": "--time-column",
         "time_format": "--time-format", "sep": "--sep", "decimal": "--decimal",
         "thousands": "--thousands", "missing": "--missing",
         "features": "the model's feature columns", "id_column": "--id-column"}


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="attn-forecast forecast", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    saved = " (default: as in training)"
    ap.add_argument("--model", required=True, help="checkpoint written by the train stage")
    ap.add_argument("--csv", required=True, help="CSV file holding the series")
    ap.add_argument("--column", help="value column" + saved)
    ap.add_argument("--time-column", help="time column to sort by, '' for none" + saved)
    ap.add_argument("--time-format", help="auto, or a strftime format such as %%d/%%m/%%Y"
                    + saved)
    ap.add_argument("--sep", help="field separator" + saved)
    ap.add_argument("--decimal", help="decimal mark" + saved)
    ap.add_argument("--thousands", help="thousands separator, '' for none" + saved)
    ap.add_argument("--missing", choices=["error", "ffill", "drop"],
                    help="empty value cells: error, ffill (carry the last value forward) or "
                    "drop" + saved)
    ap.add_argument("--id-column", help="a panel model's id column (one series per id)"
                    + saved)
    ap.add_argument("--steps", type=int, default=1, help="values to forecast (>= 1; default 1)")
    ap.add_argument("--out", default="forecast.csv", help="CSV to write (default forecast.csv)")
    return ap


def main(argv: list[str] | None = None) -> None:
    args = parser().parse_args(argv)
    if args.steps < 1:
        raise UserInputError(f"--steps must be an integer >= 1, got {args.steps}")
    payload = load_payload(args.model)
    source = payload["prepare"].get("source", {})  # how the training read its CSV
    read = {k: getattr(args, k) if getattr(args, k) is not None else source.get(k, default)
            for k, default in (("column", "value"), ("time_column", ""),
                               ("time_format", "auto"), ("sep", ","), ("decimal", "."),
                               ("thousands", ""), ("missing", "error"))}
    model = model_from_payload(payload)
    if payload["prepare"].get("kind") == "panel":
        return forecast_panel(args, payload, model, read)
    names = payload["prepare"].get("features") or []
    series = read_csv_series(args.csv, keys=FLAGS, features=names, **read)
    meta, levels, times = payload["prepare"], series["value"].to_numpy(), series["t"].to_numpy()
    feats = series[[FEATURE_PREFIX + n for n in names]].to_numpy() if names else None
    values = forecast_levels(model, meta, levels, args.steps, times, feats)
    out = pd.DataFrame({"step": np.arange(1, args.steps + 1),
                        "time": next_times(times, args.steps), "forecast": values})
    taus = list(model.settings.quantiles)
    note = ""
    if taus:  # the quantile head's forecasts for the first horizon's steps
        q = forecast_quantiles(model, meta, levels, times, feats)
        H = min(len(q), args.steps)
        for k, tau in enumerate(taus):
            if tau != 0.5:
                col = np.full(args.steps, np.nan)
                col[:H] = q[:H, k]
                out[f"q{round(100 * tau):02d}"] = col
        if args.steps > H:
            note = (f"; quantiles for the first {H} step(s) only (the model's horizon): later "
                    "steps are the median of a recursive forecast")
    write_csv(args.out, out)
    print(f"forecast: {args.steps} steps after {len(series)} values -> {args.out}{note}")


def panel_scaler(meta: dict, sid: str, levels: np.ndarray, lookup: dict | None = None
                 ) -> tuple[dict, bool]:
    """Series ``sid``'s scaler: the one training fitted on its training part, or for an id
    the training never saw, one fitted on the history given now. Returns it and whether it
    was known. ``lookup``: id -> its index in the checkpoint (built once for many ids)."""
    from .panel import _scaler
    known = meta["series"]
    kind = meta["scaler"]["kind"]
    if lookup is None:
        lookup = {name: k for k, name in enumerate(known["ids"])}
    if sid in lookup:
        k = lookup[sid]
        return {"kind": kind, "center": known["center"][k], "scale": known["scale"][k]}, True
    center, scale = _scaler(to_model_series(levels, meta["transform"]), kind)
    return {"kind": kind, "center": center, "scale": scale}, False


def feature_scalers(meta: dict, sid: str, raw: np.ndarray, lookup: dict) -> list[dict]:
    """Series ``sid``'s feature scalers: training's, or for an id the training never saw,
    fitted on the transformed columns of the history given now."""
    from .windows import feature_series
    known = meta["series"]
    if sid in lookup:
        k = lookup[sid]
        return [{"kind": "zscore", "center": c, "scale": s}
                for c, s in zip(known["feature_center"][k], known["feature_scale"][k])]
    out = []
    for j, (name, kind) in enumerate(zip(meta["features"], meta["feature_transforms"])):
        f = feature_series(raw[:, j], kind, name)
        f = f[np.isfinite(f)]
        sd = float(np.std(f)) if len(f) else 0.0
        out.append({"kind": "zscore", "center": float(np.mean(f)) if len(f) else 0.0,
                    "scale": sd if sd > 0 else 1.0})
    return out


def forecast_panel(args: argparse.Namespace, payload: dict, model: torch.nn.Module,
                   read: dict) -> None:
    """Every id of a long-format CSV: ``id, step, time, forecast`` rows, each series scaled
    as in training (an id the training never saw: by its own history)."""
    from .panel import read_panel_csv
    meta = payload["prepare"]
    id_column = args.id_column if args.id_column is not None else \
        meta.get("source", {}).get("id_column", "id")
    names = meta.get("features") or []
    if names and args.steps > meta["horizon"]:
        raise UserInputError(f"--steps must be <= {meta['horizon']} (the model's horizon) for "
                             f"a model with feature columns ({', '.join(names)}): their future "
                             "values are not known, so it cannot feed forecasts back in")
    frame = read_panel_csv(args.csv, id_column, read["column"], read["time_column"],
                           read["missing"], time_format=read["time_format"], sep=read["sep"],
                           decimal=read["decimal"], thousands=read["thousands"],
                           features=names, keys=FLAGS)
    feats_all = frame[[FEATURE_PREFIX + n for n in names]].to_numpy() if names else None
    ids = frame["id"].to_numpy()
    starts = np.flatnonzero(np.r_[True, ids[1:] != ids[:-1]])
    bounds = np.r_[starts, len(ids)]
    lookup = {name: k for k, name in enumerate(meta["series"]["ids"])}
    values_all, times_all = frame["value"].to_numpy(), frame["t"].to_numpy()
    parts, unseen, skipped = [], 0, []
    for a, b in zip(bounds[:-1], bounds[1:]):
        sid = str(ids[a])
        levels, times = values_all[a:b], times_all[a:b]
        try:
            scaler, known = panel_scaler(meta, sid, levels, lookup)
            feats = feats_all[a:b] if names else None
            extra = {"feature_scalers": feature_scalers(meta, sid, feats, lookup)} \
                if names else {}
            values = forecast_levels(model, {**meta, "scaler": scaler, **extra}, levels,
                                     args.steps, times, feats)
        except UserInputError as err:   # one id that cannot be forecast: the others still are
            skipped.append(f"id {sid!r}: {err}")
            continue
        unseen += not known
        parts.append(pd.DataFrame({"id": sid, "step": np.arange(1, args.steps + 1),
                                   "time": next_times(times, args.steps), "forecast": values}))
    if not parts:
        raise UserInputError(f"no id could be forecast; the first: {skipped[0]}")
    write_csv(args.out, pd.concat(parts, ignore_index=True))
    if skipped:
        print(f"forecast: warning: {len(skipped)} id(s) left out, the first: {skipped[0]}",
              file=sys.stderr)
    note = f" ({unseen} id(s) not in training, scaled by their own history)" if unseen else ""
    print(f"forecast: {args.steps} steps for each of {len(parts)} ids{note} -> {args.out}")


def cli() -> None:
    run_cli(main)


if __name__ == "__main__":
    cli()
