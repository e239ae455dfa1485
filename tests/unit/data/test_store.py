"""Unit tests of the prepared data: one flat store for 1..N series. The parts of every series
(``splits``: the cut rule, window ends, usable lengths, backtest folds), the per-series scalers
fitted on training rows only (``scaling``), the model series and the way back
(``transforms``), windows gathered on the fly (``windows``), the store itself (``store.build``,
``save`` / ``load``, ``refit``, ``to_levels``), the calendar inputs (``calendar``) and the
season and window that ``auto`` chooses (``seasons``).

Expected values come from numpy, exact fractions or brute force over every window end, never
from the code under test.
"""
from __future__ import annotations

import math
import re
from fractions import Fraction

import numpy as np
import pytest

from attn_forecast.data import scaling
from attn_forecast.data import splits
from attn_forecast.data import transforms
from attn_forecast.data.build import build
from attn_forecast.data.store import Store
from attn_forecast.data.store_io import ARRAYS, load, save
from attn_forecast.data.calendar import time_features
from attn_forecast.errors import UserInputError, naming
from attn_forecast.pipeline.keys import PARAMS_KEYS
from attn_forecast.data.seasons import choose, detect_season, window_for
from attn_forecast.data.long_table import Raw
from attn_forecast.data.long_table import read_long, write_long
from attn_forecast.data.windows import concat_ranges, flat_inputs, gather, gather_side, spread

W, H = 5, 3
TRANSFORMS = ("none", "diff", "log_return")
FRACS = {"test": 0.2, "val": 0.1, "cal": 0.0}
# keys as another caller would name the settings: the messages must use them
OTHER_KEYS = {"window": "--window", "horizon": "--horizon", "transform": "--transform"}


# ---------------------------------------------------------------- helpers
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
    levels = np.concatenate(series).astype(np.float64)
    if t is None:
        t = np.concatenate([np.arange(len(s), dtype=np.float64) for s in series])
    feats = None if features is None else np.concatenate(features).astype(np.float64)
    return Raw(ids, offsets, t, levels, np.full(len(levels), np.nan), feats, tuple(names))


def _build(series, *, transform="none", scaler="zscore", window=W, horizon=H, fracs=None,
           ids=None, keys=PARAMS_KEYS, **kw) -> Store:
    """build, its errors naming the settings as ``keys`` do (the stages': params keys)."""
    raw = series if isinstance(series, Raw) else _raw(series, ids)
    with naming(keys):
        return build(raw, window=window, horizon=horizon, fracs=dict(fracs or FRACS),
                     scaler=scaler, transform=transform, **kw)


def _model_values(levels: np.ndarray, transform: str) -> np.ndarray:
    """The level-aligned model series by hand: row r is the step that ends at level r."""
    v = np.asarray(levels, dtype=np.float64)
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


def _same(a, b) -> bool:
    """Bit-identical: same dtype, shape and bytes (NaNs included)."""
    a, b = np.asarray(a), np.asarray(b)
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


def _need(message: str) -> int:
    return int(re.search(r"need at least (\d+) values", message).group(1))


# ---------------------------------------------------------------- splits: the cut rule
CUT_FRACS = [("0.2", "0", "0"), ("0.2", "0.1", "0"), ("0.3", "0.2", "0.05"),
             ("0.25", "0.15", "0.1"), ("0.1", "0.3", "0"), ("0.2", "0", "0.1")]


@pytest.mark.parametrize("tf, vf, cf", CUT_FRACS)
def test_the_cut_rule_is_an_exact_floor_for_every_length(tf, vf, cf):
    n = np.arange(1, 2001)
    c = splits.cut(n, float(tf), float(vf), float(cf))
    want = [_hand_cuts(int(m), tf, vf, cf) for m in n]
    np.testing.assert_array_equal(c.train_start, 0)
    np.testing.assert_array_equal(c.val_start, [w["val"][0] for w in want])
    np.testing.assert_array_equal(c.cal_start, [w["cal"][0] for w in want])
    np.testing.assert_array_equal(c.test_start, [w["test"][0] for w in want])
    np.testing.assert_array_equal(c.test_end, n)
    for arr in c.arrays():
        assert arr.dtype == np.int64


def test_fraction_boundaries_are_exact_floors_of_decimal_fractions():
    # 110 points; 50 % train, 20 % val, 30 % test: 1 - 0.3 - 0.2 is 0.49999999999999994
    c = splits.cut(np.array([110]), 0.3, 0.2)
    assert (int(c.val_start[0]), int(c.test_start[0])) == (55, 77)


def test_a_test_size_sets_each_series_test_part():
    n = np.array([50, 80, 123])
    c = splits.cut(n, 0.2, 0.1, 0.05, test_size=np.array([7, 7, 10]))
    np.testing.assert_array_equal(c.test_start, [43, 73, 113])
    np.testing.assert_array_equal(c.cal_start, [43 - 2, 73 - 4, 113 - 6])     # floor(n .05)
    np.testing.assert_array_equal(c.val_start, [41 - 5, 69 - 8, 107 - 12])    # floor(n .1)
    np.testing.assert_array_equal(c.test_end, n)


@pytest.mark.parametrize("tf, vf, cf", CUT_FRACS[:4])
@pytest.mark.parametrize("window, horizon, off", [(5, 3, 0), (5, 3, 1), (1, 1, 1), (12, 4, 0)])
def test_window_ends_are_every_end_wholly_inside_a_part(tf, vf, cf, window, horizon, off):
    """Brute force over every row of every series: a window belongs to exactly the part that
    holds all its targets, its inputs never reach into another series nor a differenced
    series' first row; the parts are disjoint and ordered in time."""
    lengths = [3, 17, 40, 41, 66, 100, 7]
    c = splits.cut(np.array(lengths), float(tf), float(vf), float(cf))
    offsets = np.r_[0, np.cumsum(lengths)]
    want = _brute_ends(lengths, [_hand_cuts(n, tf, vf, cf) for n in lengths], window, horizon,
                       off)
    for part in splits.PARTS:
        got = splits.ends(offsets, c, part, window, horizon, off)
        assert got.dtype == np.int64
        assert got.tolist() == want[part], part
        per = [sum(offsets[i] <= e < offsets[i + 1] for e in want[part])
               for i in range(len(lengths))]
        np.testing.assert_array_equal(splits.counts(c, part, window, horizon, off), per)
    for part in splits.PARTS:
        ends = np.array(want[part], dtype=np.int64)
        sid = np.searchsorted(offsets, ends, side="right") - 1
        assert (ends - window >= offsets[sid] + off).all()              # inputs of its own
        assert (ends + horizon <= offsets[sid + 1]).all()               # targets of its own
    everything = sum((want[p] for p in splits.PARTS), [])
    assert len(set(everything)) == len(everything)                       # disjoint
    for i in range(len(lengths)):                                        # ordered in time
        own = [[e for e in want[p] if offsets[i] <= e < offsets[i + 1]] for p in splits.PARTS]
        seq = [e for part in own for e in part]
        assert seq == sorted(seq)


@pytest.mark.parametrize("window", [1, 10, 24, 60])
@pytest.mark.parametrize("horizon", [1, 3])
@pytest.mark.parametrize("transform", TRANSFORMS)
def test_every_setting_scores_the_same_target_times(window, horizon, transform):
    """The test windows' first targets are the same rows (levels) whatever the window, the
    horizon or the transform: the last 20 % of 300 values."""
    rs = np.random.default_rng(0)
    s = _build([50 + rs.uniform(0, 1, 300)], transform=transform, window=window,
               horizon=horizon, fracs={"test": 0.2, "val": 0.0, "cal": 0.0})
    assert s.ends("test").tolist() == list(range(240, 300 - horizon + 1))
    off = 0 if transform == "none" else 1
    assert s.ends("train").tolist() == list(range(window + off, 240 - horizon + 1))


def test_the_source_series_300_points_window_10():
    c = splits.cut(np.array([300]), 0.2)
    offsets = np.array([0, 300])
    assert splits.ends(offsets, c, "train", 10, 1, 0).tolist() == list(range(10, 240))
    assert splits.ends(offsets, c, "test", 10, 1, 0).tolist() == list(range(240, 300))
    assert splits.ends(offsets, c, "val", 10, 1, 0).shape == (0,)
    assert splits.ends(offsets, c, "val", 10, 1, 0).dtype == np.int64


def _usable_by_hand(n: int, window: int, horizon: int, off: int, fr: dict, parts) -> bool:
    b = _hand_cuts(n, *(str(fr[p]) for p in ("test", "val", "cal")))
    return all(len(_brute_ends([n], [b], window, horizon, off)[p]) >= 1 for p in parts)


@pytest.mark.parametrize("window, horizon, off, fr", [
    (5, 3, 0, {"test": 0.2, "val": 0.1, "cal": 0.0}),
    (10, 1, 1, {"test": 0.2, "val": 0.0, "cal": 0.0}),
    (8, 2, 1, {"test": 0.25, "val": 0.15, "cal": 0.1}),
    (24, 12, 0, {"test": 0.1, "val": 0.1, "cal": 0.0})])
def test_usable_and_min_length_by_brute_force(window, horizon, off, fr):
    parts = ("train", "test") + tuple(p for p in ("val", "cal") if fr[p] > 0)
    lengths = np.arange(1, 301)
    c = splits.cut(lengths, fr["test"], fr["val"], fr["cal"])
    want = [_usable_by_hand(int(n), window, horizon, off, fr, parts) for n in lengths]
    np.testing.assert_array_equal(splits.usable(c, window, horizon, off, parts), want)
    assert splits.min_length(window, horizon, off, parts, fr) == int(lengths[want][0])


def _cuts(lengths, tf=0.2, vf=0.1, cf=0.0) -> splits.Cuts:
    return splits.cut(np.array(lengths), tf, vf, cf)


def test_cuts_take_and_dict_round_trip():
    c = _cuts([30, 40, 50])
    kept = c.take(np.array([0, 2]))
    np.testing.assert_array_equal(kept.test_start, [24, 40])
    np.testing.assert_array_equal(c.take(np.array([False, True, False])).val_start, [28])
    back = splits.Cuts.from_dict(splits.Cuts(*c.arrays(), gap=3).to_dict())
    assert back.gap == 3 and all(_same(a, b) for a, b in zip(back.arrays(), c.arrays()))


# ---------------------------------------------------------------- splits: backtest folds
def _folds(lengths, k, *, fold_size=0, train_size=0, gap=0, vf=0.1, cf=0.05, horizon=H):
    n = np.array(lengths)
    base = _cuts(lengths, 0.3, vf, cf)
    val = np.floor(n * vf + 1e-9).astype(np.int64)
    cal = np.floor(n * cf + 1e-9).astype(np.int64)
    with naming(PARAMS_KEYS):
        return base, val, cal, splits.folds(base, k, fold_size=fold_size,
                                            train_size=train_size, gap=gap, val_size=val,
                                            cal_size=cal, horizon=horizon)


@pytest.mark.parametrize("fold_size, gap, train_size", [(0, 0, 0), (6, 2, 0), (4, 1, 30)])
def test_folds_lie_inside_each_series_test_part_and_train_only_before_their_origin(
        fold_size, gap, train_size):
    lengths = [100, 140, 81]
    k = 3
    base, val, cal, folds = _folds(lengths, k, fold_size=fold_size, gap=gap,
                                   train_size=train_size)
    assert len(folds) == k
    for i, n in enumerate(lengths):
        test_start = _floor(n, "0.3")
        assert base.test_start[i] == test_start
        size = fold_size or (n - test_start) // k
        for j, f in enumerate(folds):
            origin = n - (k - j) * size                           # the last block ends at n
            assert origin >= test_start                           # inside the test part
            assert (f.test_start[i], f.test_end[i]) == (origin, origin + size)
            assert f.cal_start[i] == origin - gap - cal[i]
            assert f.val_start[i] == origin - gap - cal[i] - val[i]
            assert f.train_start[i] == (max(f.val_start[i] - train_size, 0) if train_size
                                        else 0)
            assert f.gap == gap
            assert f.bounds("cal")[1][i] == origin - gap          # gap targets left out
            # every training, validation and calibration target lies before the origin
            for part in ("train", "val", "cal"):
                assert f.bounds(part)[1][i] <= origin - gap
            if train_size:
                assert f.val_start[i] - f.train_start[i] <= train_size
        for a, b in zip(folds, folds[1:]):                        # consecutive test blocks
            assert a.test_end[i] == b.test_start[i]
        assert folds[-1].test_end[i] == n


def test_folds_that_do_not_fit_are_refused_naming_the_keys():
    # test parts of 30, 42 and 25 targets (30 % of 100, 140, 81 rounded as the cut rule)
    with pytest.raises(UserInputError) as info:
        _folds([100, 140, 81], 3, fold_size=9)
    msg = str(info.value)
    assert "backtest.folds x backtest.fold_size (3 x 9) does not fit in the test part of " \
           "series 3 (25 targets)" in msg
    _folds([100, 140, 81], 3, fold_size=8)                        # 3 x 8 = 24 <= 25: fits
    with pytest.raises(UserInputError, match=r"backtest.folds \(9\) leaves 2 test target\(s\) "
                                             r"per fold of series 3, fewer than the horizon "
                                             r"\(3\).*larger backtest.fold_size"):
        _folds([100, 140, 81], 9)


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


# ---------------------------------------------------------------- transforms
def test_model_series_definitions():
    v = np.array([2.0, 3.0, 1.5, 6.0])
    assert _same(transforms.model_series(v, "none"), v)
    assert transforms.model_series(v, "diff").tolist() == [0.0, 1.0, -1.5, 4.5]
    np.testing.assert_allclose(transforms.model_series(v, "log_return"),
                               [0.0, math.log(3 / 2), math.log(1.5 / 3), math.log(6 / 1.5)],
                               rtol=1e-14)
    assert [transforms.offset(k) for k in TRANSFORMS] == [0, 1, 1]


@pytest.mark.parametrize("kind", TRANSFORMS)
@pytest.mark.parametrize("horizon", [1, 4])
def test_transform_round_trip_through_windows(kind, horizon):
    v = 50.0 * np.exp(np.cumsum(np.random.default_rng(7).normal(0, 0.02, 150)))
    z = transforms.model_series(v, kind)
    off, window = transforms.offset(kind), 8
    ends = np.arange(window + off, len(v) - horizon + 1)
    _, y = gather(z, ends, window, horizon)
    rebuilt = transforms.to_levels(y, v[ends - 1], kind)
    want = v[ends[:, None] + np.arange(horizon)[None, :]]
    np.testing.assert_allclose(rebuilt, want, rtol=1e-12, atol=1e-12)


def test_a_non_positive_value_under_log_return_is_named_with_its_row():
    v = np.r_[np.linspace(1, 5, 5), -1.0, 2.0]
    with pytest.raises(UserInputError) as info:
        transforms.model_series(v, "log_return", "prepare.transform")
    assert str(info.value) == ("prepare.transform log_return needs positive values, got -1.0 "
                               "at row 6; use diff or none")
    with pytest.raises(UserInputError) as info:
        transforms.feature_series(np.array([1.0, 0.0]), "log_return", "feature 'f'")
    assert "positive values in feature 'f', got 0.0 at row 2" in str(info.value)
    with pytest.raises(UserInputError) as info:
        transforms.feature_series(np.array([1.0, -1.0]), "log1p", "feature 'f'")
    assert "log1p needs values > -1 in feature 'f', got -1.0 at row 2" in str(info.value)


def test_feature_transforms_against_numpy():
    x = np.array([1.0, 2.0, 4.0, 3.0])
    np.testing.assert_allclose(transforms.feature_series(x, "log_return", "f")[1:],
                               np.diff(np.log(x)), rtol=1e-15)
    np.testing.assert_array_equal(transforms.feature_series(x, "diff", "f")[1:], np.diff(x))
    np.testing.assert_array_equal(transforms.feature_series(x, "log1p", "f"), np.log1p(x))
    assert _same(transforms.feature_series(x, "none", "f"), x)
    for kind in ("diff", "log_return"):
        assert np.isnan(transforms.feature_series(x, kind, "f")[0])
    with pytest.raises(UserInputError, match="positive values in feature 'f'"):
        transforms.feature_series(np.array([1.0, 0.0]), "log_return", "feature 'f'")


# ---------------------------------------------------------------- windows
def _naive_windows(data, window, horizon):
    """The source's loop: X.append(data[i:i+w]); Y.append(data[i+w:i+w+h])."""
    x = [list(data[i:i + window]) for i in range(len(data) - window - horizon + 1)]
    y = [list(data[i + window:i + window + horizon])
         for i in range(len(data) - window - horizon + 1)]
    return np.array(x), np.array(y)


def test_gather_equals_the_source_loop_numpy():
    data = np.random.default_rng(1).normal(size=57)
    for window, horizon in ((10, 1), (6, 3)):
        x_ref, y_ref = _naive_windows(data, window, horizon)
        x, y = gather(data, np.arange(window, len(data) - horizon + 1), window, horizon)
        assert np.array_equal(x, x_ref) and np.array_equal(y, y_ref)
    ends = np.array([40, 12, 99 - 4])
    big = np.arange(100, dtype=np.float64) * 1.5
    x, y = gather(big, ends, 12, 4)
    for row, e in enumerate(ends):
        assert np.array_equal(x[row], big[e - 12:e]) and np.array_equal(y[row], big[e:e + 4])


def test_gather_and_gather_side_equal_the_loop_torch():
    torch = pytest.importorskip("torch")
    g = torch.Generator().manual_seed(3)
    data = torch.randn(41, generator=g)
    side = torch.randn(41, 3, generator=g)
    window, horizon = 6, 3
    x_ref, y_ref = _naive_windows(data.numpy(), window, horizon)
    ends = torch.arange(window, len(data) - horizon + 1)
    x, y = gather(data, ends, window, horizon)
    assert isinstance(x, torch.Tensor)
    assert np.array_equal(x.numpy(), x_ref) and np.array_equal(y.numpy(), y_ref)
    cin, cout = gather_side(side, ends, window, horizon)
    assert cin.shape == (len(ends), window, 3) and cout.shape == (len(ends), horizon, 3)
    for k, e in enumerate(ends.tolist()):
        assert torch.equal(cin[k], side[e - window:e]) and torch.equal(cout[k], side[e:e + horizon])


def test_gather_side_and_flat_inputs_numpy():
    rs = np.random.default_rng(5)
    series, side = rs.normal(size=40), rs.normal(size=(40, 4))
    ends = np.array([7, 20, 36])
    cin, cout = gather_side(side, ends, 7, 4)
    for k, e in enumerate(ends):
        assert np.array_equal(cin[k], side[e - 7:e]) and np.array_equal(cout[k], side[e:e + 4])
    assert gather_side(None, ends, 7, 4) is None
    assert gather_side(np.zeros((40, 0)), ends, 7, 4) is None
    flat = flat_inputs(series, side, ends, 7, 4, side_from=2)
    want = np.stack([np.r_[series[e - 7:e], side[e - 7:e, 2:].ravel()] for e in ends])
    assert np.array_equal(flat, want)
    assert np.array_equal(flat_inputs(series, side, ends, 7, 4, side_from=4),
                          np.stack([series[e - 7:e] for e in ends]))
    assert np.array_equal(flat_inputs(series, None, ends, 7, 4),
                          np.stack([series[e - 7:e] for e in ends]))


def test_spread_keeps_at_most_k_evenly_spaced():
    ends = np.arange(100, 200)
    assert _same(spread(ends, 500), ends)
    got = spread(ends, 5)
    assert got.tolist() == [100, 125, 150, 174, 199]      # round(0, 24.75, 49.5, 74.25, 99)
    assert spread(ends, 1).tolist() == [100]


def test_concat_ranges_is_the_loop():
    rs = np.random.default_rng(0)
    for size in (0, 1, 2, 7, 50):
        starts = rs.integers(-5, 40, size)
        stops = starts + rs.integers(-4, 6, size)              # some empty or reversed
        want = np.concatenate([np.arange(a, b) for a, b in zip(starts, stops)]
                              + [np.zeros(0, np.int64)]).astype(np.int64)
        got = concat_ranges(starts, stops)
        assert got.dtype == np.int64
        np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(concat_ranges(np.array([3, 3, 9]), np.array([3, 1, 9])), [])


# ---------------------------------------------------------------- build
@pytest.mark.parametrize("transform", TRANSFORMS)
def test_a_store_reads_each_series_own_scaled_model_values(transform):
    series = _hand_series()
    s = _build(series, transform=transform)
    off = transforms.offset(transform)
    assert s.n_series == 5 and s.dropped == {"count": 0, "ids": []}
    np.testing.assert_array_equal(s.lengths, [37, 50, 64, 40, 90])
    assert s.offset == off
    lengths = [len(x) for x in series]
    want = _brute_ends(lengths, [_hand_cuts(n, "0.2", "0.1", "0") for n in lengths], W, H, off)
    for part in splits.PARTS:
        assert s.ends(part).tolist() == want[part]
        assert s.meta()["n_windows"][part] == len(want[part])
    for i, v in enumerate(series):
        a = int(s.offsets[i])
        zm = (_model_values(v, transform) - s.scalers.center[i]) / s.scalers.scale[i]
        zm[:off] = 0.0
        np.testing.assert_allclose(s.z[a:a + len(v)], zm, rtol=1e-5, atol=1e-5)
        np.testing.assert_array_equal(s.train_levels(i), v[:_floor(len(v), "0.2", "0.1")])
    ends = s.ends("test")
    sid = s.series_of(ends)
    assert (sid == np.searchsorted(np.cumsum(lengths), ends, side="right")).all()
    np.testing.assert_array_equal(s.targets(ends), s.levels[ends[:, None] + np.arange(H)])
    np.testing.assert_array_equal(s.last(ends), s.levels[ends - 1])


def test_short_series_are_left_out_and_named():
    rs = np.random.default_rng(5)
    series = [rs.uniform(1, 2, n) for n in (60, 5, 50, 12, 70, 3)]
    ids = ["long1", "tiny1", "long2", "tiny2", "long3", "tiny3"]
    s = _build(series, ids=ids, transform="diff")
    assert s.dropped == {"count": 3, "ids": ["tiny1", "tiny2", "tiny3"]}
    assert s.ids.tolist() == ["long1", "long2", "long3"]
    np.testing.assert_array_equal(s.offsets, [0, 60, 110, 180])
    np.testing.assert_array_equal(s.levels, np.concatenate([series[0], series[2], series[4]]))
    np.testing.assert_array_equal(s.t, np.concatenate([np.arange(n, dtype=float)
                                                       for n in (60, 50, 70)]))
    assert s.meta()["dropped"] == s.dropped and s.meta()["n_series"] == 3
    # a kept series is prepared as if the short ones were never there
    train = np.diff(series[2][:_floor(50, "0.2", "0.1")])
    assert s.scalers.center[1] == pytest.approx(np.mean(train), rel=1e-12)
    assert s.scalers.scale[1] == pytest.approx(np.std(train), rel=1e-12)
    alone = _build([series[2]], ids=["long2"], transform="diff")
    assert _same(alone.z, s.z[60:110])
    # only the first five are named, all are counted
    many = _build([rs.uniform(1, 2, 4) for _ in range(8)] + [series[0]], transform="diff")
    assert many.dropped == {"count": 8, "ids": [f"s{i}" for i in range(5)]}
    assert many.ids.tolist() == ["s8"]


@pytest.mark.parametrize("keys", [PARAMS_KEYS, OTHER_KEYS], ids=["params", "flags"])
def test_only_short_series_is_an_error_naming_lengths_need_and_keys(keys):
    fr = {"test": 0.2, "val": 0.1, "cal": 0.0}
    need = next(m for m in range(1, 200) if _usable_by_hand(m, W, H, 0, fr,
                                                            ("train", "test", "val")))
    assert need == 24                                      # by hand: val needs 3 targets
    with pytest.raises(UserInputError) as info:
        _build([np.arange(1.0, 9.0), np.arange(1.0, 12.0)], keys=keys)
    msg = str(info.value)
    assert msg.startswith("series too short: 11 values (the longest of 2 series) give ")
    assert "window 5 + horizon 3" in msg and "test_frac 0.2, val_frac 0.1" in msg
    assert _need(msg) == need
    assert f"(or a smaller {keys['window']}, {keys['horizon']} or fractions)" in msg
    with pytest.raises(UserInputError) as info:
        _build([np.arange(1.0, need)], keys=keys)            # need - 1 values
    assert "series too short: 23 values give" in str(info.value)
    assert "the longest" not in str(info.value)
    assert _build([np.arange(1.0, need + 1)]).n_series == 1  # need values: a store
    with pytest.raises(UserInputError, match="need more values"):
        _build([np.arange(1.0, 12.0)], test_size=np.array([2]))


def test_the_length_a_too_short_series_needs_is_longer_than_it():
    """With window 5, horizon 2 and a 10 % validation part, 14 values give a window in every
    part but 16 do not (the validation part holds floor(0.8 n) - floor(0.7 n) targets: 2 of
    14, 1 of 16). "need at least N values" must not name fewer values than the series has."""
    fr = {"test": 0.2, "val": 0.1, "cal": 0.0}
    parts = ("train", "test", "val")
    assert _usable_by_hand(14, 5, 2, 0, fr, parts) and not _usable_by_hand(16, 5, 2, 0, fr,
                                                                            parts)
    with pytest.raises(UserInputError) as info:
        _build([np.arange(1.0, 17.0)], window=5, horizon=2, fracs=fr)
    msg = str(info.value)
    assert msg.startswith("series too short: 16 values give")
    assert _need(msg) > 16, msg


def test_a_non_positive_value_under_log_return_names_its_series(tmp_path):
    good = np.linspace(1, 5, 40)
    bad = np.r_[np.linspace(1, 5, 20), -1.0, np.linspace(1, 5, 19)]
    # the ids as the prepare stage has them: read back from the generate stage's table
    path = tmp_path / "series.csv"
    write_long(path, [_long("good", good), _long("bad", bad)])
    raw = read_long(path)
    with pytest.raises(UserInputError) as info:
        _build(raw, transform="log_return")
    msg = str(info.value)
    assert msg.startswith("series 'bad': prepare.transform log_return needs positive values"), \
        msg
    assert "at row 21" in msg
    with pytest.raises(UserInputError, match="--transform log_return"):
        _build(raw, transform="log_return", keys=OTHER_KEYS)


def _long(sid, values):
    import pandas as pd
    return pd.DataFrame({"id": sid, "t": np.arange(len(values)), "value": values,
                         "signal": np.nan})


def test_an_empty_raw_is_an_error():
    raw = Raw(np.array([], dtype=str), np.array([0]), np.zeros(0), np.zeros(0), np.zeros(0))
    with pytest.raises(UserInputError, match="holds no series"):
        _build(raw)


# ---------------------------------------------------------------- build: past covariates
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


@pytest.mark.parametrize("transform", ("log_return", "none"))
def test_features_are_transformed_and_scaled_per_series_on_training_rows(transform):
    _, feats, raw = _feature_raw()
    s = _feature_store(raw, transform)
    off = transforms.offset(transform)
    assert s.features == NAMES and s.feature_transforms == KINDS and s.n_features == 2
    assert s.side.shape == (135, 2) and s.side.dtype == np.float32 and s.n_time_features == 0
    for i, f in enumerate(feats):
        a, b = int(s.offsets[i]), int(s.offsets[i + 1])
        val_start = _floor(b - a, "0.2", "0.1")
        for k, kind in enumerate(KINDS):
            col = _hand_feature(f[:, k], kind)
            np.testing.assert_allclose(s.feature_cols[a:b, k], col, rtol=1e-13)
            train = col[off:val_start]
            train = train[np.isfinite(train)]
            assert s.feature_center[i, k] == pytest.approx(np.mean(train), rel=1e-12)
            assert s.feature_scale[i, k] == pytest.approx(np.std(train), rel=1e-12)
            want = np.nan_to_num((col - np.mean(train)) / np.std(train), nan=0.0)
            np.testing.assert_allclose(s.side[a:b, k], want.astype(np.float32), rtol=1e-5,
                                       atol=1e-6)
    # the side row j is the step that ends at level j, as z[j] is
    j, c, sc = 50, s.feature_center[0, 0], s.feature_scale[0, 0]
    assert s.side[j, 0] == pytest.approx((np.log(feats[0][j, 0] / feats[0][j - 1, 0]) - c) / sc,
                                         rel=1e-5)
    # values from series 0's first validation target on change nothing of its scalers, and
    # nothing of series 1
    poisoned = raw.features.copy()
    poisoned[_floor(60, "0.2", "0.1"):60] *= 3
    q = _feature_store(Raw(raw.ids, raw.offsets, raw.t, raw.levels, raw.signal, poisoned,
                           raw.feature_names), transform)
    assert _same(q.feature_center, s.feature_center) and _same(q.feature_scale, s.feature_scale)
    assert _same(q.side[60:], s.side[60:])


def test_a_constant_feature_is_scaled_by_one_around_its_value():
    raw = _feature_raw()[2]
    const = raw.features.copy()
    const[:, 1] = 5.0                                     # volume: one value throughout
    s = _build(Raw(raw.ids, raw.offsets, raw.t, raw.levels, raw.signal, const,
                   raw.feature_names), transform="diff", window=8, horizon=1,
               feature_transforms=("log_return", "none"))
    np.testing.assert_array_equal(s.feature_center[:, 1], [5.0, 5.0])
    np.testing.assert_array_equal(s.feature_scale[:, 1], [1.0, 1.0])
    np.testing.assert_array_equal(s.side[:, 1], 0.0)


def test_a_bad_feature_value_names_the_feature_and_its_series():
    raw = _feature_raw()[2]
    bad = raw.features.copy()
    bad[70, 0] = 0.0                                      # south's 11th open
    with pytest.raises(UserInputError, match=r"feature 'open' of series 'south'"):
        _feature_store(Raw(raw.ids, raw.offsets, raw.t, raw.levels, raw.signal, bad,
                           raw.feature_names))


def _daily(lengths, start="2024-01-01"):
    days = np.concatenate([np.arange(n) for n in lengths]).astype("timedelta64[D]")
    return np.datetime64(start, "s") + days


def _hand_dayofweek(t: np.ndarray) -> np.ndarray:
    """(sin, cos) of the day of the week (Monday 0): 1970-01-01 was a Thursday (3)."""
    days = t.astype("datetime64[D]").astype(np.int64)
    phase = 2 * np.pi * ((days + 3) % 7) / 7
    return np.stack([np.sin(phase), np.cos(phase)], axis=1)


def test_calendar_columns_come_first_in_side():
    t = _daily([60, 75])
    _, _, raw = _feature_raw(t=t)
    s = _feature_store(raw, time_features=("dayofweek",))
    assert s.time_features == ("dayofweek",) and s.n_time_features == 2
    assert s.side.shape == (135, 4)
    np.testing.assert_allclose(s.side[:, :2], _hand_dayofweek(t), atol=1e-6)
    without = _feature_store(raw)
    assert _same(s.side[:, 2:], without.side)
    assert s.meta()["time_features"] == ["dayofweek"]
    with pytest.raises(UserInputError, match="need dates in the time column"):
        _feature_store(_feature_raw()[2], time_features=("dayofweek",))


def test_windows_see_their_targets_calendar_and_never_their_values():
    n = 48
    t = np.datetime64("2024-01-01T00:00", "s") + np.arange(n).astype("timedelta64[h]")
    levels = 5 + np.sin(np.arange(n) / 3.0)
    fr = {"test": 0.25, "val": 0.0, "cal": 0.0}
    s = _build(_raw([levels], t=t), window=8, horizon=2, fracs=fr, transform="diff",
               time_features=("hour",))
    hour = 2 * np.pi * (np.arange(n) % 24) / 24
    full = np.stack([np.sin(hour), np.cos(hour)], axis=1)
    ends = s.ends("test")
    assert ends.tolist() == list(range(36, 47))
    cin, cout = gather_side(s.side, ends, 8, 2)
    for k, e in enumerate(ends):   # row e is level e: the targets' time stamps, the inputs' own
        np.testing.assert_allclose(cout[k], full[e:e + 2], atol=1e-6)
        np.testing.assert_allclose(cin[k], full[e - 8:e], atol=1e-6)
    other = _build(_raw([levels * 5 + 3], t=t), window=8, horizon=2, fracs=fr,
                   transform="diff", time_features=("hour",))
    assert _same(other.side, s.side)


# ---------------------------------------------------------------- save and load
def _check_same_store(back: Store, s: Store) -> None:
    for name in ("levels", "signal", "t", "z", "offsets", "side", "feature_cols",
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
    raw = Raw(raw.ids, raw.offsets, raw.t, raw.levels, np.linspace(0, 1, len(raw.levels)))
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
    levels, fcols = np.array(s.levels), np.array(s.feature_cols)
    for i in range(2):
        a, b = int(s.offsets[i]), int(s.offsets[i + 1])
        levels[a + int(cuts.val_start[i]):b] *= 1000.0
        fcols[a + int(cuts.val_start[i]):b] *= 1000.0
    from dataclasses import replace
    again = replace(s, levels=levels, feature_cols=fcols).refit(cuts)
    assert _same(again.scalers.center, got.scalers.center)
    assert _same(again.scalers.scale, got.scalers.scale)
    assert _same(again.feature_center, got.feature_center)
    assert _same(again.feature_scale, got.feature_scale)
    # a sliding training part (backtest.train_size): rows before it do not count either
    sliding = _fold_cuts(s, train_start=[20, 25])
    ref = s.refit(sliding)
    early_levels, early_cols = np.array(s.levels), np.array(s.feature_cols)
    for i, start in enumerate((20, 25)):
        a = int(s.offsets[i])
        early_levels[a:a + start - 1] *= 1000.0        # level start - 1 is row start's past
        early_cols[a:a + start] *= 1000.0
    moved = replace(s, levels=early_levels, feature_cols=early_cols).refit(sliding)
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


# ---------------------------------------------------------------- to_levels
@pytest.mark.parametrize("transform", TRANSFORMS)
@pytest.mark.parametrize("scaler", ("zscore", "minmax"))
def test_to_levels_inverts_scaling_and_transform(transform, scaler):
    series = _hand_series()
    s = _build(series, transform=transform, scaler=scaler)
    ends = s.ends("test")
    rs = np.random.default_rng(9)
    z_pred = rs.normal(0, 0.3, (len(ends), H)).astype(np.float32)
    sid = np.searchsorted(np.cumsum([len(v) for v in series]), ends, side="right")
    center, scale = s.scalers.center[sid, None], s.scalers.scale[sid, None]
    unscaled = z_pred.astype(np.float64) * scale + center
    last = s.levels[ends - 1][:, None]
    want = {"none": unscaled, "diff": last + np.cumsum(unscaled, axis=1),
            "log_return": last * np.exp(np.cumsum(unscaled, axis=1))}[transform]
    np.testing.assert_allclose(s.to_levels(z_pred, ends), want, rtol=1e-12)
    # the store's own targets come back as the levels (up to float32 scaling)
    y = np.asarray(s.z)[ends[:, None] + np.arange(H)]
    np.testing.assert_allclose(s.to_levels(y, ends), s.levels[ends[:, None] + np.arange(H)],
                               rtol=1e-5)
    # quantiles (N, H, Q): each level on its own
    q = np.stack([z_pred - 0.1, z_pred, z_pred + 0.1], axis=-1)
    got = s.to_levels(q, ends)
    assert got.shape == (len(ends), H, 3)
    np.testing.assert_allclose(got[..., 1], want, rtol=1e-12)


# ---------------------------------------------------------------- calendar
def test_calendar_features_depend_on_each_time_stamp_only():
    t = np.array(["2024-03-01T00:00:00", "2024-03-01T06:00:00", "2024-03-02T12:00:00"],
                 dtype=object)
    f = time_features(t, ["hour", "dayofweek"])
    assert f.shape == (3, 4) and f.dtype == np.float32
    np.testing.assert_allclose(f[0, :2], [0, 1], atol=1e-7)             # 00:00
    np.testing.assert_allclose(f[1, :2], [1, 0], atol=1e-7)             # 06:00
    np.testing.assert_allclose(f[2, :2], [0, -1], atol=1e-7)            # 12:00
    friday, saturday = 2 * np.pi * 4 / 7, 2 * np.pi * 5 / 7
    np.testing.assert_allclose(f[:, 2:], [[np.sin(friday), np.cos(friday)]] * 2
                               + [[np.sin(saturday), np.cos(saturday)]], atol=1e-7)
    t2 = t.copy()
    t2[2] = "2024-03-05T18:00:00"
    g = time_features(t2, ["hour", "dayofweek"])
    assert np.array_equal(f[:2], g[:2]) and not np.array_equal(f[2], g[2])
    as_dates = time_features(t.astype("datetime64[s]"), ["hour", "dayofweek"])
    assert np.array_equal(as_dates, f)
    assert time_features(t, []).shape == (3, 0)
    with pytest.raises(UserInputError, match="need dates in the time column"):
        time_features(np.arange(3.0), ["hour"])


def test_calendar_cycles_put_december_next_to_january():
    t = np.array(["2023-12-01", "2024-01-01", "2024-06-01"], dtype="datetime64[s]")
    f = time_features(t, ["month", "dayofmonth", "dayofyear", "minute"]).astype(np.float64)
    month = f[:, :2]
    assert np.linalg.norm(month[0] - month[1]) == pytest.approx(2 * np.sin(np.pi / 12), rel=1e-6)
    np.testing.assert_allclose(month[1], [0, 1], atol=1e-7)            # January: phase 0
    np.testing.assert_allclose(month[2], [np.sin(np.pi * 5 / 6), np.cos(np.pi * 5 / 6)],
                               atol=1e-7)
    np.testing.assert_allclose(f[:, 2:4], [[0, 1]] * 3, atol=1e-7)     # the 1st of the month
    np.testing.assert_allclose(f[1, 4:6], [0, 1], atol=1e-7)           # 1 January
    np.testing.assert_allclose(f[:, 6:], [[0, 1]] * 3, atol=1e-7)      # minute 0


# ---------------------------------------------------------------- seasons and windows
def test_one_series_season_and_window_come_from_its_training_part_only():
    rng = np.random.default_rng(0)
    t = np.arange(600)
    levels = 10 + np.sin(2 * np.pi * t / 24) + 0.2 * rng.normal(size=600)
    n_train = np.array([420])
    got = choose(levels, np.array([0, 600]), n_train, "auto")
    assert got["season"] == detect_season(levels[:420])
    assert got["season"]["season"] == 24 and got["window"]["window"] == 48
    poisoned = levels.copy()
    poisoned[420:] = rng.normal(size=180) * 1e3                    # val and test
    assert choose(poisoned, np.array([0, 600]), n_train, "auto") == got
    assert "window" not in choose(levels, np.array([0, 600]), n_train, 60)


def test_the_season_of_many_series_is_the_most_common_among_their_training_parts():
    rs = np.random.default_rng(5)
    t = np.arange(200)
    weekly = [10 + np.sin(2 * np.pi * t / 7) + rs.normal(0, 0.1, 200) for _ in range(3)]
    flat = [np.cumsum(rs.normal(0, 1, 200))]
    raw = _raw(weekly + flat)
    n_train = np.full(4, 160)
    got = choose(raw.levels, raw.offsets, n_train, "auto")
    assert got["season"]["season"] == 7 and "(3 series)" in got["season"]["reason"]
    assert "of 4 series' training parts" in got["season"]["reason"]
    assert got["window"]["window"] == 16
    # the test parts are never looked at: a season that appears only there is not found
    late = [np.r_[rs.normal(0, 1, 160), 5 * np.sin(2 * np.pi * np.arange(40) / 5)]
            for _ in range(3)]
    raw = _raw(late)
    got = choose(raw.levels, raw.offsets, np.full(3, 160), 10)
    assert got["season"]["season"] == 0 and "window" not in got
    assert "none (3 series show no season)" in got["season"]["reason"]


def test_many_series_are_sampled_evenly_and_the_window_fits_the_median_training_part():
    rs = np.random.default_rng(8)
    t = np.arange(120)
    series = [10 + np.sin(2 * np.pi * t / 12) + rs.normal(0, 0.05, 120) for _ in range(7)]
    raw = _raw(series)
    n_train = np.array([30, 30, 30, 40, 96, 96, 96])
    got = choose(raw.levels, raw.offsets, n_train, "auto", sample=3)
    assert "of 3 series' training parts" in got["season"]["reason"]
    assert got["window"]["window"] == 20                           # half of the median 40


def test_no_season_in_a_random_walk_and_the_window_rules():
    found = detect_season(np.cumsum(np.random.default_rng(5).normal(size=800)))
    assert found["season"] == 0 and "noise band" in found["reason"]
    assert detect_season(np.arange(6.0))["season"] == 0             # too few to see a season
    assert window_for(0, 800)["window"] == 24                        # no season: 24 steps
    assert window_for(24, 800)["window"] == 48                       # two seasons
    assert window_for(336, 10_000)["window"] == 512                  # capped
    assert window_for(4, 400)["window"] == 16                        # at least 16
    assert window_for(12, 40)["window"] == 20                        # at most half the train
    assert window_for(19, 30)["window"] == 19                        # but a whole season
    got = window_for(7, 700, patch_len=7)
    assert got["window"] == 21 and "patches tile it" in got["reason"]
    assert window_for(48, 3200, patch_len=24)["window"] == 96
    assert window_for(48, 3200, patch_len=16, patch_stride=8)["window"] == 96
    assert window_for(5, 700, patch_len=6, patch_stride=4)["window"] == 18   # 6 + 3 x 4
