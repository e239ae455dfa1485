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
from attn_forecast.report import forecasters, panel_summary, summary_markdown
from attn_forecast.panel import load_data, ranked
from attn_forecast.windows import Prepared


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
                 "calibration", "metrics", "backtest", "backtest-folds", "by-series", "figures",
                 "summary"):
        ap.add_argument(f"--{name}", required=True)
    args = ap.parse_args(argv)
    params = load_params(args.params)
    prep = load_data(args.prepared)
    hist = pd.read_csv(args.history)
    panel = getattr(prep, "is_panel", False)
    pred = _ids_as_text(args.predictions) if panel else pd.read_csv(args.predictions)
    metrics = read_json(args.metrics)
    backtest = read_json(args.backtest)
    att = read_npz(args.attention)
    if panel:
        by_series = _ids_as_text(args.by_series)
        rows = ranked(by_series)
        with replace_files(args.figures, "*.png") as fig_dir:
            _panel_figures(fig_dir, params, prep, hist, pred, metrics, att, args, by_series,
                           rows)
        write_text(args.summary, panel_summary(metrics, params, {
            k: str(prep.ids[r]) for k, r in rows.items()}))
        print(f"render: {len(list(Path(args.figures).glob('*.png')))} figures -> "
              f"{args.figures}, summary -> {args.summary}")
        return
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
    _attention(fig_dir, params, att, args, labels)
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


def _ids_as_text(path: str) -> pd.DataFrame:
    """A panel's CSV with its ``id`` column as written ("NA", "001" and "1e3" stay text);
    the other columns' NaN are missing values, as write_csv writes them."""
    cols = pd.read_csv(path, nrows=0).columns
    return pd.read_csv(path, dtype={"id": str}, keep_default_na=False,
                       na_values={c: ["NaN", ""] for c in cols if c != "id"})


def _attention(fig_dir: Path, params: Params, att: dict, args: argparse.Namespace,
               labels) -> None:
    dpi = params.render.dpi
    if att["mean"].size > 0:
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


def _panel_figures(fig_dir: Path, params: Params, panel, hist: pd.DataFrame,
                   pred: pd.DataFrame, metrics: dict, att: dict, args: argparse.Namespace,
                   by_series: pd.DataFrame, rows: dict[str, int]) -> None:
    """A panel's figures: the overview sheet on the median series (by the model's MASE),
    the attention figures, the best, median and worst series, and the error by step."""
    dpi = params.render.dpi
    labels = None
    if att["mean"].size > 0:
        lags = pd.read_csv(args.lags)
        labels = plots.token_labels(lags["lag"].to_numpy(), lags["lag_oldest"].to_numpy())
    ids = pred["id"].to_numpy()
    names = [k for k in forecasters(metrics) if k != "model" and metrics[k] is not None]
    for which, r in rows.items():
        i = r                       # metrics_by_series.csv holds the series in panel order
        sid = str(panel.ids[i])
        one = pred[ids == sid]
        a, b = int(panel.offsets[i]), int(panel.offsets[i + 1])
        t_all, t_test = _time(np.asarray(panel.t[a:b])), _time(one["t"].to_numpy())
        cuts = {"train": (0, int(panel.val_start[i]) - 1),
                "val": (int(panel.val_start[i]) - 1, int(panel.test_start[i]) - 1),
                "test": (int(panel.test_start[i]) - 1, b - a - 1)}
        if panel.val_start[i] == panel.test_start[i]:
            del cuts["val"]
        mase = by_series["model_mase"].iloc[r]
        plots.forecast(fig_dir / f"forecast_{which}.png", t_all=t_all,
                       values=np.asarray(panel.levels[a:b]),
                       spans={k: (t_all[lo], t_all[hi]) for k, (lo, hi) in cuts.items()},
                       t_test=t_test, model=one["predicted"].to_numpy(),
                       naive=one["naive"].to_numpy() if "naive" in one else
                       np.full(len(one), np.nan), dpi=dpi,
                       title=f"The {which} series by the model's MASE: {sid} (MASE {mase:.3g})")
        if which == "median":
            plots.overview(fig_dir / "overview.png", epochs=hist["epoch"].to_numpy(),
                           train_loss=hist["train_loss"].to_numpy(),
                           val_loss=hist["val_loss"].to_numpy(dtype=float), t=t_test,
                           actual=one["actual"].to_numpy(), predicted=one["predicted"].to_numpy(),
                           weights=att["example"][-1].mean(axis=0) if att["mean"].size else None,
                           baselines={k: by_series[f"{k}_rmse"].iloc[r] for k in names
                                      if f"{k}_rmse" in by_series},
                           model_rmse=by_series["model_rmse"].iloc[r], dpi=dpi, labels=labels,
                           test_title=f"Test set of the median series ({sid})")
    _attention(fig_dir, params, att, args, labels)
    horizon = pd.read_csv(args.horizon)
    if len(horizon) > 1:
        plots.horizon_errors(fig_dir / "horizon.png", steps=horizon["step"].to_numpy(),
                             errors={c: horizon[c].to_numpy() for c in horizon.columns
                                     if c != "step"}, dpi=dpi)


if __name__ == "__main__":
    run_cli(main)
