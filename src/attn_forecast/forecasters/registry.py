"""The baselines by name, as forecasters, without torch: the simple ones, ridge, and
StatsForecast's SES, ETS, Theta, Dynamic Optimized Theta, CES, ARIMA and the M4 benchmarks
(statistical.py); the combinations of :data:`COMBINATIONS`: ``comb``, the equal-weight mean of
ARIMA, ETS, CES and Dynamic Optimized Theta, ``m4_comb`` the M4 competition's Comb. The one
baseline that needs torch, ``zeroshot`` (the prior, zeroshot.py), is added by whoever has the
prior (pipeline/field.py), so that fitting the statistical field never depends on the
model's code."""
from __future__ import annotations

import numpy as np

from ..engine import Engine
from .combination import Combination
from .protocol import Forecast, Forecaster
from .ridge import Ridge
from .simple import Mean, Naive, Naive2, SeasonalNaive
from .names import COMBINATIONS
from .statistical import Stat


class Unavailable:
    """A baseline that cannot run on this data: reported as n/a, with the reason."""

    def __init__(self, name: str, reason: str) -> None:
        self.name, self.reason = name, reason

    def fit(self, store):
        return []

    def forecast(self, store, ends, taus=()):
        return Forecast(np.full((len(ends), store.horizon), np.nan))


# the forecasters that fit nothing but the series' own values, by name, built from the data's
# season (seasonal naive only where there is one); the statistical ones: names.STATISTICAL
SIMPLE = {"naive": lambda season: Naive(), "seasonal_naive": SeasonalNaive,
          "naive2": Naive2, "mean": lambda season: Mean()}


def baselines(names: list[str], *, season: int, ridge_alpha: float, features: bool,
              jobs: int = 1, given: dict[str, Forecaster] | None = None,
              engine: Engine | None = None) -> tuple[list[Forecaster], dict[str, str]]:
    """The baselines ``names`` as forecasters, in their order, and those that cannot run here
    with the reason (seasonal naive without a season). With past covariates, ``ridge`` brings
    ``ridge_features`` beside it. ``given``: forecasters built elsewhere, by name (the
    zero-shot prior); a name neither built here nor given is left out. ``engine``: where the
    statistical ones run (default: ``jobs`` local processes)."""
    given = given or {}
    engine = engine if engine is not None else Engine("local", jobs)
    out, unavailable = [], {}
    for name in names:
        if name == "seasonal_naive" and season <= 1:
            unavailable[name] = "no season"
            out.append(Unavailable(name, unavailable[name]))
        elif name in SIMPLE:
            out.append(SIMPLE[name](season))
        elif name in COMBINATIONS:
            continue   # after the others, below
        elif name in given:
            out.append(given[name])
        elif name == "zeroshot":
            continue   # the prior's: see the module docstring
        elif name == "ridge":
            out += [Ridge(ridge_alpha)] + ([Ridge(ridge_alpha, features=True)] if features
                                           else [])
        else:
            out.append(Stat(name, season, engine=engine))
    for combo, members in COMBINATIONS.items():   # their members fitted (and scored) too
        if combo in names:
            done = {f.name for f in out}
            out += [Stat(m, season, engine=engine) for m in members if m not in done]
            out.append(Combination(combo, list(members)))
    return out, unavailable


COMB = COMBINATIONS["comb"]
