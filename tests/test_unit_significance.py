"""Unit tests for attn_forecast.significance: the Diebold-Mariano test against the
`dieboldmariano` package (an independent implementation of the same test, HLN-corrected)."""
from __future__ import annotations

import numpy as np
import pytest
from dieboldmariano import dm_test

from attn_forecast.significance import compare, diebold_mariano, sentence, window_losses


@pytest.mark.parametrize("h", [1, 2, 5])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_matches_the_reference_implementation(h, seed):
    rng = np.random.default_rng(seed)
    n = 80
    actual = np.cumsum(rng.normal(size=n))
    a = actual + rng.normal(0, 1.0, n)
    b = actual + rng.normal(0.2, 1.3, n)
    ours = diebold_mariano((a - actual) ** 2, (b - actual) ** 2, h)
    stat, p = dm_test(list(actual), list(a), list(b), h=h, harvey_correction=True)
    assert ours["statistic"] == pytest.approx(stat, rel=1e-9)
    assert ours["p_value"] == pytest.approx(p, rel=1e-6)
    assert ours["n"] == n


def test_window_losses_of_several_steps_match_the_reference_with_that_loss():
    rng = np.random.default_rng(7)
    actual = rng.normal(size=(50, 3))
    a, b = actual + rng.normal(0, 0.5, (50, 3)), actual + rng.normal(0, 0.8, (50, 3))
    la, lb = window_losses(actual, a), window_losses(actual, b)
    ours = diebold_mariano(la, lb, h=3)
    # the reference charges loss(actual, prediction); feed it the per-window losses
    stat, p = dm_test([0.0] * 50, list(np.sqrt(la)), list(np.sqrt(lb)), h=3)
    assert ours["statistic"] == pytest.approx(stat, rel=1e-9)
    assert ours["p_value"] == pytest.approx(p, rel=1e-6)


def test_a_clearly_better_forecast_is_significant_and_the_sentence_says_so():
    rng = np.random.default_rng(3)
    actual = rng.normal(size=(200, 1))
    good = actual + rng.normal(0, 0.1, (200, 1))
    bad = actual + rng.normal(0, 1.0, (200, 1))
    res = compare(actual, {"model": good, "naive": bad, "none": None}, h=1)
    assert set(res) == {"naive"}
    assert res["naive"]["statistic"] < 0 and res["naive"]["p_value"] < 1e-6
    assert sentence("naive", res["naive"]).startswith("better than naive, p = ")
    worse = compare(actual, {"model": bad, "naive": good}, h=1)["naive"]
    assert sentence("naive", worse).startswith("worse than naive")


def test_equal_forecasts_are_not_testable_and_noise_is_not_significant():
    y = np.arange(10.0)[:, None]
    same = diebold_mariano(window_losses(y, y + 1), window_losses(y, y + 1))
    assert same["statistic"] is None and "not testable" in sentence("x", same)
    rng = np.random.default_rng(11)
    actual = rng.normal(size=(300, 1))
    p_values = [compare(actual, {"model": actual + rng.normal(0, 1, (300, 1)),
                                 "other": actual + rng.normal(0, 1, (300, 1))}, 1)
                ["other"]["p_value"] for _ in range(40)]
    # equal accuracy: about 5 % of p-values below 0.05, never most of them
    assert sum(p < 0.05 for p in p_values) <= 8
    assert "no significant difference from other" in sentence(
        "other", {"statistic": 0.3, "p_value": 0.7, "n": 300})
