"""Stage render: the figures and the Markdown summary, from the evaluate outputs.

out: a folder of PNGs (overview, attention, attention_by_lag, forecast, horizon when forecasting
several steps, backtest when the backtest is on) and ``summary.md``. No torch here: arrays and
CSVs only.
"""
from __future__ import annotations

import attn_forecast  # noqa: F401, I001  (first: pins CPU code paths before numpy and torch load)
import argparse
from pathlib import Path

import numpy as np
import pandas as pd

from attn_forecast import plots
from attn_forecast.errors import run_cli
from attn_forecast.io import read_json, read_npz, replace_files, write_text
from attn_forecast.params import Params, load_params
from attn_forecast.report import forecasters, summary_markdown
from attn_forecast.windows import Prepared, load_prepared


def _time(values: np.ndarray) -> np.ndarray:
    """Numbers stay numbers; date strings become datetimes for the axes."""
    if values.dtype.kind in "iuf":
        return values
    # generate writes dates as ISO 8601 (one format for the whole column)
    return pd.to_datetime(pd.Series(values.astype(str)), format="ISO8601").to_numpy()


def model_bands(pred: pd.DataFrame) -> list[tuple]:
    """The model's central intervals in predictions.csv: (lower, upper, percent) for each
    pair of quantile columns predicted_qXX, predicted_q(100-XX)."""
    levels = sorted(int(c[len("predicted_q"):]) for c in pred.columns
                    if c.startswith("predicted_q"))
    return [(pred[f"predicted_q{lo:02d}"].to_numpy(), pred[f"predicted_q{100 - lo:02d}"]
             .to_numpy(), 100 - 2 * lo) for lo in levels if lo < 50 and 100 - lo in levels]


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--params", default="params.yaml")
    for name in ("prepared", "history", "predictions", "horizon", "lags", "attention",
                 "calibration", "metrics", "backtest", "backtest-folds", "figures", "summary"):
        ap.add_argument(f"--{name}", required=True)
    args = ap.parse_args(argv)
    params = load_params(args.params)
    prep = load_prepared(args.prepared)
    hist = pd.read_csv(args.history)
    pred = pd.read_csv(args.predictions)
    metrics = read_json(args.metrics)
    backtest = read_json(args.backtest)
    att = read_npz(args.attention)
    # drawn into a temporary folder that replaces the figures at the end: a failed or
    # interrupted run leaves the previous figures as they were
    with replace_files(args.figures, "*.png") as fig_dir:
        _figures(fig_dir, params, prep, hist, pred, metrics, att, args)
        cal = pd.read_csv(args.calibration)
        coverage = {c: cal[c].to_numpy(dtype=float) for c in cal.columns
                    if c != "nominal" and cal[c].notna().any()}
        if coverage:
            plots.calibration(fig_dir / "calibration.png", nominal=cal["nominal"].to_numpy(),
                              coverage=coverage, dpi=params.render.dpi)
        if backtest.get("n_folds"):
            folds = pd.read_csv(args.backtest_folds)
            plots.backtest_errors(fig_dir / "backtest.png", folds=folds["fold"].to_numpy(),
                                  errors={c: folds[c].to_numpy(dtype=float)
                                          for c in folds.columns if c not in ("fold", "origin")},
                                  dpi=params.render.dpi)
    write_text(args.summary, summary_markdown(metrics, params, backtest))
    print(f"render: {len(list(Path(args.figures).glob('*.png')))} figures -> {args.figures}, "
          f"summary -> {args.summary}")


def _figures(fig_dir: Path, params: Params, prep: Prepared, hist: pd.DataFrame,
             pred: pd.DataFrame, metrics: dict, att: dict, args: argparse.Namespace) -> None:
    """Every figure, into ``fig_dir``."""
    dpi = params.render.dpi
    t_test = _time(pred["t"].to_numpy())
    has_att = att["mean"].size > 0
    bands = model_bands(pred)
    labels = None
    if has_att:
        lags = pd.read_csv(args.lags)
        labels = plots.token_labels(lags["lag"].to_numpy(), lags["lag_oldest"].to_numpy())
    baselines = {k: (metrics[k] or {}).get("rmse") for k in forecasters(metrics) if k != "model"}
    plots.overview(fig_dir / "overview.png", epochs=hist["epoch"].to_numpy(),
                   train_loss=hist["train_loss"].to_numpy(),
                   val_loss=hist["val_loss"].to_numpy(dtype=float), t=t_test,
                   actual=pred["actual"].to_numpy(), predicted=pred["predicted"].to_numpy(),
                   weights=att["example"][-1].mean(axis=0) if has_att else None,
                   baselines=baselines, model_rmse=metrics["model"]["rmse"], dpi=dpi,
                   labels=labels, bands=bands)
    if has_att:
        lags = pd.read_csv(args.lags)
        plots.attention_maps(fig_dir / "attention.png", mean_weights=att["mean"],
                             example_weights=att["example"], dpi=dpi, labels=labels)
        plots.attention_by_lag(fig_dir / "attention_by_lag.png", lags=lags["lag"].to_numpy(),
                               weight=lags["weight"].to_numpy(),
                               lag_oldest=lags["lag_oldest"].to_numpy(), dpi=dpi)
    else:
        reason = f"model.kind is {params.model.kind}: it has no attention weights to show"
        for name, title in (("attention", "Attention weights"),
                            ("attention_by_lag", "Attention weight by lag")):
            plots.no_attention(fig_dir / f"{name}.png", title=title, reason=reason, dpi=dpi)
    t_all = _time(prep.t)
    spans = {part: (t_all[lo], t_all[hi]) for part, (lo, hi) in prep.spans().items()}
    plots.forecast(fig_dir / "forecast.png", t_all=t_all, values=prep.levels, spans=spans,
                   t_test=t_test, model=pred["predicted"].to_numpy(),
                   naive=pred["naive"].to_numpy(), dpi=dpi, bands=bands)
    horizon = pd.read_csv(args.horizon)
    if len(horizon) > 1:
        plots.horizon_errors(fig_dir / "horizon.png", steps=horizon["step"].to_numpy(),
                             errors={c: horizon[c].to_numpy() for c in horizon.columns
                                     if c != "step"}, dpi=dpi)


if __name__ == "__main__":
    run_cli(main)
