"""Stage field@<subset>'s step: the statistical field on one subset, each series forecast over
its holdout and its calibration cut (Naive2 where a member cannot be fitted), calibrated on
the cut, saved compact. No torch: an edit of the model's code never refits ARIMA."""
from __future__ import annotations

import sys
import time

from ..config.schema import Params
from ..data.store import Store
from ..engine import where
from ..forecasters.names import STAT_FORECASTERS
from ..forecasters.registry import baselines
from ..forecasters.run import run
from ..forecasters.saved import ForecastSet, save
from .competition import field_store, on_both_cuts
from ..setup.forecasting import baselines_record, engine_of, parts, levels_of


def statistical_field(p: Params, store: Store, season: int) -> ForecastSet:
    """The field ``evaluate.baselines`` names but the zero-shot prior (its own stage), Naive2
    forecasting the series a member cannot; run where evaluate.engine says (field.engine_of:
    this machine's processes, or a Dask cluster)."""
    e = p.evaluate
    with engine_of(p) as engine:
        chosen, _ = baselines([n for n in e.baselines if n != "zeroshot"], season=season,
                              ridge_alpha=e.ridge_alpha, features=False, engine=engine)
        return run(store, chosen, parts(p, store), levels_of(p),
                   baselines_record(p, store, season), season=season, progress="field")


def reported(p: Params, fs: ForecastSet) -> list[str]:
    """The field's forecasters the leaderboard shows: those evaluate.baselines names (a
    combination's members it does not name, the M4 benchmarks of m4_comb, are left out)."""
    return [n for n in fs.names() if n in p.evaluate.baselines]


def step(params: str, subset: str, out: str) -> None:
    """field@``subset`` -> ``out`` (the field's forecasts as the leaderboard scores them)."""
    t0 = time.perf_counter()
    fs, p, store = on_both_cuts(params, subset, field_store, statistical_field, reported)
    for line in fs.warnings:
        print(line, file=sys.stderr)
    save(out, fs, compact=True)
    ran = bool(set(fs.names()) & set(STAT_FORECASTERS))
    print(f"field@{subset}: {', '.join(fs.names())} on {store.n_series} series "
          f"({p.data.holdout}, calibrated on its calibration cut) in "
          f"{time.perf_counter() - t0:.0f} s"
          f"{where(p.evaluate.engine, p.evaluate.engine_address, ran)} -> {out}")
