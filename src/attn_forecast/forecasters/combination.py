"""Combinations of other forecasters' point forecasts, with the series any member could not
forecast marked as the combination's:

- fixed, equal weights: Comb (ARIMA, ETS, CES and Dynamic Optimized Theta), ``model+comb``,
  ``model+ets+theta``: the combination as named, known in advance;
- ``blend``: weights each series learns on its own validation part (the windows before the
  test part), from every member's forecasts there: the inverse of each member's mean squared
  error (Bates and Granger's weights), over the members within :data:`TRIM` times the best
  one's error (a member far behind on the series' recent past gets none). The test part is
  never read. Without a validation part every member weighs the same."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .protocol import Forecast
from .saved import ForecastSet

TRIM = 3.0   # a member whose validation MSE exceeds this many times the best gets no weight
RULE = f"inverse validation MSE, members within {TRIM:g}x the best"


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
    return Forecast(c.combine({m: f.point for m, f in got.items()}),
                    failed=_failed(list(got.values())))


def _failed(forecasts: list[Forecast]) -> np.ndarray | None:
    failed = [f.failed for f in forecasts if f.failed is not None]
    return np.any(failed, axis=0) if failed else None


def inverse_error_weights(mse: np.ndarray, trim: float = TRIM) -> np.ndarray:
    """(S, M) weights from (S, M) mean squared errors (NaN: no score): per row, the inverse
    error of every member within ``trim`` x the row's best, normalised; a row without any
    score weighs its members alike; a member without error takes all the weight."""
    mse = np.asarray(mse, dtype=np.float64)
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
    """The weights each series learned (``weights`` (S, M) over ``members``) and how."""
    members: list[str]
    weights: np.ndarray
    rule: str

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
                part: str = "val") -> Blend | None:
    """Each series' weights over ``members`` (those with forecasts of ``part`` and of the
    test part; None if none has) from their errors on its windows of ``part``."""
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
    mse = np.full((S, len(have)), np.nan)
    for k, m in enumerate(have):
        err = np.mean((fs.forecasts[m][part].point - y) ** 2, axis=1)
        finite = np.isfinite(err)
        total = np.bincount(sid, np.where(finite, err, 0.0), minlength=S)
        bad = np.bincount(sid, ~finite, minlength=S)
        mse[:, k] = np.where((n > 0) & (bad == 0), total / np.maximum(n, 1), np.nan)
    rule = RULE if trim == TRIM else f"inverse validation MSE, members within {trim:g}x the best"
    return Blend(have, inverse_error_weights(mse, trim), rule)


def blended(fs: ForecastSet, store, blend: Blend) -> dict[str, Forecast]:
    """The blend's forecast of every part: each window's members weighted by its series'.
    Where the model is a member with quantiles, the blend's are the model's spread moved to
    centre on the blend's point (scored, or calibrated on the calibration part, like every
    forecaster's; the forecast command writes the same)."""
    out = {}
    for part, ends in fs.ends.items():
        got = [fs.forecasts[m].get(part) for m in blend.members]
        if any(f is None for f in got):
            out[part] = None
            continue
        w = blend.weights[store.series_of(ends)]                       # (N, M)
        point = np.einsum("nm,mnh->nh", w, np.stack([f.point for f in got]))
        model = got[blend.members.index("model")] if "model" in blend.members else None
        quant = None if model is None or model.quantiles is None else \
            model.quantiles + (point - model.point)[..., None]
        out[part] = Forecast(point, quant, failed=_failed(got))
    return out


def with_combinations(fs: ForecastSet, names: list[str], store=None,
                      blends: dict[str, tuple[list[str], float]] | None = None) -> ForecastSet:
    """``fs`` with each of ``names`` (``model+comb``: forecasters joined by +) added, the
    equal-weight mean of those forecasters; and (given the ``store``) each of ``blends``
    (name -> its members and trim: ``blend`` is evaluate.blend's), their weights in
    ``fs.record[name]``."""
    for name in names:
        c = Combination(name, name.split("+"))
        fs.forecasts[name] = {part: combined(fs.forecasts, c, part) for part in fs.ends}
    for name, (members, trim) in (blends or {}).items():
        b = learn_blend(fs, store, list(members), trim) if members else None
        if b is not None:
            fs.forecasts[name] = blended(fs, store, b)
            fs.record[name] = {**b.record(store.ids), "line": b.line()}
    return fs


def blends_of(members: list[str]) -> dict[str, tuple[list[str], float]]:
    """evaluate.blend's members as the ``blends`` of :func:`with_combinations`."""
    return {"blend": (list(members), TRIM)} if members else {}
