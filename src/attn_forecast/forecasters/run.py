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
from .saved import PAST, ForecastSet
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
                  levels: tuple = ()) -> tuple[Forecast, list[str]]:
    """``fc`` with the rows it could not forecast (any NaN) taken from ``fallback``'s forecast
    (its quantiles too, where the forecaster has quantiles), those rows marked in ``failed``;
    and the line that says so. A forecaster never scores better for a series it could not
    forecast: it is scored on the fallback's."""
    bad = ~np.isfinite(fc.point).all(axis=1)
    if not bad.any():
        return fc, []
    fb = fallback.forecast(store, ends[bad], levels if fc.quantiles is not None else ())
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


PAST_WINDOWS = 2000   # windows of the past part a forecaster fitting nothing forecasts, at most


def past_ends(store: Store) -> np.ndarray:
    """The windows of every part before the test part (at most :data:`PAST_WINDOWS`, evenly
    spread): where a forecaster that fits nothing to the series is calibrated."""
    from ..data.windows import spread
    every = np.sort(np.concatenate([store.ends(part) for part in ("train", "val", "blend",
                                                                   "cal")]))
    return spread(every, PAST_WINDOWS)


def run(store: Store, forecasters: list, parts: tuple[str, ...], levels: tuple = (),
        record: dict | None = None, *, season: int, progress: str | None = None
        ) -> ForecastSet:
    """Fit every forecaster on the training parts and forecast the windows of ``parts`` (all
    at once). A forecaster that fits nothing to the series (``past_only``: every forecast
    reads only the values before its origin) also forecasts the :data:`PAST` part where the
    calibration part is asked for (it is calibrated there: calibration.calibration_of). A
    forecaster that fits no series at all is None (n/a); the series one could not forecast
    get the fallback's forecasts (:func:`fallback_for` with ``season``), counted and named.
    ``progress``: the stage's name, to print which forecasters are done on a long run."""
    ends = {part: store.ends(part) for part in parts}
    if "cal" in parts and levels and any(getattr(f, "past_only", False) for f in forecasters):
        ends[PAST] = past_ends(store)
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
        mine = [part for part in ends if part != PAST or getattr(f, "past_only", False)]
        every = np.concatenate([ends[part] for part in mine])
        warnings += f.fit(store)
        fc = f.forecast(store, every, levels)
        warnings += fc.warnings
        if len(every) and isinstance(f, Unavailable):     # n/a here, with its reason
            out[f.name] = dict.fromkeys(ends)
            bar.step(fitting.index(f) + 1, f.name)
            continue
        if not np.isfinite(fc.point).all():
            if not fitted:
                fallback.fit(store)
                fitted = True
            fc, lines = with_fallback(store, fc, every, fallback, f.name, levels)
            warnings += lines
        out[f.name] = {**dict.fromkeys(ends),
                       **dict(zip(mine, _split(fc, [len(ends[part]) for part in mine])))}
        bar.step(fitting.index(f) + 1, f.name)
    bar.close()
    return ForecastSet(ends, out, tuple(levels), warnings, dict(record or {}))
