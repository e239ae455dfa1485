"""Helpers shared by the tests of the data package: series, Raw tables and stores built by hand,
window ends and cuts worked out by hand, and the CSV reader called as the stages call it."""
from __future__ import annotations

import math
from fractions import Fraction
from pathlib import Path

import numpy as np
import pandas as pd

from attn_forecast.data import splits
from attn_forecast.data.build import build
from attn_forecast.data.store import Store
from attn_forecast.errors import naming
from attn_forecast.setup.keys import PARAMS_KEYS
from attn_forecast.data.long_table import Raw
from attn_forecast.data.csv import read_table

W, H = 5, 3
TRANSFORMS = ("none", "diff", "log_return")
FRACS = {"test": 0.2, "val": 0.1, "cal": 0.0}
# keys as another caller would name the settings: the messages must use them
OTHER_KEYS = {"window": "--window", "horizon": "--horizon", "transform": "--transform"}

# keys as another caller (the forecast command) names its settings: messages must use them
FLAGS = {"path": "--csv", "column": "--column", "time_column": "--time-column",
         "time_format": "--time-format", "sep": "--sep", "decimal": "--decimal",
         "thousands": "--thousands", "missing": "--missing", "features": "--features",
         "id_column": "--id-column", "time_gaps": "--time-gaps"}


def _hand_series() -> list[np.ndarray]:
    """Five positive series of different lengths, built by hand."""
    rs = np.random.default_rng(7)
    return [1.5 * np.arange(1, 38, dtype=np.float64),                       # a ramp, 37
            50 + 10 * np.sin(np.arange(50) / 3.0),                           # 50
            20 * np.exp(np.cumsum(rs.normal(0, 0.05, 64))),                  # a walk, 64
            np.tile([5.0, 6.0, 5.5, 7.0], 10),                               # 40
            rs.uniform(1, 100, 90)]                                          # noise, 90


def _raw(series, ids=None, t=None, features=None, names=()) -> Raw:
    """A Raw of ``series`` one after the other; ids as read_long gives them (numpy str)."""
    ids = np.array(ids if ids is not None else [f"s{i}" for i in range(len(series))],
                   dtype=str)
    offsets = np.concatenate([[0], np.cumsum([len(s) for s in series])]).astype(np.int64)
    y = np.concatenate(series).astype(np.float64)
    if t is None:
        t = np.concatenate([np.arange(len(s), dtype=np.float64) for s in series])
    feats = None if features is None else np.concatenate(features).astype(np.float64)
    return Raw(ids, offsets, t, y, np.full(len(y), np.nan), feats, tuple(names))


def _build(series, *, transform="none", scaler="zscore", window=W, horizon=H, fracs=None,
           ids=None, keys=PARAMS_KEYS, **kw) -> Store:
    """build, its errors naming the settings as ``keys`` do (the stages': params keys)."""
    raw = series if isinstance(series, Raw) else _raw(series, ids)
    with naming(keys):
        return build(raw, window=window, horizon=horizon, fracs=dict(fracs or FRACS),
                     scaler=scaler, transform=transform, **kw)


def _model_values(y: np.ndarray, transform: str) -> np.ndarray:
    """The level-aligned model series by hand: row r is the step that ends at level r."""
    v = np.asarray(y, dtype=np.float64)
    out = np.zeros(len(v))
    if transform == "none":
        return v.copy()
    if transform == "diff":
        out[1:] = v[1:] - v[:-1]
    else:
        out[1:] = np.log(v[1:] / v[:-1])
    return out


def _floor(n: int, *shares: str) -> int:
    """floor(n * (1 - sum(shares))) exactly, with the shares as decimal strings."""
    return math.floor(Fraction(n) * (1 - sum(Fraction(s) for s in shares)))


def _hand_cuts(n: int, tf: str, vf: str, cf: str) -> dict:
    test = _floor(n, tf)
    cal = _floor(n, tf, cf) if Fraction(cf) else test
    val = _floor(n, tf, cf, vf) if Fraction(vf) else cal
    return {"train": (0, val), "val": (val, cal), "cal": (cal, test), "test": (test, n)}


def _brute_ends(lengths, bounds, window, horizon, off) -> dict:
    """Every global window end of each part, by trying every row: inputs inside the series
    and after its first ``off`` rows, all targets inside the part."""
    out = {p: [] for p in splits.PARTS}
    a = 0
    for n, b in zip(lengths, bounds):
        for part, (lo, hi) in b.items():
            out[part] += [a + e for e in range(n + 1)
                          if e - window >= off and lo <= e and e + horizon <= hi]
        a += n
    return out


def _usable_by_hand(n: int, window: int, horizon: int, off: int, fr: dict, parts) -> bool:
    b = _hand_cuts(n, *(str(fr[p]) for p in ("test", "val", "cal")))
    return all(len(_brute_ends([n], [b], window, horizon, off)[p]) >= 1 for p in parts)


def _same(a: np.ndarray, b: np.ndarray) -> bool:
    """Bit-identical: same dtype, shape and bytes (NaNs and signed zeros included)."""
    a, b = np.asarray(a), np.asarray(b)
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


NAMES = ("open", "volume")
KINDS = ("log_return", "log1p")


def _feature_raw(open_scale=1.0, t=None):
    rs = np.random.default_rng(11)
    series = [100 * np.exp(np.cumsum(rs.normal(0, 0.02, n))) for n in (60, 75)]
    opens = [s * np.exp(rs.normal(0, 0.01, len(s))) * open_scale for s in series]
    volume = [np.exp(10 + rs.normal(0, 0.5, len(s))) for s in series]
    feats = [np.stack([o, v], axis=1) for o, v in zip(opens, volume)]
    return series, feats, _raw(series, ["north", "south"], t=t, features=feats, names=NAMES)


def _feature_store(raw, transform="log_return", **kw):
    return _build(raw, transform=transform, window=8, horizon=1, feature_transforms=KINDS, **kw)


def _hand_feature(col: np.ndarray, kind: str) -> np.ndarray:
    out = np.full(len(col), np.nan)
    if kind == "log_return":
        out[1:] = np.log(col[1:]) - np.log(col[:-1])
    else:
        out = np.log1p(col)
    return out


def _daily(lengths, start="2024-01-01"):
    days = np.concatenate([np.arange(n) for n in lengths]).astype("timedelta64[D]")
    return np.datetime64(start, "s") + days


def _csv(tmp_path: Path, text: str, name: str = "s.csv") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def _read(path: Path, column: str, **kw) -> pd.DataFrame:
    """read_table, its errors naming the settings as the stages (or, ``keys=FLAGS``, the
    forecast command) name them."""
    with naming(kw.pop("keys", PARAMS_KEYS)):
        return read_table(path, column, **kw)


def _day(*dates: str) -> list[np.datetime64]:
    return [np.datetime64(d) for d in dates]
