"""Combinations of other forecasters' forecasts, with the series any member could not
forecast marked as the combination's. A combination's quantiles are its members' quantiles
averaged level by level with the combination's own weights (Vincentization: the quantiles of
the combined forecast, never crossing), where every member has them:

- fixed, equal weights: Comb (ARIMA, ETS, CES and Dynamic Optimized Theta), ``model+comb``,
  ``model+ets+theta``: the combination as named, known in advance;
- ``blend``: weights each series learns on its own validation part (the windows before the
  test part), from every member's forecasts there: the inverse of each member's mean squared
  error (Bates and Granger's weights), over the members whose MSE is within :data:`TRIM`
  times the best one's (a member far behind on the series' recent past gets none); an MSE
  below :data:`FLOOR` times the series' squared in-sample naive error counts as that floor
  (a validation part cannot tell such members apart, and one exact on it must not take all
  the weight). The test part is never read. Without a validation part every member weighs
  the same. A series' blend failed (the fallback's forecast) where a member with weight on
  it did."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..data.scaling import naive_scale
from .protocol import Forecast
from .saved import ForecastSet

TRIM = 3.0   # a member whose validation MSE exceeds this many times the best gets no weight
FLOOR = 0.01  # an MSE below this many times the series' squared naive error counts as this
# a series' learned weights count n / (n + SHRINK) of its n validation windows, equal weights
# the rest: a handful of windows cannot tell the members apart (chosen on bench/real.py's
# validation parts, bench/README.md "The blend on few windows")
SHRINK = 5.0
# ... toward equal weights over the members the trim keeps (kept), not over every member
# (equal): a member far off on the few windows there are stays out (chosen on bench/real.py's
# validation parts, bench/README.md "The blend on few windows")
TOWARD = "kept"
FEW = 10     # a series learning its weights on fewer validation windows than this: a warning


def rule(trim: float = TRIM, shrink: float = SHRINK, toward: str = TOWARD) -> str:
    """The blend's rule in words (the one place it is stated: the summary, the docs)."""
    over = "those members" if toward == "kept" else "every member"
    return (f"inverse validation MSE (at least {FLOOR:g}x the series' squared naive error), "
            f"members within {trim:g}x the best MSE (about {trim ** 0.5:.1f}x its RMSE)"
            + (f", shrunk toward equal weights over {over}: the learned ones count "
               f"n / (n + {shrink:g}) of a series' n validation windows" if shrink else ""))


class Combination:
    """The equal-weight mean of other forecasters' point forecasts (Comb: ARIMA, ETS, CES and
    Dynamic Optimized Theta; model+comb: the model and Comb)."""

    def __init__(self, name: str, members: list[str]) -> None:
        self.name, self.members = name, list(members)

    def combine(self, points: dict[str, np.ndarray]) -> np.ndarray:
        return np.mean([points[m] for m in self.members], axis=0)


def combined(forecasts: dict, c: Combination, part: str) -> Forecast | None:
    """The combination's forecast of one part, from its members' (None if one is missing)."""
    got = {m: forecasts.get(m, {}).get(part) for m in c.members}
    if any(f is None for f in got.values()):
        return None
    quant = None if any(f.quantiles is None for f in got.values()) else \
        c.combine({m: f.quantiles for m, f in got.items()})
    return Forecast(c.combine({m: f.point for m, f in got.items()}), quant,
                    failed=_failed(list(got.values())))


def _failed(forecasts: list[Forecast]) -> np.ndarray | None:
    failed = [f.failed for f in forecasts if f.failed is not None]
    return np.any(failed, axis=0) if failed else None


def inverse_error_weights(mse: np.ndarray, trim: float = TRIM,
                          floor: np.ndarray | None = None) -> np.ndarray:
    """(S, M) weights from (S, M) mean squared errors (NaN: no score): per row, the inverse
    error of every member within ``trim`` x the row's best, normalised; an error below the
    row's ``floor`` (S,) counts as the floor (members at it weigh alike); a row without any
    score weighs its members alike; without a floor, members without error share the
    weight."""
    mse = np.asarray(mse, dtype=np.float64)
    if floor is not None:
        mse = np.maximum(mse, np.asarray(floor, dtype=np.float64)[:, None])
    ok = np.isfinite(mse)
    best = np.min(np.where(ok, mse, np.inf), axis=1, keepdims=True)
    exact = ok & (mse <= 0)                              # a member without error
    keep = np.where(exact.any(axis=1, keepdims=True), exact, ok & (mse <= trim * best))
    inv = np.where(exact, 1.0, np.where(keep, 1.0 / np.where(keep & ~exact, mse, 1.0), 0.0))
    inv = np.where(keep, inv, 0.0)
    none = ~ok.any(axis=1)                               # no score at all: alike
    inv[none] = 1.0
    return inv / inv.sum(axis=1, keepdims=True)


@dataclass
class Blend:
    """The weights each series learned (``weights`` (S, M) over ``members``) and how;
    ``windows`` (S,): the validation windows each learned them on."""
    members: list[str]
    weights: np.ndarray
    rule: str
    windows: np.ndarray | None = None

    def few(self, ids) -> list[str]:
        """The series that learned their weights on fewer than :data:`FEW` windows."""
        if self.windows is None:
            return []
        return [str(ids[i]) for i in np.flatnonzero(self.windows < FEW)]

    def record(self, ids) -> dict:
        """As plain data: the members, the rule, the weights per series id and their mean."""
        mean = self.weights.mean(axis=0)
        return {"members": self.members, "rule": self.rule,
                "mean": {m: round(float(w), 4) for m, w in zip(self.members, mean)},
                "series": {str(i): [round(float(w), 6) for w in row]
                           for i, row in zip(ids, self.weights)}}

    def line(self) -> str:
        """One line: the members and their (mean) weights."""
        mean = self.weights.mean(axis=0)
        order = np.argsort(-mean, kind="stable")
        per = " (the mean over series)" if len(self.weights) > 1 else ""
        return ("blend of " + ", ".join(f"{self.members[k]} {mean[k]:.2f}" for k in order)
                + f"{per}; weights: {self.rule}")


def learn_blend(fs: ForecastSet, store, members: list[str], trim: float = TRIM,
                part: str = "blend", shrink: float = SHRINK, toward: str = TOWARD
                ) -> Blend | None:
    """Each series' weights over ``members`` (those with forecasts of ``part`` and of the
    test part; None if none has) from their errors on its windows of ``part``, shrunk by
    ``shrink`` (:data:`SHRINK`) toward equal weights over every member (``toward`` equal) or
    over the members the trim keeps (``kept``)."""
    ends = fs.ends.get(part)
    learn = ends is not None and len(ends) > 0
    have = [m for m in members if fs.forecasts.get(m, {}).get("test") is not None
            and (not learn or fs.forecasts[m].get(part) is not None)]
    if not have:
        return None
    if not learn:
        return Blend(have, np.full((store.n_series, len(have)), 1.0 / len(have)),
                     "equal weights (no validation part to learn them on)")
    y, sid, S = store.targets(ends), store.series_of(ends), store.n_series
    n = np.bincount(sid, minlength=S)
    floor = FLOOR * np.array([naive_scale(store.train_y(i), int(lag)) ** 2
                              for i, lag in enumerate(store.lags())])
    mse = np.full((S, len(have)), np.nan)
    for k, m in enumerate(have):
        err = np.mean((fs.forecasts[m][part].point - y) ** 2, axis=1)
        finite = np.isfinite(err)
        total = np.bincount(sid, np.where(finite, err, 0.0), minlength=S)
        bad = np.bincount(sid, ~finite, minlength=S)
        mse[:, k] = np.where((n > 0) & (bad == 0), total / np.maximum(n, 1), np.nan)
    w = inverse_error_weights(mse, trim, floor)
    if shrink > 0:       # few windows: toward equal weights
        learned = (n / (n + shrink))[:, None]
        target = np.full_like(w, 1.0 / len(have)) if toward == "equal" else \
            (w > 0) / (w > 0).sum(axis=1, keepdims=True)
        w = learned * w + (1 - learned) * target
    return Blend(have, w, rule(trim, shrink, toward), n)


def blended(fs: ForecastSet, store, blend: Blend) -> dict[str, Forecast]:
    """The blend's forecast of every part: each window's members weighted by its series'
    weights, its point forecasts and (where every member has them) its quantiles, level by
    level (scored, or calibrated on the calibration part, like every forecaster's; the
    forecast command blends the same way)."""
    out = {}
    for part, ends in fs.ends.items():
        got = [fs.forecasts[m].get(part) for m in blend.members]
        if any(f is None for f in got):
            out[part] = None
            continue
        w = blend.weights[store.series_of(ends)]                       # (N, M)
        point = weighted(w, [f.point for f in got])
        quant = None if any(f.quantiles is None for f in got) else \
            weighted(w, [f.quantiles for f in got])
        failed = [np.asarray(f.failed, dtype=bool) & (w[:, k] > 0)
                  for k, f in enumerate(got) if f.failed is not None]
        out[part] = Forecast(point, quant, failed=np.any(failed, axis=0) if failed else None)
    return out


def weighted(w: np.ndarray, values: list[np.ndarray]) -> np.ndarray:
    """Each row's members (M arrays (N, ...)) weighted by ``w`` (N, M); a member of weight 0
    is left out, so its NaN (a member that could not forecast) never reaches the blend."""
    out = np.zeros_like(values[0], dtype=np.float64)
    for k, v in enumerate(values):
        wk = w[:, k].reshape((-1,) + (1,) * (v.ndim - 1))
        out += np.where(wk > 0, wk * np.nan_to_num(v, nan=0.0), 0.0) \
            + np.where((wk > 0) & np.isnan(v), np.nan, 0.0)
    return out


def with_combinations(fs: ForecastSet, names: list[str], store=None,
                      blends: dict[str, tuple] | None = None) -> ForecastSet:
    """``fs`` with each of ``names`` (``model+comb``: forecasters joined by +) added, the
    equal-weight mean of those forecasters; and (given the ``store``) each of ``blends``
    (name -> its members, trim and optionally shrink: ``blend`` is evaluate.blend's), their
    weights in ``fs.record[name]`` (and the series that learned them on few windows)."""
    for name in names:
        c = Combination(name, name.split("+"))
        fs.forecasts[name] = {part: combined(fs.forecasts, c, part) for part in fs.ends}
    for name, (members, trim, *how) in (blends or {}).items():
        shrink, toward = (list(how) + [SHRINK, TOWARD][len(how):])[:2]
        b = learn_blend(fs, store, list(members), trim, shrink=shrink, toward=toward) \
            if members else None
        if b is not None:
            fs.forecasts[name] = blended(fs, store, b)
            fs.record[name] = {**b.record(store.ids), "line": b.line(),
                               "few": b.few(store.ids)}
    return fs


def blends_of(members: list[str]) -> dict[str, tuple[list[str], float]]:
    """evaluate.blend's members as the ``blends`` of :func:`with_combinations`."""
    return {"blend": (list(members), TRIM)} if members else {}
