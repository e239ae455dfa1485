"""Stage baselines' step: the field of baselines ``evaluate.baselines`` names, fitted on
each series' training part, forecasting the scored windows (Naive2 where one fails), saved.
No evaluation here: an edit of evaluation/ never refits the baselines."""
from __future__ import annotations

import sys

from ..config.load import load_params
from ..config.schema import Params
from ..data.store import Store
from ..data.store_io import load, profile
from ..engine import Engine, where
from ..errors import ParamsError
from ..forecasters.names import PEERS, STAT_FORECASTERS
from ..forecasters.protocol import Forecaster
from ..forecasters.registry import baselines
from ..forecasters.run import run
from ..forecasters.saved import CUT, ForecastSet, save, with_part
from ..setup.forecasting import (baselines_record, check_data, engine_of, parts, peer_settings,
                                 levels_of)
from .prepare import cut_of


def field_of(p: Params, season: int, features: bool, prior: str | None,
             jobs: int | None = None, engine: Engine | None = None
             ) -> tuple[list[Forecaster], dict[str, str]]:
    """The forecasters ``evaluate.baselines`` names (the zero-shot prior and NeuralForecast's
    networks where they are named, in their places) and the blend's other members, and those
    that cannot run here with the reason; the statistical ones run by ``engine`` (default:
    :func:`engine_of`)."""
    e = p.evaluate
    names = list(dict.fromkeys([*e.baselines, *(m for m in e.blend if m != "model")]))
    given = {}
    if "zeroshot" in e.baselines:    # torch, imported only then (a second or more a stage)
        from ..forecasters.zeroshot import ZeroShot
        given["zeroshot"] = ZeroShot(prior)
    if set(PEERS) & set(names):      # NeuralForecast's networks (the peers extra): refused
        from ..forecasters.peers import Peer, library    # before any fitting where it is absent
        library()
        given.update({n: Peer(n, **peer_settings(p, n)) for n in PEERS if n in names})
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
        return run(store, chosen, parts(p, store), levels_of(p),
                   {**baselines_record(p, store, season), "unavailable": unavailable},
                   season=season, progress="baselines")


def step(params: str, prepared: str, out: str, pretrained: str | None) -> None:
    """baselines: the field on the prepared store -> ``out`` (a ForecastSet npz)."""
    p = load_params(params, profile(prepared))
    store = load(prepared)
    season = check_data(p, store)
    fs = field(p, store, season, pretrained)
    cut_store = cut_of(p, store)     # a competition's calibration cut: the field forecasts it
    if cut_store is not None:        # too, fitted on the series up to there (evaluate
        cut_season = check_data(p, cut_store)             # calibrates on it)
        with engine_of(p) as engine:
            chosen, _ = field_of(p, cut_season, cut_store.n_features > 0, pretrained,
                                 engine=engine)
            fs = with_part(fs, CUT, run(cut_store, chosen, ("test",), levels_of(p),
                                        season=cut_season, progress="baselines"))
    for line in fs.warnings:
        print(line, file=sys.stderr)
    found = (store.auto.get("season") or {}).get("season") or 0
    if p.evaluate.season == 0 and found > 1:
        print(f"baselines: note: evaluate.season is 0, so they fit no season; the training "
              f"parts' season is {found} (prepare): set evaluate.season to auto to use it",
              file=sys.stderr)
    save(out, fs)
    fitted = [n for n, parts in fs.forecasts.items() if parts.get("test") is not None]
    ran = bool(set(fitted) & set(STAT_FORECASTERS))
    print(f"baselines: {', '.join(fitted) or 'none'} on {len(fs.ends['test'])} test windows of "
          f"{store.n_series} series{' with intervals' if fs.levels else ''}"
          f"{where(p.evaluate.engine, p.evaluate.engine_address, ran)} -> {out}")
