"""Statistical baselines from StatsForecast: ETS, Theta and AutoARIMA.

Each is fitted once on the training part's levels (the series' own units), then forecasts
every test window from the known history before it without refitting, exactly like the
model: StatsForecast's ``forward(y[:origin], h)`` applies the fitted parameters to the longer
history. (Theta's ``forward`` keeps its smoothing weight, theta and initial level, and
re-estimates its seasonal decomposition from that history: past values only.)

- ``ets``: ``AutoETS``, additive error and trend (damping chosen by AICc), additive seasonality
  with period ``evaluate.season`` when it is > 0.
- ``theta``: the standard Theta method (``Theta``), deseasonalized with that period.
- ``arima``: ``AutoARIMA`` (the auto.arima search); seasonal only for periods up to
  :data:`MAX_ARIMA_SEASON` (a seasonal fit with period 48 did not finish in 20 minutes on a
  7,000-point series), non-seasonal beyond.

StatsForecast is imported only when one of these baselines is asked for.
"""
from __future__ import annotations

import numpy as np

STAT_BASELINES = ("ets", "theta", "arima")
MAX_ARIMA_SEASON = 24


class BaselineFailed(Exception):
    """A statistical model could not be fitted or applied (series too short, constant...)."""


def _model(name: str, season: int):
    from statsforecast.models import AutoARIMA, AutoETS, Theta
    m = season if season > 1 else 1
    if name == "ets":
        return AutoETS(season_length=m, model="AAA" if m > 1 else "AAN")
    if name == "theta":
        return Theta(season_length=m)
    return AutoARIMA(season_length=m if m <= MAX_ARIMA_SEASON else 1)


def forecast(name: str, levels: np.ndarray, train_levels_end: int, origins: np.ndarray,
             horizon: int, season: int, intervals: list[int] = ()
             ) -> np.ndarray | tuple[np.ndarray, dict]:
    """(N, H) forecasts from each origin (the level index of a window's first target), with
    parameters fitted on ``levels[:train_levels_end]``. With ``intervals`` (e.g. [80]) also
    the library's own prediction intervals: ``(mean, {80: (lo, hi)})``, each (N, H).
    Raises :class:`BaselineFailed`."""
    y = np.asarray(levels, dtype=np.float64)
    model = _model(name, season)
    bands: dict = {pct: ([], []) for pct in intervals}
    try:
        model.fit(y[:train_levels_end])
        rows = []
        for o in origins:
            f = model.forward(y[:o], h=horizon, level=list(intervals)) if intervals else \
                model.forward(y[:o], h=horizon)
            rows.append(np.asarray(f["mean"], dtype=np.float64))
            for pct in intervals:
                bands[pct][0].append(np.asarray(f[f"lo-{pct}"], dtype=np.float64))
                bands[pct][1].append(np.asarray(f[f"hi-{pct}"], dtype=np.float64))
        out = np.stack(rows) if rows else np.zeros((0, horizon))
    # StatsForecast signals an unusable series in many ways (NotImplementedError for tiny
    # series, ValueError, numerical errors): each means "this baseline cannot run here"
    except Exception as err:  # noqa: BLE001
        raise BaselineFailed(f"{type(err).__name__}: {str(err).splitlines()[0][:120]}") \
            from None
    if not np.isfinite(out).all():
        raise BaselineFailed("non-finite forecasts")
    if intervals:
        return out, {pct: (np.stack(lo), np.stack(hi)) for pct, (lo, hi) in bands.items()}
    return out
