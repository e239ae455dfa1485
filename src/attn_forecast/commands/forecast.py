"""The model as a forecaster, and the forecast command on a user's CSV.

    attn-forecast forecast --model models/model.pt --csv data/raw/series.csv

Reads the file the way the training read its data (column, time column, id column, CSV
dialect and gap handling are saved in the checkpoint; every flag overrides its saved value),
or, for the generate stage's own table (data/raw/series.csv), as that table,
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
from ..data.csv import FEATURE_PREFIX, read_table
from ..data.frequency import check_frame_regular, next_times
from ..data.long_table import read_long
from ..data.scaling import fit_one
from ..errors import UserInputError, naming, run_cli
from ..forecasters.names import BLEND
from ..evaluation.outlook import far_from, lag_of, network_future, outlook
from ..forecasters.protocol import level_name
from ..io import write_csv
from ..model import checkpoint
from .outlook import read_beside, read_blend

MAX_STEPS = 10_000    # --steps past this many is refused (a recursive forecast of that many
#                       steps of a long window takes hours; split it, or train a longer horizon)


# ---------------------------------------------------------------- one series' future
def torch_runner(model: torch.nn.Module):
    """The network as evaluation/outlook.py calls it: scaled windows in, quantiles out."""
    model.eval()

    def run(z: np.ndarray, seen: np.ndarray | None, side: tuple | None) -> np.ndarray:
        with torch.no_grad():
            cal = tuple(torch.from_numpy(a) for a in side) if side is not None else None
            return model(torch.from_numpy(z), cal=cal, quantiles=True,
                         seen=torch.from_numpy(seen) if seen is not None else None
                         )[0].double().numpy()
    return run


def forecast_series(model: torch.nn.Module, meta: dict, y: np.ndarray, steps: int,
                    scaler: tuple[float, float], times: np.ndarray,
                    features: np.ndarray | None = None,
                    feature_scaler: tuple[np.ndarray, np.ndarray] | None = None
                    ) -> tuple[np.ndarray, np.ndarray | None]:
    """The next ``steps`` levels after ``levels`` (recursively, a horizon at a time, the median
    fed back), and a quantile head's (steps, Q) quantiles of each (None for a point model).
    ``scaler``: (center, scale) of the model series; ``features``: the raw past covariates
    (n, F) with their (center, scale)."""
    fz = None
    if features is not None and meta["features"]:
        cols = np.stack([transforms.feature_series(features[:, k], kind_k, repr(n))
                         for k, (n, kind_k) in enumerate(zip(meta["features"],
                                                             meta["feature_transforms"]))],
                        axis=1)
        fz = [np.nan_to_num((cols - feature_scaler[0]) / feature_scaler[1], nan=0.0)]
    values, head = network_future(torch_runner(model), meta, model.settings.window,
                                  model.settings.quantiles, [y], [times], steps, [scaler],
                                  fz)
    return values[0], (head[0] if head is not None else None)


# ---------------------------------------------------------------- the command
# what the command calls each setting a library message names (errors.SettingError)
FLAGS = {"path": "--csv", "column": "--column", "time_column": "--time-column",
         "time_format": "--time-format", "sep": "--sep", "decimal": "--decimal",
         "thousands": "--thousands", "missing": "--missing", "id_column": "--id-column",
         "features": "the model's feature columns", "time_gaps": "--time-gaps",
         "transform": "the model's transform"}
READ = (("column", "value"), ("time_column", ""), ("id_column", ""), ("time_format", "auto"),
        ("sep", ","), ("decimal", "."), ("thousands", ""), ("missing", "error"))


LONG = ("id", "t", "value", "signal")    # the generate stage's table's first columns


def is_long_table(path: str) -> bool:
    """Whether ``path`` is the generate stage's own table (its header begins
    :data:`LONG`), which the command reads as it is, not as the model's source file."""
    try:
        with open(path) as fh:
            head = [c.strip().strip('"') for c in fh.readline().strip().split(",")]
    except (OSError, UnicodeDecodeError):
        return False                 # read_table says what is wrong with it
    return tuple(head[:len(LONG)]) == LONG


def long_frame(path: str, features: list[str]) -> pd.DataFrame:
    """The generate stage's table as the frame :func:`read_table` gives (``id, t, value,
    signal`` and ``feature:<name>`` columns, each id's rows together in time order)."""
    raw = read_long(path, list(features))
    frame = pd.DataFrame({"id": np.repeat(raw.ids.astype(object), np.diff(raw.offsets)),
                          "t": raw.t, "value": raw.y, "signal": raw.signal})
    for j, name in enumerate(features):
        frame[FEATURE_PREFIX + name] = raw.features[:, j]
    return frame


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
    ap.add_argument("--allow-far", action="store_true",
                    help="forecast a series whose last window lies far (20 training standard "
                    "deviations) from the values it was trained on; without it that is an "
                    "error (most likely a file of other data)")
    return ap


@naming(FLAGS)
def main(argv: list[str] | None = None) -> None:
    args = parser().parse_args(argv)
    if args.steps is not None and not 1 <= args.steps <= MAX_STEPS:
        raise UserInputError(f"--steps must be an integer from 1 to {MAX_STEPS:,}, got "
                             f"{args.steps}")
    payload = checkpoint.trained(args.model)
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
    if is_long_table(args.csv) and args.column is args.time_column is args.id_column is None:
        # the generate stage's own table (data/raw/series.csv): its columns, whatever file
        # and columns the model's data came from
        frame = long_frame(args.csv, meta["features"])
        several = frame["id"].nunique() > 1
        read.update(time_column="t", id_column="id" if several or read["id_column"] else "")
    else:
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
    levels = tuple(iv["levels"]) if iv and iv.get("levels") else tuple(model.settings.quantiles)
    for a, b in zip(bounds[:-1], bounds[1:]):
        sid, y = str(ids[a]), frame["value"].to_numpy()[a:b]
        feats = frame[[FEATURE_PREFIX + f for f in meta["features"]]].to_numpy()[a:b] \
            if meta["features"] else None
        k = lookup.get(sid)
        try:
            if k is not None:
                scaler = (known["center"][k], known["scale"][k])
                far += far_from(y, meta, scaler, sid)
                fs = (np.asarray(known["feature_center"][k]),
                      np.asarray(known["feature_scale"][k])) if feats is not None else None
            else:
                z = transforms.model_series(y, meta["transform"], "the model's transform")
                scaler = fit_one(z[off:], meta["scaler"])
                fs = _own_feature_scaler(meta, feats) if feats is not None else None
            values, head = forecast_series(model, meta, y, args.steps, scaler,
                                           frame["t"].to_numpy()[a:b], feats, fs)
            values, quant, how, used = outlook(BLEND if blend else "model",
                                               model.settings.quantiles, meta["horizon"],
                                               values, head, blend, iv, sid, y,
                                               args.steps, lag_of(iv, sid))
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
            for j, tau in enumerate(levels):
                if tau != 0.5:
                    out[level_name(tau)] = quant[:, j]
            # a row past the calibrated steps: step H's spread grown, never calibrated
            out["calibrated"] = np.where((out["step"] <= meta["horizon"])
                                         & ("calibrated" in how), "true", "false")
            hows.add(how)
        parts.append(out)
    if not parts:
        raise UserInputError(f"no id could be forecast; the first: {skipped[0]}")
    if far and not args.allow_far:    # most likely a file of other data: nothing written
        raise UserInputError(far[0].replace("is this its series?", "not its series, it "
                                            "seems") + "; --allow-far forecasts it anyway"
                             + (f" ({len(far)} series so far off)" if len(far) > 1 else ""))
    result = pd.concat(parts, ignore_index=True)
    write_csv(args.out, result if read["id_column"] else result.drop(columns="id"))
    if skipped:
        print(f"forecast: warning: {len(skipped)} id(s) left out, the first: {skipped[0]}",
              file=sys.stderr)
    for line in far[:1]:    # --allow-far: forecast, and say so
        print(f"forecast: warning: {line}", file=sys.stderr)
    what = f"each of {len(parts)} ids" if read["id_column"] else f"{b - a} values"
    new = f" ({unseen} id(s) not in training, scaled by their own history)" \
        if unseen and read["id_column"] else ""
    print(f"forecast: {args.steps} step{'s' if args.steps > 1 else ''} after {what}{new} -> "
          f"{args.out}")
    if hows:
        H = meta["horizon"]
        print("forecast: quantiles " + ", ".join(level_name(t) for t in levels if t != 0.5)
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
