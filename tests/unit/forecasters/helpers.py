"""Helpers shared by the forecasters' tests: series and the stores built from them by hand."""
from __future__ import annotations

import numpy as np

from attn_forecast.data.build import build
from attn_forecast.data.long_table import Raw

LEVELS = (0.1, 0.5, 0.9)


def _raw(series, ids=None, features=None, names=()) -> Raw:
    series = [np.asarray(s, dtype=np.float64) for s in series]
    ids = np.array(ids if ids is not None else [f"s{i}" for i in range(len(series))], dtype=str)
    offsets = np.r_[0, np.cumsum([len(s) for s in series])].astype(np.int64)
    y = np.concatenate(series)
    t = np.concatenate([np.arange(len(s), dtype=np.float64) for s in series])
    return Raw(ids, offsets, t, y, np.full(len(y), np.nan), features, tuple(names))


def _store(series, *, window=6, horizon=2, test=0.25, val=0.0, cal=0.0, transform="none",
           ids=None, test_size=None, features=None, names=(), feature_transforms=()):
    return build(_raw(series, ids, features, names), window=window, horizon=horizon,
                 fracs={"test": test, "val": val, "cal": cal}, scaler="zscore",
                 transform=transform, feature_transforms=feature_transforms,
                 test_size=None if test_size is None else np.asarray(test_size))


def _series(n=120, seed=0, level=10.0, scale=1.0, season=12):
    rng = np.random.default_rng(seed)
    t = np.arange(n)
    return level + scale * (np.sin(2 * np.pi * t / season) + 0.02 * t
                            + np.cumsum(rng.normal(0, 0.3, n)))
