"""A competition's leaderboard from its subsets' evaluations: each subset's column (sMAPE, MASE,
OWA, the fallbacks, WQL, MSIS, the intervals' coverage, the scores at each step ahead), "all"
pooled the field's way (the mean over every forecast, the published figures' rule, beside the
mean over series; WQL and coverage over every forecast), fev's aggregate over M3's tasks and
the sign test against Theta, series by series. The pipeline's leaderboard stage
(pipeline/competition_leaderboard.py) reads the forecasts and writes what this computes;
report/leaderboard.py writes it as Markdown."""
from __future__ import annotations

import numpy as np
import pandas as pd

from ..forecasters.protocol import central_intervals
from . import intervals as Q
from . import metrics as M
from .scoring import Evaluation

INTERVAL_KEYS = ("wql", "msis", "coverage_80", "coverage_95", "n_interval_fallback",
                 "intervals")
FEV_TASKS = ("yearly", "quarterly", "monthly")    # M3's tasks in fev (other is not one)


def subset_scores(ev: Evaluation, names: list[str]) -> dict:
    """A subset's leaderboard column: each forecaster's mean sMAPE and MASE over its series
    (every forecast of a subset has the same horizon: the mean over all its forecasts), OWA,
    the series a fallback forecast for it; its WQL (pooled over the subset, as fev scores a
    task), MSIS (the mean over series), the coverage of its 80 % and 95 % intervals, and how
    they were made; its sMAPE and MASE at each step ahead (lists of the horizon)."""
    out = {}
    steps = ev.metrics.get("by_step") or {}
    for name in names:
        m = ev.metrics.get(name)
        if m:
            out[name] = {"smape": m.get("smape_mean"), "mase": m.get("mase_mean"),
                         "owa": m.get("owa"), "n_failed": m.get("n_failed", 0),
                         **{k: m[k] for k in INTERVAL_KEYS if k in m},
                         **{f"{k}_by_step": steps[name][k] for k in ("smape", "mase")
                            if k in steps.get(name, {})}}
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
            n, d = Q.wql_parts(ev.actual, ev.quantiles[name], ev.levels)
            num, den, total = num + n, den + d, total + ev.actual.size
            for lo, hi, pct in central_intervals(ev.levels):
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
