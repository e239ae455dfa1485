"""Stage evaluate's step: the saved forecasts checked against the params and data they were
made for, then every forecaster (and each combination) scored on the same windows, and its
files written: the headline metrics, every score, the tables, the blend and the intervals."""
from __future__ import annotations

import sys

from ..config.load import load_params
from ..config.schema import Params
from ..data.store import Store
from ..data.store_io import load, profile
from ..errors import UserInputError
from ..evaluation.calibration import CalibrationSet, calibration_of, with_point_quantiles
from ..evaluation.metrics import headline
from ..evaluation.scoring import Evaluation, evaluate
from ..evaluation.tables import tables
from ..forecasters.combination import FEW, blends_of, with_combinations
from ..forecasters.names import BLEND
from ..forecasters import saved
from ..forecasters.saved import CUT, ForecastSet, merge, split_part
from ..io import CSV_DIGITS, rounded, write_csv, write_json
from ..setup.forecasting import baselines_record, check_data
from .prepare import cut_of


def check_fresh(fs: ForecastSet, base: ForecastSet, now: dict) -> None:
    """The saved forecasts were made for these params and this prepared data (a stage run by
    hand, or `dvc repro -s evaluate`, could otherwise score stale ones)."""
    stale = [f"{k} {base.record.get(k)!r} (now {v!r})" for k, v in now.items()
             if base.record.get(k) != v]
    if fs.record.get("data") != now["data"]:
        stale.append("the model's forecasts are of other prepared data")
    if stale:
        raise UserInputError(f"the saved forecasts were made with other settings: "
                             f"{', '.join(stale)}; run `dvc repro` so they are made again")


def combined(p: Params, store: Store, model: ForecastSet, base: ForecastSet,
             calibrating: bool, blends: dict | None = None) -> ForecastSet:
    """The model's and the baselines' forecasts and their combinations (evaluate.blend's
    blend, and ``blends``: a benchmark's): where intervals are calibrated, a point forecast's
    quantiles are its point (so every combination has quantiles to calibrate)."""
    fs = merge(model, base)
    if calibrating:
        fs = with_point_quantiles(fs)
    return with_combinations(fs, p.evaluate.combinations, store,
                             {**blends_of(p.evaluate.blend), **(blends or {})})


def score(p: Params, store: Store, model: ForecastSet, base: ForecastSet, season: int,
          calibration: CalibrationSet | None = None) -> Evaluation:
    """The model's and the baselines' forecasts (and their combinations) scored on the test
    windows, their intervals calibrated on ``calibration`` (a competition's calibration cut),
    or with evaluate.conformal split on the store's calibration part."""
    split = p.evaluate.conformal == "split"
    fs = combined(p, store, model, base, split or calibration is not None)
    if p.evaluate.blend and BLEND not in fs.forecasts:
        raise UserInputError(f"evaluate.blend {list(p.evaluate.blend)}: no member gave a "
                             "forecast of the test part, so there is no blend; add members "
                             "that can run here or set evaluate.blend to []")
    ev = evaluate(store, fs, noise_std=p.data.noise_std, season=season,
                  few=p.evaluate.few_windows,
                  calibration=calibration, conformal=p.evaluate.conformal)
    ev.metrics["unavailable"] = base.record.get("unavailable", {})
    if BLEND in fs.record:                  # its members and mean weights (the line)
        ev.blend = fs.record[BLEND]
        ev.metrics["blend_weights"] = {k: v for k, v in ev.blend.items()
                                       if k not in ("series", "few")}
        few = ev.blend.get("few") or []
        if few:     # a handful of windows cannot tell the members apart: said once
            ev.warnings.append(
                f"warning: the blend learned the weights of {len(few)} series on fewer than "
                f"{FEW} validation windows (first: {few[0]}): they lean toward equal weights "
                "(forecasters/combination.py:SHRINK); a longer validation part "
                "(prepare.val_frac) or series give it more")
    if model.record.get("model"):
        ev.metrics["model_run"] = model.record["model"]   # what the train stage ran
    return ev


def cut_calibration(p: Params, store: Store, model: ForecastSet | None,
                    base: ForecastSet | None) -> CalibrationSet | None:
    """A competition run's calibration set: the model's and the baselines' forecasts of the
    calibration cut (the train and baselines stages', each fitted on the series up to it) and
    their combinations, on the cut's store: every forecaster calibrated as the competition
    pipeline calibrates it (evaluation.calibration.calibrated_set); None for other data."""
    cut_store = cut_of(p, store)
    if cut_store is None or model is None or base is None:
        return None
    fs = combined(p, cut_store, model, base, True)
    return calibration_of(fs, cut_store, "test", f"the calibration cut of {cut_store.n_series} "
                          "series (the horizon before the validation cut)")


def blend_file(p: Params, store: Store, season: int, ev: Evaluation) -> dict:
    """What the forecast command blends: the members (refitted there on each whole series),
    how the statistical ones are made (the season), each series' weights by id (a series the
    training never saw takes their mean) and how they were learned; no members: no blend."""
    blend = ev.blend or {}
    return {"members": blend.get("members", []), "rule": blend.get("rule"),
            "season": int(season), "mean": blend.get("mean", {}),
            "series": blend.get("series", {})}


# the stage's outputs, each a path it is given (the tables' CSVs, then the JSON files)
TABLES = ("by_series", "predictions", "predictions_plot", "horizon", "calibration", "fan")
OUTPUTS = ("metrics", "detail", *TABLES, "blend", "intervals")


def step(params: str, prepared: str, forecasts: str, baselines: str, **out: str) -> dict:
    """evaluate: the model's ``forecasts`` and the ``baselines``' scored on the prepared store;
    ``out``: a path for each of :data:`OUTPUTS`. Returns every score."""
    p = load_params(params, profile(prepared))
    store = load(prepared)
    season = check_data(p, store)
    (model, model_cut), (base, base_cut) = (split_part(saved.load(f), CUT)
                                            for f in (forecasts, baselines))
    check_fresh(model, base, baselines_record(p, store, season))
    ev = score(p, store, model, base, season, cut_calibration(p, store, model_cut, base_cut))
    for line in ev.warnings:
        print(line, file=sys.stderr)
    made = tables(ev, store)
    for name in TABLES:
        write_csv(out[name], made[name], digits=CSV_DIGITS)
    write_json(out["blend"], blend_file(p, store, season, ev))
    write_json(out["intervals"], ev.intervals)
    write_json(out["detail"], rounded(ev.metrics))
    top = {**headline({n: ev.metrics[n] for n in ev.forecasts}), "n_test": ev.metrics["n_test"]}
    write_json(out["metrics"], rounded(top))
    key = "mase_mean" if ev.metrics["n_series"] > 1 else "rmse"
    scores = " | ".join(f"{n} {m[key]:.4g}" if m else f"{n} n/a"
                        for n, m in ((n, ev.metrics[n]) for n in ev.forecasts))
    print(f"evaluate: {ev.metrics['n_series']} series, {ev.metrics['n_test']} test windows, "
          f"{key} {scores} -> {out['metrics']}")
    return ev.metrics
