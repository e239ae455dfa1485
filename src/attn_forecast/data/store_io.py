"""The prepared store on disk (the prepare stage's folder): ``store.json`` (settings and what
``auto`` chose), ``index.npz`` (ids, offsets, cuts, scalers) and one ``.npy`` per flat array,
which the later stages memory-map (copy-on-write: a process reads only the pages its windows
touch). No pickles."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from ..errors import UserInputError
from ..io import read_json, read_npz, replace_files, write_json
from . import scaling, splits
from .store import Store

STORE_FILE = "store.json"
# each flat array's file (attribute -> name): the values in the series' own units keep the file
# name they have always had, so a store on disk (and its DVC hash) is the same
ARRAYS = {"y": "levels", "signal": "signal", "t": "t", "z": "z"}


def save(folder: str | Path, s: Store) -> None:
    """Write the store, replacing whatever the folder held."""
    with replace_files(folder) as tmp:
        arrays = {file: getattr(s, name) for name, file in ARRAYS.items()}
        if s.side is not None:
            arrays["side"] = s.side
        if s.feature_cols is not None:
            arrays["feature_cols"] = s.feature_cols
        for name, a in arrays.items():
            np.save(tmp / f"{name}.npy", np.ascontiguousarray(a), allow_pickle=False)
        index = {"ids": s.ids.astype(str), "offsets": s.offsets, "center": s.scalers.center,
                 "scale": s.scalers.scale,
                 **dict(zip(("train_start", "val_start", "cal_start", "test_start", "test_end"),
                            s.cuts.arrays()))}
        if s.n_features:
            index.update(feature_center=s.feature_center, feature_scale=s.feature_scale)
        if s.periods is not None:
            index["periods"] = s.periods
        if (s.cuts.blend_start != s.cuts.cal_start).any():
            index["blend_start"] = s.cuts.blend_start
        with open(tmp / "index.npz", "wb") as fh:
            np.savez(fh, **index)
        meta = {k: v for k, v in s.meta().items() if k != "series"}
        write_json(tmp / STORE_FILE, meta)


def profile(folder: str | Path) -> dict | None:
    """The profile the prepared data's ``auto`` values were resolved by (``{"profile":
    name, "values": {key: value}}``), so that every later stage resolves ``auto`` as prepare
    did; None without prepared data (the stage then gives its own error)."""
    path = Path(folder) / STORE_FILE
    if not path.is_file():
        return None
    return (read_json(path).get("auto", {}).get("profile") or {}).get("resolved")


def load(folder: str | Path, mmap: bool = True) -> Store:
    """The prepared store; the flat arrays memory-mapped."""
    d = Path(folder)
    if not (d / STORE_FILE).is_file():
        raise UserInputError(f"{d} holds no prepared data; run the prepare stage (dvc repro)")
    meta, idx = read_json(d / STORE_FILE), read_npz(d / "index.npz")

    def arr(name: str):
        path = d / f"{name}.npy"
        return np.load(path, mmap_mode="c" if mmap else None, allow_pickle=False) \
            if path.is_file() else None
    cuts = splits.Cuts(*(idx[k] for k in ("train_start", "val_start", "cal_start",
                                          "test_start", "test_end")),
                       blend_start=idx.get("blend_start"))
    return Store(idx["ids"], idx["offsets"], cuts,
                 scaling.Scalers(meta["scaler"], idx["center"], idx["scale"]),
                 *(arr(file) for file in ARRAYS.values()), meta["window"], meta["horizon"],
                 meta["transform"], side=arr("side"),
                 time_features=tuple(meta["time_features"]), features=tuple(meta["features"]),
                 feature_transforms=tuple(meta["feature_transforms"]),
                 feature_cols=arr("feature_cols"), feature_center=idx.get("feature_center"),
                 feature_scale=idx.get("feature_scale"), source=meta["source"],
                 dropped=meta["dropped"], auto=meta["auto"], context=meta.get("context", 0),
                 periods=idx.get("periods"))
