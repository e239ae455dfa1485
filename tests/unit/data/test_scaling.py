"""Unit tests for attn_forecast.data.scaling: each series scaled by its own training rows only."""
from __future__ import annotations

import numpy as np
import pytest

from attn_forecast.data import scaling
from unit.data.helpers import TRANSFORMS, _build, _floor, _model_values, _same


# ---------------------------------------------------------------- scaling
@pytest.mark.parametrize("kind", scaling.SCALERS)
def test_fit_one_against_numpy(kind):
    x = np.random.default_rng(2).normal(3, 2, 200)
    want = {"zscore": (np.mean(x), np.std(x)), "minmax": (np.min(x), np.max(x) - np.min(x)),
            "none": (0.0, 1.0)}[kind]
    assert scaling.fit_one(x, kind) == pytest.approx(want, rel=1e-12)
    s = scaling.Scalers(kind, np.array([want[0]]), np.array([want[1]]))
    y = np.array([-3.0, 0.5, 7.25])
    np.testing.assert_allclose(s.apply(y, 0), (y - want[0]) / want[1], rtol=1e-15)
    np.testing.assert_allclose(s.invert(s.apply(y, 0), 0), y, rtol=0, atol=1e-12)


@pytest.mark.parametrize("kind, center", [("zscore", 3.25), ("minmax", 3.25), ("none", 0.0)])
def test_a_constant_training_part_is_scaled_by_one(kind, center):
    assert scaling.fit_one(np.full(50, 3.25), kind) == (center, 1.0)
    flat = np.r_[np.full(40, 3.0), np.linspace(3, 9, 10)]
    s = _build([flat], scaler=kind, fracs={"test": 0.2, "val": 0.0, "cal": 0.0})
    assert (s.scalers.center[0], s.scalers.scale[0]) == (3.0 if kind != "none" else 0.0, 1.0)
    np.testing.assert_array_equal(s.z[:40], 0.0 if kind != "none" else 3.0)


@pytest.mark.parametrize("scaler", ("zscore", "minmax", "none"))
@pytest.mark.parametrize("transform", TRANSFORMS)
def test_each_series_is_scaled_by_its_own_training_rows_only(transform, scaler):
    rs = np.random.default_rng(11)
    b = 30 + rs.uniform(0, 5, 45)
    a = 100 * np.exp(np.cumsum(rs.normal(0, 0.03, 60)))
    base = _build([b, a], transform=transform, scaler=scaler)
    k, off = 1, (0 if transform == "none" else 1)
    val_start = int(base.cuts.val_start[k])
    assert val_start == _floor(60, "0.2", "0.1") == 42
    train = _model_values(a, transform)[off:val_start]          # A's training rows
    want = {"zscore": (np.mean(train), np.std(train)),
            "minmax": (np.min(train), np.max(train) - np.min(train)),
            "none": (0.0, 1.0)}[scaler]
    assert base.scalers.kind == scaler
    assert base.scalers.center[k] == pytest.approx(want[0], rel=1e-12, abs=1e-15)
    assert base.scalers.scale[k] == pytest.approx(want[1], rel=1e-12)
    zk = (_model_values(a, transform) - want[0]) / want[1]
    zk[:off] = 0.0
    assert base.z.dtype == np.float32
    np.testing.assert_allclose(base.z[45:], zk, rtol=1e-6, atol=1e-6)
    # any value of A from its first validation target on changes nothing of A's scaler
    for j in range(val_start, len(a)):
        poisoned = a.copy()
        poisoned[j] *= 37.0
        p = _build([b, poisoned], transform=transform, scaler=scaler)
        assert (p.scalers.center[k], p.scalers.scale[k]) == \
            (base.scalers.center[k], base.scalers.scale[k]), f"level {j}"
    if scaler != "none":                       # the last training level does: a leak shows
        poisoned = a.copy()
        poisoned[val_start - 1] *= 37.0
        p = _build([b, poisoned], transform=transform, scaler=scaler)
        assert (p.scalers.center[k], p.scalers.scale[k]) != \
            (base.scalers.center[k], base.scalers.scale[k])
    # another series, whatever it holds and however long, changes nothing of A
    other = 5 + np.abs(rs.normal(1000, 300, 70))
    p = _build([other, a], transform=transform, scaler=scaler)
    assert (p.scalers.center[k], p.scalers.scale[k]) == \
        (base.scalers.center[k], base.scalers.scale[k])
    assert _same(p.z[70:], base.z[45:])


def test_scale_series_leaves_each_series_first_offset_rows_zero():
    z = np.arange(12, dtype=np.float64) + 1
    offsets = np.array([0, 5, 12])
    s = scaling.Scalers("zscore", np.array([2.0, 10.0]), np.array([4.0, 0.5]))
    got = scaling.scale_series(z, offsets, s, 1)
    want = np.r_[0, (z[1:5] - 2) / 4, 0, (z[6:] - 10) / 0.5].astype(np.float32)
    assert _same(got, want)


def test_feature_columns_are_z_scored_per_series_and_column_on_training_rows():
    rs = np.random.default_rng(4)
    cols = rs.normal(5, 3, (30, 2))
    cols[0, 1] = np.nan                                 # a value the transform leaves undefined
    offsets = np.array([0, 12, 30])
    ts, vs = np.array([0, 2]), np.array([8, 14])
    out, center, scale = scaling.fit_columns(cols, offsets, ts, vs, 1)
    for i, (a, b) in enumerate(zip(offsets[:-1], offsets[1:])):
        rows = cols[a + max(ts[i], 1):a + vs[i]]
        for k in range(2):
            part = rows[:, k][np.isfinite(rows[:, k])]
            assert center[i, k] == pytest.approx(np.mean(part), rel=1e-12)
            assert scale[i, k] == pytest.approx(np.std(part), rel=1e-12)
            want = np.nan_to_num((cols[a:b, k] - np.mean(part)) / np.std(part), nan=0.0)
            np.testing.assert_allclose(out[a:b, k], want.astype(np.float32), rtol=1e-6)
    assert out.dtype == np.float32 and out[0, 1] == 0.0
