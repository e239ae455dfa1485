"""Unit tests for attn_forecast.data.transforms: the model series, features, back to levels."""
from __future__ import annotations

import math

import numpy as np
import pytest

from attn_forecast.data import transforms
from attn_forecast.errors import UserInputError
from attn_forecast.data.windows import gather
from unit.data.helpers import TRANSFORMS, _same


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
    rebuilt = transforms.to_y(y, v[ends - 1], kind)
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
