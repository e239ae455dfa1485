"""Unit tests for attn_forecast.forecasters.protocol: at_levels, level names, central pairs."""
from __future__ import annotations

import numpy as np
from scipy.stats import norm

from attn_forecast.forecasters.protocol import central_intervals

NINE = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)
ELEVEN = (0.025,) + NINE + (0.975,)


def test_at_levels_is_exact_at_known_levels_and_monotone_on_random_inputs():
    from attn_forecast.forecasters.protocol import at_levels
    rng = np.random.default_rng(7)
    q = np.sort(rng.normal(size=(50, 3, 9)) * rng.uniform(0.1, 10, size=(50, 3, 1)), axis=-1)
    want = (0.01, 0.025, 0.05, 0.1, 0.15, 0.5, 0.55, 0.9, 0.95, 0.975, 0.99)
    got = at_levels(q, NINE, want)
    assert got.shape == (50, 3, len(want))
    assert (np.diff(got, axis=-1) >= 0).all()
    # exact at the known levels
    np.testing.assert_allclose(got[..., 3], q[..., 0], rtol=0, atol=1e-12)
    np.testing.assert_allclose(got[..., 5], q[..., 4], rtol=0, atol=1e-12)
    np.testing.assert_allclose(got[..., 7], q[..., 8], rtol=0, atol=1e-12)
    np.testing.assert_allclose(at_levels(q, NINE, (0.1, 0.5, 0.9)), q[..., [0, 4, 8]],
                               rtol=0, atol=1e-12)
    # between two known levels, linear in the normal score: 0.55 between 0.5 and 0.6
    z = norm.ppf
    frac = (z(0.55) - z(0.5)) / (z(0.6) - z(0.5))
    np.testing.assert_allclose(got[..., 6], q[..., 4] + frac * (q[..., 5] - q[..., 4]),
                               rtol=1e-10, atol=1e-10)
    # past the outermost, along the line through the two nearest (0.1 and 0.2; 0.8 and 0.9)
    lo = (z(0.025) - z(0.1)) / (z(0.2) - z(0.1))
    np.testing.assert_allclose(got[..., 1], q[..., 0] + lo * (q[..., 1] - q[..., 0]),
                               rtol=1e-10, atol=1e-10)
    hi = (z(0.975) - z(0.8)) / (z(0.9) - z(0.8))
    np.testing.assert_allclose(got[..., 9], q[..., 7] + hi * (q[..., 8] - q[..., 7]),
                               rtol=1e-10, atol=1e-10)


def test_at_levels_recovers_a_normals_tails_from_its_nine_quantiles():
    """A normal's quantiles are mu + sigma z: exactly linear in the normal score, so the
    0.025 and 0.975 levels extrapolated from the nine are the normal's own."""
    from attn_forecast.forecasters.protocol import at_levels
    mu = np.array([[0.0], [10.0], [-3.0]])
    sd = np.array([[1.0], [2.5], [0.1]])
    q = mu[..., None] + sd[..., None] * norm.ppf(NINE)
    got = at_levels(q, NINE, ELEVEN)
    want = mu[..., None] + sd[..., None] * norm.ppf(ELEVEN)
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(got[..., 0], mu + sd * -1.959963984540054, rtol=1e-9)


def test_level_names_and_central_pairs_of_the_eleven_levels():
    from attn_forecast.forecasters.protocol import level_name
    assert [level_name(t) for t in (0.025, 0.1, 0.5, 0.9, 0.975)] == \
        ["q2.5", "q10", "q50", "q90", "q97.5"]
    assert [pct for _, _, pct in central_intervals(ELEVEN)] == [95, 80, 60, 40, 20]
    assert central_intervals(ELEVEN)[0] == (0, 10, 95) and central_intervals(ELEVEN)[1] == \
        (1, 9, 80)
