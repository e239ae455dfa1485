"""Saved forecasts: several forecasters' forecasts of the same windows (a ForecastSet), one npz
file without pickles (the train stage writes the model's, the baselines stage the rest)."""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..io import read_npz, write_npz
from .protocol import Forecast


@dataclass
class ForecastSet:
    """Forecasts of several forecasters on the same windows: ``ends[part]`` (N,), and for
    every forecaster and part a Forecast (None: it could not be fitted at all)."""
    ends: dict[str, np.ndarray]
    forecasts: dict[str, dict[str, Forecast | None]]
    taus: tuple = ()
    warnings: list[str] = field(default_factory=list)
    record: dict = field(default_factory=dict)   # what they were made with

    def names(self) -> list[str]:
        return list(self.forecasts)


def save(path: str | Path, fs: ForecastSet, compressed: bool = False) -> None:
    """One npz without pickles (``compressed``: deflated, for files committed to git)."""
    arrays = {f"ends:{p}": e for p, e in fs.ends.items()}
    for name, parts in fs.forecasts.items():
        for part, fc in parts.items():
            if fc is None:
                continue
            arrays[f"point:{name}:{part}"] = fc.point
            if fc.quantiles is not None:
                arrays[f"quantiles:{name}:{part}"] = fc.quantiles
            if fc.members is not None:
                arrays[f"members:{name}:{part}"] = fc.members
            if fc.failed is not None:
                arrays[f"failed:{name}:{part}"] = fc.failed
    write_npz(path, compressed=compressed, names=np.array(fs.names(), dtype=str),
              taus=np.asarray(fs.taus, dtype=np.float64),
              warnings=np.array(fs.warnings, dtype=str),
              record=np.array(json.dumps(fs.record, sort_keys=True)), **arrays)


def load(path: str | Path) -> ForecastSet:
    z = read_npz(path)
    parts = [k.split(":", 1)[1] for k in z if k.startswith("ends:")]
    forecasts = {}
    for name in (str(n) for n in z["names"]):
        forecasts[name] = {p: (Forecast(z[f"point:{name}:{p}"], z.get(f"quantiles:{name}:{p}"),
                                        z.get(f"members:{name}:{p}"),
                                        failed=z.get(f"failed:{name}:{p}"))
                               if f"point:{name}:{p}" in z else None) for p in parts}
    return ForecastSet({p: z[f"ends:{p}"] for p in parts}, forecasts,
                       tuple(float(t) for t in z["taus"]), [str(w) for w in z["warnings"]],
                       json.loads(str(z["record"])))


def merge(*sets: ForecastSet) -> ForecastSet:
    """Several sets on the same windows as one, in order (the model's first)."""
    first = sets[0]
    for s in sets[1:]:
        for part, e in first.ends.items():
            if part in s.ends and not np.array_equal(s.ends[part], e):
                raise ValueError(f"forecasts of different {part} windows")
    return ForecastSet(first.ends, {k: v for s in sets for k, v in s.forecasts.items()},
                       first.taus, [w for s in sets for w in s.warnings], dict(first.record))
