"""Unit tests for the compact form of saved forecasts (forecasters.saved: save(compact=True),
pack and unpack): what load reads back is the float32-rounded point and median, each
quantile's distance from the median kept to 1 part in 2,048 (toward zero), the same again
after another save (a fixed point, byte for byte), and the file a fraction of the plain
one."""
from __future__ import annotations

import json
import lzma

import numpy as np
import pytest
from scipy.special import ndtri

from attn_forecast.config.schema import LEVELS
from attn_forecast.forecasters.protocol import Forecast
from attn_forecast.forecasters.saved import ForecastSet, load, pack, save, unpack

FIVE = (0.025, 0.1, 0.5, 0.9, 0.975)


def _quantiles(rng, point: np.ndarray, levels) -> np.ndarray:
    """Normal quantiles around ``point`` (N, H), wider at later steps, a little noise."""
    n, h = point.shape
    sd = np.sqrt(np.arange(1, h + 1))[None, :] * rng.uniform(0.5, 3.0, (n, 1))
    return point[..., None] + sd[..., None] * ndtri(np.asarray(levels)) \
        + rng.normal(0, 0.01, (n, h, len(levels)))


def _walks(rng, n: int, h: int) -> np.ndarray:
    """Random-walk-like forecasts (N, H) of series at levels of about 100."""
    return 100 * np.exp(rng.normal(0, 0.3, (n, 1))) + np.cumsum(rng.normal(0, 1, (n, h)),
                                                                 axis=1)


def _set(seed: int = 0) -> ForecastSet:
    """The model's point, quantiles and failed marks over two parts, a baseline's point."""
    rng = np.random.default_rng(seed)
    point, cal_point = _walks(rng, 6, 3), _walks(rng, 4, 3)
    failed = np.array([False, False, True, False, False, True])
    return ForecastSet(
        {"test": np.arange(20, 26, dtype=np.int64), "cal": np.arange(4, dtype=np.int64)},
        {"model": {"test": Forecast(point, _quantiles(rng, point, FIVE), failed=failed),
                   "cal": Forecast(cal_point, _quantiles(rng, cal_point, FIVE),
                                   failed=np.zeros(4, dtype=bool))},
         "naive": {"test": Forecast(point + 1.5), "cal": None}},
        FIVE, ["warning: one"], {"season": 12, "data": "abc"})


def _coarse(d: np.ndarray) -> np.ndarray:
    """A float32 distance with its last 12 mantissa bits cleared, by hand: the largest float32
    of 12 significant bits at most its size, with its sign."""
    d = np.asarray(d, dtype=np.float32).astype(np.float64)
    e = np.floor(np.log2(np.where(d == 0, 1.0, np.abs(d))))
    step = 2.0 ** (e - 11)
    return np.sign(d) * np.floor(np.abs(d) / step) * step


def _stored(q: np.ndarray, mid: int) -> np.ndarray:
    """What load gives back: the float32 median plus each coarse float32 distance, in
    float32."""
    m32, q32 = np.float32(q[..., mid:mid + 1]), np.float32(q)
    return (m32 + np.float32(_coarse(q32 - m32))).astype(np.float64)


def test_a_compact_round_trip_gives_the_float32_values_as_float64(tmp_path):
    fs = _set()
    save(tmp_path / "f.npz", fs, compact=True)
    back = load(tmp_path / "f.npz")
    assert back.names() == ["model", "naive"] and back.levels == FIVE
    assert back.warnings == fs.warnings and back.record == fs.record
    for part in ("test", "cal"):
        np.testing.assert_array_equal(back.ends[part], fs.ends[part])
        assert back.ends[part].dtype == np.int64
        want, got = fs.forecasts["model"][part], back.forecasts["model"][part]
        assert got.point.dtype == np.float64 and got.quantiles.dtype == np.float64
        np.testing.assert_array_equal(got.point, np.float32(want.point).astype(np.float64))
        # the median, then each distance to 12 significant bits (1 part in 2,048) toward zero
        np.testing.assert_array_equal(got.quantiles, _stored(want.quantiles, 2))
        spread = np.abs(np.float32(want.quantiles) - np.float32(want.quantiles[..., 2:3]))
        assert (np.abs(got.quantiles - np.float32(want.quantiles)) <= spread / 2048 +
                np.spacing(np.float32(want.quantiles))).all()
        assert (np.diff(got.quantiles, axis=-1) >= 0).all()        # still in order
        np.testing.assert_array_equal(got.quantiles[..., 2], np.float32(want.quantiles[..., 2]))
        np.testing.assert_array_equal(got.failed, want.failed)
        assert got.failed.dtype == bool and got.members is None
    naive = back.forecasts["naive"]
    np.testing.assert_array_equal(naive["test"].point, np.float32(fs.forecasts["naive"]["test"]
                                                                  .point))
    assert naive["test"].quantiles is None and naive["cal"] is None


def test_a_second_save_of_the_loaded_set_is_the_same_file(tmp_path):
    save(tmp_path / "a.npz", _set(1), compact=True)
    once = load(tmp_path / "a.npz")
    save(tmp_path / "b.npz", once, compact=True)
    assert (tmp_path / "a.npz").read_bytes() == (tmp_path / "b.npz").read_bytes()
    twice = load(tmp_path / "b.npz")
    for part in ("test", "cal"):
        for attr in ("point", "quantiles", "failed"):
            np.testing.assert_array_equal(getattr(twice.forecasts["model"][part], attr),
                                          getattr(once.forecasts["model"][part], attr))


def test_quantiles_far_from_a_median_near_zero_keep_their_order_and_size(tmp_path):
    """A median near 0 and bounds thousands of times larger: the bounds come back as the
    median plus each coarse distance in float32, in order; saved again, they move by no more
    than 1 part in 2,048 of their distance (the float32 sum rounds, so such a set is not a
    byte-for-byte fixed point, as a realistic one is: the test above)."""
    rng = np.random.default_rng(5)
    n, h = 50, 4
    median = rng.normal(0, 1e-3, (n, h))
    scale = np.abs(rng.normal(0, 1, (n, h, 1))) * 10.0 ** rng.integers(-3, 4, (n, h, 1))
    q = median[..., None] + scale * ndtri(np.asarray(FIVE))
    q[..., 2] = median
    fs = ForecastSet({"test": np.arange(n, dtype=np.int64)},
                     {"m": {"test": Forecast(median, q)}}, FIVE)
    save(tmp_path / "a.npz", fs, compact=True)
    once = load(tmp_path / "a.npz").forecasts["m"]["test"].quantiles
    np.testing.assert_array_equal(once, _stored(q, 2))
    assert (np.diff(once, axis=-1) >= 0).all()
    save(tmp_path / "b.npz", load(tmp_path / "a.npz"), compact=True)
    twice = load(tmp_path / "b.npz").forecasts["m"]["test"].quantiles
    spread = np.abs(once - once[..., 2:3])
    assert (np.abs(twice - once) <= spread / 1024 + 1e-9).all()


def test_pack_stores_the_median_and_each_levels_distance_and_leaves_the_rest():
    q = np.array([[[1.0, 2.0, 4.0, 7.0, 11.0]]])
    ends = np.arange(3, dtype=np.int64)
    failed = np.array([True])
    packed = pack({"ends:test": ends, "quantiles:m:test": q, "failed:m:test": failed}, FIVE)
    assert set(packed) == {"ends:test", "failed:m:test", "packed", "layout"}
    assert packed["ends:test"] is ends and packed["failed:m:test"] is failed
    assert packed["packed"].dtype == np.uint8
    out = unpack(packed, FIVE)
    np.testing.assert_array_equal(out["quantiles:m:test"], q)
    # what is stored: the median 4, then 1 - 4, 2 - 4, 7 - 4, 11 - 4 (pack's own layout)
    (key, shape, at, size), = json.loads(str(packed["layout"]))
    assert key == "quantiles:m:test" and shape == [1, 1, 5] and at == 0 and size == 20
    body = np.frombuffer(lzma.decompress(packed["packed"].tobytes()), dtype=np.uint8)
    stored = body.reshape(4, -1).T.copy().view(np.float32).reshape(-1)
    np.testing.assert_array_equal(stored, [4.0, -3.0, -2.0, 3.0, 7.0])


def test_a_compact_file_of_a_realistic_set_is_under_half_the_compressed_one(tmp_path):
    """500 windows, 18 steps, the eleven levels: random-walk forecasts with normal bounds."""
    rng = np.random.default_rng(3)
    point = _walks(rng, 500, 18)
    fs = ForecastSet({"test": np.arange(500, dtype=np.int64)},
                     {"model": {"test": Forecast(point, _quantiles(rng, point, LEVELS))}},
                     LEVELS)
    assert len(LEVELS) == 11
    save(tmp_path / "compact.npz", fs, compact=True)
    save(tmp_path / "deflated.npz", fs, compressed=True)
    compact = (tmp_path / "compact.npz").stat().st_size
    deflated = (tmp_path / "deflated.npz").stat().st_size
    assert compact < deflated / 2, (compact, deflated)
    back = load(tmp_path / "compact.npz").forecasts["model"]["test"]
    q = fs.forecasts["model"]["test"].quantiles
    np.testing.assert_array_equal(back.quantiles, _stored(q, 5))   # 0.5 is the sixth level


def test_a_truncated_or_foreign_forecast_file_is_one_line_naming_it(tmp_path):
    """A committed forecast cut short, or a file of another subset (other windows or another
    horizon), is refused naming the file, never a traceback."""
    from attn_forecast.errors import UserInputError
    from attn_forecast.forecasters.saved import check_against
    ends = np.arange(5, dtype=np.int64)
    fs = ForecastSet({"test": ends}, {"m": {"test": Forecast(np.zeros((5, 3)))}}, ())
    path = tmp_path / "model.npz"
    save(path, fs, compact=True)
    check_against(load(path), ends, 3, str(path))          # the subset's own: accepted
    with pytest.raises(UserInputError, match=r"model.npz: forecasts of 5 windows, not the 6"):
        check_against(load(path), np.arange(6), 3, str(path))
    with pytest.raises(UserInputError, match=r"m's forecasts have shape \(5, 3\), not \(5, 2\)"):
        check_against(load(path), ends, 2, str(path))
    path.write_bytes(path.read_bytes()[:200])
    with pytest.raises(UserInputError, match=r"model.npz is not a whole forecast file"):
        load(path)

