"""Stage render: the figures and the Markdown summary, from the evaluate and train outputs.

out: a folder of PNGs (overview: the source's 2x2 sheet on the median series by the model's
MASE, which for one series is the series; forecast: that series whole, and forecast_best /
forecast_worst when other series are best and worst; attention, attention_by_lag; horizon when
forecasting several steps; calibration with intervals; backtest with folds) and ``summary.md``.
No torch here: arrays and CSVs only.
"""
from __future__ import annotations

import argparse
from pathlib import Path

from attn_forecast import stage  # first: it pins the CPU before numpy loads

import pandas as pd  # (after the pin)

from attn_forecast.config.load import load_params
from attn_forecast.data.store_io import load, profile
from attn_forecast.evaluation.metrics import ranked
from attn_forecast.io import read_json, read_npz, replace_files, write_text
from attn_forecast.pipeline.report import settings_rows
from attn_forecast.report import figures
from attn_forecast.report.summary import summary_markdown

INPUTS = ("prepared", "history", "predictions", "horizon", "lags", "attention", "calibration",
          "fan", "metrics", "backtest", "backtest-folds", "by-series")


def text_ids(path: str) -> pd.DataFrame:
    """A CSV with its ``id`` column as written ("NA", "001" and "1e3" stay text); the other
    columns' NaN are missing values, as write_csv writes them."""
    cols = pd.read_csv(path, nrows=0).columns
    return pd.read_csv(path, dtype={"id": str}, keep_default_na=False,
                       na_values={c: ["NaN", ""] for c in cols if c != "id"})


@stage.main
def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--params", default="params.yaml")
    for name in (*INPUTS, "figures", "summary"):
        ap.add_argument(f"--{name}", required=True)
    args = ap.parse_args(argv)
    params = load_params(args.params, profile(args.prepared))
    store = load(args.prepared)
    metrics, backtest = read_json(args.metrics), read_json(args.backtest)
    by_series = text_ids(args.by_series)
    rows = ranked(by_series)
    shown = {which: by_series["id"].iloc[r] for which, r in rows.items()}
    data = figures.Inputs(store=store, history=pd.read_csv(args.history),
                          predictions=text_ids(args.predictions), by_series=by_series,
                          metrics=metrics, attention=read_npz(args.attention),
                          lags=pd.read_csv(args.lags), horizon=pd.read_csv(args.horizon),
                          calibration=pd.read_csv(args.calibration),
                          fan=pd.read_csv(args.fan),
                          folds=pd.read_csv(args.backtest_folds) if backtest.get("n_folds")
                          else None, kind=params.model.kind, dpi=params.render.dpi)
    # drawn into a temporary folder that replaces the figures at the end: a failed or
    # interrupted run leaves the previous figures as they were
    with replace_files(args.figures, "*.png") as fig_dir:
        figures.draw_all(fig_dir, data, shown)
    write_text(args.summary, summary_markdown(metrics, settings_rows(params, metrics,
                                                                     store.window,
                                                                     store.horizon),
                                              params.model.kind, backtest, shown))
    print(f"render: {len(list(Path(args.figures).glob('*.png')))} figures -> {args.figures}, "
          f"summary -> {args.summary}")


if __name__ == "__main__":
    stage.run(main)
