"""The competition pipeline's leaderboard: every subset's forecasts (the model, the field, the
zero-shot prior, their combinations) scored on the same series, their intervals calibrated on
the subset's calibration cut (the *_cal stages' forecasts: a run that ends one horizon before
the validation cut), then pooled the field's way: each subset's column and "all" as the mean
over all forecasts (the published figures' rule) beside the mean over series; MASE, OWA, WQL,
MSIS and the intervals' coverage; the fev aggregate (the geometric mean over M3's yearly,
quarterly and monthly tasks of each score relative to seasonal naive's); the sign test
against Theta; the published figures beside (competitions/published/), never mixed in."""
from __future__ import annotations

import numpy as np
import pandas as pd

from ..config.schema import Params
from ..data.store import Store
from ..evaluation import intervals as Q
from ..evaluation import metrics as M
from ..evaluation.calibration import CalibrationSet, calibration_of
from ..evaluation.scoring import Evaluation
from ..forecasters.protocol import Forecast, central_intervals
from ..forecasters.saved import ForecastSet
from ..report.leaderboard import published  # noqa: F401  (the stage reads it here)
from .forecasting import check_data
from .evaluate import combined, score

INTERVAL_KEYS = ("wql", "msis", "coverage_80", "coverage_95", "n_interval_fallback",
                 "intervals")
FEV_TASKS = ("yearly", "quarterly", "monthly")    # M3's tasks in fev (other is not one)


def evaluated(p: Params, store: Store, model: ForecastSet, field: ForecastSet,
              calibration: CalibrationSet | None = None) -> Evaluation:
    return score(p, store, model, field, check_data(p, store), calibration)


def calibration_cut(p: Params, store: Store, model: ForecastSet, field: ForecastSet,
                    model_ids: np.ndarray) -> CalibrationSet:
    """The calibration cut's forecasts (``store``: the field's store of the cut, one window a
    series; ``model_ids``: the series of the model's store, in its order) as a calibration
    set, over the series both hold (a series too short for the model's context there is
    the field's alone), with every combination's forecast."""
    keep = np.flatnonzero(np.isin(store.ids, model_ids))
    at = {s: k for k, s in enumerate(model_ids)}
    rows = np.array([at[s] for s in store.ids[keep]], dtype=np.int64)
    ends = store.ends("test")
    assert len(ends) == store.n_series, "a calibration cut has one window a series"

    def take(fs: ForecastSet, idx: np.ndarray) -> ForecastSet:
        def row(f: Forecast | None) -> Forecast | None:
            return None if f is None else Forecast(
                f.point[idx], None if f.quantiles is None else f.quantiles[idx],
                failed=None if f.failed is None else f.failed[idx])
        return ForecastSet({"test": ends[keep]},
                           {n: {"test": row(f.get("test"))} for n, f in fs.forecasts.items()},
                           fs.taus)
    fs = combined(p, store, take(model, rows), take(field, keep), calibrating=True)
    return calibration_of(fs, store, "test", f"the calibration cut of {len(keep)} series (the "
                          "horizon before the validation cut)")


def subset_scores(ev: Evaluation, names: list[str]) -> dict:
    """A subset's leaderboard column: each forecaster's mean sMAPE and MASE over its series
    (every forecast of a subset has the same horizon: the mean over all its forecasts), OWA,
    the series a fallback forecast for it; its WQL (pooled over the subset, as fev scores a
    task), MSIS (the mean over series), the coverage of its 80 % and 95 % intervals, and how
    they were made; the sign test of each against Theta."""
    out = {}
    for name in names:
        m = ev.metrics.get(name)
        if m:
            out[name] = {"smape": m.get("smape_mean"), "mase": m.get("mase_mean"),
                         "owa": m.get("owa"), "n_failed": m.get("n_failed", 0),
                         **{k: m[k] for k in INTERVAL_KEYS if k in m}}
    return out


def sign_tests(table: pd.DataFrame, names: list[str], against: str = "theta") -> dict:
    """Series by series, each forecaster against Theta on sMAPE: wins, series, share, p."""
    if f"{against}_smape" not in table:
        return {}
    out = {}
    for name in names:
        if name != against and f"{name}_smape" in table:
            res = M.sign_test(table, against=name, metric="smape").get(against)
            if res:
                out[name] = res
    return out


def pooled_intervals(evaluations: dict[str, Evaluation], names: list[str]) -> dict:
    """WQL and coverage over every forecast of every subset: WQL pooled as over one task
    (each level's summed loss over the summed absolute targets, then the mean over levels);
    each interval's coverage the share of all targets inside it."""
    out: dict = {}
    for name in names:
        if not all(name in ev.quantiles for ev in evaluations.values()):
            continue
        num, den, inside, total = 0.0, 0.0, {}, 0
        for ev in evaluations.values():
            n, d = Q.wql_parts(ev.actual, ev.quantiles[name], ev.taus)
            num, den, total = num + n, den + d, total + ev.actual.size
            for lo, hi, pct in central_intervals(ev.taus):
                q = ev.quantiles[name]
                inside[pct] = inside.get(pct, 0) + int(np.sum((ev.actual >= q[..., lo])
                                                              & (ev.actual <= q[..., hi])))
        out[name] = {"wql": float(np.mean(num / den)) if den > 0 else None,
                     **{f"coverage_{pct}": v / total for pct, v in inside.items()}}
    return out


def fev_aggregate(board: dict, subsets: list[str], names: list[str]) -> dict:
    """fev's aggregate: each forecaster's geometric mean over M3's tasks (yearly, quarterly,
    monthly) of its MASE and WQL relative to seasonal naive's (naive's on yearly, which has
    no season: fev's seasonal naive of period 1)."""
    tasks = [s for s in FEV_TASKS if s in subsets]
    out: dict = {}
    for name in names:
        row = {}
        for metric in ("mase", "wql"):
            ratios = []
            for s in tasks:
                ref = board[s].get("seasonal_naive") or board[s].get("naive") or {}
                v, r = (board[s].get(name) or {}).get(metric), ref.get(metric)
                if v is None or not r:
                    break
                ratios.append(v / r)
            else:
                if ratios:
                    row[f"{metric}_relative"] = float(np.exp(np.mean(np.log(ratios))))
        if row:
            out[name] = {**row, "tasks": tasks}
    return out


def leaderboard(evaluations: dict[str, Evaluation], horizons: dict[str, int],
                names: list[str]) -> dict:
    """Every subset's column and ``all`` pooled the field's way: the mean over all forecasts
    (series x step: the published figures' rule) and, beside it, the mean over series; WQL
    and coverage pooled over every forecast; the fev aggregate over the M3 tasks."""
    out: dict = {}
    tables = {s: ev.by_series for s, ev in evaluations.items()}
    for s, ev in evaluations.items():
        out[s] = subset_scores(ev, names)
    if len(evaluations) > 1:
        out["all"] = M.pooled(list(tables.values()), [horizons[s] for s in tables], names)
        for name, row in pooled_intervals(evaluations, names).items():
            if name in out["all"]:
                out["all"][name].update(row)
    fev = fev_aggregate(out, list(evaluations), names)
    if fev:
        out["fev_aggregate"] = fev
    out["sign_test_vs_theta"] = {s: sign_tests(t, names) for s, t in tables.items()}
    out["n_series"] = {s: int(ev.metrics["n_series"]) for s, ev in evaluations.items()}
    return out


def horizons_of(evaluations: dict[str, Evaluation]) -> dict[str, int]:
    return {s: int(np.asarray(ev.actual).shape[1]) for s, ev in evaluations.items()}
