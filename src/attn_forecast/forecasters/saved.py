"""Saved forecasts: several forecasters' forecasts of the same windows (a ForecastSet), one npz
file without pickles (the train stage writes the model's, the baselines stage the rest)."""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..errors import UserInputError
from ..io import read_npz, write_npz
from .protocol import Forecast

# the part of every window before the test part (at most run.PAST_WINDOWS of them): the
# calibration windows of a forecaster that fits nothing to the series (calibration.py)
PAST = "past"


@dataclass
class ForecastSet:
    """Forecasts of several forecasters on the same windows: ``ends[part]`` (N,), and for
    every forecaster and part a Forecast (None: it could not be fitted at all)."""
    ends: dict[str, np.ndarray]
    forecasts: dict[str, dict[str, Forecast | None]]
    levels: tuple = ()
    warnings: list[str] = field(default_factory=list)
    record: dict = field(default_factory=dict)   # what they were made with

    def names(self) -> list[str]:
        return list(self.forecasts)


def save(path: str | Path, fs: ForecastSet, compressed: bool = False,
         compact: bool = False) -> None:
    """One npz without pickles (``compressed``: deflated; ``compact``: as committed to git,
    :func:`pack`: float32, each quantile as its distance from the median kept to 1 part in
    2,048, byte planes compressed with LZMA; what :func:`load` reads back is what is
    scored)."""
    arrays = _arrays(fs)
    if compact:
        arrays = pack(arrays, fs.levels)
    write_npz(path, compressed=compressed, **_header(fs), **arrays)


def load(path: str | Path) -> ForecastSet:
    """The set saved in ``path``; a file cut short, damaged or of another kind is one line
    naming it."""
    import lzma
    import zipfile
    try:
        return _set(read_npz(path))
    except FileNotFoundError:
        raise UserInputError(f"{path}: file not found") from None
    except (zipfile.BadZipFile, lzma.LZMAError, EOFError, KeyError, ValueError) as err:
        line = (str(err).splitlines() or [""])[0]
        raise UserInputError(f"{path} is not a whole forecast file of this project "
                             f"({type(err).__name__}: {line}); restore it (`git checkout "
                             f"{path}`) or rerun the stage that writes it") from None


def check_against(fs: ForecastSet, ends: np.ndarray, horizon: int, where: str) -> None:
    """That ``fs`` forecasts exactly the windows ``ends`` at ``horizon`` steps: a file of
    another subset, or cut to fewer series, is refused naming ``where``."""
    got = fs.ends.get("test")
    if got is None or len(got) != len(ends) or not np.array_equal(got, ends):
        raise UserInputError(f"{where}: forecasts of {0 if got is None else len(got):,} "
                             f"windows, not the {len(ends):,} of this subset's test part (a "
                             "file of another subset, or cut short?); rerun its stage")
    for name, parts in fs.forecasts.items():
        fc = parts.get("test")
        if fc is not None and fc.point.shape != (len(ends), horizon):
            raise UserInputError(f"{where}: {name}'s forecasts have shape {fc.point.shape}, "
                                 f"not ({len(ends)}, {horizon}): the subset's windows at its "
                                 f"horizon of {horizon}; rerun its stage")


def stored(fs: ForecastSet) -> ForecastSet:
    """``fs`` as :func:`load` reads it back after ``save(..., compact=True)``: what a stage
    that commits a set it scores itself scores, so that the committed file recomputes its
    scores exactly."""
    return _set({**_header(fs), **pack(_arrays(fs), fs.levels)})


def _header(fs: ForecastSet) -> dict[str, np.ndarray]:
    return dict(names=np.array(fs.names(), dtype=str),  # the file keeps its key, taus
                taus=np.asarray(fs.levels, dtype=np.float64),
                warnings=np.array(fs.warnings, dtype=str),
                record=np.array(json.dumps(fs.record, sort_keys=True)))


def _arrays(fs: ForecastSet) -> dict[str, np.ndarray]:
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
    return arrays


def _set(z: dict) -> ForecastSet:
    levels = tuple(float(t) for t in z["taus"])
    if "packed" in z:
        z = unpack(z, levels)
    parts = [k.split(":", 1)[1] for k in z if k.startswith("ends:")]
    forecasts = {}
    for name in (str(n) for n in z["names"]):
        forecasts[name] = {p: (Forecast(z[f"point:{name}:{p}"], z.get(f"quantiles:{name}:{p}"),
                                        z.get(f"members:{name}:{p}"),
                                        failed=z.get(f"failed:{name}:{p}"))
                               if f"point:{name}:{p}" in z else None) for p in parts}
    return ForecastSet({p: z[f"ends:{p}"] for p in parts}, forecasts, levels,
                       [str(w) for w in z["warnings"]], json.loads(str(z["record"])))


# ---------------------------------------------------------------- the committed form
def _planes(a: np.ndarray) -> np.ndarray:
    """A float32 array's bytes as byte planes (every value's first byte, then every second
    ...): the planes of sign and exponent repeat, so LZMA packs them tightly."""
    a = np.ascontiguousarray(a, dtype=np.float32)
    return a.view(np.uint8).reshape(-1, 4).T.reshape(-1)


def _from_planes(b: np.ndarray, shape: tuple) -> np.ndarray:
    return np.ascontiguousarray(b.reshape(4, -1).T).view(np.float32).reshape(shape)


SPREAD_BITS = 12   # mantissa bits of a quantile's distance from its median left out (of 23)


def _coarse(d: np.ndarray) -> np.ndarray:
    """Distances from the median (float32) with their last :data:`SPREAD_BITS` mantissa bits
    cleared: each to 1 part in 2,048 of itself, toward zero, so nested bounds stay nested
    (the cut is monotone) and LZMA packs the cleared bits to nothing (on M3 monthly's field:
    6.0 MB for 10.0)."""
    mask = np.uint32((0xFFFFFFFF << SPREAD_BITS) & 0xFFFFFFFF)
    return (np.ascontiguousarray(d, dtype=np.float32).view(np.uint32) & mask).view(np.float32)


def pack(arrays: dict[str, np.ndarray], levels) -> dict[str, np.ndarray]:
    """The float arrays of a forecast set as one LZMA-compressed uint8 array (``packed``),
    each float32, quantiles as the median and each level's distance from it (to 1 part in
    2,048: :func:`_coarse`), byte planes side by side; ``layout`` says where each lies
    (JSON). The rest stays as it is."""
    import lzma
    mid = list(levels).index(0.5) if 0.5 in levels else None
    out, chunks, layout, at = {}, [], [], 0
    for key, a in arrays.items():
        if a.dtype.kind != "f":
            out[key] = a
            continue
        if key.startswith("quantiles:") and mid is not None:
            q = np.asarray(a, dtype=np.float32)
            a = np.concatenate([q[..., mid:mid + 1], _coarse(np.delete(q, mid, axis=-1)
                                                             - q[..., mid:mid + 1])], axis=-1)
        b = _planes(a)
        chunks.append(b)
        layout.append([key, list(a.shape), at, len(b)])
        at += len(b)
    body = np.concatenate(chunks) if chunks else np.zeros(0, np.uint8)
    out["packed"] = np.frombuffer(lzma.compress(body.tobytes(), preset=9), dtype=np.uint8)
    out["layout"] = np.array(json.dumps(layout))
    return out


def unpack(z: dict[str, np.ndarray], levels) -> dict[str, np.ndarray]:
    """:func:`pack`'s arrays as float64, quantiles the median plus each distance (in
    float32, as every reader computes them)."""
    import lzma
    body = np.frombuffer(lzma.decompress(z["packed"].tobytes()), dtype=np.uint8)
    out = {k: v for k, v in z.items() if k not in ("packed", "layout")}
    mid = list(levels).index(0.5) if 0.5 in levels else None
    for key, shape, at, n in json.loads(str(z["layout"])):
        a = _from_planes(body[at:at + n], tuple(shape))
        if key.startswith("quantiles:") and mid is not None:
            med = a[..., :1]
            a = np.insert(a[..., 1:] + med, mid, med[..., 0], axis=-1)
        out[key] = a.astype(np.float64)
    return out


CUT = "cut"   # the part of a competition's calibration cut (windows of the cut's store)


def with_part(fs: ForecastSet, part: str, other: ForecastSet) -> ForecastSet:
    """``fs`` with ``other``'s test part as its part ``part`` (windows of another store: a
    competition's calibration cut, whose forecasts a stage saves beside its own)."""
    ends = {**fs.ends, part: other.ends["test"]}
    forecasts = {n: {**dict.fromkeys(ends), **fs.forecasts.get(n, {}),
                     part: other.forecasts.get(n, {}).get("test")}
                 for n in dict.fromkeys([*fs.forecasts, *other.forecasts])}
    return ForecastSet(ends, forecasts, fs.levels, list(fs.warnings) + list(other.warnings),
                       dict(fs.record))


def split_part(fs: ForecastSet, part: str) -> tuple[ForecastSet, ForecastSet | None]:
    """``fs`` without its part ``part``, and that part as the test part of a set of its own
    (None where ``fs`` has no such part): :func:`with_part` undone."""
    if part not in fs.ends:
        return fs, None
    rest = ForecastSet({k: v for k, v in fs.ends.items() if k != part},
                       {n: {k: v for k, v in p.items() if k != part}
                        for n, p in fs.forecasts.items()},
                       fs.levels, list(fs.warnings), dict(fs.record))
    alone = ForecastSet({"test": fs.ends[part]},
                        {n: {"test": p.get(part)} for n, p in fs.forecasts.items()
                         if p.get(part) is not None}, fs.levels, [], dict(fs.record))
    return rest, alone


def merge(*sets: ForecastSet) -> ForecastSet:
    """Several sets on the same windows as one, in order (the model's first); a part only
    some of them forecast (the :data:`PAST` part) is None for the others."""
    first = sets[0]
    ends = dict(first.ends)
    for s in sets[1:]:
        for part, e in s.ends.items():
            if part in ends and not np.array_equal(ends[part], e):
                raise ValueError(f"forecasts of different {part} windows")
            ends.setdefault(part, e)
    forecasts = {k: {**dict.fromkeys(ends), **v} for s in sets for k, v in s.forecasts.items()}
    return ForecastSet(ends, forecasts, first.levels, [w for s in sets for w in s.warnings],
                       dict(first.record))
