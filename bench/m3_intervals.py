"""How M3's quantiles are made, chosen on the validation cuts: the unit calibration pools each
series' scores in, and the model's quantiles (its point forecast widened by conformal margins,
or a quantile head trained with the pinball loss, with or without a conformal step on top).

    python bench/m3.py --holdout validation --keep         # the field, the prior, the point
                                                            # model on the validation cuts
    python bench/m3.py --holdout validation --keep -S 'all.model.quantiles=[0.025, 0.1, 0.2,
        0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.975]'          # the same with a quantile head
    python bench/m3_intervals.py --forecasts CLONE1/competitions/m3 \\
        --head CLONE2/competitions/m3 --out bench/results/m3_intervals.json

Each subset's forecasts of its validation cut (the last horizon of every train part), their
intervals calibrated on its calibration cut (the horizon before it), exactly as the competition
pipeline's stages and leaderboard calibrate the test parts (evaluation.calibration's
calibrated_set, evaluation.subset.evaluated); the test parts are never read. The
forecasts are those of a validation run of the competition pipeline as it was at 5954f6c (its
own calibration-cut stages: each clone's competitions/m3/<subset>/calibration/). Variants:

- unit: ``level`` (each series' mean absolute level, the unit until now) or ``naive_error``
  (its in-sample seasonal naive error, MASE's and MSIS's scale);
- the model's quantiles: ``point`` (the point model's forecast at every level, widened by the
  conformal margins of its errors), ``head`` (a quantile head's own, as trained; model+comb
  still calibrated), ``head+cal`` (the head's, conformally calibrated), ``point+head`` (the
  point model's forecast with the head's spread around its median, calibrated).

The rule, written before the comparison was run:

1. The unit: the one under which the calibrated 80 % and 95 % intervals of model (point),
   model+comb and comb have the most of their 24 coverage figures (3 forecasters x 4 subsets
   x 2 levels) within 3 points of nominal; a tie goes to the lower sum of the three
   forecasters' WQL pooled over the four subsets' forecasts.
2. The model's quantiles, in that unit: among the variants whose model and model+comb cover
   80 % and 95 % within 3 points of nominal on every subset, the lowest pooled WQL of the
   model; without one, the most figures within 3 points, then the lowest WQL. A variant whose
   point forecast is the head's median must not have a pooled sMAPE more than 1 % above the
   point model's; where it has, ``point+head`` stands in for it.

Prints one table per variant (WQL, coverage 80 / 95, MSIS, sMAPE per subset and pooled) and
writes them as JSON (``--out``); the README table is generated from that file.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from attn_forecast.evaluation.calibration import UNITS, calibrated_set  # noqa: E402
from attn_forecast.forecasters import saved  # noqa: E402
from attn_forecast.forecasters.protocol import Forecast  # noqa: E402
from attn_forecast.forecasters.saved import ForecastSet  # noqa: E402
from attn_forecast.evaluation import subset as S  # noqa: E402
from attn_forecast.evaluation.leaderboard import horizons_of, leaderboard  # noqa: E402
from attn_forecast.pipeline.competition import (SUBSETS, combination_members,  # noqa: E402
                                                field_store, model_store, subset_params)
from attn_forecast.pipeline.competition_field import reported  # noqa: E402
from attn_forecast.setup.forecasting import check_data  # noqa: E402

NAMES = ["model", "model+comb", "comb"]
VARIANTS = ("point", "head", "head+cal", "point+head")
PARAMS = ROOT / "competitions" / "params.yaml"


def _with_quantiles(point: ForecastSet, head: ForecastSet | None, variant: str) -> ForecastSet:
    """The model's forecasts of one variant: the point model's, the head's, or the point
    model's forecast with the head's spread around its median."""
    if variant == "point":
        return point
    if variant in ("head", "head+cal"):
        return head
    mid = list(head.levels).index(0.5)
    out = {}
    for part, fc in point.forecasts["model"].items():
        h = head.forecasts["model"].get(part)
        out[part] = None if fc is None or h is None else Forecast(
            fc.point, fc.point[..., None] + (h.quantiles - h.quantiles[..., mid:mid + 1]))
    return ForecastSet(point.ends, {"model": out}, head.levels, [], dict(point.record))


def subset_runs(subset: str, forecasts: Path, head: Path | None, unit: str, variant: str):
    """The subset's evaluation of one unit and variant on its validation cut: each stage's
    forecasts (of the validation cut, and of the calibration cut) calibrated as the stages
    calibrate them (evaluation.calibration.calibrated_set), scored by the leaderboard's
    own step (evaluation.subset.evaluated)."""
    p, prof = subset_params(PARAMS, subset, holdout="validation")
    cp, cprof = subset_params(PARAMS, subset, holdout="calibration")
    store, cut_store = field_store(p, prof), field_store(cp, cprof)
    mstore, mcut = model_store(p, prof), model_store(cp, cprof)
    season = check_data(p, store)
    raw = {k: (saved.load(forecasts / subset / f"{k}.npz"),
               saved.load(forecasts / subset / "calibration" / f"{k}.npz"))
           for k in ("field", "zeroshot", "model")}
    if head is not None:
        heads = (saved.load(head / subset / "model.npz"),
                 saved.load(head / subset / "calibration" / "model.npz"))
        raw["model"] = tuple(_with_quantiles(m, h, variant) for m, h in zip(raw["model"], heads))
    members = combination_members(p)
    sets = {"model": calibrated_set(mstore, *raw["model"][:1], mcut, raw["model"][1], season,
                                    ["model"], members, unit),
            "field": calibrated_set(store, raw["field"][0], cut_store, raw["field"][1], season,
                                    reported(p, raw["field"][0]), members, unit),
            "zeroshot": calibrated_set(store, raw["zeroshot"][0], cut_store, raw["zeroshot"][1],
                                       season, raw["zeroshot"][0].names(), members, unit)}
    if variant == "head":            # the head's own quantiles: nothing calibrates the model
        own = raw["model"][0].forecasts["model"]["test"]
        sets["model"].forecasts["model"]["test"] = own
    return S.evaluated(store, sets, cut_store, season, tuple(p.evaluate.combinations),
                       unit)


def summary(evaluations: dict, names: list[str]) -> dict:
    board = leaderboard(evaluations, horizons_of(evaluations), names)
    out = {}
    for name in names:
        row = {}
        for s in list(evaluations) + ["all"]:
            m = board.get(s, {}).get(name) or {}
            row[s] = {k: m.get(k) for k in ("wql", "coverage_80", "coverage_95", "msis",
                                             "smape")}
        out[name] = row
    return out


def within(rows: dict, names: list[str], subsets: list[str], tol: float = 0.03) -> int:
    """How many of the coverage figures of ``names`` lie within ``tol`` of nominal."""
    return sum(abs(rows[n][s][f"coverage_{pct}"] - pct / 100) <= tol
               for n in names for s in subsets for pct in (80, 95)
               if rows[n][s].get(f"coverage_{pct}") is not None)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--forecasts", required=True, type=Path,
                    help="a validation run's competitions/m3 (field, zeroshot, point model)")
    ap.add_argument("--head", type=Path, help="a validation run's competitions/m3 whose model "
                    "has a quantile head (all.model.quantiles)")
    ap.add_argument("--subsets", default=",".join(SUBSETS["m3"]))
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    print("command: python bench/m3_intervals.py " + " ".join(sys.argv[1:]), flush=True)
    subsets = args.subsets.split(",")
    results: dict = {"subsets": subsets, "units": {},
                     "command": "python bench/m3_intervals.py " + " ".join(sys.argv[1:])}
    for unit in UNITS:
        per = {}
        for variant in VARIANTS if args.head else ("point",):
            evs = {s: subset_runs(s, args.forecasts, args.head, unit, variant) for s in subsets}
            per[variant] = summary(evs, NAMES)
            rows = per[variant]
            print(f"\nunit {unit}, model {variant}: "
                  f"{within(rows, NAMES, subsets)} of {6 * len(subsets)} within 3 points")
            for name in NAMES:
                print(f"  {name:11s} " + " | ".join(
                    f"{s} {r['wql'] or 0:.4f} {100 * (r['coverage_80'] or 0):.1f}/"
                    f"{100 * (r['coverage_95'] or 0):.1f} {r['smape'] or 0:.2f}"
                    for s, r in rows[name].items()), flush=True)
        results["units"][unit] = per
    # the rule (the module docstring)
    point = {u: v["point"] for u, v in results["units"].items()}
    unit = max(point, key=lambda u: (within(point[u], NAMES, subsets),
                                     -sum(point[u][n]["all"]["wql"] for n in NAMES)))
    results["unit"] = unit
    if args.head:
        rows = results["units"][unit]
        base = rows["point"]["model"]["all"]["smape"]
        ok = [v for v in VARIANTS if within(rows[v], ["model", "model+comb"], subsets)
              == 4 * len(subsets)]
        pool = ok or list(VARIANTS)
        pick = min(pool, key=lambda v: (-within(rows[v], ["model", "model+comb"], subsets)
                                        if not ok else 0, rows[v]["model"]["all"]["wql"]))
        if pick in ("head", "head+cal") and \
                rows[pick]["model"]["all"]["smape"] > 1.01 * base:
            pick = "point+head"
        results["model"] = pick
    print(f"\nchosen: unit {unit}" + (f", the model's quantiles {results['model']}"
                                      if args.head else ""))
    if args.out:
        args.out.write_text(json.dumps(results, indent=1, sort_keys=True) + "\n")
        print(f"-> {args.out}")


if __name__ == "__main__":
    main()
