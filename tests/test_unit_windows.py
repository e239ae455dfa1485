"""Unit tests for attn_forecast.windows: splits, scaling, lean windows and transforms."""
from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
import torch

from attn_forecast.errors import UserInputError
from attn_forecast.windows import (
    Split, fit_scaler, gather_windows, load_prepared, make_split, prepare, save_prepared,
    to_levels, to_model_series, transform_offset,
)

COMBOS = [
    # n, window, horizon, test_frac, val_frac
    (300, 10, 1, 0.2, 0.0),
    (300, 10, 5, 0.2, 0.1),
    (120, 7, 3, 0.25, 0.15),
    (50, 1, 1, 0.3, 0.2),
    (1000, 30, 10, 0.1, 0.3),
    (40, 5, 2, 0.2, 0.2),
    (64, 16, 4, 0.25, 0.0),
]


def _naive_windows(data, w, h=1):
    """The source's loop: X.append(data[i:i+w]); Y.append(data[i+w]) (h targets here)."""
    X, Y = [], []
    for i in range(len(data) - w - h + 1):
        X.append(list(data[i:i + w]))
        Y.append(list(data[i + w:i + w + h]))
    return np.array(X), np.array(Y)


# ---------------------------------------------------------------- splits
@pytest.mark.parametrize("n,w,h,tf,vf", COMBOS)
def test_targets_lie_inside_their_part(n, w, h, tf, vf):
    s = make_split(n, w, h, tf, vf)
    assert 0 < s.train_end <= s.val_end < n
    parts = {"train": (0, s.train_end), "val": (s.train_end, s.val_end),
             "test": (s.val_end, n)}
    for part, (lo, hi) in parts.items():
        ends = s.ends(part)
        for e in ends:
            targets = np.arange(e, e + h)
            assert targets.min() >= lo and targets.max() < hi, (part, e)
            assert e - w >= 0  # inputs exist
    # test windows only see targets at/after val_end, train windows only before train_end
    assert (s.ends("test") >= s.val_end).all()
    assert (s.ends("train") + h - 1 < s.train_end).all()
    if vf > 0:
        v = s.ends("val")
        assert len(v) >= 1
        assert (v >= s.train_end).all() and (v + h - 1 < s.val_end).all()
    else:
        assert len(s.ends("val")) == 0


@pytest.mark.parametrize("n,w,h,tf,vf", COMBOS)
def test_parts_hold_every_window_wholly_inside_them(n, w, h, tf, vf):
    """Brute force over every possible window end: a window belongs to exactly the part that
    holds all of its targets; windows straddling a boundary belong to none."""
    s = make_split(n, w, h, tf, vf)
    bounds = {"train": (0, s.train_end), "val": (s.train_end, s.val_end),
              "test": (s.val_end, n)}
    for part, (lo, hi) in bounds.items():
        expected = [e for e in range(w, n - h + 1) if lo <= e and e + h <= hi]
        assert s.ends(part).tolist() == expected, part
    # the test part reaches the very end of the series
    assert s.ends("test")[-1] == n - h
    # the train part starts with the first possible window
    assert s.ends("train")[0] == w


@pytest.mark.parametrize("n,w,h,tf,vf", COMBOS)
def test_parts_are_cut_by_target_time(n, w, h, tf, vf):
    s = make_split(n, w, h, tf, vf)
    assert s.val_end == math.floor(Fraction(n) * (1 - Fraction(str(tf))))
    assert s.train_end == (math.floor(Fraction(n) * (1 - Fraction(str(tf)) - Fraction(str(vf))))
                           if vf else s.val_end)


@pytest.mark.parametrize("w", [1, 10, 24, 60])
@pytest.mark.parametrize("h", [1, 3])
@pytest.mark.parametrize("transform", ["none", "diff", "log_return"])
def test_every_setting_scores_the_same_target_times(w, h, transform):
    """The first targets of the test windows are the same time stamps (level indices),
    whatever the window, the horizon or the transform: the last 20 % of 300 levels."""
    off = transform_offset(transform)
    s = make_split(300 - off, w, h, 0.2, 0.0, off)
    first_levels = s.ends("test") + off
    assert first_levels.tolist() == list(range(240, 300 - h + 1))


def test_source_series_300_points_window_10():
    # targets 240..299 test whatever the window; the windows ending 10..239 train
    s = make_split(300, 10, 1, 0.2, 0.0)
    assert s.ends("train").tolist() == list(range(10, 240))
    assert s.ends("test").tolist() == list(range(240, 300))
    assert len(s.ends("val")) == 0


def test_fraction_boundaries_are_exact_floors_of_decimal_fractions():
    # 110 points; 50 % train, 20 % val, 30 % test: 1 - 0.3 - 0.2 is 0.49999999999999994
    s = make_split(110, 10, 1, 0.3, 0.2)
    assert (s.train_end, s.val_end) == (55, 77)


def test_make_split_too_short_raises():
    with pytest.raises(UserInputError, match="too short"):
        make_split(11, 10, 1, 0.2, 0.0)  # one window only: no train window
    with pytest.raises(UserInputError, match="too short"):
        make_split(15, 10, 5, 0.2, 0.0)
    with pytest.raises(UserInputError):
        make_split(5, 10, 1, 0.2, 0.0)  # shorter than a window
    # a requested validation part that gets no window is also too short
    with pytest.raises(UserInputError, match="0 val"):
        make_split(16, 10, 1, 0.2, 0.01)


def test_split_ends_empty_part_dtype():
    s = Split(n=20, window=5, horizon=2, train_end=12, val_end=12)
    assert s.ends("val").shape == (0,)
    assert s.ends("val").dtype == np.int64


# ---------------------------------------------------------------- scaler
def test_scaler_sees_only_training_values():
    n, w = 300, 10
    rng = np.random.default_rng(0)
    levels = rng.normal(size=n)
    train_end = 240  # targets 0..239: the first 80 % of the 300 time stamps
    huge = levels.copy()
    huge[train_end:] = 1e6
    t = np.arange(n)
    prep = prepare(huge, np.full(n, np.nan), t, window=w, horizon=1, test_frac=0.2,
                   val_frac=0.0, scaler="zscore", transform="none")
    assert prep.split.train_end == train_end
    assert prep.scaler.center == pytest.approx(np.mean(levels[:train_end]), rel=1e-12)
    assert prep.scaler.scale == pytest.approx(np.std(levels[:train_end]), rel=1e-12)
    # and the scaled training part is standardised
    ztr = prep.z[:train_end].astype(np.float64)
    assert abs(ztr.mean()) < 1e-5 and abs(ztr.std() - 1) < 1e-5


def test_scaler_ignores_val_part_too_minmax():
    n = 200
    levels = np.sin(np.arange(n) / 7.0) * 3 + 1
    s = make_split(n, 8, 2, 0.2, 0.2)
    spoiled = levels.copy()
    spoiled[s.train_end:] = -5e5
    prep = prepare(spoiled, np.full(n, np.nan), np.arange(n), window=8, horizon=2,
                   test_frac=0.2, val_frac=0.2, scaler="minmax", transform="none")
    lo, hi = levels[:s.train_end].min(), levels[:s.train_end].max()
    assert prep.scaler.center == pytest.approx(lo, rel=1e-12)
    assert prep.scaler.scale == pytest.approx(hi - lo, rel=1e-12)
    assert prep.z[:s.train_end].min() == pytest.approx(0.0, abs=1e-6)
    assert prep.z[:s.train_end].max() == pytest.approx(1.0, abs=1e-6)
    # inverse undoes transform
    x = np.array([-3.0, 0.5, 7.25])
    assert np.allclose(prep.scaler.inverse(prep.scaler.transform(x)), x, rtol=0, atol=1e-12)


def test_scaler_none_is_identity():
    sc = fit_scaler(np.array([5.0, 5.0, 5.0]), "none")
    x = np.array([1.5, -2.0])
    assert np.array_equal(sc.transform(x), x)


@pytest.mark.parametrize("kind", ["zscore", "minmax"])
def test_fit_scaler_constant_raises(kind):
    with pytest.raises(UserInputError, match="constant"):
        fit_scaler(np.full(50, 3.25), kind)


# ---------------------------------------------------------------- lean windows
def test_gather_windows_equals_source_loop_numpy():
    rng = np.random.default_rng(1)
    data = rng.normal(size=57)
    w = 10
    X_ref, Y_ref = _naive_windows(data, w)
    ends = np.arange(w, len(data))
    X, Y = gather_windows(data, ends, w, 1)
    assert X.shape == (len(data) - w, w) and Y.shape == (len(data) - w, 1)
    assert np.array_equal(X, X_ref)
    assert np.array_equal(Y[:, 0], np.array([data[i + w] for i in range(len(data) - w)]))
    assert np.array_equal(Y, Y_ref)


def test_gather_windows_equals_source_loop_torch():
    g = torch.Generator().manual_seed(3)
    data = torch.randn(41, generator=g)
    w, h = 6, 3
    X_ref, Y_ref = _naive_windows(data.numpy(), w, h)
    ends = torch.arange(w, len(data) - h + 1)
    X, Y = gather_windows(data, ends, w, h)
    assert isinstance(X, torch.Tensor)
    assert np.array_equal(X.numpy(), X_ref)
    assert np.array_equal(Y.numpy(), Y_ref)


def test_gather_windows_subset_of_ends():
    data = np.arange(100, dtype=np.float64) * 1.5
    ends = np.array([40, 12, 99 - 4])
    X, Y = gather_windows(data, ends, 12, 4)
    for row, e in enumerate(ends):
        assert np.array_equal(X[row], data[e - 12:e])
        assert np.array_equal(Y[row], data[e:e + 4])


# ---------------------------------------------------------------- transforms
def _prices(n=150, seed=7):
    rng = np.random.default_rng(seed)
    return 50.0 * np.exp(np.cumsum(rng.normal(0, 0.02, size=n)))


def test_model_series_definitions():
    v = np.array([2.0, 3.0, 1.5, 6.0])
    assert np.array_equal(to_model_series(v, "none"), v)
    assert np.allclose(to_model_series(v, "diff"), [1.0, -1.5, 4.5], rtol=0, atol=0)
    assert np.allclose(to_model_series(v, "log_return"),
                       [math.log(3 / 2), math.log(1.5 / 3), math.log(6 / 1.5)], rtol=1e-14)
    assert transform_offset("none") == 0
    assert transform_offset("diff") == 1 and transform_offset("log_return") == 1


@pytest.mark.parametrize("kind", ["none", "diff", "log_return"])
@pytest.mark.parametrize("h", [1, 4])
def test_transform_round_trip_through_windows(kind, h):
    v = _prices()
    z = to_model_series(v, kind)
    off = transform_offset(kind)
    w = 8
    ends = np.arange(w, len(z) - h + 1)
    _, y = gather_windows(z, ends, w, h)
    last = v[ends + off - 1]
    rebuilt = to_levels(y, last, kind)
    expected = v[(ends + off)[:, None] + np.arange(h)[None, :]]
    assert rebuilt.shape == (len(ends), h)
    assert np.allclose(rebuilt, expected, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("bad", [0.0, -1.0])
def test_log_return_non_positive_raises(bad):
    v = _prices(20)
    v[5] = bad
    with pytest.raises(UserInputError, match="log_return"):
        to_model_series(v, "log_return")


def test_prepare_with_transform_scales_model_series():
    v = _prices(200)
    prep = prepare(v, np.full(200, np.nan), np.arange(200), window=10, horizon=2,
                   test_frac=0.2, val_frac=0.1, scaler="zscore", transform="log_return")
    assert prep.z.dtype == np.float32
    assert len(prep.z) == 199
    r = np.log(v[1:] / v[:-1])
    tr = r[:prep.split.train_end]
    assert np.allclose(prep.z, (r - tr.mean()) / tr.std(), atol=1e-5)
    # first target level of window e is level e + 1
    e = prep.split.ends("test")[:3]
    assert prep.first_target_level(e).tolist() == (e + 1).tolist()


def test_prepared_save_load_round_trip(tmp_path):
    v = _prices(80)
    prep = prepare(v, np.full(80, np.nan), np.arange(80), window=5, horizon=2,
                   test_frac=0.25, val_frac=0.0, scaler="minmax", transform="diff")
    save_prepared(tmp_path, prep)
    back = load_prepared(tmp_path)
    assert back.split == prep.split and back.scaler == prep.scaler
    assert back.transform == "diff"
    assert np.array_equal(back.z, prep.z) and np.array_equal(back.levels, prep.levels)
    meta = prep.meta()
    assert meta["n_windows"]["train"] == len(prep.split.ends("train"))
