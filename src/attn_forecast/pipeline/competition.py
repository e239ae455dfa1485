"""What the competition pipeline's stages (competitions/dvc.yaml; each one's step in
pipeline/competition_<stage>.py) share: one subset's params (every key auto: the competition
profile, i.e. competitions/params.yaml's ``all`` and the subset's own section), its series
prepared in memory, and a stage's forecasts made twice, of its holdout and of the
calibration cut, its intervals calibrated on the cut inside the stage (so the cut's forecasts
are no output of their own)."""
from __future__ import annotations

import re
from pathlib import Path

from ..config.load import SUBSETS, check_competition_file, profile, read_yaml, resolved
from ..config.schema import Params
from ..data.store import Store
from ..errors import ParamsError
from ..evaluation.calibration import calibrated_set
from ..forecasters.saved import ForecastSet
from .prepare import prepared
from ..setup.forecasting import check_data

__all__ = ["SUBSETS"]  # the competitions' subsets (config.load's), read by the stages


def subset_params(path: str | Path, subset: str, overrides: dict | None = None,
                  holdout: str | None = None, competition: str | None = None
                  ) -> tuple[Params, dict]:
    """One subset's params: ``data.kind competition`` with the competition and holdout of the
    competition pipeline's params file, every other key auto (so the competition profile's:
    that file's ``all``, then the subset's section); and its profile. ``overrides``: params
    sections whose keys replace those (a search's trial: ``{"train": {"lr": 0.002}}``);
    ``holdout``, ``competition``: instead of the file's (M1 and Tourism take M3's settings of
    the same subset)."""
    path = Path(path)
    c = read_yaml(path) or {}
    check_competition_file(path, c)
    raw = {"data": {"kind": "competition",
                    "competition": competition or c.get("competition", "m3"),
                    "subset": subset, "holdout": holdout or c.get("holdout", "test")}}
    raw.update({k: dict(v) for k, v in (overrides or {}).items() if k != "data"})
    root = path.resolve().parent.parent          # the project: competitions/ lies in it
    prof = profile(raw, root, path)               # the settings: of this file, wherever it is
    try:
        return resolved(raw, root, prof)[0], prof
    except ParamsError as err:   # a rule across keys: of this file's settings of the subset
        raise ParamsError(re.sub(r"^params\.yaml: ", f"{path} (all, then {subset}): ",
                                 str(err))) from None


def field_store(p: Params, prof: dict) -> Store:
    """The subset's series for the field: every series with a value before its test part
    (the statistical models read each series' whole history, not the model's windows; no
    model reads this store, so the model's instance norm is not held against its window)."""
    pp = p.prepare.model_copy(update={"window": 1, "min_context": 0})
    m = p.model.model_copy(update={"instance_norm": "none"})
    return prepared(p.model_copy(update={"prepare": pp, "model": m}),
                    {"name": prof["profile"], "resolved": prof})


def model_store(p: Params, prof: dict) -> Store:
    """The subset's series as the train stage's prepare would store them."""
    return prepared(p, {"name": prof["profile"], "resolved": prof})


def combination_members(p: Params) -> set[str]:
    """The forecasters a combination across stages joins (evaluate.combinations: model+comb):
    their forecasts before calibration are kept for the leaderboard."""
    return {m for c in p.evaluate.combinations for m in c.split("+")}


def on_both_cuts(path: str | Path, subset: str, store_of, forecast, keep
                 ) -> tuple[ForecastSet, Params, Store]:
    """A stage's step: ``forecast(p, store, season)`` of the subset's holdout (the params
    file's) and of its calibration cut (the horizon before the validation cut: nothing was
    chosen on it), each on its own ``store_of(p, profile)``, then every quantile calibrated on
    the cut (evaluation.calibration.calibrated_set); ``keep(p, fs)``: the forecasters the
    stage reports. Returns the calibrated set, the holdout's params and its store."""
    made = []
    for holdout in (None, "calibration"):
        p, prof = subset_params(path, subset, holdout=holdout)
        store = store_of(p, prof)
        season = check_data(p, store)
        made.append((p, store, season, forecast(p, store, season)))
    (p, store, season, fs), (_, cut_store, _, cut) = made
    return calibrated_set(store, fs, cut_store, cut, season, keep(p, fs),
                          combination_members(p)), p, store
