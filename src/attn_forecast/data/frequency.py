"""A series' time step, inferred once for every use: the check that each series advances one
step at a time (generate, the forecast command) and the times after its last one (the
forecast command's output).

The step is the most common difference of the time column: a number, a duration (a day, an
hour...), a business day (weekdays only, some Friday-to-Monday gaps) or a calendar step of one
or several months (a quarter, a year).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..errors import DataError

DAY = 86400


@dataclass(frozen=True)
class Step:
    kind: str        # "numbers" | "duration" | "business days" | "months"
    size: float      # the number, the seconds, 1 business day, or the months of one step
    name: str        # "one month", "one business day", "7 days", "0.5"

    def count(self, t: np.ndarray) -> np.ndarray:
        """Steps of this size between consecutive times ``t[:-1] -> t[1:]``."""
        if self.kind == "numbers":
            return np.diff(t) / self.size
        if self.kind == "months":
            return np.diff(t.astype("datetime64[M]").astype(np.int64)) / self.size
        if self.kind == "business days":
            days = t.astype("datetime64[D]")
            return np.busday_count(days[:-1], days[1:]).astype(np.float64)
        return np.diff(t).astype("timedelta64[s]").astype(np.int64) / self.size


def _mode(values: np.ndarray):
    vals, n = np.unique(values, return_counts=True)
    return vals[np.argmax(n)]


def step_of(t: np.ndarray) -> Step:
    """The step of times ``t`` (numbers or datetime64), from their most common difference."""
    d = np.diff(t)
    if t.dtype.kind != "M":
        step = float(_mode(d)) if len(d) else 1.0
        return Step("numbers", step, f"{step:g}")
    sec = d.astype("timedelta64[s]").astype(np.int64)
    mode = int(_mode(sec)) if len(sec) else DAY
    if mode >= 28 * DAY:  # a calendar step: one or several months (a quarter, a year...)
        months = int(_mode(np.diff(t.astype("datetime64[M]").astype(np.int64))))
        if months >= 1:
            name = {1: "one month", 3: "one quarter", 12: "one year"}.get(months,
                                                                        f"{months} months")
            return Step("months", months, name)
    days = t.astype("datetime64[D]")
    if mode == DAY and np.is_busday(days).all() and \
            (np.busday_count(days[:-1], days[1:]) < np.diff(days).astype(np.int64)).any():
        return Step("business days", 1, "one business day")   # weekdays, weekends skipped
    return Step("duration", mode, _duration(mode))


# The horizon a user of a frequency forecasts, as the M4 competition and GIFT-Eval's short
# term set it: (the longest step of the band, steps ahead, the band's name); a step of months
# reads its months, any other its seconds. A step between two of M4's frequencies takes the
# band it falls in (6 hours: hourly's 48; 2 days: weekly's 13; 2 months: monthly's 18;
# 6 months: quarterly's 8).
DURATION_HORIZONS = ((DAY - 1, 48, "hourly and finer: M4's hourly, 48"),
                     (DAY, 14, "daily: M4's, 14"),
                     (27 * DAY, 13, "weekly: M4's, 13"))
MONTH_HORIZONS = ((2, 18, "monthly: M4's, 18"), (11, 8, "quarterly: M4's, 8"),
                  (10 ** 6, 6, "yearly: M4's, 6"))
NO_CALENDAR = (6, 48, 8)   # step numbers: two seasons, within [6, 48]; without a season, 8


def horizon_for(step: Step, season: int = 0) -> tuple[int, str]:
    """The horizon (steps) a series of this step is forecast at by default, and why: M4's
    and GIFT-Eval's horizon of its frequency (:data:`DURATION_HORIZONS`,
    :data:`MONTH_HORIZONS`); a business day is a day; step numbers (no calendar) take two
    seasons of ``season`` within [6, 48], or 8 without one (M3's "other")."""
    if step.kind == "months":
        return next((h, why) for most, h, why in MONTH_HORIZONS if step.size <= most)
    if step.kind == "business days":
        return 14, "business days: M4's daily, 14"
    if step.kind == "duration":
        return next(((h, why) for most, h, why in DURATION_HORIZONS if step.size <= most),
                    (18, "a step of 28 days or more: M4's monthly, 18"))
    low, high, none = NO_CALENDAR
    if season > 1:
        h = min(max(2 * season, low), high)
        return h, f"no calendar: two seasons of {season} steps, within [{low}, {high}]"
    return none, f"no calendar and no season: {none}, M3's other"


def _duration(seconds: int) -> str:
    """A step's length in words: one day, 7 days, one hour, 30 minutes, 15 s."""
    for size, unit in ((DAY, "day"), (3600, "hour"), (60, "minute")):
        if seconds % size == 0:
            k = seconds // size
            return f"one {unit}" if k == 1 else f"{k} {unit}s"
    return f"{seconds} s"


def _first(mask) -> int:
    return int(np.flatnonzero(np.asarray(mask))[0])


def check_frame_regular(frame: pd.DataFrame, where: str) -> str | None:
    """:func:`check_regular` on a table of csv.read_table (each id's rows together)."""
    ids = frame["id"].to_numpy()
    starts = np.flatnonzero(np.r_[True, ids[1:] != ids[:-1]])
    return check_regular(ids[starts], np.r_[starts, len(ids)], frame["t"].to_numpy(), where)


HOLIDAY_RUN, HOLIDAY_SHARE = 5, 0.06   # business days a holiday gap skips, share of the steps
DST_PER_STEPS = 2 / (365 * 24)         # an hourly series skips an hour at most twice a year


def _calendar(step: Step, steps: np.ndarray, gaps: np.ndarray, before: np.ndarray
              ) -> str | None:
    """What a calendar explains of the gaps ``gaps`` (a mask of the steps that are not one
    step; ``before``, the time each gap follows): market holidays in business days (each at
    most :data:`HOLIDAY_RUN` days, at most :data:`HOLIDAY_SHARE` of the steps) or an hour a
    daylight-saving change leaves out of an hourly series (on a Sunday, the day the changes
    fall on, at most twice a year); None when it does not explain them all (a month missing
    from a monthly series breaks its rhythm)."""
    missing = steps[gaps] - 1
    if not len(missing) or np.any(steps[gaps] < 1) or not np.allclose(missing,
                                                                        np.round(missing)):
        return None
    if step.kind == "business days" and missing.max() <= HOLIDAY_RUN and \
            missing.sum() <= HOLIDAY_SHARE * len(steps):
        return f"{int(missing.sum())} business day(s) in {len(missing)} gap(s) (holidays)"
    if step.kind == "duration" and step.size == 3600 and missing.max() == 1 and \
            before.dtype.kind == "M" and len(missing) <= max(1, DST_PER_STEPS * len(steps)):
        skipped = before + np.timedelta64(1, "h")
        sundays = (skipped.astype("datetime64[D]").view("int64") - 3) % 7 == 0
        if sundays.all():
            return f"{len(missing)} hour(s) (a daylight-saving change)"
    return None


def check_regular(ids: np.ndarray, offsets: np.ndarray, t: np.ndarray, where: str
                  ) -> str | None:
    """Every series' times must advance by one step of the file's frequency: gaps a calendar
    explains (holidays of a business-day series, a daylight-saving hour) are accepted, with a
    one-line note returned; any other gap or irregular step is an error naming the first."""
    if len(t) < 3:
        return None
    inside = np.ones(len(t) - 1, dtype=bool)
    inside[np.asarray(offsets[1:-1]) - 1] = False           # no step across two series
    step = step_of(t)
    steps = step.count(t)
    bad = inside & ~np.isclose(steps, 1.0)
    if not bad.any():
        return None
    explained = _calendar(step, steps[inside], bad[inside], t[:-1][inside & bad])
    if explained:
        first = _first(bad)
        return (f"{where}: the time column skips {explained}, the first after "
                f"{_show(t)(t[first])}; each row is read as the next step")
    r = _first(bad)
    show = _show(t)
    i = int(np.searchsorted(offsets, r, side="right") - 1)
    of = f" of id '{ids[i]}'" if len(ids) > 1 else ""
    what = (f"{steps[r] - 1:g} step(s) of {step.name} missing" if steps[r] > 1 else
            f"a step of {steps[r]:g} x {step.name}")
    raise DataError(f"{where}: the time column{of} is not regular: after {show(t[r])} comes "
                    f"{show(t[r + 1])} ({what}); fill the rows, or set <time_gaps> to "
                    "allow (for data that skips steps by design)")


def _show(t: np.ndarray):
    """How a time of ``t`` reads in a message: dates alone when every time is midnight."""
    if t.dtype.kind == "M":
        width = 10 if (t == t.astype("datetime64[D]")).all() else 19
        return lambda x: str(x)[:width].replace("T", " ")
    return lambda x: f"{x:g}"


def next_times(t: np.ndarray, steps: int) -> np.ndarray:
    """The ``steps`` time stamps after the series' last one: numbers by their step; dates by
    pandas' inferred frequency over the last 100 (which keeps month ends at month ends), else
    by :func:`step_of` (business days skip weekends)."""
    if t.dtype.kind in "iuf":
        step = step_of(t[-100:]) if len(t) > 1 else Step("numbers", 1.0, "1")
        return t[-1] + step.size * np.arange(1, steps + 1)
    times = pd.DatetimeIndex(t[-100:])
    freq = None
    if len(times) >= 3:
        with pd.option_context("future.infer_freq_returns_offset", True):
            freq = pd.infer_freq(times)
    if freq is None and len(times) > 1:
        step = step_of(times.to_numpy())
        freq = {"business days": "B"}.get(step.kind) or (
            pd.DateOffset(months=int(step.size)) if step.kind == "months" else
            pd.Timedelta(seconds=int(step.size)))
    future = pd.date_range(times[-1], periods=steps + 1, freq=freq or "D")[1:]
    fmt = "%Y-%m-%d" if (times == times.normalize()).all() else "%Y-%m-%dT%H:%M:%S"
    return np.asarray(future.strftime(fmt))
