"""Stage leaderboard's step (the competition pipeline's): every subset's forecasts (the
model, the field, the zero-shot prior, their combinations) scored on the same series, their
intervals calibrated on the subset's calibration cut (each stage's own; a combination across
stages here, from its members' forecasts of the cut: a run that ends one horizon before the
validation cut), then pooled the field's way (evaluation/leaderboard.py: each subset's
column, "all" over every forecast beside the mean over series, the fev aggregate, the sign
test against Theta); the published figures beside (competitions/published/), never mixed in.
Its rows: the model's, then every forecaster of the registry (forecasters/names.py) scored."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from ..config.load import read_yaml
from ..config.schema import Params
from ..forecasters import saved
from ..forecasters.names import NAMES, PEERS
from ..io import rounded, write_json, write_text
from ..data.store import Store
from ..evaluation.calibration import (CUT, RAW, UNIT, CalibrationSet, intervals,
                                      margins_record, scales)
from ..evaluation.leaderboard import horizons_of, leaderboard
from ..evaluation.scoring import Evaluation, evaluate
from ..forecasters.protocol import Forecast
from ..forecasters.saved import ForecastSet, merge, stored
from ..forecasters.simple import fallback_for
from ..report.leaderboard import markdown, test_runs
from ..report.leaderboard import published as published_of
from .competition import SUBSETS, field_store, subset_params
from .forecasting import check_data

def evaluated(p: Params, store: Store, sets: dict[str, ForecastSet], cut_store: Store,
              unit_name: str = UNIT, combos: ForecastSet | None = None) -> Evaluation:
    """One subset's scores: the stages' forecasts (``sets``: the model's first, then the
    field's and the prior's), their quantiles as each stage calibrated them on the
    calibration cut, and each combination across stages (``combos``, :func:`combinations`
    when not given) as committed (:func:`~attn_forecast.forecasters.saved.stored`), so that
    every score recomputes from the committed files."""
    season = check_data(p, store)
    if combos is None:
        combos = combinations(p, store, sets, cut_store, unit_name)
    fs = merge(*(_scored(x) for x in sets.values()), stored(combos))
    how = {n: r for x in (*sets.values(), combos)
           for n, r in x.record.get("intervals", {}).get("forecasters", {}).items()}
    fallback = {n: c for x in (*sets.values(), combos)
                for n, c in x.record.get("interval_fallback", {}).items()}
    ev = evaluate(store, fs, noise_std=None, season=season)        # the quantiles as given
    for name, rec in how.items():
        if ev.metrics.get(name) is not None:
            ev.metrics[name].update(intervals=rec["how"],
                                    n_interval_fallback=fallback.get(name, 0))
    ev.metrics["unavailable"] = next((x.record.get("unavailable") for x in sets.values()
                                      if x.record.get("unavailable")), {})
    return ev


def combinations(p: Params, store: Store, sets: dict[str, ForecastSet], cut_store: Store,
                 unit_name: str = UNIT) -> ForecastSet:
    """The combinations across stages (evaluate.combinations, model+comb) of the scored
    windows, each made from its members' forecasts before calibration and calibrated on
    ``cut_store`` (the subset's store of the calibration cut) as each stage calibrates its
    own; how, and the series a fallback's spread stood in for, in its record."""
    season = check_data(p, store)
    out = ForecastSet({"test": next(iter(sets.values())).ends["test"]}, {},
                      next(iter(sets.values())).taus,
                      record={"intervals": {"forecasters": {}}, "interval_fallback": {}})
    for name in p.evaluate.combinations:
        part, how, n_fb = cross_combination(name, sets, store, cut_store, season, unit_name)
        out.forecasts[name] = part
        out.record["intervals"]["forecasters"][name] = how
        out.record["interval_fallback"][name] = n_fb
    return out


def _scored(fs: ForecastSet) -> ForecastSet:
    """A stage's set with its scored windows only (the test part, calibrated)."""
    return ForecastSet({"test": fs.ends["test"]},
                       {n: {"test": f.get("test")} for n, f in fs.forecasts.items()},
                       fs.taus, list(fs.warnings), dict(fs.record))


def cross_combination(name: str, sets: dict[str, ForecastSet], store: Store,
                      cut_store: Store, season: int, unit_name: str = UNIT
                      ) -> tuple[dict, dict, int]:
    """A combination of forecasters of several stages (model+comb): the equal-weight mean of
    its members' forecasts and quantiles before calibration, of the scored windows and of the
    calibration cut (over the series every member forecast there), its quantiles calibrated
    on the cut as each stage calibrates its own. Returns its parts, its intervals' record and
    the series Naive2's spread stood in for."""
    members = name.split("+")
    owner = {m: next(x for x in sets.values() if m in x.forecasts) for m in members}
    raw = [owner[m].forecasts[m][RAW] for m in members]
    test = Forecast(np.mean([f.point for f in raw], axis=0),
                    np.mean([f.quantiles for f in raw], axis=0),
                    failed=np.any([f.failed for f in raw if f.failed is not None], axis=0)
                    if any(f.failed is not None for f in raw) else None)
    ids = [np.asarray(owner[m].record["cut_ids"]) for m in members]
    common = [i for i in cut_store.ids if all(i in set(x) for x in ids)]
    at = [{s: k for k, s in enumerate(x)} for x in ids]
    cut = [owner[m].forecasts[m][CUT] for m in members]
    rows = [np.array([a[i] for i in common], dtype=np.int64) for a in at]
    failed = [c.failed[r] for c, r in zip(cut, rows) if c.failed is not None]
    cut_fc = Forecast(np.mean([c.point[r] for c, r in zip(cut, rows)], axis=0),
                      np.mean([c.quantiles[r] for c, r in zip(cut, rows)], axis=0),
                      failed=np.any(failed, axis=0) if failed else None)
    every = cut_store.ends("test")
    ends = every[np.isin(cut_store.ids[cut_store.series_of(every)], common)]
    unit = scales(cut_store, unit_name)
    cal = CalibrationSet({name: cut_fc}, cut_store.targets(ends),
                         unit[cut_store.series_of(ends)],
                         f"the calibration cut of {len(common)} series (the horizon before the "
                         "validation cut)", unit_name=unit_name)
    e = next(iter(sets.values())).ends["test"]
    sid = store.series_of(e)
    taus = next(iter(sets.values())).taus
    fb = fallback_for(season)
    fb.fit(store)
    iv = intervals({name: test}, taus, scales(store, unit_name)[sid], sid,
                   fb.forecast(store, e, taus), cal)
    rec = margins_record(iv, taus, cal)["forecasters"][name]
    return ({"test": Forecast(test.point, iv.quantiles[name], failed=test.failed)}, rec,
            iv.fallback.get(name, 0))


def rows(evaluations: dict[str, Evaluation], combinations) -> list[str]:
    """The leaderboard's rows: the model, its ``combinations`` across stages, then every
    forecaster of the registry (forecasters/names.py: NAMES, in its order) scored anywhere."""
    scored = {n for ev in evaluations.values() for n, m in ev.metrics.items()
              if isinstance(m, dict) and m}
    return [n for n in ("model", *combinations, *NAMES) if n in scored]


def peers_of(params: str | Path) -> list[str]:
    """The NeuralForecast peers the competition file's ``peers`` section names (its
    ``input_size`` is no peer), each a stage's forecasts the leaderboard scores."""
    return [n for n in (read_yaml(params).get("peers") or {}) if n in PEERS]


def step(params: str, forecasts: str, metrics: str, table: str, published: str,
         test_runs_file: str) -> dict:
    """leaderboard: each subset's ``forecasts`` (<subset>/model.npz, field.npz, zeroshot.npz,
    and <peer>.npz for each NeuralForecast peer the params file's ``peers`` names) scored ->
    ``metrics`` (json), ``table`` (Markdown, with the ``published`` figures and the runs that
    scored the test parts beside) and <subset>/combinations.npz."""
    folder = Path(forecasts)
    subsets = [s for s in SUBSETS["m3"] if (folder / s / "model.npz").is_file()]
    peers = peers_of(params)      # the NeuralForecast peers' stages
    evaluations, holdout, combos_named, measured = {}, "test", (), {}
    for s in subsets:
        p, prof = subset_params(params, s)
        holdout, combos_named = p.data.holdout, tuple(p.evaluate.combinations)
        cp, cprof = subset_params(params, s, holdout="calibration")
        sets = {k: saved.load(folder / s / f"{k}.npz")
                for k in ("model", "field", "zeroshot", *peers)}
        store = field_store(p, prof)
        for k, fs in sets.items():     # every input the subset's windows, before scoring
            saved.check_against(fs, store.ends("test"), store.horizon, str(folder / s / k)
                                + ".npz")
        measured.update({n: sets[n].record["peer"]["library"] for n in peers})
        cut_store = field_store(cp, cprof)
        combos = combinations(p, store, sets, cut_store)
        ev = evaluated(p, store, sets, cut_store, combos=combos)
        for line in ev.warnings:
            print(f"{s}: {line}", file=sys.stderr)
        evaluations[s] = ev
        # every scored forecast is committed: the combinations across stages, scored as stored
        saved.save(folder / s / "combinations.npz", combos, compact=True)
    names = rows(evaluations, combos_named)
    board = leaderboard(evaluations, horizons_of(evaluations), names)
    if measured:    # whose run each peer's row is: the library and version that trained it
        board["measured_with"] = measured
    write_json(metrics, rounded(board))
    command = "cd competitions && dvc repro" + (
        " (with params.yaml holdout: validation)" if holdout != "test" else "")
    write_text(table, markdown(rounded(board), subsets, names, command, holdout,
                               published_of(published), test_runs(test_runs_file)))
    a = board.get("all", {})
    print("leaderboard: " + ", ".join(f"{n} {a[n]['smape']:.2f} / {a[n].get('wql') or 0:.3f}"
                                      for n in ("model", "model+comb", "theta", "comb")
                                      if n in a)
          + f" (sMAPE / WQL, over all forecasts) -> {metrics}")
    return board
