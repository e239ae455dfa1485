"""The future of whole series, written once for the forecast command and the forecast service:
the network's next values (batched over series, recursive past its horizon), the blend (every
member refitted on the whole series, weighted by the series' weights from the blend file) or
one member alone, and every step's quantiles, made the way the evaluate stage made the scored
ones (the intervals file): calibrated (the raw quantiles widened by each step's calibrated
margin, in the series' unit), a forecaster's own, or the fallback's spread (Naive2's) around
the forecast where it has none.

The network is a callable, so the same code runs a PyTorch module (the command) or an ONNX
session (the service)::

    run(z (B, W) float32, seen (B, W) bool | None, side (inputs (B, W, C), targets (B, H, C))
        | None) -> quantiles (B, H, Q) float64        (Q = 1 for a point model)

Nothing here imports torch.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from ..data import transforms
from ..data.calendar import time_features
from ..data.frequency import next_times
from ..data.scaling import fit_one, naive_scale
from ..errors import UserInputError
from ..forecasters.future import future
from ..forecasters.names import BLEND
from ..forecasters.protocol import at_levels
from ..forecasters.statistical import FitFailed
from ..model.settings import context_of, takes_short
from .calibration import UNIT, future_quantiles
from .intervals import at_point

Runner = Callable[[np.ndarray, "np.ndarray | None", "tuple | None"], np.ndarray]


# ---------------------------------------------------------------- the network's future
def scaler_of(meta: dict, sid: str, y: np.ndarray) -> tuple[float, float]:
    """(center, scale) of series ``sid``: its training scaler where the training knew it,
    else one fitted on the history given now."""
    known = meta["series"]
    k = known["ids"].index(sid) if sid in known["ids"] else None
    if k is not None:
        return float(known["center"][k]), float(known["scale"][k])
    z = transforms.model_series(y, meta["transform"], "the model's transform")
    return fit_one(z[transforms.offset(meta["transform"]):], meta["scaler"])


def network_future(run: Runner, meta: dict, window: int, head_levels: Sequence[float],
                   histories: Sequence[np.ndarray], times: Sequence[np.ndarray] | None,
                   steps: int, scalers: Sequence[tuple[float, float]],
                   features: Sequence[np.ndarray] | None = None) -> tuple:
    """The next ``steps`` values of each of B series (B, steps) and, for a quantile head, their
    quantiles (B, steps, Q) (else None): a horizon at a time, the median fed back. ``meta``:
    the prepared data's record (horizon, transform, calendar features); ``window``: the
    network's; ``times``: each series' time stamps (needed for calendar inputs);
    ``features``: each series' past covariates, transformed and scaled (n, F)."""
    H, kind = int(meta["horizon"]), meta["transform"]
    W, off = window, transforms.offset(kind)
    need, mask = context_of(meta, W), takes_short(meta, W)
    for y in histories:
        if len(y) < need + off:
            raise UserInputError(f"the series has {len(y)} values; this model needs at "
                                 f"least {need + off} (window {need}"
                                 + (f" + 1 for the {kind} transform)" if off else ")"))
    names = meta["time_features"]
    if meta["features"] and steps > H:
        raise UserInputError(f"--steps must be <= {H} (the model's horizon) for a model with "
                             f"feature columns ({', '.join(meta['features'])}): their future "
                             "values are not known, so it cannot feed forecasts back in")
    cal = [time_features(np.concatenate([np.asarray(t).astype("datetime64[s]"),
                                         next_times(t, steps + H).astype("datetime64[s]")]),
                         names) for t in times] if names else None
    center = np.array([s[0] for s in scalers], dtype=np.float64)[:, None]
    scale = np.array([s[1] for s in scalers], dtype=np.float64)[:, None]
    hist = [np.asarray(h, dtype=np.float64) for h in histories]
    B, mid = len(hist), list(head_levels).index(0.5) if head_levels else 0
    chunks, done = [], 0
    while done < steps:
        z = np.empty((B, W), dtype=np.float64)
        seen = np.ones((B, W), dtype=bool) if mask else None
        for i, h in enumerate(hist):
            zi = (transforms.model_series(h[-(W + off):], kind)[-W:] - center[i, 0]) \
                / scale[i, 0]
            if len(zi) < W:   # a short history: the steps before it padded and masked
                if cal is not None or features is not None:
                    raise UserInputError(f"the series has {len(h)} values; a model with "
                                         f"calendar or feature inputs needs its whole window "
                                         f"({W})")
                seen[i, :W - len(zi)] = False
                zi = np.r_[np.full(W - len(zi), zi[0]), zi]
            z[i] = zi
        side = _side(cal, features, [len(h) for h in hist], W, H)
        zq = run(z.astype(np.float32), seen, side)                        # (B, H, Q)
        y = zq * scale[..., None] + center[..., None]
        if kind == "none":
            lv = y                                                        # (B, H, Q)
        else:   # each level's path from the series' last level, Q paths a series
            Q = zq.shape[2]
            last = np.repeat([h[-1] for h in hist], Q)
            lv = transforms.to_y(y.transpose(0, 2, 1).reshape(B * Q, -1), last, kind) \
                .reshape(B, Q, -1).transpose(0, 2, 1)
        chunks.append(lv)
        done += H
        if done < steps:
            hist = [np.concatenate([h, lv[i, :, mid]]) for i, h in enumerate(hist)]
    quant = (chunks[0] if len(chunks) == 1 else np.concatenate(chunks, axis=1))[:, :steps]
    return np.ascontiguousarray(quant[..., mid]), (quant if head_levels else None)


def _side(cal, features, ns: list[int], W: int, H: int):
    """(inputs (B, W, C + F), targets (B, H, C + F)) of the windows after levels ns - 1; the
    target times' feature columns are zeros (the model never reads them)."""
    if cal is None and features is None:
        return None
    xs, ys = [], []
    for i, n in enumerate(ns):
        x, y = [], []
        if cal is not None:
            x.append(cal[i][n - W:n])
            y.append(cal[i][n:n + H])
        if features is not None:
            x.append(features[i][n - W:n].astype(np.float32))
            y.append(np.zeros((H, features[i].shape[1]), dtype=np.float32))
        xs.append(np.concatenate(x, axis=1))
        ys.append(np.concatenate(y, axis=1))
    return np.stack(xs), np.stack(ys)


def grown(point: np.ndarray, q: np.ndarray, horizon: int) -> np.ndarray:
    """A model's quantiles (..., steps, Q) past its horizon: step ``horizon``'s spread around
    the point (..., steps) grown by sqrt(k / horizon) at step k (a random walk's growth), in
    place of the quantile head's recursive ones (which take the fed-back medians as known)."""
    if q.shape[-2] <= horizon:
        return q
    k = np.arange(horizon + 1, q.shape[-2] + 1)
    out = q.copy()
    out[..., horizon:, :] = point[..., horizon:, None] + \
        (q[..., horizon - 1:horizon, :] - point[..., horizon - 1:horizon, None]) \
        * np.sqrt(k / horizon)[:, None]
    return out


# ---------------------------------------------------------------- a member's, the blend's
def blended_future(blend: dict, sid: str, model_values: np.ndarray, y: np.ndarray,
                   steps: int, levels: tuple = (), model_quantiles: np.ndarray | None = None
                   ) -> tuple[np.ndarray, np.ndarray | None, str]:
    """The blend's next ``steps`` values of series ``sid``: the model's forecast and each
    other member refitted on the whole series, weighted by the series' weights (a series
    the training never saw: the mean weights); a member that cannot run here is left out and
    the others reweighted. With ``levels``, the members' quantiles weighted alike (None
    where a member with weight has none). Returns the values, the quantiles and a line of
    what was used."""
    members = blend["members"]
    w = np.asarray(blend["series"].get(sid, [blend["mean"][m] for m in members]), dtype=float)
    values, quants, used, weights = [], [], [], []
    for m, wm in zip(members, w):
        if wm <= 0:
            continue
        try:
            v, q = (model_values, model_quantiles) if m == "model" else \
                future(m, blend["season"], y[np.isfinite(y)], steps, levels)
        except FitFailed:
            continue
        values.append(v)
        quants.append(q)
        used.append(m)
        weights.append(wm)
    if not used:        # no member with weight could run on this series: the model alone
        return np.asarray(model_values, dtype=float), model_quantiles, \
            "model 1.00 (no other member could run)"
    weights = np.asarray(weights) / np.sum(weights)
    line = ", ".join(f"{m} {x:.2f}" for m, x in zip(used, weights))
    quant = None if not levels or any(q is None for q in quants) else \
        np.einsum("m,mkq->kq", weights, np.stack(quants))
    return np.einsum("m,mk->k", weights, np.stack(values)), quant, line


def unit_of(iv: dict, y: np.ndarray, lag: int) -> float:
    """A series' calibration unit (the intervals file's): its mean absolute level, or its
    in-sample naive error at ``lag``; the lag-1 error, then 1, where that is 0."""
    y = np.asarray(y, dtype=np.float64)
    y = y[np.isfinite(y)]
    unit = float(np.mean(np.abs(y))) if iv.get("unit_key", UNIT) == "level" \
        else naive_scale(y, lag)
    return unit or naive_scale(y, 1) or 1.0


def series_quantiles(name: str, point: np.ndarray, raw: np.ndarray | None, iv: dict | None,
                     histories: Sequence[np.ndarray], season: int, lags: Sequence[int]
                     ) -> tuple[np.ndarray | None, str]:
    """Every step's quantiles (B, steps, Q) of forecaster ``name``'s future ``point``
    (B, steps) of B series with histories ``histories``, as the evaluate stage made them
    (``iv``: its intervals file): calibrated (``raw`` (B, steps, Q), or the point at every
    level, widened by the calibrated margins), its own ``raw`` ones, or Naive2's spread
    around the point; and how they were made. None without levels."""
    if not iv or not iv.get("levels"):
        return None, ""
    levels = tuple(iv["levels"])
    entry = (iv.get("forecasters") or {}).get(name) or {}
    if entry.get("margins") is not None:
        units = np.array([unit_of(iv, y, lag) for y, lag in zip(histories, lags)])
        base = raw if raw is not None else at_point(point, len(levels))
        return future_quantiles(base, np.asarray(entry["margins"], dtype=float), levels,
                                units), f"calibrated on {iv.get('calibrated_on')}"
    if raw is not None and not str(entry.get("how", "own")).startswith("fallback"):
        return raw, "its own"
    out = np.empty(point.shape + (len(levels),))
    for i, y in enumerate(histories):
        y = np.asarray(y, dtype=np.float64)
        p2, q2 = future("naive2", season, y[np.isfinite(y)], point.shape[1], levels)
        out[i] = point[i, :, None] + (q2 - p2[:, None])
    return out, "naive2's spread around it (it has none)"


def outlook(name: str, head_levels: Sequence[float], H: int, values: np.ndarray,
            head: np.ndarray | None, blend: dict | None, iv: dict | None, sid: str,
            y: np.ndarray, steps: int, lag: int
            ) -> tuple[np.ndarray, np.ndarray | None, str, str]:
    """One series' forecast by ``name`` (the blend, the model, or one of the blend's members
    refitted on the whole series) from the network's ``values`` (steps,) and quantile
    ``head`` (steps, Q) (None for a point model), and every step's quantiles; how they were
    made, and the blend's line of what it used."""
    levels = tuple(iv["levels"]) if iv and iv.get("levels") else ()
    head = grown(values, head, H) if head is not None else None
    raw = at_levels(head, head_levels, levels) if head is not None and levels else None
    used = ""
    if name == BLEND:
        calibrated = ((iv or {}).get("forecasters") or {}).get(BLEND, {}).get("margins")
        member = raw if raw is not None or not calibrated else \
            at_point(values[None], len(levels))[0]       # calibration widens a point model's
        values, raw, used = blended_future(blend, sid, values, y, steps, levels, member)
    elif name != "model":
        y = np.asarray(y, dtype=np.float64)
        values, raw = future(name, int(blend["season"]), y[np.isfinite(y)], steps, levels)
    if not levels:        # no intervals file: a quantile head's own levels, as they are
        own = head if name == "model" else None
        return values, own, "the quantile head's own" if own is not None else "", used
    season = int((blend or iv or {}).get("season", 0) or 0)
    quant, how = series_quantiles(name, values[None], None if raw is None else raw[None], iv,
                                  [y], season, [lag])
    return values, quant[0], f"the {name}'s, {how}" if how else "", used


def lag_of(iv: dict | None, sid: str) -> int:
    """The lag of series ``sid``'s calibration unit: the one evaluate used, else the season
    (a series the run never saw), else 1."""
    lags = (iv or {}).get("lags") or {}
    return int(lags.get(sid, max(int((iv or {}).get("season", 0) or 0), 1)))


FAR = 20.0   # training standard deviations: further than a trend carries a series


def far_from(y: np.ndarray, meta: dict, scaler: tuple[float, float], sid: str
             ) -> list[str]:
    """A warning when the last window, scaled by the training scaler of the series it is taken
    for, lies more than FAR training standard deviations from the training part's values:
    most likely another series than the one the model was trained on."""
    W, kind = meta["window"], meta["transform"]
    off = transforms.offset(kind)
    if len(y) < W + off or meta["scaler"] == "none":
        return []
    z = (transforms.model_series(np.asarray(y[-(W + off):], dtype=np.float64), kind)[-W:]
         - scaler[0]) / scaler[1]
    shift = float(np.abs(np.mean(z)))
    if not np.isfinite(shift) or shift <= FAR:
        return []
    return [f"the last window lies {shift:,.0f} training standard deviations from the values "
            f"of '{sid}' the model was trained on: is this its series? (a model of one series "
            "scales any file by that series' training scaler; train on this file to forecast "
            "it)"]
