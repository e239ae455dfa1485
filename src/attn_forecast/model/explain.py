"""What the model looks at: its attention weights over test windows, the weight by lag, and
for any network (attention, LSTM, MLP) the input-gradient saliency by lag.

:func:`attention_weights` and :func:`saliency_by_lag` run the model (the train stage calls the
first, so evaluate and render never import torch); the lag tables are numpy only.
"""
from __future__ import annotations

import numpy as np

from ..data.scaling import naive_scale
from ..data.windows import inputs, series_slices, spread

WEIGHT_WINDOWS = 10_000  # test windows the mean weights average over, at most (spread)


def attention_weights(model, z, ends, window: int, horizon: int, side=None,
                      batch: int = 2048, first=None) -> np.ndarray | None:
    """The mean weights over the windows ``ends`` (a torch tensor), (L, heads, T, T): T
    tokens (one per step, or one per patch); None for a model without attention. ``first``:
    each window's first row with a value, where windows may be padded (None: none are)."""
    import torch
    if getattr(model, "blocks", None) is None or not len(ends):
        return None
    model.eval()
    total = None
    with torch.no_grad():
        for i in range(0, len(ends), batch):
            e = ends[i:i + batch]
            x, _, c, seen = inputs(z, side, e, window, horizon,
                                   first[i:i + batch] if first is not None else None)
            _, weights = model(x, need_weights=True, cal=c, seen=seen)
            s = torch.stack(weights, dim=1).double().sum(dim=0)   # (L, heads, T, T)
            total = s if total is None else total + s
    return (total / len(ends)).cpu().numpy()


def saliency_by_lag(model, z, ends, window: int, horizon: int, side=None,
                    batch: int = 2048) -> np.ndarray:
    """Each input step's share of the forecast's sensitivity, by lag (index 0 = the newest
    input): the mean over the windows ``ends`` (a torch tensor) of |d forecast / d x|, summed
    over the horizon's steps, each window's normalized to sum 1. What a network without
    attention weights looks at (Simonyan et al.'s saliency), and comparable across networks."""
    import torch
    model.eval()
    total = torch.zeros(window, dtype=torch.float64)
    for i in range(0, len(ends), batch):
        x, _, c, _ = inputs(z, side, ends[i:i + batch], window, horizon)
        x = x.detach().clone().requires_grad_(True)
        y, _ = model(x, cal=c)
        (g,) = torch.autograd.grad(y.sum(), x)
        g = g.abs().double()
        total += (g / g.sum(dim=1, keepdim=True).clamp_min(1e-30)).sum(dim=0).cpu()
    return (total / max(len(ends), 1)).numpy()[::-1].copy()


def lag_profile(mean_weights: np.ndarray, pooling: str) -> np.ndarray:
    """Mean weight each lag gets in the last layer, averaged over heads; index 0 = lag 0 (the
    newest input). With ``last`` pooling only the last query feeds the head, so that row is
    taken; with ``mean`` pooling every query does, so the rows are averaged."""
    rows = mean_weights[-1, :, -1, :] if pooling == "last" else mean_weights[-1].mean(axis=1)
    return rows.mean(axis=0)[::-1]


def token_lags(settings) -> tuple[np.ndarray, np.ndarray]:
    """The lags (0 = the newest input) each token covers, newest token first: (newest lag,
    oldest lag) per token; equal for one token per step."""
    W = settings.window
    steps = settings.token_steps()[::-1]
    return (np.array([W - 1 - last for _, last in steps]),
            np.array([W - 1 - first for first, _ in steps]))


def lags_table(mean_weights: np.ndarray | None, settings) -> dict[str, np.ndarray]:
    """Weight by lag, as columns: ``lag`` .. ``lag_oldest`` (the lags a token covers) and
    ``weight``; empty for a model without attention."""
    if mean_weights is None:
        return {"lag": np.zeros(0, np.int64), "lag_oldest": np.zeros(0, np.int64),
                "weight": np.zeros(0)}
    newest, oldest = token_lags(settings)
    return {"lag": newest, "lag_oldest": oldest,
            "weight": lag_profile(mean_weights, settings.pooling)}


def median_series(store, ends: np.ndarray, point: np.ndarray) -> int:
    """The series of median MASE of ``point`` (N, H) on the windows ``ends`` (as the
    evaluation ranks them)."""
    sid = store.series_of(ends)
    scores = []
    lags = store.lags()
    for i, r in series_slices(sid):
        scale = naive_scale(store.train_y(i), int(lags[i]))
        mae = float(np.mean(np.abs(store.targets(ends[r]) - point[r])))
        scores.append((mae / scale if scale > 0 else np.inf, i))
    order = sorted(range(len(scores)), key=lambda k: (scores[k][0], k))
    finite = sum(np.isfinite(s) for s, _ in scores) or len(scores)
    return scores[order[(finite - 1) // 2]][1] if scores else 0


def first_rows(store, ends: np.ndarray, window: int) -> np.ndarray | None:
    """Each window's first row with a value where windows of ``window`` steps may reach
    before their series (a store's padded windows, or a model reading more than the store's
    window: the prior's); None where they never do."""
    if (0 < store.context < store.window) or window > store.window:
        return store.offsets[store.series_of(ends)] + store.offset
    return None


def explain(model, store, ends: np.ndarray, point: np.ndarray, device) -> dict:
    """The attention figures' weights: ``mean`` over the test windows (at most
    :data:`WEIGHT_WINDOWS`, spread over them) and ``example``, the median series' first test
    window; empty arrays for a model without attention."""
    import torch
    z = torch.from_numpy(np.asarray(store.z)).to(device)
    side = torch.from_numpy(np.asarray(store.side)).to(device) if store.side is not None \
        else None
    W, H = model.settings.window, store.horizon

    def weights(e: np.ndarray):
        first = first_rows(store, e, W)
        return attention_weights(model, z, torch.from_numpy(e).to(device), W, H, side,
                                 first=torch.from_numpy(first).to(device)
                                 if first is not None else None)
    mean = weights(spread(ends, WEIGHT_WINDOWS))
    if mean is None:
        empty = np.zeros((0, 0, W, W))
        return {"mean": empty, "example": empty}
    i = median_series(store, ends, point)
    return {"mean": mean, "example": weights(ends[store.series_of(ends) == i][:1])}
