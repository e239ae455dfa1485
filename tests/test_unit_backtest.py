"""Unit tests for attn_forecast.backtest: fold boundaries, refitted scalers, aggregation."""
from __future__ import annotations

import numpy as np
import pytest

from attn_forecast.backtest import aggregate, check_folds, fold_splits
from attn_forecast.errors import UserInputError
from attn_forecast.params import BacktestParams
from attn_forecast.windows import make_split, prepare, refit


def _folds(n=300, w=10, h=1, tf=0.2, vf=0.0, off=0, **spec):
    return fold_splits(n, w, h, tf, vf, BacktestParams(**{"folds": 5, **spec}), off)


def test_off_gives_no_folds():
    assert _folds(folds=0) == []


@pytest.mark.parametrize("spec", [{}, {"train_size": 100}, {"gap": 3}, {"fold_size": 7},
                                  {"folds": 3, "gap": 2, "train_size": 50}])
@pytest.mark.parametrize("h, vf", [(1, 0.0), (3, 0.1)])
def test_no_test_window_of_a_fold_is_seen_in_its_training(spec, h, vf):
    for s in _folds(h=h, vf=vf, **spec):
        train, val, test = (s.ends(p) for p in ("train", "val", "test"))
        assert len(train) and len(test)
        first_test_target = test.min()
        # every target a training or validation window uses lies before the fold's origin,
        # and before the gap
        assert train.max() + h - 1 < s.train_end <= first_test_target - s.gap
        if len(val):
            assert val.max() + h - 1 < s.val_end <= first_test_target - s.gap
        assert (test + h <= (s.test_end or s.n)).all()
        if spec.get("train_size"):
            assert train.min() >= s.train_start >= s.train_end - spec["train_size"]


def test_folds_tile_the_single_splits_test_targets():
    single = make_split(300, 10, 1, 0.2, 0.0)
    folds = _folds()
    tested = np.concatenate([s.ends("test") for s in folds])
    assert tested.tolist() == single.ends("test").tolist()   # 240 .. 299, 12 per fold
    assert [len(s.ends("test")) for s in folds] == [12] * 5
    # expanding: each fold trains on everything before its origin
    assert [s.train_end for s in folds] == [240, 252, 264, 276, 288]
    assert all(s.train_start == 0 for s in folds)


def test_same_targets_whatever_the_transform():
    plain = [s.ends("test") for s in _folds()]
    diff = [s.ends("test") + 1 for s in _folds(n=299, off=1)]  # z index + 1 = level index
    assert all(np.array_equal(a, b) for a, b in zip(plain, diff))


def test_fold_scaler_uses_only_data_before_its_origin():
    rng = np.random.default_rng(0)
    levels = rng.normal(size=300)
    prep = prepare(levels, np.full(300, np.nan), np.arange(300), window=10, horizon=1,
                   test_frac=0.2, val_frac=0.0, scaler="zscore", transform="none")
    for s in _folds():
        fold = refit(prep, s)
        poisoned = levels.copy()
        poisoned[s.train_end:] = 1e6                        # after the fold's training part
        fold_p = refit(prepare(poisoned, np.full(300, np.nan), np.arange(300), window=10,
                               horizon=1, test_frac=0.2, val_frac=0.0, scaler="zscore",
                               transform="none"), s)
        assert fold_p.scaler == fold.scaler
        assert fold.scaler.center == pytest.approx(levels[:s.train_end].mean(), rel=1e-12)
        assert fold.split == s


def test_too_many_folds_is_a_clear_error():
    with pytest.raises(UserInputError, match="fewer than prepare.horizon"):
        _folds(folds=30, h=3)
    with pytest.raises(UserInputError, match="fold 1 of 5"):
        check_folds(_folds(n=80, w=60, fold_size=5), 0.0)


def test_aggregate_means_spread_and_failed_baselines():
    folds = [{"model": {"rmse": 1.0, "mae": 0.5, "mase": 0.9}, "ets": None},
             {"model": {"rmse": 3.0, "mae": 1.5, "mase": 1.1}, "ets": {"rmse": 2.0, "mae": 1.0,
                                                                      "mase": 1.0}}]
    out = aggregate(folds, ["model", "ets", "theta"])
    assert out["n_folds"] == 2
    assert out["model"]["rmse_mean"] == 2.0 and out["model"]["rmse_std"] == 1.0
    assert out["model"]["rmse"] == [1.0, 3.0] and out["model"]["mase_mean"] == 1.0
    assert out["ets"]["rmse"] == [None, 2.0] and out["ets"]["rmse_mean"] == 2.0
    assert out["theta"] is None
