"""What the forecast command adds to the model's future: the blend (every member refitted on
the whole series, weighted by the series' weights from models/blend.json) and every step's
quantiles, made the way the evaluate stage made the scored ones (models/intervals.json):
calibrated (the raw quantiles widened by each step's calibrated margin, in the series' unit:
its mean absolute level, as calibration's), a forecaster's own, or the fallback's spread
(Naive2's) around the forecast where it has none."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from ..data.scaling import naive_scale
from ..errors import UserInputError
from ..evaluation.calibration import UNIT, future_quantiles
from ..evaluation.intervals import at_point
from ..forecasters.future import future
from ..forecasters.statistical import FitFailed
from ..io import read_json


def read_beside(path: str | None, model_path: str, name: str, flag: str) -> dict | None:
    """A file the evaluate stage wrote beside the checkpoint (``name``), or ``path``; None
    where there is none ('' asks for none)."""
    if path == "":
        return None
    file = Path(path) if path else Path(model_path).with_name(name)
    if not file.is_file():
        if path:
            raise UserInputError(f"{flag}: file not found: {path}")
        return None
    try:
        return read_json(file)
    except ValueError as err:
        raise UserInputError(f"{flag}: {file} is not the evaluate stage's JSON ({err}); run "
                             "`dvc repro` to write it again, or pass another") from None


def read_blend(path: str | None, model_path: str) -> dict | None:
    """The blend file (None: forecast with the model alone): ``path``, or blend.json beside
    the checkpoint when there is one; a file without members (evaluate.blend []) is none."""
    blend = read_beside(path, model_path, "blend.json", "--blend")
    if blend is not None and not isinstance(blend.get("members", []), list):
        raise UserInputError("--blend: the file's members must be a list")
    return blend if blend and blend.get("members") else None


def blended_future(blend: dict, sid: str, model_values: np.ndarray, levels: np.ndarray,
                   steps: int, taus: tuple = (), model_quantiles: np.ndarray | None = None
                   ) -> tuple[np.ndarray, np.ndarray | None, str]:
    """The blend's next ``steps`` values of series ``sid``: the model's forecast and each
    other member refitted on the whole series, weighted by the series' weights (a series
    the training never saw: the mean weights); a member that cannot run here is left out and
    the others reweighted. With levels ``taus``, the members' quantiles weighted alike (None
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
                future(m, blend["season"], levels[np.isfinite(levels)], steps, taus)
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
    quant = None if not taus or any(q is None for q in quants) else \
        np.einsum("m,mkq->kq", weights, np.stack(quants))
    return np.einsum("m,mk->k", weights, np.stack(values)), quant, line


def grown(point: np.ndarray, q: np.ndarray, horizon: int) -> np.ndarray:
    """A model's quantiles (steps, Q) past its horizon: step ``horizon``'s spread around the
    point grown by sqrt(k / horizon) at step k (a random walk's growth), in place of the
    quantile head's recursive ones (which take the fed-back medians as known)."""
    if len(q) <= horizon:
        return q
    k = np.arange(horizon + 1, len(q) + 1)
    out = q.copy()
    out[horizon:] = point[horizon:, None] + (q[horizon - 1] - point[horizon - 1]) \
        * np.sqrt(k / horizon)[:, None]
    return out


def series_quantiles(name: str, point: np.ndarray, raw: np.ndarray | None, iv: dict | None,
                     levels: np.ndarray, season: int, lag: int
                     ) -> tuple[np.ndarray | None, str]:
    """Every step's quantiles (steps, Q) of forecaster ``name``'s future ``point`` (steps,) of
    a series with history ``levels``, as the evaluate stage made them (``iv``: its
    intervals.json): calibrated (``raw``, or the point at every level, widened by the
    calibrated margins), its own ``raw`` ones, or Naive2's spread around the point; and how
    they were made. None without levels."""
    if not iv or not iv.get("levels"):
        return None, ""
    taus = tuple(iv["levels"])
    entry = (iv.get("forecasters") or {}).get(name) or {}
    y = np.asarray(levels, dtype=np.float64)
    y = y[np.isfinite(y)]
    if entry.get("margins") is not None:
        unit = (float(np.mean(np.abs(y))) if iv.get("unit_key", UNIT) == "level"
                else naive_scale(y, lag)) \
            or naive_scale(y, 1) or 1.0
        base = raw if raw is not None else at_point(point[None], len(taus))[0]
        return future_quantiles(base, np.asarray(entry["margins"], dtype=float), taus,
                                unit), f"calibrated on {iv.get('calibrated_on')}"
    if raw is not None and not str(entry.get("how", "own")).startswith("fallback"):
        return raw, "its own"
    p2, q2 = future("naive2", season, y, len(point), taus)
    return point[:, None] + (q2 - p2[:, None]), "naive2's spread around it (it has none)"
