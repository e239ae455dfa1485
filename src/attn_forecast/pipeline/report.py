"""The render stage's steps that read params: the summary's table of settings."""
from __future__ import annotations

from ..config.schema import Params


def settings_rows(p: Params, metrics: dict) -> list[tuple[str, str]]:
    """The summary's table of what ran: data, windows, model, training."""
    d, pp, m, t = p.data, p.prepare, p.model, p.train
    if d.kind == "csv":
        data = f"{d.csv_path}:{d.csv_column}" + (f" by {d.csv_id_column}" if d.csv_id_column
                                                 else "")
    elif d.kind == "panel":
        data = f"panel, {d.n_series} series of up to {d.n_points} points"
    else:
        data = f"{d.kind}, {d.n_points} points"
    per = " per series" if metrics.get("n_series", 1) > 1 else ""
    model = (f"{m.kind}, d_model {m.d_model}, ffn {m.ffn_dim}, layers {m.n_layers}"
             + (f", heads {m.n_heads}, {m.positional} positions, pooling {m.pooling}"
                f"{', residual' if m.residual else ''}" if m.kind == "attention" else "")
             + (f", dropout {m.dropout}" if m.dropout else "")
             + (f", instance norm {m.instance_norm}" if m.instance_norm != "none" else "")
             + (f", patches of {m.patch_len} every {m.patch_stride or m.patch_len}"
                if m.patch_len else ""))
    return [("data", data),
            ("windows", f"window {pp.window}, horizon {pp.horizon}, scaler {pp.scaler}{per}, "
                        f"transform {pp.transform}, test {pp.test_frac}, val {pp.val_frac}"
                        + (f", cal {pp.cal_frac}" if pp.cal_frac else "")),
            ("model", model),
            ("training", f"{t.optimizer} lr {t.lr}, {t.epochs} epochs, batch "
                         f"{t.batch_size or 'full'}, loss {t.loss}, scheduler {t.scheduler}, "
                         f"seed {t.seed}")]
