"""Helpers shared by the tests of attn_forecast.commands.forecast: stores built by hand, a
tiny model, bars with past covariates."""
from __future__ import annotations

import numpy as np
import pandas as pd
import torch

from attn_forecast.data.build import build
from attn_forecast.data.store import Store
from attn_forecast.model.networks import build_model
from attn_forecast.model.settings import ModelSettings
from attn_forecast.data.sources import ohlcv
from attn_forecast.data.long_table import Raw

W, H = 10, 2


def _build(series, ids, *, t=None, window=W, horizon=H, transform="none", test=0.2, val=0.0,
           source=None, time_features=(), features=None, names=(), kinds=()) -> Store:
    offsets = np.r_[0, np.cumsum([len(s) for s in series])].astype(np.int64)
    y = np.concatenate(series).astype(np.float64)
    if t is None:
        t = np.concatenate([np.arange(len(s), dtype=np.float64) for s in series])
    raw = Raw(np.array(ids), offsets, t, y, np.full(len(y), np.nan), features,
              tuple(names))
    return build(raw, window=window, horizon=horizon,
                   fracs={"test": test, "val": val, "cal": 0.0}, scaler="zscore",
                   transform=transform, time_features=tuple(time_features),
                   feature_transforms=tuple(kinds), source=source or {})


def _scaler(store: Store, i: int = 0) -> tuple[float, float]:
    return float(store.scalers.center[i]), float(store.scalers.scale[i])


def _tiny(seed=0, **kw):
    torch.manual_seed(seed)
    return build_model(ModelSettings(**{"window": W, "horizon": H, "d_model": 8, "ffn_dim": 8,
                                        **kw})).eval()


NAMES = ("open", "high", "low", "volume")
KINDS = ("log_return", "log_return", "log_return", "log1p")


def _bars_store(n=160, horizon=2, ids=("bars",), source=None):
    frames = [ohlcv(n + 15 * k, k, lead=0.8) for k in range(len(ids))]
    t = np.concatenate([pd.to_datetime(f["date"]).to_numpy("datetime64[s]") for f in frames])
    feats = np.concatenate([f[list(NAMES)].to_numpy() for f in frames])
    store = _build([f["close"].to_numpy() for f in frames], list(ids), t=t, window=12,
                   horizon=horizon, transform="log_return", features=feats, names=NAMES,
                   kinds=KINDS, source=source)
    return frames, feats, store
