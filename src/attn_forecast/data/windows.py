"""Windows gathered on the fly from the flat, level-aligned arrays: never stored.

A window is named by the global row ``e`` of its first target::

    rows:   e-W ........ e-1 | e ........ e+H-1
            [   inputs W    ] [  targets H   ]      side inputs: rows e-W .. e-1 (inputs),
                                                    e .. e+H-1 (the target times' calendar)

Works on numpy arrays and torch tensors alike (generate, prepare and the baselines never
import torch); only the N requested windows are copied.
"""
from __future__ import annotations

from typing import Any

import numpy as np

Array = Any  # a numpy array or a torch tensor


def gather(series: Array, ends: Array, window: int, horizon: int, first: Array | None = None
           ) -> tuple[Array, Array]:
    """Inputs (N, W) and targets (N, H) of the windows ending at ``ends``. ``first``: each
    window's first row with a value; inputs before it repeat it (padding, see
    :func:`observed`)."""
    if first is not None:
        return _padded(series, ends, window, first), gather(series, ends, 1, horizon)[1]
    if isinstance(series, np.ndarray):
        view_x = np.lib.stride_tricks.sliding_window_view(series, window)
        view_y = np.lib.stride_tricks.sliding_window_view(series, horizon)
    else:
        view_x = series.unfold(0, window, 1)   # (R - W + 1, W) view
        view_y = series.unfold(0, horizon, 1)  # (R - H + 1, H) view
    return view_x[ends - window], view_y[ends]


def _padded(series: Array, ends: Array, window: int, first: Array) -> Array:
    """Inputs whose rows before ``first`` take the row ``first`` instead."""
    if isinstance(series, np.ndarray):
        rows = ends[:, None] - window + np.arange(window)[None, :]
        return series[np.maximum(rows, np.asarray(first)[:, None])]
    import torch
    rows = ends[:, None] - window + torch.arange(window, device=ends.device)[None, :]
    return series[torch.maximum(rows, first[:, None])]


def observed(ends: Array, window: int, first: Array) -> Array:
    """(N, W) True where a window's input step has a value, False where it is padding."""
    if isinstance(ends, np.ndarray):
        return ends[:, None] - window + np.arange(window)[None, :] >= np.asarray(first)[:, None]
    import torch
    steps = torch.arange(window, device=ends.device)[None, :]
    return ends[:, None] - window + steps >= first[:, None]


def gather_side(side: Array | None, ends: Array, window: int, horizon: int,
                first: Array | None = None) -> tuple[Array, Array] | None:
    """Side inputs (N, W, C) of the input steps and (N, H, C) of the target steps, from
    ``side`` (R, C) aligned with the series; None without side inputs. ``first``: as for
    :func:`gather`."""
    if side is None or side.shape[1] == 0:
        return None
    if first is not None:
        return _padded(side, ends, window, first), gather_side(side, ends, 1, horizon)[1]
    if isinstance(side, np.ndarray):
        view_x = np.lib.stride_tricks.sliding_window_view(side, window, axis=0)
        view_y = np.lib.stride_tricks.sliding_window_view(side, horizon, axis=0)
        return view_x[ends - window].transpose(0, 2, 1), view_y[ends].transpose(0, 2, 1)
    view_x = side.unfold(0, window, 1)   # (R - W + 1, C, W) view
    view_y = side.unfold(0, horizon, 1)
    return view_x[ends - window].transpose(1, 2), view_y[ends].transpose(1, 2)


def inputs(series: Array, cal: Array | None, ends: Array, window: int, horizon: int,
           first: Array | None = None) -> tuple:
    """A batch's inputs: (x, y, side inputs, seen): ``first`` (each window's first row with a
    value) pads the steps before it, and ``seen`` marks the others (None: none padded)."""
    x, y = gather(series, ends, window, horizon, first)
    seen = observed(ends, window, first) if first is not None else None
    return x, y, gather_side(cal, ends, window, horizon, first), seen


def flat_inputs(series: np.ndarray, side: np.ndarray | None, ends: np.ndarray, window: int,
                horizon: int, side_from: int = 0, first: np.ndarray | None = None
                ) -> np.ndarray:
    """(N, W [+ W * F]) inputs of a linear model: the window, and with ``side`` its columns
    from ``side_from`` on (the past covariates) over the input steps, flattened."""
    x, _ = gather(series, ends, window, horizon, first)
    if side is None or side.shape[1] <= side_from:
        return x
    c, _ = gather_side(side[:, side_from:], ends, window, horizon, first)
    return np.concatenate([x, c.reshape(len(ends), -1)], axis=1)


def spread(ends: np.ndarray, k: int) -> np.ndarray:
    """At most ``k`` of ``ends``, evenly spaced (deterministic)."""
    if len(ends) <= k:
        return ends
    return ends[np.linspace(0, len(ends) - 1, k).round().astype(np.int64)]


def concat_ranges(starts: np.ndarray, stops: np.ndarray) -> np.ndarray:
    """``np.concatenate([np.arange(a, b) for a, b in zip(starts, stops)])`` without the loop
    (empty where b <= a)."""
    starts = np.asarray(starts, np.int64)
    lens = np.maximum(np.asarray(stops, np.int64) - starts, 0)
    total = int(lens.sum())
    if not total:
        return np.zeros(0, dtype=np.int64)
    before = np.cumsum(lens) - lens
    return np.repeat(starts - before, lens) + np.arange(total)


def series_slices(sid: np.ndarray) -> list[tuple[int, slice]]:
    """(series, rows) of each run of equal series ids in ``sid`` (windows come series by
    series)."""
    if not len(sid):
        return []
    starts = np.flatnonzero(np.r_[True, sid[1:] != sid[:-1]])
    stops = np.r_[starts[1:], len(sid)]
    return [(int(sid[a]), slice(int(a), int(b))) for a, b in zip(starts, stops)]
