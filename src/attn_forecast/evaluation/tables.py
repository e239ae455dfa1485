"""The evaluate stage's tables: every test window's first-step forecasts, the median series'
most recent ones (committed, plotted), the error by steps ahead, the intervals' coverage and
the fan chart's whole-horizon forecasts of the median series' last origins."""
from __future__ import annotations

import numpy as np
import pandas as pd

from ..data.store import Store
from ..data.windows import series_slices
from ..forecasters.names import to_use
from ..forecasters.protocol import central_intervals, level_name
from . import metrics as M
from .scoring import Evaluation

PLOT_ROWS = 1000  # test windows of the committed, plotted predictions (the most recent)


def _times(t: np.ndarray) -> np.ndarray:
    """Time stamps for a CSV: whole numbers as integers."""
    t = np.asarray(t)
    if t.dtype.kind == "f" and len(t) and np.all(np.mod(t, 1) == 0):
        return t.astype(np.int64)
    return t


def tables(ev: Evaluation, store: Store) -> dict[str, pd.DataFrame]:
    """The evaluate stage's CSVs: the first step of every test window's forecasts (and
    quantiles), the median series' last :data:`PLOT_ROWS` of them (committed, plotted), the
    error by steps ahead (RMSE per series, averaged over series) and the intervals' coverage."""
    fitted = {n: f for n, f in ev.forecasts.items() if f is not None}
    sid = store.series_of(ev.ends)
    cols = {"id": store.ids[sid], "t": _times(store.t[ev.ends]), "actual": ev.actual[:, 0]}
    for name, f in fitted.items():
        cols["predicted" if name == "model" else name] = f[:, 0]
    for name, q in ev.quantiles.items():
        for k, tau in enumerate(ev.levels):
            if tau != 0.5:
                cols[f"{'predicted' if name == 'model' else name}_{level_name(tau)}"] = \
                    q[:, 0, k]
    pred = pd.DataFrame(cols)      # built at once: a column at a time fragments the frame
    median = M.ranked(ev.by_series)["median"] if len(ev.by_series) else 0
    median_id = ev.by_series["id"].iloc[median] if len(ev.by_series) else ""
    one = pred[pred["id"] == median_id].drop(columns="id").reset_index(drop=True)
    steps = {"step": np.arange(1, store.horizon + 1)}
    slices = series_slices(sid)
    for name, f in fitted.items():
        per = [[M.rmse(ev.actual[r, k], f[r, k]) for k in range(store.horizon)]
               for _, r in slices]
        steps[name] = np.nanmean(np.array(per), axis=0) if per else np.zeros(store.horizon)
    nominal = [pct for _, _, pct in central_intervals(ev.levels)]
    plotted = dict.fromkeys(["model", "naive", "ridge", *ev.quantiles])  # what dvc.yaml plots
    calibration = pd.DataFrame({"nominal": [p / 100 for p in nominal], **{
        name: [ev.metrics[name][f"coverage_{p}"] if name in ev.quantiles else None
               for p in nominal] for name in plotted}})
    return {"predictions": pred, "predictions_plot": one.iloc[-PLOT_ROWS:].reset_index(
        drop=True), "horizon": pd.DataFrame(steps), "calibration": calibration,
        "by_series": ev.by_series, "fan": fan(ev, store, median_id)}


FAN_ORIGINS = 3    # the fan chart's forecasts: from the last origins, a horizon apart


def fan(ev: Evaluation, store: Store, sid: str) -> pd.DataFrame:
    """The forecast to use's whole horizon from the last :data:`FAN_ORIGINS` origins of series
    ``sid``'s test part, a horizon apart (the last one's targets end the series): each step's
    time, truth, forecast and quantiles, as scored."""
    name = to_use([n for n, f in ev.forecasts.items() if f is not None])
    i = np.flatnonzero(store.ids == sid)
    mine = np.flatnonzero(store.series_of(ev.ends) == i[0]) if len(i) else np.zeros(0, int)
    H = store.horizon
    rows = mine[::-1][::H][:FAN_ORIGINS][::-1]
    out = []
    q = ev.quantiles.get(name)
    for k, r in enumerate(rows):
        e = int(ev.ends[r])
        cols = {"forecaster": name, "origin": k + 1, "step": np.arange(1, H + 1),
                "t": _times(store.t[e:e + H]), "actual": ev.actual[r],
                "forecast": ev.forecasts[name][r]}
        for j, tau in enumerate(ev.levels if q is not None else ()):
            if tau != 0.5:
                cols[level_name(tau)] = q[r, :, j]
        out.append(pd.DataFrame(cols))
    return pd.concat(out, ignore_index=True) if out else pd.DataFrame(
        {"forecaster": [], "origin": [], "step": [], "t": [], "actual": [], "forecast": []})
