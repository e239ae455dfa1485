"""Which figures the render stage draws, from the evaluate and train outputs (arrays and
tables, never a model): the source's 2x2 sheet and the whole series for the median series by
the model's MASE (for one series, the series), the best and worst series when they are other
ones, the attention maps, and the error by step, calibration and backtest when there are
several steps, intervals or folds. Each figure is one function of plots.py."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from ..cpu import cores
from ..data.store import Store
from . import plots
from ..forecasters.names import to_use
from .summary import forecasters


@dataclass
class Inputs:
    store: Store
    history: pd.DataFrame
    predictions: pd.DataFrame   # every test window's first step, with its series' id
    by_series: pd.DataFrame
    metrics: dict
    attention: dict             # mean and example weights, (L, heads, T, T) each
    lags: pd.DataFrame
    horizon: pd.DataFrame
    calibration: pd.DataFrame
    fan: pd.DataFrame           # the forecast to use's whole horizon from the last origins
    folds: pd.DataFrame | None
    kind: str                   # model.kind
    dpi: int


def as_time(values: np.ndarray) -> np.ndarray:
    """Numbers stay numbers; dates (ISO 8601 text, or datetime64) become datetimes."""
    values = np.asarray(values)
    if values.dtype.kind in "iufM":
        return values
    return pd.to_datetime(pd.Series(values.astype(str)), format="ISO8601").to_numpy()


FAN_PCTS = (80, 95)   # the intervals the figures draw (every one is scored)


def bands(pred: pd.DataFrame, column: str = "predicted", pcts=FAN_PCTS) -> list[tuple]:
    """A forecaster's central intervals among the columns ``<column>_q<level>`` (q10, q2.5):
    [(lower, upper, %)], those of ``pcts`` only."""
    head = f"{column}_q" if column else "q"
    levels = {float(c[len(head):]): c for c in pred.columns if c.startswith(head)}
    out = []
    for lo in sorted(levels):
        hi = round(100 - lo, 6)
        pct = round(100 - 2 * lo)
        if lo < 50 and hi in levels and pct in pcts:
            out.append((pred[levels[lo]].to_numpy(), pred[levels[hi]].to_numpy(), pct))
    return out


def model_bands(pred: pd.DataFrame) -> list[tuple]:
    """The model's 80 % and 95 % intervals (predicted_q10 ... columns)."""
    return bands(pred, "predicted")


def spans(store: Store, i: int, t: np.ndarray) -> dict:
    """Each non-empty part's (first, last) time for shading series ``i``."""
    c, n = store.cuts, int(store.lengths[i])
    edges = {"train": (0, c.val_start[i]), "val": (c.val_start[i], c.blend_start[i]),
             "blend": (c.blend_start[i], c.cal_start[i]),
             "cal": (c.cal_start[i], c.test_start[i]), "test": (c.test_start[i], n)}
    return {k: (t[int(a) - (k != "train")], t[int(b) - 1]) for k, (a, b) in edges.items()
            if b > a}


def draw_all(fig_dir: Path, d: Inputs, shown: dict[str, str]) -> None:
    """Every figure of the run into ``fig_dir``, drawn side by side on the cores there are
    (each figure is one process's work: the bytes are those of drawing it alone)."""
    jobs = _jobs(fig_dir, d, shown)
    jobs.sort(key=lambda job: job[0] != "overview")   # the longest first
    workers = min(len(jobs), cores(), 4)
    if workers < 2:
        for name, path, kw in jobs:
            getattr(plots, name)(path, **kw)
        return
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor
    with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork")) as pool:
        for run in [pool.submit(_draw, job) for job in jobs]:
            run.result()


def _draw(job: tuple) -> None:
    name, path, kw = job
    getattr(plots, name)(path, **kw)


def _jobs(fig_dir: Path, d: Inputs, shown: dict[str, str]) -> list[tuple]:
    """(plots function, path, keywords) of every figure."""
    jobs: list[tuple] = []
    many = d.store.n_series > 1
    labels = plots.token_labels(d.lags["lag"].to_numpy(), d.lags["lag_oldest"].to_numpy()) \
        if d.attention["mean"].size else None
    ids = d.predictions["id"].to_numpy()
    for which, sid in shown.items():
        if which != "median" and sid == shown["median"]:
            continue
        i = int(np.flatnonzero(d.store.ids == sid)[0])
        one = d.predictions[ids == sid]
        row = d.by_series[d.by_series["id"] == sid].iloc[0]
        rows = d.store.rows(i)
        t_all, t_test = as_time(d.store.t[rows]), as_time(one["t"].to_numpy())
        title = f"The {which} series by the model's MASE: {sid} (MASE {row['model_mase']:.3g})" \
            if many else "Series and one-step-ahead test forecasts"
        name = "forecast.png" if which == "median" else f"forecast_{which}.png"
        jobs.append(("forecast", fig_dir / name, dict(
            t_all=t_all, values=np.asarray(d.store.y[rows]), t_test=t_test,
            spans=spans(d.store, i, t_all), model=one["predicted"].to_numpy(),
            naive=one["naive"].to_numpy() if "naive" in one else np.full(len(one), np.nan),
            dpi=d.dpi, bands=model_bands(one), title=title)))
        if which != "median":
            continue
        jobs.append(_fan(fig_dir, d, i, one, t_all, t_test, sid if many else ""))
        others = [n for n in forecasters(d.metrics) if n != "model"
                  and f"{n}_rmse" in d.by_series]
        jobs.append(("overview", fig_dir / "overview.png", dict(
            epochs=d.history["epoch"].to_numpy(), train_loss=d.history["train_loss"].to_numpy(),
            val_loss=d.history["val_loss"].to_numpy(dtype=float), t=t_test,
            actual=one["actual"].to_numpy(), predicted=one["predicted"].to_numpy(),
            weights=d.attention["example"][-1].mean(axis=0) if d.attention["mean"].size
            else None, baselines={k: row[f"{k}_rmse"] for k in others},
            model_rmse=row["model_rmse"], dpi=d.dpi, labels=labels, bands=model_bands(one),
            test_title="Test set: actual vs predicted"
            + (f" (median series {sid})" if many else ""))))
    return jobs + _attention(fig_dir, d, labels) + _extras(fig_dir, d)


def _fan(fig_dir: Path, d: Inputs, i: int, one: pd.DataFrame, t_all, t_test, sid: str
         ) -> tuple:
    """The fan chart of the forecast to use (the blend, else the model): the series' recent
    history and, from the last origins of its test part, its whole-horizon forecasts with
    their 80 % and 95 % intervals beside the truth (several steps); the one-step forecasts of
    the test part (one step)."""
    fan = d.fan
    if d.store.horizon > 1 and len(fan):
        name = str(fan["forecaster"].iloc[0])
        t_fan = as_time(fan["t"].to_numpy())
        first = np.flatnonzero(np.asarray(t_all) == t_fan[0])
        end = int(first[0]) if len(first) else len(t_all)
        rows = np.arange(max(0, end - 3 * len(fan)), end)
        paths = [(as_time(g["t"].to_numpy()), g["forecast"].to_numpy(), bands(g, ""))
                 for _, g in fan.groupby("origin", sort=True)]
        return ("fan", fig_dir / "fan.png", dict(
            t_hist=t_all[rows], history=np.asarray(d.store.y[d.store.rows(i)])[rows],
            t_test=t_fan, actual=fan["actual"].to_numpy(), paths=paths, name=name,
            dpi=d.dpi, title=f"The {name}'s forecasts of {d.store.horizon} steps from the "
            f"test part's last origins, with its intervals"
            + (f" (median series {sid})" if sid else "")))
    name = to_use([n for n in forecasters(d.metrics) if d.metrics.get(n)
                   and (n == "model" or n in one)])
    column = "predicted" if name == "model" else name
    start = max(0, int(d.store.cuts.test_start[i]) - 3 * len(one))   # three test spans back
    rows = np.arange(start, int(d.store.cuts.test_start[i]))
    return ("fan", fig_dir / "fan.png", dict(
        t_hist=t_all[rows], history=np.asarray(d.store.y[d.store.rows(i)])[rows],
        t_test=t_test, actual=one["actual"].to_numpy(),
        paths=[(t_test, one[column].to_numpy(), bands(one, column))], name=name, dpi=d.dpi,
        title=f"The {name}'s forecasts of the test part, with its intervals"
        + (f" (median series {sid})" if sid else "")))


def _attention(fig_dir: Path, d: Inputs, labels) -> list[tuple]:
    if d.attention["mean"].size:
        return [("attention_maps", fig_dir / "attention.png", dict(
                    mean_weights=d.attention["mean"], example_weights=d.attention["example"],
                    dpi=d.dpi, labels=labels)),
                ("attention_by_lag", fig_dir / "attention_by_lag.png", dict(
                    lags=d.lags["lag"].to_numpy(), weight=d.lags["weight"].to_numpy(),
                    lag_oldest=d.lags["lag_oldest"].to_numpy(), dpi=d.dpi))]
    reason = f"model.kind is {d.kind}: it has no attention weights to show"
    return [("no_attention", fig_dir / f"{name}.png", dict(title=title, reason=reason,
                                                           dpi=d.dpi))
            for name, title in (("attention", "Attention weights"),
                                ("attention_by_lag", "Attention weight by lag"))]


def _extras(fig_dir: Path, d: Inputs) -> list[tuple]:
    """Error by step (several steps), calibration (intervals), backtest (folds)."""
    jobs = []
    if len(d.horizon) > 1:
        jobs.append(("horizon_errors", fig_dir / "horizon.png", dict(
            steps=d.horizon["step"].to_numpy(), dpi=d.dpi,
            errors={c: d.horizon[c].to_numpy() for c in d.horizon.columns if c != "step"})))
    cal = d.calibration
    coverage = {c: cal[c].to_numpy(dtype=float) for c in cal.columns
                if c != "nominal" and cal[c].notna().any()}
    if coverage:
        jobs.append(("calibration", fig_dir / "calibration.png", dict(
            nominal=cal["nominal"].to_numpy(), coverage=coverage, dpi=d.dpi)))
    if d.folds is not None and len(d.folds):
        jobs.append(("backtest_errors", fig_dir / "backtest.png", dict(
            folds=d.folds["fold"].to_numpy(), dpi=d.dpi,   # the folds file's score, as scored
            score="mean MASE over series" if d.store.n_series > 1 else "RMSE (value)",
            errors={c: d.folds[c].to_numpy(dtype=float) for c in d.folds.columns
                    if c not in ("fold", "origin") and d.folds[c].notna().any()})))
    return jobs
