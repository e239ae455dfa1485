"""Unit tests for attn_forecast.data.splits: the cut rule, window ends, usable lengths, folds."""
from __future__ import annotations

import numpy as np
import pytest

from attn_forecast.data import splits
from attn_forecast.errors import UserInputError, naming
from attn_forecast.setup.keys import PARAMS_KEYS
from unit.data.helpers import (H, TRANSFORMS, _brute_ends, _build, _floor, _hand_cuts, _same,
                               _usable_by_hand)

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
