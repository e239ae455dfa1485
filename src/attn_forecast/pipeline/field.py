"""The baselines stage's step: the field of baselines ``evaluate.baselines`` names, fitted on
each series' training part, forecasting the scored windows (Naive2 where one fails). No
evaluation here: an edit of evaluation/ never refits the baselines."""
from __future__ import annotations

from ..config.schema import Params
from ..data.store import Store
from ..engine import Engine
from ..errors import ParamsError
from ..forecasters.protocol import Forecaster
from ..forecasters.registry import baselines
from ..forecasters.run import run
from ..forecasters.saved import ForecastSet
from .forecasting import baselines_record, engine_of, parts, taus


def field_of(p: Params, season: int, features: bool, prior: str | None,
             jobs: int | None = None, engine: Engine | None = None
             ) -> tuple[list[Forecaster], dict[str, str]]:
    """The forecasters ``evaluate.baselines`` names (the zero-shot prior where it is named, in
    its place) and the blend's other members, and those that cannot run here with the
    reason; the statistical ones run by ``engine`` (default: :func:`engine_of`)."""
    e = p.evaluate
    names = list(dict.fromkeys([*e.baselines, *(m for m in e.blend if m != "model")]))
    given = None
    if "zeroshot" in e.baselines:    # torch, imported only then (a second or more a stage)
        from ..forecasters.zeroshot import ZeroShot
        given = {"zeroshot": ZeroShot(prior)}
    chosen, unavailable = baselines(
        names, season=season, ridge_alpha=e.ridge_alpha, features=features,
        engine=engine if engine is not None else engine_of(p, jobs), given=given)
    why = "auto: none found in the training parts" if e.season == "auto" else \
        f"{e.season}; set a period or auto"
    if e.blend and all(m in unavailable for m in e.blend):   # a blend of nothing
        raise ParamsError(f"evaluate.blend {list(e.blend)}: none of its members can run here "
                          f"({', '.join(f'{m}: {unavailable[m]}' for m in e.blend)}, "
                          f"evaluate.season is {why}); add members that can (model, naive, ets, "
                          "theta, ...) or set evaluate.blend to []")
    return chosen, {k: f"{v} (evaluate.season is {why})" for k, v in unavailable.items()}


def field(p: Params, store: Store, season: int, prior: str | None,
          jobs: int | None = None) -> ForecastSet:
    """Every baseline ``evaluate.baselines`` names, fitted on each series' training part and
    forecasting the scored windows (with intervals when they are scored); Naive2 forecasts
    the series one cannot."""
    with engine_of(p, jobs) as engine:
        chosen, unavailable = field_of(p, season, store.n_features > 0, prior, engine=engine)
        return run(store, chosen, parts(p, store), taus(p),
                   {**baselines_record(p, store, season), "unavailable": unavailable},
                   season=season, progress="baselines")
