"""The Markdown summary: the model against every baseline (single split and backtest), the
significance of each difference in one sentence, and the key params."""
from __future__ import annotations

from .params import Params
from .significance import sentence

META_KEYS = ("n_test", "significance", "model_seeds", "n_folds")


def _intervals(metrics: dict, names: list[str]) -> list[str]:
    """The interval scores of every forecaster that has intervals, and the ideal coverage."""
    rows = [n for n in names if metrics[n] and any(k.startswith("coverage_")
                                                   for k in metrics[n])]
    if not rows:
        return []
    pcts = sorted({k.split("_")[1] for n in rows for k in metrics[n] if k.startswith("coverage_")})
    cols = [c for p in pcts for c in (f"coverage_{p}", f"width_{p}", f"winkler_{p}")]
    cols += ["pinball", "crps"] + (["quantile_rmse"] if "quantile_rmse" in metrics[rows[0]]
                                   else [])
    out = ["", "Intervals and quantiles (coverage: the share of targets inside the interval):",
           "", "| forecaster | " + " | ".join(cols) + " |", "|---|" + "---:|" * len(cols)]
    for n in rows:
        label = f"**{n}**" if n == "model" else n
        out.append(f"| {label} | " + " | ".join(_cell(metrics[n].get(c)) for c in cols) + " |")
    ideal = [f"{k.split('_')[-1]} %: {_cell(v)}" for k, v in metrics.items()
             if k.startswith("ideal_coverage_")]
    if ideal:
        out += ["", "A perfect interval (the noise-free signal +- the known noise quantiles) "
                "covers " + ", ".join(ideal) + " of these targets."]
    return out

COLUMNS = ("rmse", "mae", "mase", "r2", "directional_accuracy", "skill_vs_naive", "signal_rmse")


def _cell(v) -> str:
    return "n/a" if v is None else f"{v:.4g}"


def forecasters(metrics: dict) -> list[str]:
    """The model and the baselines of a metrics file, in its order (None: not fitted)."""
    return [k for k, v in metrics.items() if k not in META_KEYS and (v is None or
                                                                      isinstance(v, dict))]


def _significance(sig: dict) -> list[str]:
    return [f"- {sentence(name, res)}" for name, res in sig.items()]


def backtest_markdown(bt: dict) -> list[str]:
    """The backtest's table (mean and spread over folds) and its pooled tests."""
    cols = ("rmse_mean", "rmse_std", "mae_mean", "mase_mean")
    lines = ["", f"### Rolling-origin backtest ({bt['n_folds']} folds)", "",
             "| forecaster | " + " | ".join(cols) + " |", "|---|" + "---:|" * len(cols)]
    for name in forecasters(bt):
        row = bt[name] or {}
        label = f"**{name}**" if name == "model" else name
        lines.append(f"| {label} | " + " | ".join(_cell(row.get(c)) for c in cols) + " |")
    if bt.get("significance"):
        lines += ["", "The model against each baseline, over the windows of every fold "
                  "(Diebold-Mariano, HLN-corrected, squared error):", ""]
        lines += _significance(bt["significance"])
    return lines


def _model_rows(p: Params) -> list[tuple[str, str]]:
    """The summary's model and training settings."""
    m, t = p.model, p.train
    model = (f"{m.kind}, d_model {m.d_model}, ffn {m.ffn_dim}, layers {m.n_layers}"
             + (f", heads {m.n_heads}, {m.positional} positions, pooling {m.pooling}"
                f"{', residual' if m.residual else ''}" if m.kind == "attention" else "")
             + (f", dropout {m.dropout}" if m.dropout else "")
             + (f", instance norm {m.instance_norm}" if m.instance_norm != "none" else "")
             + (f", patches of {m.patch_len} every {m.patch_stride or m.patch_len}"
                if m.patch_len else ""))
    return [("model", model),
            ("training", f"{t.optimizer} lr {t.lr}, {t.epochs} epochs, batch "
                         f"{t.batch_size or 'full'}, loss {t.loss}, scheduler {t.scheduler}, "
                         f"seed {t.seed}")]


def summary_markdown(metrics: dict, p: Params, backtest: dict | None = None) -> str:
    names = forecasters(metrics)
    lines = [
        "| forecaster | " + " | ".join(COLUMNS) + " |",
        "|---|" + "---:|" * len(COLUMNS),
    ]
    for name in names:
        row = metrics[name]
        label = f"**{name}**" if name == "model" else name
        if row is None:
            lines.append(f"| {label} | " + " | ".join("n/a" for _ in COLUMNS) + " |")
            continue
        lines.append(f"| {label} | " + " | ".join(_cell(row.get(c)) for c in COLUMNS) + " |")
    m = p.model
    params = [
        ("data", f"{p.data.kind}" + (f", {p.data.n_points} points" if p.data.kind != "csv"
                                     else f", {p.data.csv_path}:{p.data.csv_column}")),
        ("windows", f"window {p.prepare.window}, horizon {p.prepare.horizon}, "
                    f"scaler {p.prepare.scaler}, transform {p.prepare.transform}, "
                    f"test {p.prepare.test_frac}, val {p.prepare.val_frac}"),
        *_model_rows(p),
    ]
    notes = [""]
    if "naive" in names:
        notes.append("naive's directional_accuracy is n/a: it never predicts a move.")
    failed = [n for n in names if metrics[n] is None]
    if failed:
        notes.append(f"Not fitted (too short or constant): {', '.join(failed)}.")
    if m.kind != "attention":
        notes.append(f"No attention: an {m.kind} model has no attention weights to show.")
    seeds = metrics.get("model_seeds")
    if seeds:
        notes.append(f"The model is the mean of {len(seeds['rmse'])} seeds; their single RMSEs: "
                     f"{_cell(seeds['rmse_mean'])} +- {_cell(seeds['rmse_std'])}.")
    notes += _intervals(metrics, names)
    if metrics.get("significance"):
        notes += ["", "The model against each baseline on these windows (Diebold-Mariano, "
                  "HLN-corrected, squared error):", ""] + _significance(metrics["significance"])
    if backtest and backtest.get("n_folds"):
        notes += backtest_markdown(backtest)
    return "\n".join(
        [f"### Test metrics ({metrics['n_test']} windows, original units)", ""] + lines
        + notes + ["", "| setting | value |", "|---|---|"]
        + [f"| {k} | {v} |" for k, v in params] + [""])


PANEL_COLUMNS = ("mase_mean", "mase_median", "rmse_mean", "rmse_median", "smape_mean",
                 "beats_naive")


def panel_summary(metrics: dict, p: Params, ranked: dict[str, str]) -> str:
    """A panel's summary: each forecaster's scores over series (mean MASE first, the
    headline), and which series the figures show."""
    names = forecasters(metrics)
    lines = [f"### Test metrics over {metrics['n_series']} series ({metrics['n_test']} "
             "windows; mean MASE is the headline)", "",
             "| forecaster | " + " | ".join(PANEL_COLUMNS) + " |",
             "|---|" + "---:|" * len(PANEL_COLUMNS)]
    for name in names:
        row = metrics[name] or {}
        label = f"**{name}**" if name == "model" else name
        lines.append(f"| {label} | " + " | ".join(_cell(row.get(c)) for c in PANEL_COLUMNS)
                     + " |")
    notes = ["", "MASE: each series' mean absolute error over its own in-sample naive error; "
             "beats_naive: the share of series where a forecaster's MASE is below naive's."]
    if metrics.get("n_dropped"):
        notes.append(f"{metrics['n_dropped']} series too short for a window in every part "
                     "were left out.")
    failed = [n for n in names if metrics[n] is None]
    if failed:
        notes.append(f"Not fitted on a panel: {', '.join(failed)}.")
    notes.append("Figures: " + ", ".join(f"{k} series {v}" for k, v in ranked.items())
                 + " (by the model's MASE).")
    d, pp = p.data, p.prepare
    data = f"{d.kind}, {d.n_series} series of up to {d.n_points} points" \
        if d.kind == "panel" else f"{d.csv_path}: {d.csv_column} by {d.csv_id_column}"
    rows = [("data", data),
            ("windows", f"window {pp.window}, horizon {pp.horizon}, scaler {pp.scaler} per "
                        f"series, transform {pp.transform}, test {pp.test_frac}, val "
                        f"{pp.val_frac}"), *_model_rows(p)]
    return "\n".join(lines + notes + ["", "| setting | value |", "|---|---|"]
                     + [f"| {k} | {v} |" for k, v in rows] + [""])
