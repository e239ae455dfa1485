"""A competition subset scored as its leaderboard column needs it: each stage's forecasts
(the model's, the field's, the zero-shot prior's, the peers') with their quantiles as that stage
calibrated them on the subset's calibration cut, and each combination across stages
(model+comb) made here from its members' forecasts before calibration and calibrated on the
cut the same way (a run that ends one horizon before the validation cut). Plain arguments in:
the competition's leaderboard stage (pipeline/competition_leaderboard.py) reads the params and
the committed forecasts, and evaluation/leaderboard.py pools what this scores."""
from __future__ import annotations

import numpy as np

from ..data.store import Store
from ..errors import UserInputError
from ..forecasters.protocol import Forecast
from ..forecasters.saved import ForecastSet, merge, stored
from ..forecasters.simple import fallback_for
from .calibration import CUT, RAW, UNIT, CalibrationSet, intervals, margins_record, scales
from .scoring import Evaluation, evaluate


def check_medians(fs: ForecastSet, where: str) -> None:
    """The leaderboard's audit: that every row of ``fs`` with quantiles has its point as its
    median (to 1e-9 of the point's size), so that WQL's 0.5 level and sMAPE score one
    forecast; a row that does not is refused naming ``where`` (its stage made the quantiles
    before the median was the point: rerun it)."""
    if 0.5 not in fs.levels:
        return
    mid = list(fs.levels).index(0.5)
    for name, parts in fs.forecasts.items():
        fc = parts.get("test")
        if fc is None or fc.quantiles is None:
            continue
        off = np.abs(fc.quantiles[..., mid] - fc.point) > 1e-9 * np.maximum(np.abs(fc.point),
                                                                           1.0)
        if off.any():
            raise UserInputError(
                f"{where}: {name}'s median is not its point in {int(off.sum()):,} of "
                f"{off.size:,} forecasts: every row's 0.5 quantile is its point forecast, so "
                "that WQL and sMAPE score one forecast; rerun its stage")

# the leaderboard's audit of a calibrated row: its 80 % interval's coverage on the scored
# windows inside these bounds (a row outside them has a broken head or a broken calibration)
COVERAGE_80 = (0.65, 0.95)


def check_coverage(ev: Evaluation, where: str) -> None:
    """The leaderboard's audit: every row whose intervals were calibrated (how "calibrated",
    a fallback for some series included) covers between :data:`COVERAGE_80`'s bounds at 80 %
    on ``where``'s scored windows; a row that does not is refused, naming it. A row with its
    own quantiles (a peer's raw row) is shown as it is, not audited."""
    lo, hi = COVERAGE_80
    for name, m in ev.metrics.items():
        if not isinstance(m, dict) or not str(m.get("intervals", "")).startswith("calibrated"):
            continue
        c = m.get("coverage_80")
        if c is None or not lo <= c <= hi:
            raise UserInputError(
                f"{where}: {name}'s calibrated 80 % interval covers "
                f"{'nothing scored' if c is None else f'{100 * c:.1f} %'} of the targets, "
                f"outside the {100 * lo:.0f}-{100 * hi:.0f} % every calibrated row keeps; "
                "rerun its stage")


def evaluated(store: Store, sets: dict[str, ForecastSet], cut_store: Store, season: int,
              names: tuple = (), unit_name: str = UNIT, combos: ForecastSet | None = None
              ) -> Evaluation:
    """One subset's scores: the stages' forecasts (``sets``: the model's first, then the
    field's and the prior's), their quantiles as each stage calibrated them on the
    calibration cut, and each combination across stages (``combos``, :func:`combinations`
    of ``names`` when not given) as committed (:func:`~attn_forecast.forecasters.saved.stored`),
    so that every score recomputes from the committed files."""
    if combos is None:
        combos = combinations(names, store, sets, cut_store, season, unit_name)
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


def combinations(names, store: Store, sets: dict[str, ForecastSet], cut_store: Store,
                 season: int, unit_name: str = UNIT) -> ForecastSet:
    """The combinations across stages (``names``: evaluate.combinations, model+comb) of the
    scored windows, each made from its members' forecasts before calibration and calibrated on
    ``cut_store`` (the subset's store of the calibration cut) as each stage calibrates its
    own; how, and the series a fallback's spread stood in for, in its record."""
    out = ForecastSet({"test": next(iter(sets.values())).ends["test"]}, {},
                      next(iter(sets.values())).levels,
                      record={"intervals": {"forecasters": {}}, "interval_fallback": {}})
    for name in names:
        part, how, n_fb = cross_combination(name, sets, store, cut_store, season, unit_name)
        out.forecasts[name] = part
        out.record["intervals"]["forecasters"][name] = how
        out.record["interval_fallback"][name] = n_fb
    return out


def _scored(fs: ForecastSet) -> ForecastSet:
    """A stage's set with its scored windows only (the test part, calibrated)."""
    return ForecastSet({"test": fs.ends["test"]},
                       {n: {"test": f.get("test")} for n, f in fs.forecasts.items()},
                       fs.levels, list(fs.warnings), dict(fs.record))


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
    levels = next(iter(sets.values())).levels
    fb = fallback_for(season)
    fb.fit(store)
    iv = intervals({name: test}, levels, scales(store, unit_name)[sid], sid,
                   fb.forecast(store, e, levels), cal)
    rec = margins_record(iv, levels, cal)["forecasters"][name]
    return ({"test": Forecast(test.point, iv.quantiles[name], failed=test.failed)}, rec,
            iv.fallback.get(name, 0))
