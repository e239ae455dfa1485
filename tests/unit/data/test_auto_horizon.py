"""Unit tests for the auto horizon of real data: the frequency's horizon (M4's and GIFT-Eval's,
data.frequency.horizon_for), the longest horizon every part still holds a window at
(data.splits.longest_horizon), and what prepare records and builds with them
(data/horizon.py's rule, as pipeline.prepare.auto_horizon_of words it, and prepare)."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from attn_forecast.config.load import parse_params, profile
from attn_forecast.data import splits
from attn_forecast.data.frequency import (DAY, DURATION_HORIZONS, MONTH_HORIZONS, NO_CALENDAR,
                                          Step, horizon_for, step_of)
from attn_forecast.data.long_table import Raw, raw_of
from attn_forecast.pipeline.generate import chunks
from attn_forecast.pipeline.prepare import auto_horizon_of, prepare

PARTS = ("test", "val", "cal")


def _times(start: str, periods: int, freq: str) -> np.ndarray:
    """Dates as read_long gives them: datetime64[s]."""
    return np.array(pd.date_range(start, periods=periods, freq=freq).values
                    .astype("datetime64[s]"))


def _months(start: str, periods: int) -> np.ndarray:
    """Month starts, one month apart, as datetime64[s]."""
    return (np.datetime64(start, "M") + np.arange(periods)).astype("datetime64[s]")


# ---------------------------------------------------------------- the frequency's horizon
@pytest.mark.parametrize("freq, start, want", [
    ("h", "2024-01-01", 48),        # hourly: M4's 48
    ("30min", "2024-01-01", 48),    # finer than hourly: hourly's 48
    ("D", "2024-01-01", 14),        # daily: 14
    ("B", "2024-01-01", 14),        # business days (2024-01-01 is a Monday): a day's 14
    ("W", "2024-01-07", 13),        # weekly (7 days): 13
    ("MS", "2010-01-01", 18),       # monthly: 18
    ("ME", "2010-01-31", 18),       # month ends (28 to 31 days apart): still monthly
    ("QS", "2010-01-01", 8),        # quarterly (3 months): 8
    ("YS", "2000-01-01", 6),        # yearly (12 months): 6
])
def test_each_m4_frequency_of_real_dates_gets_its_m4_horizon(freq, start, want):
    step = step_of(_times(start, 60, freq))
    h, why = horizon_for(step)
    assert h == want, (freq, step)
    assert isinstance(why, str) and str(want) in why


def test_the_step_of_each_frequency_is_read_as_the_kind_the_horizon_needs():
    assert step_of(_times("2024-01-01", 60, "B")).kind == "business days"
    assert step_of(_times("2024-01-01", 60, "30min")) == Step("duration", 1800, "30 minutes")
    assert step_of(_times("2010-01-01", 40, "QS")) == Step("months", 3, "one quarter")
    assert step_of(_times("2000-01-01", 30, "YS")) == Step("months", 12, "one year")


def test_steps_between_m4_frequencies_take_the_bands_the_table_names():
    """The table's own examples: 6 hours is hourly's 48, 2 days weekly's 13; one second less
    than a day is still hourly and finer, a day is daily, 27 days the last of weekly, and a
    step of 28 days or more that is not a month is read as monthly."""
    assert horizon_for(step_of(_times("2024-01-01", 40, "6h")))[0] == 48
    assert horizon_for(step_of(_times("2024-01-01", 40, "2D")))[0] == 13
    assert horizon_for(Step("duration", DAY - 1, "x"))[0] == 48
    assert horizon_for(Step("duration", DAY, "one day"))[0] == 14
    assert horizon_for(Step("duration", DAY + 1, "x"))[0] == 13
    assert horizon_for(Step("duration", 27 * DAY, "27 days"))[0] == 13
    assert horizon_for(Step("duration", 28 * DAY, "28 days"))[0] == 18


def test_the_tables_hold_m4s_horizons():
    assert [h for _, h, _ in DURATION_HORIZONS] == [48, 14, 13]
    assert [h for _, h, _ in MONTH_HORIZONS] == [18, 8, 6]
    assert NO_CALENDAR == (6, 48, 8)


@pytest.mark.parametrize("season, want", [
    (7, 14),      # two seasons of 7
    (12, 24),     # two seasons of 12
    (2, 6),       # two seasons are 4, below the floor of 6
    (3, 6),       # 6: exactly the floor
    (24, 48),     # 48: exactly the cap
    (40, 48),     # two seasons are 80, above the cap of 48
    (0, 8),       # no season: M3's other, 8
    (1, 8),       # a season of 1 is none
])
def test_step_numbers_take_two_seasons_within_6_and_48_or_8_without_one(season, want):
    step = step_of(np.arange(100, dtype=np.float64))
    assert step.kind == "numbers"
    h, why = horizon_for(step, season)
    assert h == want
    assert ("two seasons" in why) == (season > 1)


# ---------------------------------------------------------------- the longest horizon
def test_a_part_of_ten_values_holds_a_horizon_of_ten_and_no_more():
    """100 values, test 0.2, val 0.1, cal 0.1: train [0, 60), val [60, 70), cal [70, 80),
    test [80, 100). A window of 10 has its inputs inside the series from row 10 on, so each
    part's first end is its start; a 10-step window fits once in a part of 10 values, an
    11-step one does not: the longest horizon is 10, and 11 loses the validation part (the
    first of the parts asked for that it loses)."""
    c = splits.cut(np.array([100]), 0.2, 0.1, 0.1)
    assert [c.bounds(p) for p in ("train", "val", "cal", "test")] == \
        [(0, 60), (60, 70), (70, 80), (80, 100)]
    assert splits.longest_horizon(c, 10, 18, 0, PARTS) == (10, (0, "val"))
    # the counts agree: one window in val and cal at 10, none at 11; test holds 11 and 10
    at = {h: [int(splits.counts(c, p, 10, h, 0)[0]) for p in PARTS] for h in (10, 11)}
    assert at == {10: [11, 1, 1], 11: [10, 0, 0]}
    # asked in another order, the first part it loses is the calibration part
    assert splits.longest_horizon(c, 10, 18, 0, ("test", "cal", "val")) == (10, (0, "cal"))


def test_a_horizon_that_fits_every_part_comes_back_with_nothing_lost():
    c = splits.cut(np.array([100]), 0.2, 0.1, 0.1)
    assert splits.longest_horizon(c, 10, 10, 0, PARTS) == (10, None)   # exactly the limit
    assert splits.longest_horizon(c, 10, 6, 0, PARTS) == (6, None)
    # the test part alone (20 values) holds up to 20
    assert splits.longest_horizon(c, 10, 20, 0, ("test",)) == (20, None)
    assert splits.longest_horizon(c, 10, 30, 0, ("test",)) == (20, (0, "test"))


def test_the_short_series_limits_the_horizon_and_is_named_by_its_index():
    """Lengths 200 and 60 (test 0.2, val 0.1, cal 0.1): the long one's validation part is
    [120, 140), 20 values; the short one's [36, 42), 6 values. The short one limits the
    horizon to 6, and at 7 it, series 1, loses its validation part."""
    c = splits.cut(np.array([200, 60]), 0.2, 0.1, 0.1)
    np.testing.assert_array_equal(c.val_start, [120, 36])
    np.testing.assert_array_equal(c.cal_start, [140, 42])
    assert splits.longest_horizon(c, 10, 18, 0, PARTS) == (6, (1, "val"))
    np.testing.assert_array_equal(splits.counts(c, "val", 10, 6, 0), [15, 1])
    np.testing.assert_array_equal(splits.counts(c, "val", 10, 7, 0), [14, 0])
    # the order of the series does not matter: named by its own index
    c = splits.cut(np.array([60, 200]), 0.2, 0.1, 0.1)
    assert splits.longest_horizon(c, 10, 18, 0, PARTS) == (6, (0, "val"))


def test_a_series_without_a_window_at_horizon_1_does_not_limit_the_horizon():
    """A series of 15 values has val [9, 10), cal [10, 12): with a window of 10 its
    validation window would need inputs before its first value, so it holds no window even
    at horizon 1 (prepare leaves it out) and the others set the horizon."""
    c = splits.cut(np.array([200, 15]), 0.2, 0.1, 0.1)
    np.testing.assert_array_equal(splits.usable(c, 10, 1, 0, PARTS), [True, False])
    assert splits.longest_horizon(c, 10, 18, 0, PARTS) == (18, None)
    assert splits.longest_horizon(c, 10, 25, 0, PARTS) == (20, (0, "val"))


def test_no_series_with_a_window_at_horizon_1_leaves_the_frequencys_horizon():
    """11 values hold no window of 10 in any part: nothing to shorten for, so the horizon
    stays the asked one and prepare's own check says what it needs (the e2e case
    csv-too-few-rows: "horizon 8", not a horizon of 1 no series could hold either)."""
    c = splits.cut(np.array([11]), 0.2, 0.1, 0.1)
    assert not splits.usable(c, 10, 1, 0, PARTS).any()
    assert splits.longest_horizon(c, 10, 8, 0, PARTS) == (8, None)


def test_the_blend_part_shortens_the_horizon_to_half_the_validation_part():
    """With a blend, the validation part [60, 70) is cut in two: val [60, 65), blend
    [65, 70), 5 values each; a horizon of 6 loses the validation part first."""
    c = splits.cut(np.array([100]), 0.2, 0.1, 0.1, blend=True)
    assert c.bounds("val") == (60, 65) and c.bounds("blend") == (65, 70)
    assert splits.longest_horizon(c, 10, 18, 0, PARTS + ("blend",)) == (5, (0, "val"))
    assert splits.longest_horizon(c, 10, 18, 0, ("test", "blend")) == (5, (0, "blend"))


# ---------------------------------------------------------------- prepare's auto horizon
def _raw(times, values, ids=("s",)) -> Raw:
    """A Raw of series one after the other (``times``, ``values``: one array per series)."""
    offsets = np.r_[0, np.cumsum([len(v) for v in values])].astype(np.int64)
    y = np.concatenate(values).astype(np.float64)
    return Raw(np.array(ids, dtype=str), offsets, np.concatenate(times), y,
               np.full(len(y), np.nan))


def _params(**sections):
    """Params of a CSV (the real profile: horizon and window auto, val 0.1, cal 0.1, test 0.2,
    a blend) and the profile as the prepare stage passes it."""
    raw = {"data": {"kind": "csv", "csv_path": "x.csv"}, **sections}
    prof = profile(raw)
    return parse_params(raw), {"name": prof["profile"], "resolved": prof}


def _weekly_season(n: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return 100 + 10 * np.sin(2 * np.pi * np.arange(n) / 7) + rng.normal(0, 1, n)


def _airline_like(n: int = 144) -> np.ndarray:
    k = np.arange(n)
    return 112 * np.exp(0.01 * k + 0.1 * np.sin(2 * np.pi * k / 12))


def test_the_real_profile_asks_for_an_auto_horizon():
    p, _ = _params()
    assert p.prepare.horizon == "auto" and p.prepare.window == "auto"
    assert (p.prepare.test_frac, p.prepare.val_frac, p.prepare.cal_frac) == (0.2, 0.1, 0.1)
    assert p.evaluate.blend


def test_two_years_of_daily_values_get_the_daily_horizon_of_14():
    """731 values: val [438, 474), blend [474, 511), cal [511, 584), test [584, 731), the
    shortest 36 values: 14 fits in every part."""
    n = 731
    raw = _raw([_times("2020-01-01", n, "D")], [_weekly_season(n)])
    p, prof = _params()
    got = auto_horizon_of(p, raw, 7, 16)
    assert got == {"horizon": 14, "reason": "daily: M4's, 14"}
    store = prepare(p, raw, prof)
    assert store.horizon == 14
    assert store.auto["horizon"]["horizon"] == 14
    assert "daily" in store.auto["horizon"]["reason"]
    assert "shortened" not in store.auto["horizon"]


def test_a_monthly_series_of_144_values_gets_a_horizon_its_validation_part_holds():
    """144 months: test from floor(144 x 0.8) = 115, cal from floor(144 x 0.7) = 100, val
    from floor(144 x 0.6) = 86, the blend from 86 + (100 - 86) // 2 = 93: val [86, 93) holds
    7 values, so the horizon is 7, not monthly's 18; at 8 the validation part (the first
    part asked for, before the blend's, also 7) holds no window."""
    raw = _raw([_months("1949-01", 144)], [_airline_like()])
    p, prof = _params()
    got = auto_horizon_of(p, raw, 12, 24)
    assert got["horizon"] == 7
    why = got["reason"]
    assert why.startswith("monthly: M4's, 18") and "shortened" in why
    assert "at 8" in why and "the 144 values" in why
    assert "validation part" in why and "prepare.val_frac" in why and "<" not in why
    from attn_forecast.data.horizon import auto_horizon   # the rule names roles, not keys
    from attn_forecast.pipeline.prepare import cutting
    assert "<val_frac>" in auto_horizon(raw, 12, 24, *cutting(p))["reason"]
    store = prepare(p, raw, prof)
    assert store.horizon == 7
    assert store.auto["horizon"] == got
    assert store.auto["season"]["season"] == 12 and store.window == 24
    assert store.dropped["count"] == 0


def test_the_short_series_of_two_is_named_in_the_shortened_reason():
    """A daily series of 731 values and one of 120: the short one's val [72, 78) holds 6
    values (blend [78, 84)), so the horizon is 6, not 14, and the reason names it."""
    raw = _raw([_times("2020-01-01", 731, "D"), _times("2021-09-01", 120, "D")],
               [_weekly_season(731), _weekly_season(120, seed=1)], ids=("long", "short"))
    p, _ = _params()
    got = auto_horizon_of(p, raw, 7, 14)
    assert got["horizon"] == 6
    why = got["reason"]
    assert why.startswith("daily: M4's, 14") and "shortened" in why and "at 7" in why
    assert "series 'short' (120 values)" in why and "validation part" in why
    assert "'long'" not in why


def test_backtest_folds_shorten_the_horizon_to_the_targets_of_one_fold():
    """144 months, test [115, 144): 29 test targets, 5 folds of 29 // 5 = 5 each; every part
    holds 5 (the validation part 7), so the folds set the horizon."""
    raw = _raw([_months("1949-01", 144)], [_airline_like()])
    p, prof = _params(backtest={"folds": 5})
    got = auto_horizon_of(p, raw, 12, 24)
    assert got["horizon"] == 5
    assert "shortened" in got["reason"] and "5 backtest folds" in got["reason"]
    assert "validation part" not in got["reason"]
    assert prepare(p, raw, prof).horizon == 5


def test_a_horizon_the_user_set_is_kept_as_it_is():
    n = 731
    raw = _raw([_times("2020-01-01", n, "D")], [_weekly_season(n)])
    p, prof = _params(prepare={"horizon": 3})
    store = prepare(p, raw, prof)
    assert store.horizon == 3
    assert "horizon" not in store.auto
    # also where the frequency's would be shortened: the user's 3 fits the 144 months
    raw = _raw([_months("1949-01", 144)], [_airline_like()])
    store = prepare(p, raw, prof)
    assert store.horizon == 3 and "horizon" not in store.auto


def test_the_built_in_sine_keeps_its_horizon_of_1():
    raw_params = {"data": {"kind": "sine"}}
    p = parse_params(raw_params)
    prof = profile(raw_params)
    raw = raw_of(pd.concat(chunks(p.data, "data/external"), ignore_index=True))
    store = prepare(p, raw, {"name": prof["profile"], "resolved": prof})
    assert p.prepare.horizon == 1 and store.horizon == 1
    assert "horizon" not in store.auto
    np.testing.assert_array_equal(store.lags(), [1])      # no season: the naive error's lag


def test_a_csv_series_scale_lag_is_the_season_prepare_chose():
    """MASE's and MSIS's scale is the in-sample seasonal naive error: its lag is the season
    prepare found (7 for a weekly pattern in daily values, 12 for a yearly one in months) or
    the one the user set."""
    n = 731
    daily = _raw([_times("2020-01-01", n, "D")], [_weekly_season(n)])
    p, prof = _params()
    store = prepare(p, daily, prof)
    assert store.auto["season"]["season"] == 7
    np.testing.assert_array_equal(store.lags(), [7])
    monthly = _raw([_months("1949-01", 144)], [_airline_like()])
    np.testing.assert_array_equal(prepare(p, monthly, prof).lags(), [12])
    p5, prof5 = _params(evaluate={"season": 5})
    np.testing.assert_array_equal(prepare(p5, daily, prof5).lags(), [5])


def test_a_horizon_no_training_part_holds_is_shortened_to_the_one_it_holds():
    """100 values, test 0.4, val 0.2, cal 0.2: train [0, 20), val [20, 40), cal [40, 60),
    test [60, 100). Each scored part holds a window of 20 steps, but with a window of 10 the
    training part holds one of 10 at most (inputs [0, 10), targets [10, 20)); prepare needs
    a series with a training window, so 11 steps lose the training part."""
    c = splits.cut(np.array([100]), 0.4, 0.2, 0.2)
    assert [c.bounds(p) for p in ("train", "val", "cal", "test")] == \
        [(0, 20), (20, 40), (40, 60), (60, 100)]
    assert splits.usable(c, 10, 18, 0, PARTS).all()
    assert splits.longest_horizon(c, 10, 18, 0, PARTS) == (10, (None, "train"))
    np.testing.assert_array_equal(splits.counts(c, "train", 10, 10, 0), [1])
    np.testing.assert_array_equal(splits.counts(c, "train", 10, 11, 0), [0])


def test_the_backtest_folds_count_only_the_series_prepare_keeps():
    """144 months and 20: with a window of 24 the short series holds no window at all
    (prepare leaves it out), so its 4 test targets do not cut the 5 folds down to one
    step; the long one's 29 // 5 = 5 set the horizon."""
    raw = _raw([_months("1949-01", 144), _months("1949-01", 20)],
               [_airline_like(), _airline_like(20)], ids=("long", "short"))
    p, prof = _params(backtest={"folds": 5})
    got = auto_horizon_of(p, raw, 12, 24)
    assert got["horizon"] == 5, got
    assert "5 backtest folds holds 5" in got["reason"]


def test_a_backtest_fold_whose_validation_part_is_a_step_short_shortens_the_horizon():
    """176 months: the series' validation part [105, 114) holds 9 values in its first half,
    but a backtest fold's is as long as 10 % of the whole series, rounded down on its own
    (17, its first half 8), so at 9 steps fold 1 of 3 holds no validation window: the
    horizon is 8, and the backtest that prepare's store then cuts holds every part."""
    from attn_forecast.data.splits import checked_folds
    from attn_forecast.data.horizon import part_horizon
    from attn_forecast.pipeline.prepare import cutting
    raw = _raw([_months("1949-01", 176)], [_airline_like(176)])
    p, prof = _params(backtest={"folds": 3})
    assert part_horizon(raw, 12, 24, *cutting(p))["horizon"] == 9
    got = auto_horizon_of(p, raw, 12, 24)
    assert got["horizon"] == 8 and got["frequency"] == 18
    assert "at 9 steps backtest fold 1 of 3 holds no window of its validation part" \
        in got["reason"]
    store = prepare(p, raw, prof)
    assert store.horizon == 8
    cuts = checked_folds(store, 3, fold_size=0, train_size=0, gap=0, val_frac=0.1,
                         cal_frac=0.1, wanted=("train", "test", "val", "blend", "cal"))
    assert len(cuts) == 3
    # without a backtest the series' own parts set it
    p, _ = _params()
    assert auto_horizon_of(p, raw, 12, 24)["horizon"] == 9


def test_a_set_horizon_whose_backtest_folds_hold_no_window_is_refused_at_prepare():
    """A set horizon is not shortened: when a backtest fold cannot hold a window of a part it
    needs, prepare refuses it naming the keys, before any stage trains (it used to pass and
    fail at backtest_train)."""
    from attn_forecast.errors import UserInputError, naming
    from attn_forecast.setup.keys import PARAMS_KEYS
    raw = _raw([_months("1949-01", 176)], [_airline_like(176)])
    p, prof = _params(prepare={"horizon": 9}, backtest={"folds": 3})
    with pytest.raises(UserInputError, match=r"backtest fold 1 of 3 has .* windows; use fewer "
                                             r"backtest.folds"), naming(PARAMS_KEYS):
        prepare(p, raw, prof)
