"""Unit tests for attn_forecast.evaluation.outlook: the blend's future (the forecast command's
and the service's)."""
from __future__ import annotations

import numpy as np

from attn_forecast.evaluation.outlook import blended_future

# ---------------------------------------------------------------- the blend's future
BLEND = {"members": ["model", "naive", "seasonal_naive"], "season": 4,
         "series": {"a": [0.25, 0.75, 0.0], "b": [0.5, 0.0, 0.5]},
         "mean": {"model": 0.375, "naive": 0.375, "seasonal_naive": 0.25}}


def test_the_blend_weights_each_member_refitted_on_the_whole_series():
    y = np.array([1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 10.0])
    model = np.array([20.0, 20.0, 20.0])
    values, _, line = blended_future(BLEND, "a", model, y, 3)
    np.testing.assert_allclose(values, 0.25 * 20 + 0.75 * 10)     # naive: the last value
    assert line == "model 0.25, naive 0.75"                         # a zero weight is not used
    values, _, _ = blended_future(BLEND, "b", model, y, 3)
    np.testing.assert_allclose(values, 0.5 * 20 + 0.5 * np.array([5.0, 6.0, 7.0]))


def test_an_unseen_series_takes_the_mean_weights_and_a_member_that_cannot_run_is_left_out():
    y = np.array([3.0, 4.0])          # too short for a season of 4: seasonal naive fails
    model = np.array([1.0, 1.0])
    values, _, line = blended_future(BLEND, "new", model, y, 2)
    np.testing.assert_allclose(values, 0.5 * 1 + 0.5 * 4)             # reweighted 0.375/0.375
    assert line == "model 0.50, naive 0.50"
    only = {**BLEND, "series": {"c": [0.0, 0.0, 1.0]}}
    values, _, line = blended_future(only, "c", model, y, 2)    # nothing else could run
    np.testing.assert_allclose(values, model)
    assert "no other member could run" in line
