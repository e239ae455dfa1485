"""The backtest's folds from params, written once: prepare checks them (a setting that leaves a
fold without a window in a part it needs is refused there, before any training) and
backtest_train trains them."""
from __future__ import annotations

from ..config.schema import Params
from ..data.splits import checked_folds


def fold_parts(p: Params) -> tuple[str, ...]:
    """The parts every backtest fold must hold a window in: those it trains, selects,
    blends, calibrates and scores on."""
    pp = p.prepare
    return ("train", "test") + (("val",) if pp.val_frac else ()) \
        + (("blend",) if pp.val_frac and p.evaluate.blend else ()) \
        + (("cal",) if pp.cal_frac else ())


def backtest_folds(p: Params, store) -> list:
    """The backtest's folds of ``store`` (data.splits.checked_folds), each holding a window in
    every part of :func:`fold_parts`: a setting that leaves one empty is refused here (at
    prepare, before any training) naming the keys."""
    pp, bt = p.prepare, p.backtest
    return checked_folds(store, bt.folds, fold_size=bt.fold_size, train_size=bt.train_size,
                         gap=bt.gap, val_frac=pp.val_frac, cal_frac=pp.cal_frac,
                         wanted=fold_parts(p))
