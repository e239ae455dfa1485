"""Unit tests for attn_forecast.data.seasons: the season and window that ``auto`` chooses."""
from __future__ import annotations

import numpy as np

from attn_forecast.data.seasons import choose, detect_season, window_for
from unit.data.helpers import _raw


# ---------------------------------------------------------------- seasons and windows
def test_one_series_season_and_window_come_from_its_training_part_only():
    rng = np.random.default_rng(0)
    t = np.arange(600)
    y = 10 + np.sin(2 * np.pi * t / 24) + 0.2 * rng.normal(size=600)
    n_train = np.array([420])
    got = choose(y, np.array([0, 600]), n_train, "auto")
    assert got["season"] == detect_season(y[:420])
    assert got["season"]["season"] == 24 and got["window"]["window"] == 48
    poisoned = y.copy()
    poisoned[420:] = rng.normal(size=180) * 1e3                    # val and test
    assert choose(poisoned, np.array([0, 600]), n_train, "auto") == got
    assert "window" not in choose(y, np.array([0, 600]), n_train, 60)


def test_the_season_of_many_series_is_the_most_common_among_their_training_parts():
    rs = np.random.default_rng(5)
    t = np.arange(200)
    weekly = [10 + np.sin(2 * np.pi * t / 7) + rs.normal(0, 0.1, 200) for _ in range(3)]
    flat = [np.cumsum(rs.normal(0, 1, 200))]
    raw = _raw(weekly + flat)
    n_train = np.full(4, 160)
    got = choose(raw.y, raw.offsets, n_train, "auto")
    assert got["season"]["season"] == 7 and "(3 series)" in got["season"]["reason"]
    assert "of 4 series' training parts" in got["season"]["reason"]
    assert got["window"]["window"] == 16
    # the test parts are never looked at: a season that appears only there is not found
    late = [np.r_[rs.normal(0, 1, 160), 5 * np.sin(2 * np.pi * np.arange(40) / 5)]
            for _ in range(3)]
    raw = _raw(late)
    got = choose(raw.y, raw.offsets, np.full(3, 160), 10)
    assert got["season"]["season"] == 0 and "window" not in got
    assert "none (3 series show no season)" in got["season"]["reason"]


def test_many_series_are_sampled_evenly_and_the_window_fits_the_median_training_part():
    rs = np.random.default_rng(8)
    t = np.arange(120)
    series = [10 + np.sin(2 * np.pi * t / 12) + rs.normal(0, 0.05, 120) for _ in range(7)]
    raw = _raw(series)
    n_train = np.array([30, 30, 30, 40, 96, 96, 96])
    got = choose(raw.y, raw.offsets, n_train, "auto", sample=3)
    assert "of 3 series' training parts" in got["season"]["reason"]
    assert got["window"]["window"] == 20                           # half of the median 40


def test_no_season_in_a_random_walk_and_the_window_rules():
    found = detect_season(np.cumsum(np.random.default_rng(5).normal(size=800)))
    assert found["season"] == 0 and "noise band" in found["reason"]
    assert detect_season(np.arange(6.0))["season"] == 0             # too few to see a season
    assert window_for(0, 800)["window"] == 24                        # no season: 24 steps
    assert window_for(24, 800)["window"] == 48                       # two seasons
    assert window_for(336, 10_000)["window"] == 512                  # capped
    assert window_for(4, 400)["window"] == 16                        # at least 16
    assert window_for(12, 40)["window"] == 20                        # at most half the train
    assert window_for(19, 30)["window"] == 19                        # but a whole season
    got = window_for(7, 700, patch_len=7)
    assert got["window"] == 21 and "patches tile it" in got["reason"]
    assert window_for(48, 3200, patch_len=24)["window"] == 96
    assert window_for(48, 3200, patch_len=16, patch_stride=8)["window"] == 96
    assert window_for(5, 700, patch_len=6, patch_stride=4)["window"] == 18   # 6 + 3 x 4
