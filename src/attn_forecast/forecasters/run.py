"""Running forecasters over a store: each fitted on the training parts and forecasting the
windows of the parts asked for, all at once; the series one could not forecast get the
fallback's forecasts (:func:`fallback_for`: the one rule, Naive2 with the series' season, as
the M4 competition's rules had it), counted, so no forecaster scores better for failing."""
from __future__ import annotations

import numpy as np

from ..data.store import Store
from ..progress import Progress
from .combination import Combination, combined
from .protocol import Forecast
from .registry import Unavailable
from .saved import ForecastSet
from .simple import fallback_for


def _split(fc: Forecast, sizes: list[int]) -> list[Forecast]:
    """One forecast of consecutive groups of windows as one forecast per group."""
    cut = np.cumsum(sizes)[:-1]
    none = [None] * len(sizes)
    points = np.split(fc.point, cut)
    quants = np.split(fc.quantiles, cut) if fc.quantiles is not None else none
    members = np.split(fc.members, cut, axis=1) if fc.members is not None else none
    failed = np.split(fc.failed, cut) if fc.failed is not None else none
    return [Forecast(p, q, m, failed=f) for p, q, m, f in zip(points, quants, members, failed)]


def with_fallback(store: Store, fc: Forecast, ends: np.ndarray, fallback, name: str,
                  taus: tuple = ()) -> tuple[Forecast, list[str]]:
    """``fc`` with the rows it could not forecast (any NaN) taken from ``fallback``'s forecast
    (its quantiles too, where the forecaster has quantiles), those rows marked in ``failed``;
    and the line that says so. A forecaster never scores better for a series it could not
    forecast: it is scored on the fallback's."""
    bad = ~np.isfinite(fc.point).all(axis=1)
    if not bad.any():
        return fc, []
    fb = fallback.forecast(store, ends[bad], taus if fc.quantiles is not None else ())
    point = fc.point.copy()
    point[bad] = fb.point
    quant = fc.quantiles
    if quant is not None:
        quant = quant.copy()
        quant[bad] = fb.quantiles
    series = np.unique(store.series_of(ends[bad]))
    line = (f"warning: {name} gave no forecast for {len(series)} of {store.n_series} series "
            f"(first: '{store.ids[series[0]]}'); {fallback.name}'s stands in for them "
            f"(counted in {name}.n_failed)")
    return Forecast(point, quant, fc.members, fc.warnings, bad), [line]


def run(store: Store, forecasters: list, parts: tuple[str, ...], taus: tuple = (),
        record: dict | None = None, *, season: int, progress: str | None = None
        ) -> ForecastSet:
    """Fit every forecaster on the training parts and forecast the windows of ``parts`` (all
    at once). A forecaster that fits no series at all is None (n/a); the series one could
    not forecast get the fallback's forecasts (:func:`fallback_for` with ``season``),
    counted and named. ``progress``: the stage's name, to print which forecasters are done
    on a long run."""
    ends = {part: store.ends(part) for part in parts}
    every = np.concatenate(list(ends.values()))
    out: dict[str, dict[str, Forecast | None]] = {}
    warnings: list[str] = []
    fallback = fallback_for(season)
    fitted = False
    fitting = [f for f in forecasters if not isinstance(f, Combination)]
    bar = Progress(len(fitting), enabled=progress is not None,
                   what=f"{progress}: forecasters fitted")
    for f in forecasters:
        if isinstance(f, Combination):
            out[f.name] = {part: combined(out, f, part) for part in ends}
            continue
        warnings += f.fit(store)
        fc = f.forecast(store, every, taus)
        warnings += fc.warnings
        if len(every) and isinstance(f, Unavailable):     # n/a here, with its reason
            out[f.name] = dict.fromkeys(ends)
            bar.step(fitting.index(f) + 1, f.name)
            continue
        if not np.isfinite(fc.point).all():
            if not fitted:
                fallback.fit(store)
                fitted = True
            fc, lines = with_fallback(store, fc, every, fallback, f.name, taus)
            warnings += lines
        out[f.name] = dict(zip(ends, _split(fc, [len(e) for e in ends.values()])))
        bar.step(fitting.index(f) + 1, f.name)
    bar.close()
    return ForecastSet(ends, out, tuple(taus), warnings, dict(record or {}))
