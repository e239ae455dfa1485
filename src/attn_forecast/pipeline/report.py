"""The render stage's steps that read params: the summary's table of settings."""
from __future__ import annotations

from ..config.schema import Params


def settings_rows(p: Params, metrics: dict, window: int | None = None,
                  horizon: int | None = None) -> list[tuple[str, str]]:
    """The summary's table of what ran: the data, its windows (``window`` and ``horizon``: the
    prepared data's, auto resolved), the model and its training as the train stage recorded
    them (``metrics["model_run"]``: a fine-tuned prior's own architecture, the epochs it
    took), else as params.yaml gives them."""
    d, pp, t = p.data, p.prepare, p.train
    if d.kind == "csv":
        data = f"{d.csv_path}:{d.csv_column}" + (f" by {d.csv_id_column}" if d.csv_id_column
                                                 else "")
    elif d.kind == "panel":
        data = f"panel, {d.n_series} series of up to {d.n_points} points"
    elif d.kind == "competition":
        data = f"{d.competition} {d.subset} ({d.holdout})"
    else:
        data = f"{d.kind}, {d.n_points} points"
    per = " per series" if metrics.get("n_series", 1) > 1 else ""
    ran = metrics.get("model_run") or {}
    m = ran.get("settings") or p.model.model_dump()
    kind = ran.get("kind", p.model.kind)
    model = (f"{kind}, d_model {m['d_model']}, ffn {m['ffn_dim']}, layers {m['n_layers']}"
             + (f", heads {m['n_heads']}, {m['positional']} positions, pooling {m['pooling']}"
                f"{', residual' if m['residual'] else ''}" if kind == "attention" else "")
             + (f", dropout {m['dropout']}" if m["dropout"] else "")
             + (f", instance norm {m['instance_norm']}" if m["instance_norm"] != "none" else "")
             + (f", patches of {m['patch_len']} every {m['patch_stride'] or m['patch_len']}"
                if m["patch_len"] else ""))
    if ran:
        losses = ran.get("losses", [])
        members = ([f"{ran['seeds']} seeds"] if ran["seeds"] > 1 else []) + \
            ([f"losses {', '.join(losses)}"] if len(losses) > 1 else []) + \
            ([f"lookbacks {', '.join(map(str, ran['windows']))}"] if len(ran["windows"]) > 1
             else []) + \
            ([f"their {ran['combine']}"] if ran.get("members", 1) > 1 and
             ran.get("combine", "mean") != "mean" else [])
        model += f"; {ran['parameters']:,} parameters" + \
            (f" ({', '.join(members)})" if members else "") + \
            (", the prior fine-tuned" if ran["init"] == "pretrained" else "")
        epochs = f"{ran['epochs']} of {t.epochs} epochs (best {ran['best_epoch']})"
        batch = ran["batch"]
    else:
        epochs, batch = f"{t.epochs} epochs", t.batch_size or "full"
    return [("data", data),
            ("windows", f"window {window or pp.window}, horizon {horizon or pp.horizon}, "
                        f"scaler {pp.scaler}{per}, transform {pp.transform}, test "
                        f"{pp.test_frac}, val {pp.val_frac}"
                        + (f", cal {pp.cal_frac}" if pp.cal_frac else "")),
            ("model", model),
            ("training", f"{t.optimizer} lr {t.lr}, {epochs}, batch {batch}, loss {t.loss}, "
                         f"scheduler {t.scheduler}, seed {t.seed}")]
