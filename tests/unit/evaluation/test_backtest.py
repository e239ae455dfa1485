"""Unit tests for attn_forecast.backtest: fold boundaries on 1..N series, refitted scalers,
forecasters fitted on a fold's (sliding) training part only, the aggregate over folds and
the fold's cache key."""
from __future__ import annotations

import numpy as np
import pytest

from attn_forecast.data.splits import checked_folds
from attn_forecast.evaluation import backtest as B
from attn_forecast.forecasters.simple import Mean, Naive
from attn_forecast.errors import UserInputError, naming
from attn_forecast.setup.keys import PARAMS_KEYS
from attn_forecast.forecasters.statistical import Stat
from attn_forecast.data.build import build
from attn_forecast.data.long_table import Raw


def _store(series, *, window=10, horizon=1, test=0.2, val=0.0, cal=0.0, transform="none"):
    series = [np.asarray(s, dtype=np.float64) for s in series]
    offsets = np.r_[0, np.cumsum([len(s) for s in series])].astype(np.int64)
    y = np.concatenate(series)
    t = np.concatenate([np.arange(len(s), dtype=np.float64) for s in series])
    raw = Raw(np.array([f"s{i}" for i in range(len(series))]), offsets, t, y,
              np.full(len(y), np.nan))
    return build(raw, window=window, horizon=horizon,
                 fracs={"test": test, "val": val, "cal": cal}, scaler="zscore",
                 transform=transform)


def _walk(n, seed, level=50.0):
    return level + np.cumsum(np.random.default_rng(seed).normal(0, 1, n))


def _folds(store, k=5, *, fold_size=0, train_size=0, gap=0, val=0.0, cal=0.0,
           wanted=("train", "test")):
    return checked_folds(store, k, fold_size=fold_size, train_size=train_size, gap=gap,
                         val_frac=val, cal_frac=cal, wanted=wanted)


def _local(store, ends):
    """(series, row in its series) of each window end."""
    sid = store.series_of(ends)
    return sid, ends - store.offsets[sid]


# ---------------------------------------------------------------- fold boundaries
@pytest.mark.parametrize("spec", [{}, {"train_size": 100}, {"gap": 3}, {"fold_size": 7},
                                  {"k": 3, "gap": 2, "train_size": 50}])
@pytest.mark.parametrize("h, vf", [(1, 0.0), (3, 0.1)])
def test_no_test_window_of_a_fold_is_seen_in_its_training(spec, h, vf):
    store = _store([_walk(300, 0), _walk(240, 1)], horizon=h, val=vf)
    wanted = ("train", "test") + (("val",) if vf else ())
    for cuts in _folds(store, val=vf, wanted=wanted, **spec):
        fold = store.refit(cuts)
        sid_test, test = _local(fold, fold.ends("test"))
        assert len(test)
        for part in ("train", "val"):
            sid, local = _local(fold, fold.ends(part))
            if part == "train":
                assert len(local)
            for i in range(2):
                first_test = test[sid_test == i].min()
                # every target a training or validation window uses lies before the fold's
                # origin, and before the gap
                mine = local[sid == i]
                end = cuts.val_start[i] if part == "train" else cuts.cal_start[i]
                assert (mine + h - 1 < end).all() and end <= first_test - cuts.gap
                if part == "train" and spec.get("train_size"):
                    assert mine.min() >= cuts.train_start[i] >= \
                        cuts.val_start[i] - spec["train_size"]
        for i in range(2):
            assert (test[sid_test == i] + h <= cuts.test_end[i]).all()
            assert cuts.gap == spec.get("gap", 0)


def test_folds_tile_the_single_splits_test_targets():
    store = _store([_walk(300, 2)])
    folds = _folds(store)
    tested = np.concatenate([store.refit(c).ends("test") for c in folds])
    np.testing.assert_array_equal(tested, store.ends("test"))       # 240 .. 299, 12 per fold
    assert [len(store.refit(c).ends("test")) for c in folds] == [12] * 5
    # expanding: each fold trains on everything before its origin
    assert [int(c.val_start[0]) for c in folds] == [240, 252, 264, 276, 288]
    assert all(int(c.train_start[0]) == 0 for c in folds)
    # a panel: every series' test part, each by its own length
    panel = _store([_walk(300, 2), _walk(200, 3)])
    folds = _folds(panel)
    assert [c.test_start.tolist() for c in folds][:2] == [[240, 160], [252, 168]]
    tested = np.sort(np.concatenate([panel.refit(c).ends("test") for c in folds]))
    np.testing.assert_array_equal(tested, panel.ends("test"))


def test_same_targets_whatever_the_transform():
    v = np.exp(_walk(300, 4) / 50)
    plain = [_store([v]).refit(c).ends("test") for c in _folds(_store([v]))]
    diff = _store([v], transform="diff")
    assert all(np.array_equal(a, diff.refit(c).ends("test"))
               for a, c in zip(plain, _folds(diff)))


def test_fold_scaler_uses_only_data_before_its_origin():
    y = np.random.default_rng(0).normal(size=300)
    store = _store([y])
    for cuts in _folds(store):
        fold = store.refit(cuts)
        vs = int(cuts.val_start[0])
        poisoned = y.copy()
        poisoned[vs:] = 1e6                                 # after the fold's training part
        fold_p = _store([poisoned]).refit(cuts)
        assert fold_p.scalers.center[0] == fold.scalers.center[0]
        assert fold_p.scalers.scale[0] == fold.scalers.scale[0]
        assert fold.scalers.center[0] == pytest.approx(y[:vs].mean(), rel=1e-12)
        assert fold.scalers.scale[0] == pytest.approx(y[:vs].std(), rel=1e-12)
        assert fold.cuts == cuts
    # a sliding training part: values before it do not count either
    for cuts in _folds(store, train_size=60):
        ts, vs = int(cuts.train_start[0]), int(cuts.val_start[0])
        assert ts == vs - 60
        early = y.copy()
        early[:ts] = 1e6
        assert _store([early]).refit(cuts).scalers.center[0] == \
            pytest.approx(y[ts:vs].mean(), rel=1e-12)


def test_too_many_folds_is_a_clear_error():
    with pytest.raises(UserInputError, match="fewer than the horizon"):
        _folds(_store([_walk(300, 5)], horizon=3), k=30)
    with pytest.raises(UserInputError, match="does not fit in the test part"):
        _folds(_store([_walk(300, 5)]), k=5, fold_size=20)
    with pytest.raises(UserInputError, match=r"backtest fold 1 of 5 has .* use fewer "
                                             r"backtest.folds, a smaller backtest.gap"), \
            naming(PARAMS_KEYS):
        # fold 1's origin is row 55: a gap of 5 leaves no training target after the window
        _folds(_store([_walk(80, 6)], window=50, test=0.35), k=5, fold_size=5, gap=5)
    assert len(_folds(_store([_walk(80, 6)], window=50, test=0.35), k=5, fold_size=5,
                      gap=4)) == 5


# ---------------------------------------------------------------- fitted on the fold's part
def test_forecasters_are_fitted_on_a_sliding_training_part_only():
    """A fold with train_start > 0: ETS, Theta and naive's spread are fitted on
    levels[train_start:val_start], the mean averages levels[train_start:origin]; what lies
    before train_start changes nothing."""
    from statsforecast.models import AutoETS, Theta
    v = 30 + np.sin(np.arange(400) * 2 * np.pi / 12) * 3 + np.cumsum(
        np.random.default_rng(7).normal(0, 0.3, 400))
    store = _store([v], window=12, horizon=2, test=0.3)
    cuts = _folds(store, k=3, train_size=100)[0]
    ts, vs = int(cuts.train_start[0]), int(cuts.val_start[0])
    assert ts > 0
    fold = store.refit(cuts)
    ends = fold.ends("test")
    early = v.copy()
    early[:ts] = v[:ts] * 3 + 100                         # before the sliding training part
    fold_e = _store([early], window=12, horizon=2, test=0.3).refit(cuts)
    for name, model in (("ets", AutoETS(season_length=12)), ("theta", Theta(season_length=12))):
        got = Stat(name, 12).forecast(fold, ends).point
        np.testing.assert_array_equal(Stat(name, 12).forecast(fold_e, ends).point, got)
        model.fit(v[ts:vs])
        want = np.stack([model.forward(v[ts:e], h=2)["mean"] for e in ends])
        np.testing.assert_allclose(got, want, rtol=1e-9, err_msg=name)
    mean, naive = Mean(), Naive()
    mean.fit(fold)
    naive.fit(fold)
    want = np.array([v[ts:e].mean() for e in ends])        # the history before each origin
    np.testing.assert_allclose(mean.forecast(fold, ends).point[:, 0], want, rtol=1e-12)
    assert naive.sigma[0] == pytest.approx(np.std(np.diff(v[ts:vs]), ddof=1), rel=1e-12)


# ---------------------------------------------------------------- over folds
def test_aggregate_means_spread_and_failed_baselines():
    folds = [{"model": {"rmse": 1.0, "mae": 0.5, "mase": 0.9, "coverage_80": 0.7},
              "ets": None},
             {"model": {"rmse": 3.0, "mae": 1.5, "mase": 1.1, "coverage_80": 0.9},
              "ets": {"rmse": 2.0, "mae": 1.0, "mase": 1.0}}]
    out = B.aggregate(folds, ["model", "ets", "theta"])
    assert out["n_folds"] == 2
    assert out["model"]["rmse_mean"] == 2.0 and out["model"]["rmse_std"] == 1.0
    assert out["model"]["rmse"] == [1.0, 3.0] and out["model"]["mase_mean"] == 1.0
    assert out["model"]["coverage_80_mean"] == pytest.approx(0.8)
    assert out["ets"]["rmse"] == [None, 2.0] and out["ets"]["rmse_mean"] == 2.0
    assert out["theta"] is None


def test_aggregate_of_many_series_folds_keeps_the_per_fold_means_over_series():
    folds = [{"model": {"mase_mean": 0.8, "smape_mean": 10.0, "rmse_mean": 4.0}},
             {"model": {"mase_mean": 1.2, "smape_mean": 14.0, "rmse_mean": 6.0}}]
    out = B.aggregate(folds, ["model"])["model"]
    assert out["mase_mean"] == pytest.approx(1.0) and out["mase_mean_folds"] == [0.8, 1.2]
    assert out["mase_mean_std"] == pytest.approx(0.2)
    assert out["smape_mean"] == pytest.approx(12.0) and out["rmse_mean_folds"] == [4.0, 6.0]


def test_the_fold_key_changes_with_the_data_the_cuts_and_the_settings(tmp_path):
    from attn_forecast.data.splits import Cuts
    d = tmp_path / "prepared"
    d.mkdir()
    (d / "z.npy").write_bytes(b"abc")
    (d / "store.json").write_text("{}")
    cuts = Cuts(*(np.array([v]) for v in (0, 100, 100, 120, 140)))
    key = B.fold_key(d, cuts, [{"lr": 0.01}])
    assert key == B.fold_key(d, Cuts(*(np.array([v]) for v in (0, 100, 100, 120, 140))),
                             [{"lr": 0.01}])
    assert key != B.fold_key(d, cuts, [{"lr": 0.02}])
    assert key != B.fold_key(d, Cuts(*(np.array([v]) for v in (10, 100, 100, 120, 140))),
                             [{"lr": 0.01}])
    assert key != B.fold_key(d, Cuts(*(np.array([v]) for v in (0, 100, 100, 120, 140)), gap=2),
                             [{"lr": 0.01}])
    (d / "z.npy").write_bytes(b"abd")
    assert key != B.fold_key(d, cuts, [{"lr": 0.01}])
