"""Unit tests of attn_forecast.data.store's Store: ``refit`` (every scaler refitted on a
backtest fold's training parts, nothing read from its origin on) and ``to_y`` (scaling and
transform inverted).

Expected values come from numpy, never from the code under test.
"""
from __future__ import annotations

import numpy as np
import pytest

from attn_forecast.data import splits
from attn_forecast.data import transforms
from attn_forecast.data.store import Store
from attn_forecast.data.store_io import load, save
from unit.data.helpers import (H, KINDS, TRANSFORMS, _brute_ends, _build, _daily, _feature_raw,
                               _feature_store, _hand_feature, _hand_series, _model_values, _same)


# ---------------------------------------------------------------- refit
def _fold_cuts(s: Store, origin_share=0.6, train_start=None) -> splits.Cuts:
    n = s.lengths
    val = np.floor(n * origin_share).astype(np.int64)
    start = np.zeros_like(n) if train_start is None else np.asarray(train_start)
    return splits.Cuts(start, val, val + 3, val + 5, val + 12, gap=2)


@pytest.mark.parametrize("transform", TRANSFORMS)
def test_refit_refits_every_scaler_on_the_new_training_parts(transform):
    series, feats, raw = _feature_raw(t=_daily([60, 75]))
    s = _feature_store(raw, transform, time_features=("dayofweek",))
    cuts = _fold_cuts(s)
    got = s.refit(cuts)
    off = transforms.offset(transform)
    assert got.cuts is cuts
    for i, (v, f) in enumerate(zip(series, feats)):
        a, b = int(s.offsets[i]), int(s.offsets[i + 1])
        vs = int(cuts.val_start[i])
        zm = _model_values(v, transform)
        train = zm[off:vs]
        assert got.scalers.center[i] == pytest.approx(np.mean(train), rel=1e-12, abs=1e-15)
        assert got.scalers.scale[i] == pytest.approx(np.std(train), rel=1e-12)
        want = (zm - np.mean(train)) / np.std(train)
        want[:off] = 0.0
        np.testing.assert_allclose(got.z[a:b], want, rtol=1e-5, atol=1e-5)
        for k, kind in enumerate(KINDS):
            col = _hand_feature(f[:, k], kind)
            part = col[off:vs]
            part = part[np.isfinite(part)]
            assert got.feature_center[i, k] == pytest.approx(np.mean(part), rel=1e-12)
            assert got.feature_scale[i, k] == pytest.approx(np.std(part), rel=1e-12)
            wf = np.nan_to_num((col - np.mean(part)) / np.std(part), nan=0.0)
            np.testing.assert_allclose(got.side[a:b, 2 + k], wf, rtol=1e-5, atol=1e-5)
    assert not np.allclose(got.feature_center, s.feature_center)
    assert _same(got.side[:, :2], s.side[:, :2])                  # the calendar stays
    for part in splits.PARTS:
        want = _brute_ends(list(s.lengths), [
            {p: tuple(int(x[i]) for x in cuts.bounds(p)) for p in splits.PARTS}
            for i in range(2)], 8, 1, off)[part]
        assert got.ends(part).tolist() == want


def test_refit_uses_nothing_from_the_folds_origin_on_nor_before_its_training_part():
    series, _, raw = _feature_raw()
    s = _feature_store(raw, "diff")
    cuts = _fold_cuts(s)
    got = s.refit(cuts)
    # every level and feature from each series' fold validation start on, poisoned
    y, fcols = np.array(s.y), np.array(s.feature_cols)
    for i in range(2):
        a, b = int(s.offsets[i]), int(s.offsets[i + 1])
        y[a + int(cuts.val_start[i]):b] *= 1000.0
        fcols[a + int(cuts.val_start[i]):b] *= 1000.0
    from dataclasses import replace
    again = replace(s, y=y, feature_cols=fcols).refit(cuts)
    assert _same(again.scalers.center, got.scalers.center)
    assert _same(again.scalers.scale, got.scalers.scale)
    assert _same(again.feature_center, got.feature_center)
    assert _same(again.feature_scale, got.feature_scale)
    # a sliding training part (backtest.train_size): rows before it do not count either
    sliding = _fold_cuts(s, train_start=[20, 25])
    ref = s.refit(sliding)
    early_levels, early_cols = np.array(s.y), np.array(s.feature_cols)
    for i, start in enumerate((20, 25)):
        a = int(s.offsets[i])
        early_levels[a:a + start - 1] *= 1000.0        # level start - 1 is row start's past
        early_cols[a:a + start] *= 1000.0
    moved = replace(s, y=early_levels, feature_cols=early_cols).refit(sliding)
    assert _same(moved.scalers.center, ref.scalers.center)
    assert _same(moved.scalers.scale, ref.scalers.scale)
    assert _same(moved.feature_center, ref.feature_center)
    assert _same(moved.feature_scale, ref.feature_scale)
    train = np.diff(series[1])[25 - 1:int(sliding.val_start[1]) - 1]
    assert ref.scalers.center[1] == pytest.approx(np.mean(train), rel=1e-12)


def test_refit_of_a_loaded_store(tmp_path):
    s = _build(_hand_series(), transform="log_return")
    save(tmp_path / "p", s)
    cuts = _fold_cuts(s)
    a, b = load(tmp_path / "p").refit(cuts), s.refit(cuts)
    assert _same(a.z, b.z) and _same(a.scalers.center, b.scalers.center)
    v = _hand_series()[4]
    train = np.diff(np.log(v))[:int(cuts.val_start[4]) - 1]
    assert a.scalers.center[4] == pytest.approx(np.mean(train), rel=1e-12)


# ---------------------------------------------------------------- to_y
@pytest.mark.parametrize("transform", TRANSFORMS)
@pytest.mark.parametrize("scaler", ("zscore", "minmax"))
def test_to_y_inverts_scaling_and_transform(transform, scaler):
    series = _hand_series()
    s = _build(series, transform=transform, scaler=scaler)
    ends = s.ends("test")
    rs = np.random.default_rng(9)
    z_pred = rs.normal(0, 0.3, (len(ends), H)).astype(np.float32)
    sid = np.searchsorted(np.cumsum([len(v) for v in series]), ends, side="right")
    center, scale = s.scalers.center[sid, None], s.scalers.scale[sid, None]
    unscaled = z_pred.astype(np.float64) * scale + center
    last = s.y[ends - 1][:, None]
    want = {"none": unscaled, "diff": last + np.cumsum(unscaled, axis=1),
            "log_return": last * np.exp(np.cumsum(unscaled, axis=1))}[transform]
    np.testing.assert_allclose(s.to_y(z_pred, ends), want, rtol=1e-12)
    # the store's own targets come back as the levels (up to float32 scaling)
    y = np.asarray(s.z)[ends[:, None] + np.arange(H)]
    np.testing.assert_allclose(s.to_y(y, ends), s.y[ends[:, None] + np.arange(H)],
                               rtol=1e-5)
    # quantiles (N, H, Q): each level on its own
    q = np.stack([z_pred - 0.1, z_pred, z_pred + 0.1], axis=-1)
    got = s.to_y(q, ends)
    assert got.shape == (len(ends), H, 3)
    np.testing.assert_allclose(got[..., 1], want, rtol=1e-12)
