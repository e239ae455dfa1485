"""Helpers shared by the tests of a trained model (training, forecasters, pipeline): tiny stores
of a noisy sine, their tensors, training settings without input noise."""
from __future__ import annotations

import numpy as np
import pandas as pd
import torch

from attn_forecast.data.build import build
from attn_forecast.data.store import Store
from attn_forecast.training.settings import TrainSettings
from attn_forecast.data.long_table import Raw

W = 8
NO_VAL = torch.zeros(0, dtype=torch.int64)


def _raw(series: list[np.ndarray], t=None, ids=None) -> Raw:
    offsets = np.r_[0, np.cumsum([len(s) for s in series])].astype(np.int64)
    y = np.concatenate(series).astype(np.float64)
    if t is None:
        t = np.concatenate([np.arange(len(s), dtype=np.float64) for s in series])
    ids = np.array(ids or [f"s{i}" for i in range(len(series))])
    return Raw(ids, offsets, t, y, np.full(len(y), np.nan))


def _store(series, *, horizon=1, test=0.2, val=0.0, transform="none", window=W,
           time_features=(), t=None) -> Store:
    return build(_raw(series, t), window=window, horizon=horizon,
                   fracs={"test": test, "val": val, "cal": 0.0}, scaler="zscore",
                   transform=transform, time_features=tuple(time_features))


def _sine(n=160, noise=0.1, seed=0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return np.sin(np.linspace(0, 6 * np.pi, n)) + rng.normal(0, noise, n)


def _data(store: Store) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    z = torch.from_numpy(np.asarray(store.z))
    return (z, *(torch.from_numpy(store.ends(p)) for p in ("train", "val", "test")))


def _p(**kw) -> TrainSettings:
    """Training settings without input noise (params.yaml's 0.3) unless asked for."""
    return TrainSettings(**{"augment_noise": 0.0, "ensemble": 1, **kw})


def _with_calendar_and_features() -> Store:
    rs = np.random.default_rng(0)
    y = 10 + np.cumsum(rs.normal(size=120))
    t = pd.date_range("2024-01-01", periods=120, freq="D").to_numpy("datetime64[s]")
    raw = Raw(np.array(["x"]), np.array([0, 120]), t, y, np.full(120, np.nan),
              rs.uniform(1, 2, (120, 3)), ("a", "b", "c"))
    return build(raw, window=14, horizon=3, fracs={"test": 0.2, "val": 0.0, "cal": 0.0},
                   scaler="zscore", transform="none", time_features=("dayofweek", "month"))
