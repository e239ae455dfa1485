"""Unit tests for attn_forecast.forecasters.ridge: the global ridge and its intervals."""
from __future__ import annotations

import numpy as np
import pytest

from attn_forecast.forecasters.ridge import Ridge as RidgeForecaster
from unit.forecasters.helpers import LEVELS, _series, _store


def _local_ends(n, lo, hi, window, horizon, off=0):
    """Window ends (first target rows) whose targets all lie in [lo, hi), by hand."""
    return np.array([e for e in range(n) if e - window >= off and lo <= e and e + horizon <= hi])


def _scaled(v, val_start, off=0):
    """The z-scored model series by hand: each row of v minus the training rows' mean, over
    their standard deviation."""
    train = v[off:val_start]
    return ((v - train.mean()) / train.std()).astype(np.float32), train.mean(), train.std()


def _xy(z, ends, window, horizon):
    x = np.stack([z[e - window:e] for e in ends]).astype(np.float64)
    y = np.stack([z[e:e + horizon] for e in ends]).astype(np.float64)
    return x, y


# ---------------------------------------------------------------- the global ridge
@pytest.mark.parametrize("transform", ["none", "diff"])
def test_ridge_on_one_series_is_sklearns_ridge_on_its_windows(transform):
    from sklearn.linear_model import Ridge
    v = _series(120, seed=4)
    W, H = 8, 3
    s = _store([v], window=W, horizon=H, test=0.25, transform=transform)
    off = 0 if transform == "none" else 1
    model = v if off == 0 else np.r_[0.0, np.diff(v)]
    z, c, sd = _scaled(model, 90, off)
    z[:off] = 0
    train = _local_ends(120, 0, 90, W, H, off)
    test = _local_ends(120, 90, 120, W, H, off)
    np.testing.assert_array_equal(s.ends("test"), test)
    fit = Ridge(alpha=0.7).fit(*_xy(z, train, W, H))
    zp = fit.predict(_xy(z, test, W, H)[0]) * sd + c
    want = zp if off == 0 else v[test - 1][:, None] + np.cumsum(zp, axis=1)
    f = RidgeForecaster(0.7)
    f.fit(s)
    np.testing.assert_allclose(f.forecast(s, test).point, want, rtol=1e-5)


def test_the_global_ridge_reads_each_series_own_scaled_windows():
    from sklearn.linear_model import Ridge
    series = [_series(70, seed=5), _series(100, seed=6, level=1000, scale=50),
              _series(85, seed=7, level=-20, scale=0.1)]
    W, H = 5, 2
    s = _store(series, window=W, horizon=H, test=0.2)
    xs, ys, xt, scale, center = [], [], [], [], []
    for v in series:
        n = len(v)
        vs = int(np.floor(n * 0.8 + 1e-9))
        z, c, sd = _scaled(v, vs)
        x, y = _xy(z, _local_ends(n, 0, vs, W, H), W, H)
        te = _local_ends(n, vs, n, W, H)
        xs.append(x)
        ys.append(y)
        xt.append(_xy(z, te, W, H)[0])
        scale += [sd] * len(te)
        center += [c] * len(te)
    fit = Ridge(alpha=0.5).fit(np.concatenate(xs), np.concatenate(ys))
    want = fit.predict(np.concatenate(xt)) * np.array(scale)[:, None] + np.array(center)[:, None]
    f = RidgeForecaster(0.5)
    f.fit(s)
    np.testing.assert_allclose(f.forecast(s, s.ends("test")).point, want, rtol=1e-5)


def test_ridge_with_features_is_sklearns_ridge_on_both_windows():
    from sklearn.linear_model import Ridge
    rng = np.random.default_rng(8)
    n, W, H = 150, 6, 2
    volume = np.exp(5 + rng.normal(0, 0.5, n))
    # the level moves with the previous step's volume: the covariate carries information
    v = 50 + np.cumsum(0.5 * (np.log(volume) - 5) + rng.normal(0, 0.1, n))
    v = np.r_[v[0], v[:-1]]
    s = _store([v], window=W, horizon=H, test=0.2, features=volume[:, None],
               names=("volume",), feature_transforms=("log1p",))
    z, c, sd = _scaled(v, 120)
    fz, _, _ = _scaled(np.log1p(volume), 120)
    tr, te = _local_ends(n, 0, 120, W, H), _local_ends(n, 120, n, W, H)

    def inputs(ends):
        return np.concatenate([_xy(z, ends, W, H)[0], _xy(fz, ends, W, H)[0]], axis=1)
    fit = Ridge(alpha=0.5).fit(inputs(tr), _xy(z, tr, W, H)[1])
    want = fit.predict(inputs(te)) * sd + c
    with_f, plain = RidgeForecaster(0.5, features=True), RidgeForecaster(0.5)
    assert (with_f.name, plain.name) == ("ridge_features", "ridge")
    with_f.fit(s)
    plain.fit(s)
    np.testing.assert_allclose(with_f.forecast(s, te).point, want, rtol=1e-5)
    assert not np.allclose(plain.forecast(s, te).point, want, rtol=1e-3)


def _ridge_shift(z, fit_ends, resid_ends, W, H, alpha=1.0):
    """(H, Q) by hand: the per-step quantiles of the residuals on ``resid_ends`` of a ridge
    fitted on ``fit_ends``."""
    from sklearn.linear_model import Ridge
    fit = Ridge(alpha=alpha).fit(*_xy(z, fit_ends, W, H))
    x, y = _xy(z, resid_ends, W, H)
    shift = np.quantile(y - fit.predict(x), LEVELS, axis=0).T            # (H, Q)
    return shift


def test_ridge_intervals_come_from_the_training_parts_last_fifth_never_the_calibration_part():
    """Its own quantiles come from a fit on the first four fifths of the training windows,
    on the last fifth, with a calibration part or without: the calibration part is
    calibration's alone (never used twice)."""
    from sklearn.linear_model import Ridge
    v = _series(160, seed=9)
    W, H = 6, 2
    s = _store([v], window=W, horizon=H, test=0.2, cal=0.25)   # cal 88..127, test 128..
    z, c, sd = _scaled(v, 88)
    train, cal = _local_ends(160, 0, 88, W, H), _local_ends(160, 88, 128, W, H)
    test = _local_ends(160, 128, 160, W, H)
    np.testing.assert_array_equal(s.ends("cal"), cal)
    full = Ridge(alpha=1.0).fit(*_xy(z, train, W, H))
    zp = full.predict(_xy(z, test, W, H)[0])
    head = len(train) * 4 // 5
    shift = _ridge_shift(z, train[:head], train[head:], W, H)
    want = (zp[..., None] + shift[None]) * sd + c
    f = RidgeForecaster(1.0)
    f.fit(s)
    got = f.forecast(s, test, LEVELS)
    np.testing.assert_allclose(got.quantiles, want, rtol=1e-5)
    np.testing.assert_allclose(got.point, zp * sd + c, rtol=1e-5)
    # not the quantiles of the calibration part's residuals
    assert not np.allclose(shift, _ridge_shift(z, train, cal, W, H), rtol=1e-2)


def test_ridge_intervals_without_a_calibration_part_come_from_the_last_fifth_of_training():
    from sklearn.linear_model import Ridge
    v = _series(130, seed=10)
    W, H = 6, 2
    s = _store([v], window=W, horizon=H, test=0.2)              # train targets 0..103
    z, c, sd = _scaled(v, 104)
    train, test = _local_ends(130, 0, 104, W, H), _local_ends(130, 104, 130, W, H)
    head = len(train) * 4 // 5
    shift = _ridge_shift(z, train[:head], train[head:], W, H)
    zp = Ridge(alpha=1.0).fit(*_xy(z, train, W, H)).predict(_xy(z, test, W, H)[0])
    f = RidgeForecaster(1.0)
    f.fit(s)
    got = f.forecast(s, test, LEVELS)
    np.testing.assert_allclose(got.quantiles, (zp[..., None] + shift[None]) * sd + c,
                               rtol=1e-5)
    inside = _ridge_shift(z, train, train, W, H)
    assert not np.allclose(shift, inside, rtol=1e-2)
