"""The model as a forecaster, and the forecast command on a user's CSV.

    attn-forecast forecast --model models/model.pt --csv data/raw/series.csv

Reads the file the way the training read its data (column, time column, id column, CSV
dialect and gap handling are saved in the checkpoint; every flag overrides its saved value),
applies each series' transform and scaler (a series the training knew: its training scaler;
any other: one fitted on the history given now) and forecasts ``--steps`` values (by default
the model's horizon), feeding predictions back in past it. With a blend file beside the
checkpoint (the evaluate stage's models/blend.json), the forecast is the blend's: every member
refitted on the whole series. Writes ``step, time, forecast``, a ``q<level>`` column for every
quantile level of every step (q2.5, q10 ... q97.5), made as the evaluate stage made the scored
ones (models/intervals.json: calibrated, a forecaster's own, or Naive2's spread where it has
none), and ``calibrated`` (true where a step's quantiles were calibrated: the horizon's steps;
false past it, where step H's calibrated spread grows as sqrt(step / H)), with ``id`` first
when the file has an id column; ``time`` continues the series' time at its inferred
frequency.
"""
from __future__ import annotations

import argparse
import sys

import numpy as np
import pandas as pd
import torch

from ..data import transforms
from ..data.calendar import time_features
from ..data.csv import FEATURE_PREFIX, read_table
from ..data.frequency import check_frame_regular, next_times
from ..data.scaling import fit_one
from ..errors import UserInputError, naming, run_cli
from ..evaluation.intervals import at_point
from ..forecasters.names import BLEND
from ..forecasters.protocol import at_levels, level_name
from ..io import write_csv
from ..model import checkpoint
from .outlook import blended_future, grown, read_beside, read_blend, series_quantiles

MAX_STEPS = 10_000    # --steps past this many is refused (a recursive forecast of that many
#                       steps of a long window takes hours; split it, or train a longer horizon)


# ---------------------------------------------------------------- one series' future
def forecast_series(model: torch.nn.Module, meta: dict, levels: np.ndarray, steps: int,
                    scaler: tuple[float, float], times: np.ndarray,
                    features: np.ndarray | None = None,
                    feature_scaler: tuple[np.ndarray, np.ndarray] | None = None
                    ) -> tuple[np.ndarray, np.ndarray | None]:
    """The next ``steps`` levels after ``levels`` (recursively, a horizon at a time, the median
    fed back), and a quantile head's (steps, Q) quantiles of each (None for a point model).
    ``scaler``: (center, scale) of the model series; ``features``: the raw past covariates
    (n, F) with their (center, scale)."""
    H, kind = meta["horizon"], meta["transform"]
    W = model.settings.window      # the model's context: the prior's may exceed the store's
    off = transforms.offset(kind)
    need = (meta.get("context") or min(W, meta["window"])) + off
    if len(levels) < need:
        raise UserInputError(f"the series has {len(levels)} values; this model needs at "
                             f"least {need} (window {need - off}"
                             + (f" + 1 for the {kind} transform)" if off else ")"))
    names, feats = meta["time_features"], meta["features"]
    if feats and steps > H:
        raise UserInputError(f"--steps must be <= {H} (the model's horizon) for a model with "
                             f"feature columns ({', '.join(feats)}): their future values are "
                             "not known, so it cannot feed forecasts back in")
    cal = time_features(np.concatenate([np.asarray(times).astype("datetime64[s]"),
                                        next_times(times, steps + H).astype("datetime64[s]")]),
                        names) if names else None
    fz = None
    if feats:
        cols = np.stack([transforms.feature_series(features[:, k], kind_k, repr(n))
                         for k, (n, kind_k) in enumerate(zip(feats, meta["feature_transforms"]))],
                        axis=1)
        fz = np.nan_to_num((cols - feature_scaler[0]) / feature_scaler[1], nan=0.0)
    center, scale = scaler
    hist = np.asarray(levels, dtype=np.float64)
    out, quant = [], []
    model.eval()
    with torch.no_grad():
        while len(out) < steps:
            n = len(hist)
            z = (transforms.model_series(hist[-(W + off):], kind)[-W:] - center) / scale
            seen = None
            if len(z) < W:   # a short history: the steps before it padded and masked
                seen = torch.arange(W)[None] >= W - len(z)
                z = np.r_[np.full(W - len(z), z[0]), z]
            if seen is not None and (cal is not None or fz is not None):
                raise UserInputError(f"the series has {n} values; a model with calendar or "
                                     f"feature inputs needs its whole window ({W})")
            side = _side(cal, fz, n, W, H) if seen is None else None
            zq = model(torch.tensor(z, dtype=torch.float32)[None], cal=side,
                       quantiles=True, seen=seen)[0][0].double().numpy()     # (H, Q)
            lv = np.stack([transforms.to_levels(zq[None, :, k] * scale + center, hist[-1:],
                                                kind)[0] for k in range(zq.shape[1])], axis=1)
            quant.append(lv)
            mid = list(model.settings.quantiles).index(0.5) if model.settings.quantiles else 0
            out.extend(lv[:, mid].tolist())
            hist = np.concatenate([hist, lv[:, mid]])
    head = np.concatenate(quant)[:steps] if model.settings.quantiles else None
    return np.asarray(out[:steps]), head


def _side(cal, fz, n: int, W: int, H: int):
    """(inputs (1, W, C + F), targets (1, H, C + F)) of the window after level n - 1; the
    target times' feature columns are zeros (the model never reads them)."""
    if cal is None and fz is None:
        return None
    xs, ys = [], []
    if cal is not None:
        xs.append(cal[n - W:n])
        ys.append(cal[n:n + H])
    if fz is not None:
        xs.append(fz[n - W:n].astype(np.float32))
        ys.append(np.zeros((H, fz.shape[1]), dtype=np.float32))
    return (torch.from_numpy(np.concatenate(xs, axis=1))[None],
            torch.from_numpy(np.concatenate(ys, axis=1))[None])


# ---------------------------------------------------------------- the command
# what the command calls each setting a library message names (errors.SettingError)
FLAGS = {"path": "--csv", "column": "--column", "time_column": "--time-column",
         "time_format": "--time-format", "sep": "--sep", "decimal": "--decimal",
         "thousands": "--thousands", "missing": "--missing", "id_column": "--id-column",
         "features": "the model's feature columns", "time_gaps": "--time-gaps",
         "transform": "the model's transform"}
READ = (("column", "value"), ("time_column", ""), ("id_column", ""), ("time_format", "auto"),
        ("sep", ","), ("decimal", "."), ("thousands", ""), ("missing", "error"))


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="attn-forecast forecast", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    saved = " (default: as in training)"
    ap.add_argument("--model", required=True, help="checkpoint written by the train stage")
    ap.add_argument("--csv", required=True, help="CSV file holding the series")
    ap.add_argument("--column", help="value column" + saved)
    ap.add_argument("--time-column", help="time column to sort by, '' for none" + saved)
    ap.add_argument("--id-column", help="id column of a file of many series, '' for one"
                    + saved)
    ap.add_argument("--time-format", help="auto, or a strftime format such as %%d/%%m/%%Y"
                    + saved)
    ap.add_argument("--sep", help="field separator" + saved)
    ap.add_argument("--decimal", help="decimal mark" + saved)
    ap.add_argument("--thousands", help="thousands separator, '' for none" + saved)
    ap.add_argument("--missing", choices=["error", "ffill", "drop"],
                    help="empty value cells: error, ffill (carry the last value forward) or "
                    "drop" + saved)
    ap.add_argument("--time-gaps", choices=["error", "allow"],
                    help="a time column must advance one step at a time (error) or may skip "
                    "(allow)" + saved)
    ap.add_argument("--blend", help="the blend's members and weights the evaluate stage wrote "
                    "(default: blend.json beside --model, models/blend.json in the pipeline); "
                    "'' forecasts with the model alone")
    ap.add_argument("--intervals", help="the intervals the evaluate stage calibrated (default: "
                    "intervals.json beside --model, models/intervals.json in the pipeline); "
                    "'' for none (a quantile head's own, or no quantile columns)")
    ap.add_argument("--steps", type=int,
                    help=f"values to forecast (1 to {MAX_STEPS:,}; default: the model's horizon, "
                    "the steps its intervals were calibrated for)")
    ap.add_argument("--out", default="forecast.csv", help="CSV to write (default forecast.csv)")
    return ap


@naming(FLAGS)
def main(argv: list[str] | None = None) -> None:
    args = parser().parse_args(argv)
    if args.steps is not None and not 1 <= args.steps <= MAX_STEPS:
        raise UserInputError(f"--steps must be an integer from 1 to {MAX_STEPS:,}, got "
                             f"{args.steps}")
    payload = checkpoint.read(args.model)
    model = checkpoint.model_from(payload)
    meta = payload["prepare"]
    if args.steps is None:          # the horizon the model was trained and calibrated for
        args.steps = int(meta["horizon"])
    source = meta.get("source", {})
    read = {k: getattr(args, k) if getattr(args, k) is not None else source.get(k, default)
            for k, default in READ}
    known = meta["series"]
    lookup = {name: k for k, name in enumerate(known["ids"])}
    only = known["ids"][0] if len(known["ids"]) == 1 else read["column"]
    gaps = args.time_gaps or source.get("time_gaps", "error")
    frame = read_table(args.csv, read.pop("column"), **read, features=meta["features"],
                       default_id=only)
    if read["time_column"] and gaps == "error":
        note = check_frame_regular(frame, args.csv)
        if note:
            print(f"note: {note}", file=sys.stderr)
    off = transforms.offset(meta["transform"])
    ids = frame["id"].to_numpy()
    bounds = np.r_[np.flatnonzero(np.r_[True, ids[1:] != ids[:-1]]), len(ids)]
    parts, unseen, skipped, far, hows = [], 0, [], [], set()
    blend, blend_lines = read_blend(args.blend, args.model), []
    iv = read_beside(args.intervals, args.model, "intervals.json", "--intervals")
    taus = tuple(iv["levels"]) if iv and iv.get("levels") else tuple(model.settings.quantiles)
    lags = (iv or {}).get("lags") or {}
    unseen_lag = max(int((iv or {}).get("season", 0) or 0), 1)   # an id the run never saw
    for a, b in zip(bounds[:-1], bounds[1:]):
        sid, levels = str(ids[a]), frame["value"].to_numpy()[a:b]
        feats = frame[[FEATURE_PREFIX + f for f in meta["features"]]].to_numpy()[a:b] \
            if meta["features"] else None
        k = lookup.get(sid)
        try:
            if k is not None:
                scaler = (known["center"][k], known["scale"][k])
                far += _far_from(levels, meta, scaler, sid)
                fs = (np.asarray(known["feature_center"][k]),
                      np.asarray(known["feature_scale"][k])) if feats is not None else None
            else:
                z = transforms.model_series(levels, meta["transform"], "the model's transform")
                scaler = fit_one(z[off:], meta["scaler"])
                fs = _own_feature_scaler(meta, feats) if feats is not None else None
            values, head = forecast_series(model, meta, levels, args.steps, scaler,
                                           frame["t"].to_numpy()[a:b], feats, fs)
            values, quant, how, used = _with_intervals(model, meta["horizon"], values, head,
                                                       blend, iv, sid, levels, args.steps,
                                                       lags.get(sid, unseen_lag))
            if used:
                blend_lines.append(used)
        except UserInputError as err:   # one id that cannot be forecast: the others still are
            if len(bounds) == 2:
                raise
            skipped.append(f"id {sid!r}: {err}")
            continue
        unseen += k is None
        out = pd.DataFrame({"id": sid, "step": np.arange(1, args.steps + 1),
                            "time": next_times(frame["t"].to_numpy()[a:b], args.steps),
                            "forecast": values})
        if quant is not None:   # every step's quantiles, the median being the forecast
            for j, tau in enumerate(taus):
                if tau != 0.5:
                    out[level_name(tau)] = quant[:, j]
            # a row past the calibrated steps: step H's spread grown, never calibrated
            out["calibrated"] = np.where((out["step"] <= meta["horizon"])
                                         & ("calibrated" in how), "true", "false")
            hows.add(how)
        parts.append(out)
    if not parts:
        raise UserInputError(f"no id could be forecast; the first: {skipped[0]}")
    result = pd.concat(parts, ignore_index=True)
    write_csv(args.out, result if read["id_column"] else result.drop(columns="id"))
    if skipped:
        print(f"forecast: warning: {len(skipped)} id(s) left out, the first: {skipped[0]}",
              file=sys.stderr)
    for line in far[:1]:
        print(f"forecast: warning: {line}", file=sys.stderr)
    what = f"each of {len(parts)} ids" if read["id_column"] else f"{b - a} values"
    new = f" ({unseen} id(s) not in training, scaled by their own history)" \
        if unseen and read["id_column"] else ""
    print(f"forecast: {args.steps} step{'s' if args.steps > 1 else ''} after {what}{new} -> "
          f"{args.out}")
    if hows:
        H = meta["horizon"]
        print("forecast: quantiles " + ", ".join(level_name(t) for t in taus if t != 0.5)
              + f" of every step: {'; '.join(sorted(hows))}")
        if args.steps > H:
            print(f"forecast: warning: steps {H + 1} to {args.steps} lie past the {H} the "
                  f"intervals were calibrated for: their quantiles are step {H}'s spread "
                  f"grown as sqrt(step / {H}), not calibrated (column calibrated: false)",
                  file=sys.stderr)
    if blend_lines:
        print(f"forecast: the blend of the model and baselines refitted on each whole series: "
              f"{blend_lines[0]}" + (f" (and {len(blend_lines) - 1} more series)"
                                     if len(blend_lines) > 1 else ""))


def _with_intervals(model, H: int, values: np.ndarray, head: np.ndarray | None,
                    blend: dict | None, iv: dict | None, sid: str, levels: np.ndarray,
                    steps: int, lag: int) -> tuple[np.ndarray, np.ndarray | None, str, str]:
    """The forecast (the blend's where there is one, else the model's) and every step's
    quantiles, as outlook.py makes them; how, and the blend's line of what it used."""
    taus = tuple(iv["levels"]) if iv and iv.get("levels") else ()
    head = grown(values, head, H) if head is not None else None
    raw = at_levels(head, model.settings.quantiles, taus) if head is not None and taus \
        else None
    name, used = "model", ""
    if blend:
        calibrated = ((iv or {}).get("forecasters") or {}).get(BLEND, {}).get("margins")
        member = raw if raw is not None or not calibrated else \
            at_point(values[None], len(taus))[0]       # calibration widens a point model's
        values, raw, used = blended_future(blend, sid, values, levels, steps, taus, member)
        name = BLEND
    if not taus:        # no intervals file: a quantile head's own levels, as they are
        own = head if name == "model" else None
        return values, own, "the quantile head's own" if own is not None else "", used
    season = int((blend or iv or {}).get("season", 0) or 0)
    quant, how = series_quantiles(name, values, raw, iv, levels, season, lag)
    return values, quant, f"the {name}'s, {how}" if how else "", used


FAR = 20.0   # training standard deviations: further than a trend carries a series


def _far_from(levels: np.ndarray, meta: dict, scaler: tuple[float, float], sid: str
              ) -> list[str]:
    """A warning when the last window, scaled by the training scaler of the series it is taken
    for, lies more than FAR training standard deviations from the training part's values:
    most likely another series than the one the model was trained on."""
    W, kind = meta["window"], meta["transform"]
    off = transforms.offset(kind)
    if len(levels) < W + off or meta["scaler"] == "none":
        return []
    z = (transforms.model_series(np.asarray(levels[-(W + off):], dtype=np.float64), kind)[-W:]
         - scaler[0]) / scaler[1]
    shift = float(np.abs(np.mean(z)))
    if not np.isfinite(shift) or shift <= FAR:
        return []
    return [f"the last window lies {shift:,.0f} training standard deviations from the values "
            f"of '{sid}' the model was trained on: is this its series? (a model of one series "
            "scales any file by that series' training scaler; train on this file to forecast "
            "it)"]


def _own_feature_scaler(meta: dict, feats: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Feature scalers of a series the training never saw: from the history given now."""
    c, s = [], []
    for k, (n, kind) in enumerate(zip(meta["features"], meta["feature_transforms"])):
        f = transforms.feature_series(feats[:, k], kind, repr(n))
        cs = fit_one(f[np.isfinite(f)], "zscore")
        c.append(cs[0])
        s.append(cs[1])
    return np.array(c), np.array(s)


if __name__ == "__main__":
    run_cli(main)
