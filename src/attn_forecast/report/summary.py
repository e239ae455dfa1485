"""The Markdown summary: every forecaster's scores (one series: its own; many: over series),
the significance of each difference in one sentence, intervals, the backtest, and the key
params."""
from __future__ import annotations

from ..evaluation.significance import sentence
from ..forecasters.names import to_use

META_KEYS = ("n_test", "n_series", "n_dropped", "significance", "model_seeds", "n_folds",
             "unavailable", "sign_test", "model_run", "significance_blend", "blend_weights",
             "by_step")
ONE = ("rmse", "mae", "mase", "r2", "directional_accuracy", "skill_vs_naive", "signal_rmse")
MANY = ("mase_mean", "mase_median", "rmse_mean", "rmse_median", "smape_mean", "beats_naive")


def _cell(v) -> str:
    return "n/a" if v is None else f"{v:.4g}"


def forecasters(metrics: dict) -> list[str]:
    """The forecasters of a metrics file (None: not fitted), the blend first (the forecast
    to use), then in the file's order."""
    names = [k for k, v in metrics.items() if k not in META_KEYS and (v is None or
                                                                       isinstance(v, dict))]
    first = to_use([n for n in names if metrics[n]])
    return sorted(names, key=lambda n: n != first)


def _table(metrics: dict, names: list[str], cols: tuple) -> list[str]:
    """One row a forecaster; the forecast to use in bold (the blend, else the model)."""
    bold = to_use([n for n in names if metrics.get(n)])
    lines = ["| forecaster | " + " | ".join(cols) + " |", "|---|" + "---:|" * len(cols)]
    for name in names:
        row = metrics[name] or {}
        label = f"**{name}**" if name == bold else name
        lines.append(f"| {label} | " + " | ".join(_cell(row.get(c)) for c in cols) + " |")
    return lines


SHOWN_PCTS = ("80", "95")   # the intervals the summary's table shows (every one is scored)


def _intervals(metrics: dict, names: list[str]) -> list[str]:
    """The interval scores of every forecaster that has intervals (the 80 % and 95 %
    intervals' coverage and width, WQL, MSIS, CRPS), how they were made, and the ideal
    coverage."""
    rows = [n for n in names if metrics[n] and any(k.startswith("coverage_")
                                                   for k in metrics[n])]
    if not rows:
        return []
    have = {k.split("_")[1] for n in rows for k in metrics[n] if k.startswith("coverage_")}
    pcts = [p for p in SHOWN_PCTS if p in have] or sorted(have)
    cols = [f"coverage_{p}" for p in pcts] + [f"width_{p}" for p in pcts]
    cols += [c for c in ("wql", "msis", "crps") if any(c in metrics[n] for n in rows)]
    cols += ["quantile_rmse"] if "quantile_rmse" in metrics[rows[0]] else []
    how: dict[str, list[str]] = {}
    for n in rows:
        how.setdefault(str(metrics[n].get("intervals", "own")), []).append(n)
    out = ["", "Intervals and quantiles (coverage: the share of targets inside the interval; "
           "WQL as fev and Chronos score it, MSIS as the M4 competition did):", ""] \
        + _table(metrics, rows, tuple(cols)) + ["", "How they were made: " + "; ".join(
            f"{k}: {', '.join(v)}" for k, v in how.items()) + "."]
    ideal = [f"{k.split('_')[-1]} %: {_cell(v)}" for k, v in metrics.items()
             if k.startswith("ideal_coverage_")]
    if ideal:
        out += ["", "A perfect interval (the noise-free signal +- the known noise quantiles) "
                "covers " + ", ".join(ideal) + " of these targets."]
    return out


def _significance(sig: dict) -> list[str]:
    return [f"- {sentence(name, res)}" for name, res in sig.items()]


def backtest_markdown(bt: dict) -> list[str]:
    """The backtest's table (means and spread over folds) and its pooled tests."""
    names = forecasters(bt)
    keys = next((list(bt[n]) for n in names if bt[n]), [])
    cols = tuple(k for k in keys if k.endswith(("_mean", "_std")) and
                 not k.startswith(("coverage_", "width_", "winkler_", "pinball", "crps")))
    lines = ["", f"### Rolling-origin backtest ({bt['n_folds']} folds)", ""]
    lines += _table(bt, names, cols)
    if bt.get("significance"):
        lines += ["", "The model against each baseline, over the windows of every fold "
                  "(Diebold-Mariano, HLN-corrected, squared error):", ""]
        lines += _significance(bt["significance"])
    if bt.get("significance_blend"):
        lines += ["", "The blend against each forecaster, over the windows of every fold:", ""]
        lines += _significance(bt["significance_blend"])
    return lines


def summary_markdown(metrics: dict, settings: list[tuple[str, str]], kind: str = "attention",
                     backtest: dict | None = None, shown: dict[str, str] | None = None) -> str:
    """``settings``: the rows of the settings table (what ran); ``kind``: the model's kind;
    ``shown``: which series the figures show (best, median, worst), for many series."""
    names = forecasters(metrics)
    many = metrics.get("n_series", 1) > 1
    title = (f"### Test metrics over {metrics['n_series']} series ({metrics['n_test']} windows;"
             " mean MASE is the headline)" if many else
             f"### Test metrics ({metrics['n_test']} windows, original units)")
    notes = [""]
    if many:
        notes.append("MASE: each series' mean absolute error over its own in-sample naive "
                     "error; beats_naive: the share of series where a forecaster's MASE is "
                     "below naive's.")
    elif "naive" in names:
        notes.append("naive's directional_accuracy is n/a: it never predicts a move.")
    for name, why in (metrics.get("unavailable") or {}).items():
        notes.append(f"{name} is n/a: {why}.")
    failed = [n for n in names if metrics[n] is None and n not in
              (metrics.get("unavailable") or {})]
    if failed:
        notes.append(f"Not fitted (too short or constant): {', '.join(failed)}.")
    stood_in = [f"{n} on {metrics[n]['n_failed']}" for n in names
                if (metrics[n] or {}).get("n_failed")]
    if stood_in:
        notes.append("Scored on a fallback's forecasts (naive2) where they gave none: "
                     f"{', '.join(stood_in)} series.")
    if metrics.get("n_dropped"):
        notes.append(f"{metrics['n_dropped']} series too short for a window in every part were "
                     "left out.")
    if kind != "attention":
        notes.append(f"No attention: an {kind} model has no attention weights to show.")
    seeds = metrics.get("model_seeds")
    if seeds:
        key = seeds["score"]
        notes.append(f"The model is the mean of {len(seeds['values'])} seeds; their single "
                     f"{key.upper() if key == 'rmse' else key}s: {_cell(seeds['mean'])} "
                     f"+- {_cell(seeds['std'])}.")
    if metrics.get("blend_weights"):
        notes.append(f"blend: {metrics['blend_weights']['line']}.")
    notes += _intervals(metrics, names)
    if metrics.get("significance"):
        pooled = " (pooled over series, in units of each series' naive error)" if many else ""
        notes += ["", f"The model against each baseline on these windows{pooled} "
                  "(Diebold-Mariano, HLN-corrected, squared error):", ""]
        notes += _significance(metrics["significance"])
    if metrics.get("significance_blend"):
        notes += ["", "The blend against each forecaster, its members among them:", ""]
        notes += _significance(metrics["significance_blend"])
    if backtest and backtest.get("n_folds"):
        notes += backtest_markdown(backtest)
    if shown and many:
        notes += ["", "Figures: " + ", ".join(f"{k} series {v}" for k, v in shown.items())
                  + " (by the model's MASE)."]
    return "\n".join([title, ""] + _table(metrics, names, MANY if many else ONE) + notes
                     + ["", "| setting | value |", "|---|---|"]
                     + [f"| {k} | {v} |" for k, v in settings] + [""])
