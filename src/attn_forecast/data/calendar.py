"""Calendar features from the time column, encoded cyclically (``prepare.time_features``).

Each feature of a time stamp becomes a (sin, cos) pair on its cycle, so 23:00 sits next to
00:00 and December next to January. A feature of a time step depends on that step's own time
stamp only, never on a value, so the features of the target times are known in advance and
the model may see them (a forecast for 3 pm knows it is for 3 pm).
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from ..errors import UserInputError

# feature -> (pandas accessor, offset to start at 0, cycle length)
CYCLES = {"minute": ("minute", 0, 60), "hour": ("hour", 0, 24),
          "dayofweek": ("day_of_week", 0, 7), "dayofmonth": ("day", 1, 31),
          "dayofyear": ("day_of_year", 1, 366), "month": ("month", 1, 12)}


def time_features(t: np.ndarray, names: list[str]) -> np.ndarray:
    """(n, 2 * len(names)) float32: sin and cos of each feature's phase; ``t`` holds the
    time stamps (datetime64, or ISO 8601 strings)."""
    if not names:
        return np.zeros((len(t), 0), dtype=np.float32)
    t = np.asarray(t)
    if t.dtype.kind in "iuf":
        raise UserInputError(
            f"calendar inputs ({', '.join(names)}) need dates in the time column, but this "
            "data is indexed by step numbers")
    stamps = pd.DatetimeIndex(t if t.dtype.kind == "M" else
                              pd.to_datetime(pd.Series(t.astype(str)), format="ISO8601"))
    cols = []
    for name in names:
        attr, start, cycle = CYCLES[name]
        phase = 2 * np.pi * (np.asarray(getattr(stamps, attr), dtype=np.float64) - start) / cycle
        cols += [np.sin(phase), np.cos(phase)]
    return np.stack(cols, axis=1).astype(np.float32)
