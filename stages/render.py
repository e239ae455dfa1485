"""Stage render: the figures and the Markdown summary, from the evaluate outputs.

out: a folder of PNGs (overview, attention, attention_by_lag, forecast, and horizon when
forecasting several steps) and ``summary.md``. No torch here: arrays and CSVs only.
"""
from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pandas as pd

from attn_forecast import plots
from attn_forecast.errors import run_cli
from attn_forecast.io import read_json, read_npz, write_text
from attn_forecast.params import load_params
from attn_forecast.report import summary_markdown
from attn_forecast.windows import load_prepared


def _time(values: np.ndarray) -> np.ndarray:
    """Numbers stay numbers; date strings become datetimes for the axes."""
    if values.dtype.kind in "iuf":
        return values
    return pd.to_datetime(pd.Series(values.astype(str)), format="mixed").to_numpy()


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--params", default="params.yaml")
    for name in ("prepared", "history", "predictions", "horizon", "lags", "attention",
                 "metrics", "figures", "summary"):
        ap.add_argument(f"--{name}", required=True)
    args = ap.parse_args(argv)
    params = load_params(args.params)
    dpi = params.render.dpi
    prep = load_prepared(args.prepared)
    hist = pd.read_csv(args.history)
    pred = pd.read_csv(args.predictions)
    t_test = _time(pred["t"].to_numpy())
    metrics = read_json(args.metrics)
    att = read_npz(args.attention)
    has_att = att["mean"].size > 0
    fig_dir = Path(args.figures)
    fig_dir.mkdir(parents=True, exist_ok=True)
    for old in fig_dir.glob("*.png"):  # a folder out: drop figures this run does not make
        old.unlink()

    baselines = {k: v["rmse"] for k, v in metrics.items() if isinstance(v, dict) and k != "model"}
    plots.overview(fig_dir / "overview.png", epochs=hist["epoch"].to_numpy(),
                   train_loss=hist["train_loss"].to_numpy(),
                   val_loss=hist["val_loss"].to_numpy(dtype=float), t=t_test,
                   actual=pred["actual"].to_numpy(), predicted=pred["predicted"].to_numpy(),
                   weights=att["example"][-1].mean(axis=0) if has_att else None,
                   baselines=baselines, model_rmse=metrics["model"]["rmse"], dpi=dpi)
    if has_att:
        plots.attention_maps(fig_dir / "attention.png", mean_weights=att["mean"],
                             example_weights=att["example"], dpi=dpi)
        lags = pd.read_csv(args.lags)
        plots.attention_by_lag(fig_dir / "attention_by_lag.png", lags=lags["lag"].to_numpy(),
                               weight=lags["weight"].to_numpy(), dpi=dpi)
    t_all = _time(prep.t)
    spans = {part: (t_all[lo], t_all[hi]) for part, (lo, hi) in prep.spans().items()}
    plots.forecast(fig_dir / "forecast.png", t_all=t_all, values=prep.levels, spans=spans,
                   t_test=t_test, model=pred["predicted"].to_numpy(),
                   naive=pred["naive"].to_numpy(), dpi=dpi)
    horizon = pd.read_csv(args.horizon)
    if len(horizon) > 1:
        plots.horizon_errors(fig_dir / "horizon.png", steps=horizon["step"].to_numpy(),
                             errors={c: horizon[c].to_numpy() for c in horizon.columns
                                     if c != "step"}, dpi=dpi)
    write_text(args.summary, summary_markdown(metrics, params))
    print(f"render: {len(list(fig_dir.glob('*.png')))} figures -> {fig_dir}, "
          f"summary -> {args.summary}")


if __name__ == "__main__":
    run_cli(main)
