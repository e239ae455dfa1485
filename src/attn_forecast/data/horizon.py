"""The auto horizon of real data, one rule for prepare and the backtest: its frequency's (M4's
and GIFT-Eval's, frequency.horizon_for, read off the longest series' times), shortened where a
series that holds a window in every part at horizon 1 would hold none in one of them, and where
a backtest fold would hold none in one of its parts. The horizon and its reason, as prepare
records what auto chose; the reason names settings by role (``<horizon>``, ``<folds>``,
``<val_frac>``...), which the caller words its own way."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import SettingError
from . import splits
from .frequency import Step, horizon_for, step_of
from .long_table import Raw

PART_NAMES = {"train": "training part", "test": "test part", "val": "validation part",
              "cal": "calibration part", "blend": "blend part (the validation part's second half)"}


@dataclass(frozen=True)
class Shares:
    """How each series is cut: its parts' shares, the blend's half of the validation part,
    the steps the transform takes off the front and the shortest context of a window."""
    test: float
    val: float
    cal: float
    blend: bool
    off: int = 0
    min_context: int = 0

    @property
    def blended(self) -> bool:
        return self.blend and self.val > 0

    def parts(self) -> tuple[str, ...]:
        """The parts besides training that each series must hold a window in."""
        return ("test",) + tuple(q for q in ("val", "cal") if getattr(self, q) > 0) \
            + (("blend",) if self.blended else ())

    def cut(self, n: np.ndarray) -> splits.Cuts:
        return splits.cut(n, self.test, self.val, self.cal, blend=self.blended)


@dataclass(frozen=True)
class FoldPlan:
    """The backtest's folds: how many, their sizes, and the parts each must hold a window in."""
    folds: int
    fold_size: int = 0
    train_size: int = 0
    gap: int = 0
    wanted: tuple[str, ...] = ("train", "test")


def auto_horizon(raw: Raw, season: int, window: int, shares: Shares,
                 folds: FoldPlan | None = None) -> dict:
    """The horizon and its reason (and the frequency's, where shortened)."""
    got = part_horizon(raw, season, window, shares, folds)
    return got if folds is None else fold_horizon(raw, window, shares, folds, got)


def part_horizon(raw: Raw, season: int, window: int, shares: Shares,
                 folds: FoldPlan | None = None) -> dict:
    """The frequency's horizon shortened where the series' own parts (and the backtest
    folds' test targets) cannot hold it."""
    longest = int(np.argmax(np.diff(raw.offsets)))
    t = raw.t[raw.offsets[longest]:raw.offsets[longest + 1]]
    step = step_of(t) if len(t) > 1 else Step("numbers", 1.0, "1")
    most, why = horizon_for(step, season)
    cuts = shares.cut(np.diff(raw.offsets))
    parts = shares.parts()
    kept = splits.usable(cuts, window, 1, shares.off, parts,
                         shares.min_context)          # the series prepare keeps
    tests = (cuts.test_end - cuts.test_start)[kept]
    k = folds.folds if folds else 0     # a backtest fold must hold a window of its own
    # no series kept: the frequency's, so that prepare's own check names what it needs
    fold = (folds.fold_size or int(np.min(tests // k))) if k and kept.any() else most
    h, lost = splits.longest_horizon(cuts, window, min(most, max(fold, 1)), shares.off, parts,
                                     shares.min_context)
    if lost is None and h == most:
        return {"horizon": h, "reason": why}
    if lost is None:
        return {"horizon": h, "frequency": most, "reason": (
            f"{why}, shortened: each of the {k} backtest folds holds {fold} test "
            "targets; fewer <folds> or a set <horizon> allow a longer one")}
    i, part = lost
    if i is None:
        return {"horizon": h, "frequency": most, "reason": (
            f"{why}, shortened: at {h + 1} steps no series holds a window of its training "
            "part; more values, smaller prepare fractions or a set <horizon> allow a "
            "longer one")}
    n = int(raw.offsets[i + 1] - raw.offsets[i])
    name = f"series '{raw.ids[i]}' ({n} values) holds" if len(raw.ids) > 1 else \
        f"the {n} values hold"
    return {"horizon": h, "reason": (
        f"{why}, shortened: at {h + 1} steps {name} no window of its "
        f"{PART_NAMES[part]}; more values, a larger "
        f"<{part if part != 'blend' else 'val'}_frac> or a set <horizon> allow a "
        "longer one"), "frequency": most}


def fold_horizon(raw: Raw, window: int, shares: Shares, folds: FoldPlan, got: dict) -> dict:
    """``got`` (part_horizon's) shortened until every backtest fold holds a window in each
    part the backtest trains and scores on (its parts are as long as the whole series'
    shares, so one can be a step shorter than the series' own: evaluation.backtest.folds)."""
    n = np.diff(raw.offsets)
    cuts = shares.cut(n)
    kept = np.flatnonzero(splits.usable(cuts, window, 1, shares.off, shares.parts(),
                                        shares.min_context))
    if not len(kept):
        return got
    wanted = folds.wanted

    def short(h):
        try:
            fc = splits.fold_cuts(cuts.take(kept), n[kept], folds.folds,
                                  fold_size=folds.fold_size, train_size=folds.train_size,
                                  gap=folds.gap, val_frac=shares.val, cal_frac=shares.cal,
                                  horizon=h)
        except SettingError:          # the folds cannot hold h targets: as short
            return 0, "test"
        found = splits.fold_short(fc, window, h, shares.off, wanted)
        return found and (found[0], next(q for q in wanted if found[1][q] < 1))
    h = got["horizon"]
    while h > 1 and short(h):
        h -= 1
    if h == got["horizon"]:
        return got
    j, part = short(h + 1)
    k = folds.folds
    fold = f"backtest fold {j} of {k}" if j else f"each of the {k} backtest folds"
    return {"horizon": h, "frequency": got.get("frequency", got["horizon"]), "reason": (
        f"{got['reason']}; at {h + 1} steps {fold} holds no window of its "
        f"{PART_NAMES[part]}; fewer <folds> or a set <horizon> allow a longer "
        "one")}
