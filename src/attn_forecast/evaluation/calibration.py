"""Every forecaster's intervals on the scored windows, and where they came from.

With a calibration set (windows no forecaster trained on and none was selected on: the
calibration part of the store, or a competition's calibration cut, the horizon before its
validation cut, forecast by a run that ends there), every forecaster's quantiles are
calibrated on it by split conformal (intervals.py): its own quantiles widened or narrowed, a
point forecast's widened from its absolute residuals (its quantiles before calibration are
its point at every level), each central pair by its own margin per step, in units of each
window's series (:data:`UNIT`: its training part's in-sample seasonal naive error, MASE's
scale), so a calm series gets narrow intervals and a wild one wide ones, and series of every
size pool; each forecaster on the windows it forecast itself (where the fallback stood in for
it there, those windows are the fallback's, not its: a series too short for a member at a
competition's calibration cut is longer, and forecast by the member, at the test part; taken
in, they made Comb's yearly intervals far too wide on M3's validation cuts), those without
quantiles left out.
Without one, each forecaster's own quantiles stand. Either way a forecaster that has none for
a window (a point forecaster without calibration, a calibration set it did not forecast)
takes the fallback's (:func:`~attn_forecast.forecasters.run.fallback_for`) spread around its
own point, and those series are counted (``n_interval_fallback``): an interval it did not
give never scores as one it did.

    calibration windows (N_cal, H) --> margins (H, P) per central pair --+
                                                                          v
    scored windows' quantiles (N, H, Q) ------------------------> widened (N, H, Q)
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..data.scaling import naive_scale
from ..data.store import Store
from ..forecasters.protocol import Forecast, central_intervals
from ..forecasters.saved import CUT, PAST, ForecastSet
from . import intervals as Q


UNITS = ("naive_error", "level")
UNIT_NAMES = {"level": "the series' mean absolute level",
              "naive_error": "the series' in-sample seasonal naive error (MASE's scale)"}
# the unit calibration pools scores in, chosen on M3's validation cuts by the rule written in
# bench/m3_intervals.py before it ran: as many coverage figures within 3 points of nominal as
# the level, and the lower WQL (the figures: bench/README.md, "How M3's quantiles are made")
UNIT = "naive_error"


def scales(store: Store, unit: str = "naive_error") -> np.ndarray:
    """Each series' unit (S,) on its training part: its in-sample naive error (MASE's scale:
    lag 1, or its season), or its mean absolute level; a series without one (a constant
    training part) takes the others' mean."""
    if unit == "level":
        u = np.array([np.mean(np.abs(store.train_y(i))) if len(store.train_y(i))
                      else np.nan for i in range(store.n_series)], dtype=np.float64)
    else:
        u = np.array([naive_scale(store.train_y(i), int(lag))
                      for i, lag in enumerate(store.lags())], dtype=np.float64)
    u = np.where(u > 0, u, np.nan)
    return np.where(np.isfinite(u), u, np.nanmean(u) if np.isfinite(u).any() else 1.0)


@dataclass
class Windows:
    """One forecaster's calibration windows: its forecasts, their targets (N, H), each
    window's unit (N,)."""
    forecast: Forecast
    actual: np.ndarray
    unit: np.ndarray


@dataclass
class CalibrationSet:
    """Windows no forecaster trained on and none was selected on: each forecaster's forecasts
    of them (name -> Forecast, None where it has none), their targets (N, H) and each
    window's unit (N,), and what they are (for the record). ``own``: forecasters calibrated
    on windows of their own instead (name -> Windows: a forecaster that fits nothing to the
    series, on every window before the test part)."""
    forecasts: dict[str, Forecast | None]
    actual: np.ndarray
    unit: np.ndarray
    what: str = "the calibration part"
    own: dict[str, Windows] = field(default_factory=dict)
    unit_name: str = UNIT           # what ``unit`` is (:data:`UNITS`)

    def of(self, name: str) -> Windows | None:
        """Forecaster ``name``'s calibration windows (None where it has none)."""
        if name in self.own:
            return self.own[name]
        fc = self.forecasts.get(name)
        return None if fc is None else Windows(fc, self.actual, self.unit)


def calibration_of(fs: ForecastSet, store: Store, part: str = "cal",
                   what: str = "the calibration part", unit_name: str = UNIT
                   ) -> CalibrationSet | None:
    """The windows of ``part`` of ``fs`` (forecasts of ``store``'s windows) as a calibration
    set: the store's calibration part, or the scored part of a run that ends where the
    calibration windows begin (a competition's calibration cut); None without a window. A
    forecaster with forecasts of the :data:`PAST` part (one that fits nothing to the series:
    every forecast reads only the values before its origin) is calibrated on those: every
    window before the test part, so a long cycle or a trend is in its calibration.
    ``unit_name``: the unit scores pool in (:data:`UNITS`)."""
    ends = fs.ends.get(part)
    if ends is None or not len(ends):
        return None
    unit = scales(store, unit_name)
    own = {}
    past = fs.ends.get(PAST)
    if part == "cal" and past is not None and len(past):
        for n, parts in fs.forecasts.items():
            if parts.get(PAST) is not None:
                own[n] = Windows(parts[PAST], store.targets(past), unit[store.series_of(past)])
    return CalibrationSet({n: p.get(part) for n, p in fs.forecasts.items()},
                          store.targets(ends), unit[store.series_of(ends)], what, own, unit_name)


def with_point_quantiles(fs: ForecastSet) -> ForecastSet:
    """``fs`` with every forecast that has no quantiles given its point at every level (for
    calibration, which widens them; combinations then average them with their members')."""
    if not fs.levels:
        return fs
    for parts in fs.forecasts.values():
        for part, fc in parts.items():
            if fc is not None and fc.quantiles is None:
                parts[part] = Forecast(fc.point, Q.at_point(fc.point, len(fs.levels)),
                                       fc.members, fc.warnings, fc.failed)
    return fs


@dataclass
class Intervals:
    """Every forecaster's quantiles of the scored windows (name -> (N, H, Q)), how each came
    to be (``how``: calibrated, own or fallback), the calibrated margins (name -> (H, P), in
    units), the windows each was calibrated on, the intervals too few windows calibrated
    (name -> their nominal %: the largest score stood in) and the series each took the
    fallback's spread for (name -> count)."""
    quantiles: dict[str, np.ndarray] = field(default_factory=dict)
    how: dict[str, str] = field(default_factory=dict)
    margins: dict[str, np.ndarray] = field(default_factory=dict)
    n_windows: dict[str, int] = field(default_factory=dict)
    short: dict[str, list[int]] = field(default_factory=dict)
    fallback: dict[str, int] = field(default_factory=dict)
    few: str = "gaussian"             # the rule those too few windows were calibrated by


def intervals(forecasts: dict[str, Forecast | None], levels: tuple, unit: np.ndarray,
              sid: np.ndarray, fallback: Forecast, calibration: CalibrationSet | None,
              few: str = "gaussian") -> Intervals:
    """Every forecaster's quantiles of the scored windows (see the module docstring):
    ``forecasts`` name -> its forecast of them, ``unit`` (N,) each window's unit, ``sid``
    (N,) its series, ``fallback`` the fallback's forecast of them (with quantiles); ``few``:
    how a level with fewer calibration windows than its rank needs is calibrated
    (intervals.FEW)."""
    out = Intervals()
    spread = fallback.spread()
    for name, fc in forecasts.items():
        if fc is None:
            continue
        q, how = None, "own"
        if calibration is not None:
            how = "calibrated"
            cal = calibration.of(name)
            ok = np.zeros(0, dtype=bool) if cal is None or cal.forecast.quantiles is None else \
                np.isfinite(cal.forecast.quantiles).all(axis=(1, 2))
            if cal is not None and cal.forecast.failed is not None:  # the fallback's windows
                ok &= ~np.asarray(cal.forecast.failed, dtype=bool)
            if ok.any() and fc.quantiles is not None:
                m = Q.margins(cal.forecast.quantiles[ok], cal.actual[ok], levels, cal.unit[ok],
                              few)
                out.margins[name], out.n_windows[name] = m, int(ok.sum())
                short = Q.too_few(int(ok.sum()), levels)
                if short:
                    out.short[name] = short
                out.few = few
                q = Q.widen(fc.quantiles, m, levels, unit)
        elif fc.quantiles is not None:
            q = Q.nested(fc.quantiles, levels)
        bad = np.ones(len(fc.point), dtype=bool) if q is None else \
            ~np.isfinite(q).all(axis=(1, 2))
        if bad.any():
            q = np.zeros(fc.point.shape + (len(levels),)) if q is None else q.copy()
            q[bad] = fc.point[bad][..., None] + spread[bad]
            out.fallback[name] = int(len(np.unique(sid[bad])))
            how = "fallback" if bad.all() else f"{how}, fallback for some series"
        out.quantiles[name], out.how[name] = q, how
    return out


def short_lines(iv: Intervals) -> list[str]:
    """One warning (at most) naming every forecaster whose calibration windows were too few
    for an interval's split-conformal rank (intervals.needed), and the rule that calibrated
    those levels instead (intervals.FEW)."""
    if not iv.short:
        return []
    how = {"pooled": "every step's scores pooled, then the normal tail",
           "gaussian": "the normal tail from the widest level they calibrate",
           "largest": "the largest score stands in, so they may cover less"}[iv.few]
    who = ", ".join(f"{n} ({iv.n_windows[n]}: {', '.join(f'{p} %' for p in pcts)})"
                    for n, pcts in iv.short.items())
    return [f"warning: too few calibration windows for split conformal's rank (95 %: "
            f"{Q.needed(0.05)}, 80 %: {Q.needed(0.2)}) for {who}: those levels were "
            f"calibrated by evaluate.few_windows {iv.few} ({how}); more calibration windows "
            "(prepare.cal_frac) calibrate them by rank"]


def margins_record(iv: Intervals, levels: tuple, calibration: CalibrationSet | None) -> dict:
    """What the forecast command needs to give a future forecast the same intervals: the
    levels, each central pair, and each forecaster's calibrated margins per step (in units of
    its series' :data:`UNIT`), the windows they came from and how its intervals were
    made."""
    return {"levels": [float(t) for t in levels],
            "pairs": [pct for _, _, pct in central_intervals(levels)],
            "calibrated_on": calibration.what if calibration is not None else None,
            "unit": UNIT_NAMES[calibration.unit_name if calibration is not None else UNIT],
            "unit_key": calibration.unit_name if calibration is not None else UNIT,
            "forecasters": {n: {"how": iv.how[n],
                                "margins": np.round(iv.margins[n], 8).tolist()
                                if n in iv.margins else None,
                                **({"windows": iv.n_windows[n]} if n in iv.n_windows else {}),
                                **({"windows_of": "every window before the test part"}
                                   if calibration is not None and n in calibration.own
                                   else {}),
                                **({"too_few_for": iv.short[n]} if n in iv.short else {})}
                            for n in iv.quantiles}}


def future_quantiles(raw: np.ndarray, margins: np.ndarray, levels, unit) -> np.ndarray:
    """A future forecast's calibrated quantiles (steps, Q), or of B series (B, steps, Q):
    ``raw`` of that shape widened by the calibrated ``margins`` (H, P) in each series' ``unit``
    (a number, or (B,)). A step k past the H calibrated ones (a recursive forecast: nothing
    calibrated it) takes step H's calibrated distances from the median, which are never
    negative, grown by sqrt(k / H) (a random walk's growth) around its own median: an
    interval past the horizon only ever widens."""
    one = raw.ndim == 2
    raw = raw[None] if one else raw
    steps, H = raw.shape[1], len(margins)
    inside = Q.widen(raw[:, :min(steps, H)], margins[:min(steps, H)], levels,
                     np.broadcast_to(np.asarray(unit, dtype=np.float64), (len(raw),)))
    if steps > H:
        mid = list(levels).index(0.5)
        spread = inside[:, H - 1] - inside[:, H - 1, mid:mid + 1]          # (B, Q), nested
        k = np.arange(H + 1, steps + 1)
        past = raw[:, H:, mid:mid + 1] + spread[:, None, :] * np.sqrt(k / H)[None, :, None]
        inside = np.concatenate([inside, past], axis=1)
    return inside[0] if one else inside


# ---------------------------------------------------------------- a competition's stages
RAW = "raw"   # parts of a stage's set: the scored windows before calibration, and (CUT,
#               saved.py's) the calibration cut's forecasts (windows of the cut's store)


def calibrated_set(store: Store, fs: ForecastSet, cut_store: Store, cut: ForecastSet,
                   season: int, keep: list[str], raw_for: set[str], unit_name: str = UNIT
                   ) -> ForecastSet:
    """A competition stage's forecasts of the scored windows (``fs``, of ``store``) with every
    forecaster's quantiles calibrated on its forecasts of the calibration cut (``cut``, of
    ``cut_store``: one window a series, the horizon before the validation cut), as the
    leaderboard scores them: only the forecasters ``keep``; for those of ``raw_for`` (members
    of a combination made across stages) their forecasts before calibration too, of the
    scored windows (:data:`RAW`) and of the cut (:data:`CUT`, their series' ids in the
    record), so the leaderboard can calibrate the combination on its own. The record holds
    every forecaster's margins and how its intervals were made. ``unit_name``: the unit
    scores pool in (:data:`UNITS`)."""
    from ..forecasters.simple import fallback_for
    fs, cut = with_point_quantiles(fs), with_point_quantiles(cut)
    cal = calibration_of(cut, cut_store, "test", f"the calibration cut of {cut_store.n_series} "
                         "series (the horizon before the validation cut)", unit_name)
    ends = fs.ends["test"]
    sid = store.series_of(ends)
    fb = fallback_for(season)
    fb.fit(store)
    iv = intervals({n: p.get("test") for n, p in fs.forecasts.items()}, fs.levels,
                   scales(store, unit_name)[sid], sid, fb.forecast(store, ends, fs.levels), cal)
    out: dict[str, dict[str, Forecast | None]] = {}
    raw = [n for n in keep if n in raw_for and fs.forecasts.get(n, {}).get("test") is not None]
    for n in keep:
        test = fs.forecasts.get(n, {}).get("test")
        out[n] = {"test": None if test is None else
                  Forecast(test.point, iv.quantiles[n], failed=test.failed)}
        if raw:
            out[n][RAW] = test if n in raw else None
            out[n][CUT] = cut.forecasts[n].get("test") if n in raw else None
    parts = {"test": ends, **({RAW: ends, CUT: cut.ends["test"]} if raw else {})}
    record = {**fs.record, "intervals": margins_record(iv, fs.levels, cal),
              "interval_fallback": {n: iv.fallback[n] for n in iv.fallback if n in keep},
              **({"cut_ids": [str(i) for i in cut_store.ids[cut_store.series_of(
                  cut.ends["test"])]]} if raw else {})}
    return ForecastSet(parts, out, fs.levels, list(fs.warnings) + list(cut.warnings), record)
