"""Stage render's step: the figures and the Markdown summary (with its table of the settings
that ran), from the evaluate and train outputs. No torch: arrays and CSVs only."""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from ..config.load import load_params
from ..config.schema import Params
from ..data.store_io import load, profile
from ..evaluation.metrics import ranked
from ..io import read_json, read_npz, replace_files, write_text
from ..report import figures
from ..report.summary import summary_markdown

# the stage's inputs, each a path it is given
INPUTS = ("prepared", "history", "predictions", "horizon", "lags", "attention", "calibration",
          "fan", "metrics", "backtest", "backtest_folds", "by_series")


def text_ids(path: str) -> pd.DataFrame:
    """A CSV with its ``id`` column as written ("NA", "001" and "1e3" stay text); the other
    columns' NaN are missing values, as write_csv writes them."""
    cols = pd.read_csv(path, nrows=0).columns
    return pd.read_csv(path, dtype={"id": str}, keep_default_na=False,
                       na_values={c: ["NaN", ""] for c in cols if c != "id"})


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


def step(params: str, figures_dir: str, summary: str, **inputs: str) -> None:
    """render: the figures -> ``figures_dir`` (replaced at the end: a failed or interrupted run
    leaves the previous ones), the summary -> ``summary``; ``inputs``: :data:`INPUTS`."""
    i = inputs
    p = load_params(params, profile(i["prepared"]))
    store = load(i["prepared"])
    metrics, backtest = read_json(i["metrics"]), read_json(i["backtest"])
    by_series = text_ids(i["by_series"])
    rows = ranked(by_series)
    shown = {which: by_series["id"].iloc[r] for which, r in rows.items()}
    data = figures.Inputs(store=store, history=pd.read_csv(i["history"]),
                          predictions=text_ids(i["predictions"]), by_series=by_series,
                          metrics=metrics, attention=read_npz(i["attention"]),
                          lags=pd.read_csv(i["lags"]), horizon=pd.read_csv(i["horizon"]),
                          calibration=pd.read_csv(i["calibration"]), fan=pd.read_csv(i["fan"]),
                          folds=pd.read_csv(i["backtest_folds"]) if backtest.get("n_folds")
                          else None, kind=p.model.kind, dpi=p.render.dpi)
    with replace_files(figures_dir, "*.png") as fig_dir:
        figures.draw_all(fig_dir, data, shown)
    write_text(summary, summary_markdown(metrics, settings_rows(p, metrics, store.window,
                                                                store.horizon),
                                         p.model.kind, backtest, shown))
    print(f"render: {len(list(Path(figures_dir).glob('*.png')))} figures -> {figures_dir}, "
          f"summary -> {summary}")
