"""Unit tests for attn_forecast.data.build: a store of 1..N series, covariates, calendar inputs."""
from __future__ import annotations

import re

import numpy as np
import pytest

from attn_forecast.data import splits
from attn_forecast.data import transforms
from attn_forecast.errors import UserInputError
from attn_forecast.setup.keys import PARAMS_KEYS
from attn_forecast.data.long_table import Raw
from attn_forecast.data.long_table import read_long, write_long
from attn_forecast.data.windows import gather_side
from unit.data.helpers import (H, KINDS, NAMES, OTHER_KEYS, TRANSFORMS, W, _brute_ends, _build,
                               _daily, _feature_raw, _feature_store, _floor, _hand_cuts,
                               _hand_feature, _hand_series, _model_values, _raw, _same,
                               _usable_by_hand)


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
        np.testing.assert_array_equal(s.train_y(i), v[:_floor(len(v), "0.2", "0.1")])
    ends = s.ends("test")
    sid = s.series_of(ends)
    assert (sid == np.searchsorted(np.cumsum(lengths), ends, side="right")).all()
    np.testing.assert_array_equal(s.targets(ends), s.y[ends[:, None] + np.arange(H)])
    np.testing.assert_array_equal(s.last(ends), s.y[ends - 1])


def test_short_series_are_left_out_and_named():
    rs = np.random.default_rng(5)
    series = [rs.uniform(1, 2, n) for n in (60, 5, 50, 12, 70, 3)]
    ids = ["long1", "tiny1", "long2", "tiny2", "long3", "tiny3"]
    s = _build(series, ids=ids, transform="diff")
    assert s.dropped == {"count": 3, "ids": ["tiny1", "tiny2", "tiny3"]}
    assert s.ids.tolist() == ["long1", "long2", "long3"]
    np.testing.assert_array_equal(s.offsets, [0, 60, 110, 180])
    np.testing.assert_array_equal(s.y, np.concatenate([series[0], series[2], series[4]]))
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


def _need(message: str) -> int:
    return int(re.search(r"need at least (\d+) values", message).group(1))


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
    q = _feature_store(Raw(raw.ids, raw.offsets, raw.t, raw.y, raw.signal, poisoned,
                           raw.feature_names), transform)
    assert _same(q.feature_center, s.feature_center) and _same(q.feature_scale, s.feature_scale)
    assert _same(q.side[60:], s.side[60:])


def test_a_constant_feature_is_scaled_by_one_around_its_value():
    raw = _feature_raw()[2]
    const = raw.features.copy()
    const[:, 1] = 5.0                                     # volume: one value throughout
    s = _build(Raw(raw.ids, raw.offsets, raw.t, raw.y, raw.signal, const,
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
        _feature_store(Raw(raw.ids, raw.offsets, raw.t, raw.y, raw.signal, bad,
                           raw.feature_names))


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
    y = 5 + np.sin(np.arange(n) / 3.0)
    fr = {"test": 0.25, "val": 0.0, "cal": 0.0}
    s = _build(_raw([y], t=t), window=8, horizon=2, fracs=fr, transform="diff",
               time_features=("hour",))
    hour = 2 * np.pi * (np.arange(n) % 24) / 24
    full = np.stack([np.sin(hour), np.cos(hour)], axis=1)
    ends = s.ends("test")
    assert ends.tolist() == list(range(36, 47))
    cin, cout = gather_side(s.side, ends, 8, 2)
    for k, e in enumerate(ends):   # row e is level e: the targets' time stamps, the inputs' own
        np.testing.assert_allclose(cout[k], full[e:e + 2], atol=1e-6)
        np.testing.assert_allclose(cin[k], full[e - 8:e], atol=1e-6)
    other = _build(_raw([y * 5 + 3], t=t), window=8, horizon=2, fracs=fr,
                   transform="diff", time_features=("hour",))
    assert _same(other.side, s.side)
