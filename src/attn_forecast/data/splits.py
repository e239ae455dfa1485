"""Chronological parts of every series, and the rolling-origin folds: one rule for 1..N series.

Each series is cut by **target time** in its own level rows (0 = its first value)::

    rows:  0 ...... val_start .. blend_start ... cal_start .... test_start - gap | test_start .. test_end
           |<-- train -->|<- val ->|<- blend ->|<--- cal --->|<- gap ->|<---- test ---->|
           [  inputs W ][tgt H]        a window belongs to the part holding all H targets

The validation part chooses the model's best epoch (early stopping); where a blend learns its
weights (``blend``), its second half is the blend's own part, so the weights come from windows
that chose nothing else (without a blend, ``blend_start == cal_start``: no blend part).

``test_start = floor(n (1 - test_frac))``, ``cal_start = floor(n (1 - test_frac - cal_frac))``,
``val_start = floor(n (1 - test_frac - cal_frac - val_frac))``, ``blend_start`` halfway
between ``val_start`` and ``cal_start`` (with a blend), so the test targets are each
series' last ``test_frac`` of values whatever the window, horizon or transform. A part of
fraction 0 is empty. The inputs of a window may reach back into an earlier part (the past).
Windows are named by the global row ``e`` of their first target (inputs ``e-W .. e-1``); a
window needs ``W`` model rows before it, so its end is at least ``W + offset`` into its series.

Backtest folds share the test part: fold k of K tests the k-th of K blocks at its end, and
trains on the targets before its origin only (with the same validation and calibration sizes
before it, and ``gap`` targets left out between)::

    fold 1:  [====== train ======][val][cal][gap][test 1]
    fold K:  [============ train ============][val][cal][gap][test K]
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import SettingError
from .windows import concat_ranges

PARTS = ("train", "val", "blend", "cal", "test")


def cut_at(n: np.ndarray, share: float) -> np.ndarray:
    """floor(n * share), with a tolerance: 1 - 0.3 - 0.2 is 0.49999999999999994."""
    return np.floor(np.asarray(n) * share + 1e-9).astype(np.int64)


@dataclass(frozen=True)
class Cuts:
    """Each series' part boundaries (S,) in its own rows; see the module docstring."""
    train_start: np.ndarray
    val_start: np.ndarray
    cal_start: np.ndarray
    test_start: np.ndarray
    test_end: np.ndarray
    gap: int = 0
    blend_start: np.ndarray | None = None   # None: cal_start (no blend part)

    def __post_init__(self) -> None:
        if self.blend_start is None:
            object.__setattr__(self, "blend_start", np.asarray(self.cal_start).copy())

    def bounds(self, part: str) -> tuple[np.ndarray, np.ndarray]:
        """[first, end) target rows of ``part`` for every series."""
        return {"train": (self.train_start, self.val_start),
                "val": (self.val_start, self.blend_start),
                "blend": (self.blend_start, self.cal_start),
                "cal": (self.cal_start, self.test_start - self.gap),
                "test": (self.test_start, self.test_end)}[part]

    def take(self, keep: np.ndarray) -> Cuts:
        """The cuts of the series ``keep`` (indices or a mask)."""
        return Cuts(*(a[keep] for a in self.arrays()), gap=self.gap,
                    blend_start=self.blend_start[keep])

    def arrays(self) -> tuple[np.ndarray, ...]:
        return (self.train_start, self.val_start, self.cal_start, self.test_start,
                self.test_end)

    def to_dict(self) -> dict:
        names = ("train_start", "val_start", "cal_start", "test_start", "test_end")
        return {**{k: v.tolist() for k, v in zip(names, self.arrays())}, "gap": self.gap,
                "blend_start": self.blend_start.tolist()}

    @staticmethod
    def from_dict(d: dict) -> Cuts:
        blend = d.get("blend_start")
        return Cuts(*(np.asarray(d[k], dtype=np.int64) for k in (
            "train_start", "val_start", "cal_start", "test_start", "test_end")), gap=d["gap"],
                    blend_start=None if blend is None else np.asarray(blend, dtype=np.int64))


def cut(n: np.ndarray, test_frac: float, val_frac: float = 0.0, cal_frac: float = 0.0,
        test_size: np.ndarray | None = None, blend: bool = False) -> Cuts:
    """The parts of series of lengths ``n`` (S,). ``test_size``: each series' test part as a
    number of values instead of ``test_frac`` (a competition's horizon); ``blend``: the
    validation part's second half is the blend's."""
    n = np.asarray(n, dtype=np.int64)
    if test_size is not None:
        test = n - np.asarray(test_size, dtype=np.int64)
        cal = test - cut_at(n, cal_frac)         # the earlier parts: shares of n before it
        val = cal - cut_at(n, val_frac)
    else:
        test = cut_at(n, 1 - test_frac)
        cal = cut_at(n, 1 - test_frac - cal_frac) if cal_frac else test.copy()
        val = cut_at(n, 1 - test_frac - cal_frac - val_frac) if val_frac else cal.copy()
    return Cuts(np.zeros_like(n), val, cal, test, n.copy(),
                blend_start=val + (cal - val) // 2 if blend else None)


def window_ranges(cuts: Cuts, part: str, window: int, horizon: int, off: int,
                  context: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Each series' first and last (inclusive) window end of ``part``, in its own rows; a
    window needs ``context`` input values (0: all ``window``; fewer: the rest are padded)."""
    lo, hi = cuts.bounds(part)
    return np.maximum(lo, (context or window) + off), hi - horizon


def counts(cuts: Cuts, part: str, window: int, horizon: int, off: int, context: int = 0
           ) -> np.ndarray:
    first, last = window_ranges(cuts, part, window, horizon, off, context)
    return np.maximum(last + 1 - first, 0)


def ends(offsets: np.ndarray, cuts: Cuts, part: str, window: int, horizon: int, off: int,
         context: int = 0) -> np.ndarray:
    """Global window ends (rows of the flat arrays) of ``part``, series after series."""
    first, last = window_ranges(cuts, part, window, horizon, off, context)
    a = np.asarray(offsets[:-1], np.int64)
    return concat_ranges(a + first, a + last + 1)


def usable(cuts: Cuts, window: int, horizon: int, off: int, parts: tuple[str, ...],
           context: int = 0) -> np.ndarray:
    """Series with at least one window in every part of ``parts``."""
    ok = np.ones(len(cuts.test_end), dtype=bool)
    for part in parts:
        ok &= counts(cuts, part, window, horizon, off, context) >= 1
    return ok


def longest_horizon(cuts: Cuts, window: int, most: int, off: int, parts: tuple[str, ...],
                    context: int = 0) -> tuple[int, tuple[int | None, str] | None]:
    """The longest horizon up to ``most`` at which every series with a window in each of
    ``parts`` at horizon 1 still has one (a longer horizon needs longer parts: a window
    belongs to the part holding all its targets) and one of them still has a training
    window (prepare's condition, build.usable), and what a horizon one step longer would
    lose: (the first series, the part), (None, "train") where only the training windows
    run out, None where ``most`` fits or no series holds a window even at horizon 1 (then
    prepare's own check says what ``most`` needs)."""
    base = usable(cuts, window, 1, off, parts, context)
    if not base.any():
        return most, None

    def fits(h):
        ok = usable(cuts, window, h, off, parts, context)
        return ok, not (base & ~ok).any() and \
            bool((ok & usable(cuts, window, h, off, ("train",), context)).any())

    for h in range(most, 0, -1):
        if not fits(h)[1]:
            continue
        if h == most:
            return h, None
        lost = base & ~fits(h + 1)[0]
        if not lost.any():
            return h, (None, "train")
        i = int(np.flatnonzero(lost)[0])
        part = next(q for q in parts
                    if counts(cuts.take([i]), q, window, h + 1, off, context)[0] < 1)
        return h, (i, part)
    return 1, None


def min_length(window: int, horizon: int, off: int, parts: tuple[str, ...], fracs: dict,
               longer_than: int = 0, context: int = 0, limit: int = 1_000_000) -> int | None:
    """The shortest series longer than ``longer_than`` with a window in every part of
    ``parts`` (None up to ``limit``). (Rounding makes a length that works no promise for
    every longer one: the search starts above the length that did not.)"""
    lo = max((context or window) + horizon + off, longer_than + 1)
    for m in range(lo, lo * 100 + limit // 100):
        c = cut(np.array([m]), fracs["test"], fracs["val"], fracs["cal"],
                blend=bool(fracs.get("blend")) and fracs["val"] > 0)
        if usable(c, window, horizon, off, parts, context)[0]:
            return m
    return None


def folds(base: Cuts, k: int, *, fold_size: int, train_size: int, gap: int, val_size: np.ndarray,
          cal_size: np.ndarray, horizon: int, blend: bool = False) -> list[Cuts]:
    """``k`` rolling-origin folds inside every series' test part (see the module docstring);
    ``val_size``, ``cal_size``: each series' validation and calibration lengths; ``blend``:
    the validation part's second half is the blend's, as in :func:`cut`."""
    length = base.test_end - base.test_start
    size = np.full_like(length, fold_size) if fold_size else length // k
    if (size < horizon).any():
        i = int(np.argmin(size))
        raise SettingError(f"<folds> ({k}) leaves {int(size[i])} test target(s) per "
                             f"fold of series {i + 1}, fewer than the horizon ({horizon}); use "
                             f"fewer folds or a larger <fold_size>")
    if (k * size > length).any():
        i = int(np.argmax(k * size - length))
        raise SettingError(f"<folds> x <fold_size> ({k} x {int(size[i])}) "
                             f"does not fit in the test part of series {i + 1} "
                             f"({int(length[i])} targets): the folds must lie inside it")
    out = []
    for j in range(k):
        origin = base.test_end - (k - j) * size
        cal = origin - gap - cal_size
        val = cal - val_size
        start = np.maximum(val - train_size, 0) if train_size else np.zeros_like(val)
        out.append(Cuts(start, val, cal, origin, origin + size, gap=gap,
                        blend_start=val + (cal - val) // 2 if blend else None))
    return out


def fold_cuts(base: Cuts, lengths: np.ndarray, k: int, *, fold_size: int,
              train_size: int, gap: int, val_frac: float, cal_frac: float, horizon: int
              ) -> list[Cuts]:
    """The ``k`` folds' cuts of series of ``lengths`` cut as ``base`` (folds: each
    fold's validation and calibration parts as long as the shares of the whole series)."""
    n = np.asarray(lengths)
    return folds(base, k, fold_size=fold_size, train_size=train_size, gap=gap,
                        val_size=cut_at(n, val_frac), cal_size=cut_at(n, cal_frac),
                        horizon=horizon,
                        blend=bool((base.blend_start != base.cal_start).any()))


def fold_short(cuts: list[Cuts], window: int, horizon: int, off: int, wanted: tuple,
               context: int = 0) -> tuple[int, dict] | None:
    """The first fold (1-based) with no window in a part of ``wanted``, and every part's
    window count there; None where every fold holds one in each."""
    for j, c in enumerate(cuts, 1):
        got = {part: int(counts(c, part, window, horizon, off, context).sum())
               for part in PARTS}
        if any(got[part] < 1 for part in wanted):
            return j, got
    return None


def checked_folds(store, k: int, *, fold_size: int, train_size: int, gap: int, val_frac: float,
          cal_frac: float, wanted: tuple) -> list[splits.Cuts]:
    """``k`` folds of the store's series (:func:`folds`), each with windows in every part of
    ``wanted``, else a SettingError naming the fold and its parts' window counts."""
    cuts = fold_cuts(store.cuts, store.lengths, k, fold_size=fold_size,
                            train_size=train_size, gap=gap, val_frac=val_frac,
                            cal_frac=cal_frac, horizon=store.horizon)
    short = fold_short(cuts, store.window, store.horizon, store.offset, wanted)
    if short:
        j, got = short
        raise SettingError(
            f"backtest fold {j} of {len(cuts)} has " + ", ".join(
                f"{v} {part}" for part, v in got.items()) + " windows; use fewer "
            "<folds>, a smaller <gap> or <window>, or a longer series")
    return cuts
