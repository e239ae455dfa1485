"""Unit tests for attn_forecast.data.store_io: a saved store reads back bit for bit."""
from __future__ import annotations

import numpy as np
import pytest

from attn_forecast.data import splits
from attn_forecast.data.store import Store
from attn_forecast.data.store_io import ARRAYS, load, save
from attn_forecast.errors import UserInputError
from attn_forecast.data.long_table import Raw
from unit.data.helpers import (_build, _daily, _feature_raw, _feature_store, _hand_series, _raw,
                               _same)


# ---------------------------------------------------------------- save and load
def _check_same_store(back: Store, s: Store) -> None:
    for name in ("y", "signal", "t", "z", "offsets", "side", "feature_cols",
                 "feature_center", "feature_scale"):
        a, b = getattr(back, name), getattr(s, name)
        assert (a is None) == (b is None), name
        if a is not None:
            assert _same(a, b), name
    assert back.ids.tolist() == s.ids.tolist()
    assert all(_same(a, b) for a, b in zip(back.cuts.arrays(), s.cuts.arrays()))
    assert back.scalers.kind == s.scalers.kind
    assert _same(back.scalers.center, s.scalers.center)
    assert _same(back.scalers.scale, s.scalers.scale)
    for f in ("window", "horizon", "transform", "time_features", "features",
              "feature_transforms", "source", "dropped", "auto"):
        assert getattr(back, f) == getattr(s, f), f
    for part in splits.PARTS:
        np.testing.assert_array_equal(back.ends(part), s.ends(part))
    assert back.meta() == s.meta()


@pytest.mark.parametrize("times", ("steps", "dates"))
def test_the_saved_store_reads_back_bit_for_bit_memory_mapped(tmp_path, times):
    series = _hand_series() + [np.arange(1.0, 5.0)]           # one to drop, too
    lengths = [len(x) for x in series]
    t = _daily(lengths) if times == "dates" else None
    raw = _raw(series, t=t)
    raw = Raw(raw.ids, raw.offsets, raw.t, raw.y, np.linspace(0, 1, len(raw.y)))
    s = _build(raw, transform="log_return", scaler="minmax",
               source={"kind": "panel", "column": "value"},
               auto={"season": {"season": 4, "reason": "by hand"}},
               time_features=("dayofweek",) if times == "dates" else ())
    folder = tmp_path / "prepared"
    save(folder, s)
    names = {"store.json", "index.npz", "levels.npy", "signal.npy", "t.npy", "z.npy"}
    assert {f.name for f in folder.iterdir()} == names | ({"side.npy"} if t is not None
                                                          else set())
    back = load(folder)
    _check_same_store(back, s)
    assert s.dropped == {"count": 1, "ids": ["s5"]}
    for name in ARRAYS:
        assert isinstance(getattr(back, name), np.memmap), name
    _check_same_store(load(folder, mmap=False), s)
    assert not isinstance(load(folder, mmap=False).z, np.memmap)


def test_a_store_with_features_reads_back_and_a_later_save_replaces_its_files(tmp_path):
    _, _, raw = _feature_raw(t=_daily([60, 75]))
    s = _feature_store(raw, time_features=("dayofweek", "month"))
    folder = tmp_path / "prepared"
    save(folder, s)
    back = load(folder)
    _check_same_store(back, s)
    assert isinstance(back.side, np.memmap) and isinstance(back.feature_cols, np.memmap)
    plain = _build(_hand_series())
    save(folder, plain)
    assert not (folder / "side.npy").exists() and not (folder / "feature_cols.npy").exists()
    again = load(folder)
    _check_same_store(again, plain)
    assert again.side is None and again.feature_center is None


def test_loading_a_folder_without_a_store_names_the_stage(tmp_path):
    with pytest.raises(UserInputError, match="holds no prepared data; run the prepare stage"):
        load(tmp_path)
