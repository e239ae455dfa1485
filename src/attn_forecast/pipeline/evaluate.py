"""The evaluate stage's steps: the saved forecasts checked against the params and data they
were made for, then every forecaster (and each combination) scored on the same windows."""
from __future__ import annotations

from ..config.schema import Params
from ..data.store import Store
from ..errors import UserInputError
from ..evaluation.calibration import CalibrationSet, with_point_quantiles
from ..evaluation.scoring import Evaluation, evaluate
from ..forecasters.combination import blends_of, with_combinations
from ..forecasters.names import BLEND
from ..forecasters.saved import ForecastSet, merge


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
                  calibration=calibration, conformal=p.evaluate.conformal)
    ev.metrics["unavailable"] = base.record.get("unavailable", {})
    if BLEND in fs.record:                  # its members and mean weights (the line)
        ev.blend = fs.record[BLEND]
        ev.metrics["blend_weights"] = {k: v for k, v in ev.blend.items() if k != "series"}
    if model.record.get("model"):
        ev.metrics["model_run"] = model.record["model"]   # what the train stage ran
    return ev


def blend_file(p: Params, store: Store, season: int, ev: Evaluation) -> dict:
    """What the forecast command blends: the members (refitted there on each whole series),
    how the statistical ones are made (the season), each series' weights by id (a series the
    training never saw takes their mean) and how they were learned; no members: no blend."""
    blend = ev.blend or {}
    return {"members": blend.get("members", []), "rule": blend.get("rule"),
            "season": int(season), "mean": blend.get("mean", {}),
            "series": blend.get("series", {})}
