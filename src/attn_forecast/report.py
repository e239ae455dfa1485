"""The Markdown summary: the model against every baseline, with the key params."""
from __future__ import annotations

from .params import Params

COLUMNS = ("rmse", "mae", "mase", "r2", "directional_accuracy", "skill_vs_naive", "signal_rmse")


def _cell(v) -> str:
    return "n/a" if v is None else f"{v:.4g}"


def summary_markdown(metrics: dict, p: Params) -> str:
    names = [k for k, v in metrics.items() if isinstance(v, dict)]
    lines = [
        "| forecaster | " + " | ".join(COLUMNS) + " |",
        "|---|" + "---:|" * len(COLUMNS),
    ]
    for name in names:
        row = metrics[name]
        label = f"**{name}**" if name == "model" else name
        lines.append(f"| {label} | " + " | ".join(_cell(row.get(c)) for c in COLUMNS) + " |")
    m = p.model
    model = (f"{m.kind}, d_model {m.d_model}, ffn {m.ffn_dim}, layers {m.n_layers}"
             + (f", heads {m.n_heads}, {m.positional} positions, pooling {m.pooling}"
                f"{', residual' if m.residual else ''}" if m.kind == "attention" else "")
             + (f", dropout {m.dropout}" if m.dropout else ""))
    t = p.train
    params = [
        ("data", f"{p.data.kind}" + (f", {p.data.n_points} points" if p.data.kind != "csv"
                                     else f", {p.data.csv_path}:{p.data.csv_column}")),
        ("windows", f"window {p.prepare.window}, horizon {p.prepare.horizon}, "
                    f"scaler {p.prepare.scaler}, transform {p.prepare.transform}, "
                    f"test {p.prepare.test_frac}, val {p.prepare.val_frac}"),
        ("model", model),
        ("training", f"{t.optimizer} lr {t.lr}, {t.epochs} epochs, batch "
                     f"{t.batch_size or 'full'}, loss {t.loss}, scheduler {t.scheduler}, "
                     f"seed {t.seed}"),
    ]
    notes = ["", "naive's directional_accuracy is n/a: it never predicts a move."]
    if m.kind != "attention":
        notes.append(f"No attention: an {m.kind} model has no attention weights to show.")
    return "\n".join(
        [f"### Test metrics ({metrics['n_test']} windows, original units)", ""] + lines
        + notes + ["", "| setting | value |", "|---|---|"]
        + [f"| {k} | {v} |" for k, v in params] + [""])
