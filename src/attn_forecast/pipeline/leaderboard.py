"""The competition pipeline's leaderboard: every subset's forecasts (the model, the field, the
zero-shot prior, their combinations) scored on the same series, then pooled the field's way:
each subset's column and "all" as the mean over all forecasts (the published figures' rule)
beside the mean over series; MASE, OWA, the sign test against Theta; and its Markdown."""
from __future__ import annotations

import numpy as np
import pandas as pd

from ..config.schema import Params
from ..data.store import Store
from ..evaluation import metrics as M
from ..evaluation.scoring import Evaluation
from ..forecasters.saved import ForecastSet
from .forecasting import check_data
from .scoring import score


def evaluated(p: Params, store: Store, model: ForecastSet, field: ForecastSet) -> Evaluation:
    check_data(p, store)
    return score(p, store, model, field)


def subset_scores(ev: Evaluation, names: list[str]) -> dict:
    """A subset's leaderboard column: each forecaster's mean sMAPE and MASE over its series
    (every forecast of a subset has the same horizon: the mean over all its forecasts), OWA,
    the series a fallback forecast for it; the sign test of each against Theta."""
    out = {}
    for name in names:
        m = ev.metrics.get(name)
        if m:
            out[name] = {"smape": m.get("smape_mean"), "mase": m.get("mase_mean"),
                         "owa": m.get("owa"), "n_failed": m.get("n_failed", 0)}
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


def leaderboard(evaluations: dict[str, Evaluation], horizons: dict[str, int],
                names: list[str]) -> dict:
    """Every subset's column and ``all`` pooled the field's way: the mean over all forecasts
    (series x step: the published figures' rule) and, beside it, the mean over series."""
    out: dict = {}
    tables = {s: ev.by_series for s, ev in evaluations.items()}
    for s, ev in evaluations.items():
        out[s] = subset_scores(ev, names)
    if len(evaluations) > 1:
        out["all"] = M.pooled(list(tables.values()), [horizons[s] for s in tables], names)
    out["sign_test_vs_theta"] = {s: sign_tests(t, names) for s, t in tables.items()}
    out["n_series"] = {s: int(ev.metrics["n_series"]) for s, ev in evaluations.items()}
    return out


# ---------------------------------------------------------------- the leaderboard's Markdown
PUBLISHED = [  # (row, yearly, quarterly, monthly, other, all per forecast, all per series)
    ("Theta (published, M3)", 16.90, 8.96, 13.85, 4.41, 13.01, 12.73),
    ("Comb (published, StatsForecast)", None, None, None, None, 12.63, None),
    ("N-BEATS (published)", 15.93, 8.84, 13.11, 4.24, 12.37, 12.13),
    ("deep ensemble (published, 14 days)", None, None, None, None, 12.27, None),
]


def _cell(v, digits: int = 2) -> str:
    return "" if v is None else f"{v:.{digits}f}"


def markdown(board: dict, subsets: list[str], names: list[str], command: str,
             holdout: str) -> str:
    """The leaderboard as tables: sMAPE (each subset, all by the field's rule and over
    series), with the published figures on the test parts; MASE and OWA; the sign tests."""
    every = "all" in board
    head = list(subsets) + (["all (mean over all forecasts)", "all (mean over series)"]
                            if every else [])
    what = "test parts" if holdout == "test" else \
        "validation cuts (the last horizon of each train part)"
    lines = [f"sMAPE on M3's {what}; the published figures average over all forecasts.",
             "", "| | " + " | ".join(head) + " |", "|---|" + "---:|" * len(head)]
    if holdout == "test" and every:
        lines += [f"| {row[0]} | " + " | ".join(_cell(v) for v in row[1:]) + " |"
                  for row in PUBLISHED]
    for n in names:
        cols = [(board[s].get(n) or {}).get("smape") for s in subsets]
        if every:
            a = board["all"].get(n) or {}
            cols += [a.get("smape"), a.get("smape_series")]
        label = f"**{n}** (this project)" if n.startswith("model") else f"{n} (this project)"
        lines.append(f"| {label} | " + " | ".join(_cell(v) for v in cols) + " |")
    for metric in ("mase", "owa"):
        lines += ["", f"{metric.upper()}:", "", "| | " + " | ".join(head) + " |",
                  "|---|" + "---:|" * len(head)]
        for n in names:
            cols = [(board[s].get(n) or {}).get(metric) for s in subsets]
            if every:
                a = board["all"].get(n) or {}
                cols += [a.get(metric), a.get(f"{metric}_series")]
            lines.append(f"| {n} | " + " | ".join(_cell(v, 3) for v in cols) + " |")
    lines += ["", "Against Theta, series by series (sMAPE; sign test, ties left out):", ""]
    for s in subsets:
        for n in ("model", "model+comb"):
            t = board["sign_test_vs_theta"].get(s, {}).get(n)
            if t:
                lines.append(f"- {s}, {n}: better on {t['wins']} of {t['n']} series "
                             f"({100 * t['share']:.1f} %), p = {t['p_value']:.2g}")
    if holdout == "test" and every:
        lines += ["", "Targets (sMAPE, the mean over all forecasts):", ""] + targets(board, subsets)
    failed = [f"{n} on {board[s][n]['n_failed']} {s}" for s in subsets for n in names
              if (board[s].get(n) or {}).get("n_failed")]
    lines += ["", "Series where Naive2 stood in for a member that could not be fitted: "
              + (", ".join(failed) if failed else "none") + ".", "",
              "Settings: competitions/params.yaml, chosen on the validation cuts only (the "
              "search: `attn-forecast tune`, competitions/tune/; every run that chose them: "
              "bench/README.md, M3).", "", f"Reproduce: `{command}`", ""]
    return "\n".join(lines)


def targets(board: dict, subsets: list[str]) -> list[str]:
    """The competition's targets, each met or missed: the model alone below Theta (published
    and this project's) on every subset and over all, at or below N-BEATS over all, and
    ``model+comb`` below the deep ensemble."""
    published = dict(zip(["yearly", "quarterly", "monthly", "other", "all"], PUBLISHED[0][1:6]))
    cols = list(subsets) + ["all"]

    def v(col: str, name: str):
        return (board.get(col, {}).get(name) or {}).get("smape")

    def verdict(ok: bool) -> str:
        return "**met**" if ok else "missed"
    out = []
    for ref, label in (("published", "Theta (published)"), ("theta", "Theta (this project)")):
        pairs = [(c, v(c, "model"), published.get(c) if ref == "published" else v(c, "theta"))
                 for c in cols]
        pairs = [(c, m, t) for c, m, t in pairs if m is not None and t is not None]
        cells = ", ".join(f"{c} {m:.2f} vs {t:.2f}" for c, m, t in pairs)
        out.append(f"- the model below {label} on every subset and over all: "
                   f"{verdict(all(m < t for _, m, t in pairs))} ({cells})")
    m, nb = v("all", "model"), PUBLISHED[2][5]
    if m is not None:
        out.append(f"- the model at or below N-BEATS ({nb:.2f}) over all: "
                   f"{verdict(m <= nb)} ({m:.2f})")
    mc, deep = v("all", "model+comb"), PUBLISHED[3][5]
    if mc is not None:
        out.append(f"- model+comb below the deep ensemble ({deep:.2f}) over all: "
                   f"{verdict(mc < deep)} ({mc:.2f})")
    return out


def horizons_of(evaluations: dict[str, Evaluation]) -> dict[str, int]:
    return {s: int(np.asarray(ev.actual).shape[1]) for s, ev in evaluations.items()}
