"""The baselines by name, as forecasters, without torch: the simple ones, ridge, and
StatsForecast's SES, ETS, Theta, Dynamic Optimized Theta, CES, ARIMA and the M4 benchmarks
(statistical.py); the combinations of :data:`COMBINATIONS`: ``comb``, the equal-weight mean of
ARIMA, ETS, CES and Dynamic Optimized Theta, ``m4_comb`` the M4 competition's Comb. The
baselines that need torch, ``zeroshot`` (the prior, zeroshot.py) and NeuralForecast's networks
(names.PEERS, peers.py), are added by whoever runs them (pipeline/baselines.py), so that fitting
the statistical field never depends on their code."""
from __future__ import annotations

import numpy as np

from ..engine import Engine
from .combination import Combination
from .protocol import Forecast, Forecaster
from .ridge import Ridge
from .simple import Mean, Naive, Naive2, SeasonalNaive
from .names import COMBINATIONS, STATISTICAL
from .statistical import Stat


class Unavailable:
    """A baseline that cannot run on this data: reported as n/a, with the reason."""

    def __init__(self, name: str, reason: str) -> None:
        self.name, self.reason = name, reason

    def fit(self, store):
        return []

    def forecast(self, store, ends, levels=()):
        return Forecast(np.full((len(ends), store.horizon), np.nan))


def _seasonal_naive(season: int, **_) -> list:
    return [SeasonalNaive(season) if season > 1 else Unavailable("seasonal_naive", "no season")]


def _ridge(ridge_alpha: float, features: bool, **_) -> list:
    """Ridge on the window; with past covariates, ``ridge_features`` beside it."""
    return [Ridge(ridge_alpha)] + ([Ridge(ridge_alpha, features=True)] if features else [])


def _statistical(name: str):
    return lambda season, engine, **_: [Stat(name, season, engine=engine)]


def _combination(name: str):
    return lambda **_: [Combination(name, list(COMBINATIONS[name]))]


# every baseline that is built here, by name -> its constructor: it takes the run's settings
# (keywords: season, ridge_alpha, features, engine; each reads those it needs) and returns
# its forecasters. A statistical one is an entry of names.STATISTICAL, a combination one of
# names.COMBINATIONS; zeroshot and the peers are given (see the module docstring)
REGISTRY = {"naive": lambda **_: [Naive()], "seasonal_naive": _seasonal_naive,
            "naive2": lambda season, **_: [Naive2(season)], "mean": lambda **_: [Mean()],
            "ridge": _ridge, **{n: _statistical(n) for n in STATISTICAL},
            **{c: _combination(c) for c in COMBINATIONS}}


def baselines(names: list[str], *, season: int, ridge_alpha: float, features: bool,
              jobs: int = 1, given: dict[str, Forecaster] | None = None,
              engine: Engine | None = None) -> tuple[list[Forecaster], dict[str, str]]:
    """The baselines ``names`` as forecasters, in their order (a combination after the
    others, its members fitted and scored too), and those that cannot run here with the reason
    (seasonal naive without a season). ``given``: forecasters built elsewhere, by name (the
    zero-shot prior, the peers); a name neither built here nor given is left out.
    ``engine``: where the statistical ones run (default: ``jobs`` local processes)."""
    given = given or {}
    settings = {"season": season, "ridge_alpha": ridge_alpha, "features": features,
                "engine": engine if engine is not None else Engine(jobs=jobs)}
    out: list = []
    for name in [n for n in names if n not in COMBINATIONS] + \
            [c for c in COMBINATIONS if c in names]:
        if name in given:
            out.append(given[name])
        elif name in REGISTRY:
            done = {f.name for f in out}
            for member in COMBINATIONS.get(name, ()):
                out += REGISTRY[member](**settings) if member not in done else []
            out += REGISTRY[name](**settings)
    return out, {f.name: f.reason for f in out if isinstance(f, Unavailable)}
