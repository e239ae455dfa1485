"""Unit tests for attn_forecast.significance: the Diebold-Mariano test against the
`dieboldmariano` package (an independent implementation of the same test, HLN-corrected),
over windows of several steps, and pooled over series in units of each window's series."""
from __future__ import annotations

import numpy as np
import pytest
from dieboldmariano import dm_test

from attn_forecast.evaluation.significance import compare, diebold_mariano, sentence, window_losses


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
    assert ours["mean_loss_diff"] == pytest.approx(np.mean((a - actual) ** 2
                                                           - (b - actual) ** 2))


def test_window_losses_of_several_steps_match_the_reference_with_that_loss():
    rng = np.random.default_rng(7)
    actual = rng.normal(size=(50, 3))
    a, b = actual + rng.normal(0, 0.5, (50, 3)), actual + rng.normal(0, 0.8, (50, 3))
    la, lb = window_losses(actual, a), window_losses(actual, b)
    np.testing.assert_allclose(la, np.mean((a - actual) ** 2, axis=1), rtol=1e-12)
    ours = diebold_mariano(la, lb, h=3)
    # the reference charges loss(actual, prediction); feed it the per-window losses
    stat, p = dm_test([0.0] * 50, list(np.sqrt(la)), list(np.sqrt(lb)), h=3)
    assert ours["statistic"] == pytest.approx(stat, rel=1e-9)
    assert ours["p_value"] == pytest.approx(p, rel=1e-6)


def test_compare_tests_against_the_model_on_the_windows_both_forecast():
    rng = np.random.default_rng(9)
    actual = rng.normal(size=(60, 1))
    model = actual + rng.normal(0, 0.5, (60, 1))
    other = actual + rng.normal(0, 0.7, (60, 1))
    other[[3, 10, 11]] = np.nan                        # windows it has no forecast for
    res = compare(actual, {"model": model, "other": other}, h=1)["other"]
    keep = np.setdiff1d(np.arange(60), [3, 10, 11])
    stat, p = dm_test(list(actual[keep, 0]), list(model[keep, 0]), list(other[keep, 0]), h=1)
    assert res["n"] == 57
    assert res["statistic"] == pytest.approx(stat, rel=1e-9)
    assert res["p_value"] == pytest.approx(p, rel=1e-6)
    # another reference forecaster: the difference the other way round
    res = compare(actual, {"model": model, "other": other}, h=1, against="other")
    assert set(res) == {"model"}
    assert res["model"]["statistic"] == pytest.approx(-stat, rel=1e-9)


def test_pooled_over_series_each_window_counts_in_its_series_units():
    """Two series, the second 1000 times larger: in units of each, the test is the
    reference's on the errors divided by each window's unit; for one series a constant
    unit leaves it as it is."""
    rng = np.random.default_rng(4)
    n = 60
    actual = rng.normal(size=(2 * n, 1)) * np.r_[np.ones(n), np.full(n, 1000.0)][:, None]
    unit = np.r_[np.full(n, 0.002), np.full(n, 2.0)]
    noise = rng.normal(size=(2 * n, 1)) * unit[:, None]
    a = actual + 0.8 * noise
    b = actual + noise + 0.3 * unit[:, None] * rng.normal(size=(2 * n, 1))
    res = compare(actual, {"model": a, "b": b}, h=1, unit=unit)["b"]
    u = unit[:, None]
    stat, p = dm_test(list((actual / u)[:, 0]), list((a / u)[:, 0]), list((b / u)[:, 0]), h=1)
    assert res["statistic"] == pytest.approx(stat, rel=1e-9)
    assert res["p_value"] == pytest.approx(p, rel=1e-6)
    raw = compare(actual, {"model": a, "b": b}, h=1)["b"]
    assert raw["statistic"] != pytest.approx(stat, rel=1e-3)     # units change the test
    # one series: a constant unit changes nothing but the loss's scale
    one = compare(actual[:n], {"model": a[:n], "b": b[:n]}, h=1)["b"]
    scaled = compare(actual[:n], {"model": a[:n], "b": b[:n]}, h=1, unit=np.full(n, 7.3))["b"]
    assert scaled["statistic"] == pytest.approx(one["statistic"], rel=1e-9)
    assert scaled["p_value"] == pytest.approx(one["p_value"], rel=1e-9)


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
    few = diebold_mariano(np.array([1.0, 2.0]), np.array([0.0, 5.0]))
    assert few["statistic"] is None and few["p_value"] is None and few["n"] == 2
    rng = np.random.default_rng(11)
    actual = rng.normal(size=(300, 1))
    p_values = [compare(actual, {"model": actual + rng.normal(0, 1, (300, 1)),
                                 "other": actual + rng.normal(0, 1, (300, 1))}, 1)
                ["other"]["p_value"] for _ in range(40)]
    # equal accuracy: about 5 % of p-values below 0.05, never most of them
    assert sum(p < 0.05 for p in p_values) <= 8
    assert "no significant difference from other" in sentence(
        "other", {"statistic": 0.3, "p_value": 0.7, "n": 300})


def test_an_untestable_comparison_says_why():
    rs = np.random.default_rng(0)
    y = rs.normal(size=(300, 1))
    model = y + rs.normal(size=(300, 1))
    res = compare(y, {"model": model, "zeroshot": model.copy()}, 1)["zeroshot"]
    assert res["p_value"] is None
    assert sentence("zeroshot", res) == ("zeroshot: not testable: its errors equal the model's "
                                         "on all 300 windows (the same forecasts)")
    few = compare(y[:2], {"model": model[:2], "naive": y[:2] * 0}, 1)["naive"]
    assert sentence("naive", few) == "naive: not testable: 2 window(s), fewer than the test's 3"


def test_fewer_origins_than_the_horizon_are_untestable_not_an_error():
    """A backtest fold of a short series can hold 4 origins of 8-step forecasts: the test's
    autocovariances reach 7 lags, so it says it cannot test instead of failing."""
    rs = np.random.default_rng(3)
    got = diebold_mariano(rs.random(4), rs.random(4), h=8)
    assert got["statistic"] is None and got["p_value"] is None and got["n"] == 4
    assert got["untestable"] == "4 windows, no more than the horizon's 8 steps"
    assert diebold_mariano(rs.random(9), rs.random(9), h=8)["statistic"] is not None
