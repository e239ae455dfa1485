"""What the model's tests share: the window, the horizon and a small hourly store (the export
tests of the model and of the command), a store of given series (the networks' and explain's)."""
from __future__ import annotations

import numpy as np
import pandas as pd

from attn_forecast.data.build import build
from attn_forecast.data.long_table import Raw
from attn_forecast.data.sources import sine
from attn_forecast.data.store import Store

W, H = 24, 3


def _f32(a) -> np.ndarray:
    return np.ascontiguousarray(a, dtype=np.float32)


def hourly_store() -> Store:
    """Two hourly sine series on their own scales, with an hour-of-day calendar."""
    parts = [sine(300, 0.15, 3)["value"].to_numpy(), sine(260, 0.1, 4)["value"].to_numpy() * 5]
    t = np.concatenate([pd.date_range("2024-01-01", periods=len(v), freq="h")
                        .to_numpy("datetime64[s]") for v in parts])
    offsets = np.r_[0, np.cumsum([len(v) for v in parts])].astype(np.int64)
    y = np.concatenate(parts)
    raw = Raw(np.array(["a", "b"]), offsets, t, y, np.full(len(y), np.nan))
    return build(raw, window=W, horizon=H, fracs={"test": 0.2, "val": 0.0, "cal": 0.0},
                 scaler="zscore", transform="none", time_features=("hour",))


def small_store(series: list[np.ndarray], window: int = 6, horizon: int = 2) -> Store:
    """A store of ``series`` (one after the other), ids s0, s1, ..."""
    offsets = np.r_[0, np.cumsum([len(s) for s in series])].astype(np.int64)
    y = np.concatenate(series).astype(np.float64)
    t = np.concatenate([np.arange(len(s), dtype=np.float64) for s in series])
    raw = Raw(np.array([f"s{i}" for i in range(len(series))]), offsets, t, y,
              np.full(len(y), np.nan))
    return build(raw, window=window, horizon=horizon,
                   fracs={"test": 0.25, "val": 0.0, "cal": 0.0}, scaler="zscore",
                   transform="none")
