"""Unit tests for attn_forecast.pipeline.backtest_evaluate: every fold scored on its own cuts."""
from __future__ import annotations

import numpy as np
import pytest

from attn_forecast.config.load import parse_params
from attn_forecast.data import splits
from attn_forecast.errors import ParamsError
from attn_forecast.forecasters.protocol import Forecast
from attn_forecast.forecasters.saved import ForecastSet, save
from attn_forecast.forecasters.simple import Naive2
from attn_forecast.pipeline.backtest_evaluate import score_folds
from unit.training.helpers import _store

# points only, no intervals: the model's forecasts below need no quantiles
PARAMS = {"evaluate": {"baselines": ["naive", "mean"], "quantiles": [], "conformal": "none"}}
OFF = 0.5      # the "model" forecasts every target plus this


def _series(n_series: int) -> list[np.ndarray]:
    rs = np.random.default_rng(0)
    return [np.sin(np.arange(n) / 3.0) * k + 5 * k + rs.normal(0, 0.05, n)
            for n, k in ((60, 1.0), (72, 3.0))[:n_series]]


def _folds(store, folds_dir, k: int = 2, warning: str | None = None) -> list[dict]:
    """``k`` folds of ``store`` and, for each, the model's saved forecasts of its test windows
    (each target + OFF) as backtest_train would leave them; their folds.json entries."""
    S = store.n_series
    cuts = splits.folds(store.cuts, k, fold_size=0, train_size=0, gap=0,
                        val_size=np.zeros(S, np.int64), cal_size=np.zeros(S, np.int64),
                        horizon=store.horizon)
    entries = []
    for j, c in enumerate(cuts):
        fold = store.refit(c)
        ends = fold.ends("test")
        fs = ForecastSet({"test": ends}, {"model": {"test": Forecast(fold.targets(ends) + OFF)}},
                         warnings=[warning] if warning else [])
        save(folds_dir / f"origin_{j}.npz", fs)
        entries.append({"fold": j, "cuts": c.to_dict(), "forecasts": f"origin_{j}.npz"})
    return entries


def _parts(store, entry: dict, i: int) -> tuple[np.ndarray, np.ndarray]:
    """Series ``i``'s training part and test targets in the fold of ``entry`` (levels)."""
    c = entry["cuts"]
    y = store.y[store.rows(i)]
    return (y[c["train_start"][i]:c["val_start"][i]],
            y[c["test_start"][i]:c["test_end"][i]])


def test_no_folds_is_the_off_record_without_a_store(tmp_path):
    assert score_folds(parse_params(PARAMS), None, [], tmp_path) == ({"n_folds": 0}, [], [], [])


def test_each_fold_is_scored_on_its_own_training_parts_and_test_targets(tmp_path):
    store = _store(_series(2), horizon=1, test=0.4)
    entries = _folds(store, tmp_path)
    out, rows, names, warnings = score_folds(parse_params(PARAMS), store, entries, tmp_path)
    assert names == ["model", "naive", "mean"] and warnings == []
    assert out["n_folds"] == 2
    np.testing.assert_allclose(out["model"]["rmse_mean_folds"], [OFF, OFF], rtol=1e-9)
    for k, entry in enumerate(entries):
        parts = [_parts(store, entry, i) for i in range(2)]
        y_prev = [store.y[store.rows(i)][entry["cuts"]["test_start"][i] - 1:
                                              entry["cuts"]["test_end"][i] - 1]
                  for i in range(2)]
        # mean: of every value from the fold's training start to each origin (not the
        # whole store's training part)
        y_all = [store.y[store.rows(i)] for i in range(2)]
        c = entry["cuts"]
        want_mean = np.mean([np.sqrt(np.mean([(y[e] - y[c["train_start"][i]:e].mean()) ** 2
                                              for e in range(c["test_start"][i],
                                                             c["test_end"][i])]))
                             for i, y in enumerate(y_all)])
        assert out["mean"]["rmse_mean_folds"][k] == pytest.approx(want_mean, rel=1e-9)
        want_naive = np.mean([np.sqrt(np.mean((test - prev) ** 2))
                              for (_, test), prev in zip(parts, y_prev)])
        assert out["naive"]["rmse_mean_folds"][k] == pytest.approx(want_naive, rel=1e-9)
        # many series: the headline is the mean MASE, scaled by the fold's training part
        want_mase = np.mean([OFF / np.mean(np.abs(np.diff(train))) for train, _ in parts])
        assert rows[k]["model"] == pytest.approx(want_mase, rel=1e-9)
        assert rows[k]["naive"] == out["naive"]["mase_mean_folds"][k]
        assert set(rows[k]) == {"fold", "origin", "model", "naive", "mean"}
    # the second fold trains on more: its mean forecast differs from the first's
    assert out["mean"]["rmse_mean_folds"][0] != out["mean"]["rmse_mean_folds"][1]
    # each fold's origin: the first series' first test target
    assert [r["fold"] for r in rows] == [0, 1]
    assert [r["origin"] for r in rows] == [store.t[e["cuts"]["test_start"][0]] for e in entries]


def test_the_significance_pools_the_windows_of_every_fold(tmp_path):
    store = _store(_series(2), horizon=1, test=0.4)
    entries = _folds(store, tmp_path)
    out, _, _, _ = score_folds(parse_params(PARAMS), store, entries, tmp_path)
    n = sum(len(store.refit(splits.Cuts.from_dict(e["cuts"])).ends("test")) for e in entries)
    assert set(out["significance"]) == {"naive", "mean"}
    assert {r["n"] for r in out["significance"].values()} == {n}
    # the model (off by 0.5) is worse than naive on this smooth series, better than the mean
    assert out["significance"]["naive"]["mean_loss_diff"] > 0
    assert out["significance"]["mean"]["mean_loss_diff"] < 0
    assert "significance_blend" not in out


def test_one_series_scores_rmse_with_extra_forecasters_a_blend_and_named_warnings(tmp_path):
    store = _store(_series(1), horizon=1, test=0.4)
    entries = _folds(store, tmp_path, warning="warning: the model saw a ghost")
    out, rows, names, warnings = score_folds(
        parse_params(PARAMS), store, entries, tmp_path, extra=(Naive2(0),),
        blends={"blend": (["model", "naive"], 0.0)})
    assert names == ["model", "naive", "mean", "naive2", "blend"]
    assert warnings == ["fold 0: warning: the model saw a ghost",
                        "fold 1: warning: the model saw a ghost"]
    for k, row in enumerate(rows):
        assert row["model"] == pytest.approx(OFF, rel=1e-9)       # one series: the RMSE
        assert row["naive2"] == pytest.approx(row["naive"])       # no season: naive's
        # no validation part: the blend is the members' equal-weight mean
        _, test = _parts(store, entries[k], 0)
        prev = store.y[entries[k]["cuts"]["test_start"][0] - 1:
                            entries[k]["cuts"]["test_end"][0] - 1]
        blend = ((test + OFF) + prev) / 2
        assert row["blend"] == pytest.approx(np.sqrt(np.mean((test - blend) ** 2)), rel=1e-9)
    assert set(out["significance_blend"]) == {"model", "naive", "mean", "naive2"}
    assert out["significance_blend"]["model"]["mean_loss_diff"] < 0


def test_a_season_reaching_before_a_series_start_is_refused(tmp_path):
    store = _store(_series(2), horizon=1, test=0.4)
    entries = _folds(store, tmp_path)
    p = parse_params({**PARAMS, "evaluate": {**PARAMS["evaluate"], "season": 40}})
    first = int(store.cuts.test_start.min())
    with pytest.raises(ParamsError) as info:
        score_folds(p, store, entries, tmp_path)
    assert str(info.value) == (f"evaluate.season (40) reaches before the start of a series; it "
                               f"must be <= {first} here")


def test_a_folds_forecasts_of_other_windows_are_refused(tmp_path):
    """A stale fold file (other cuts than folds.json says) is never scored."""
    store = _store(_series(2), horizon=1, test=0.4)
    entries = _folds(store, tmp_path, k=2)
    entries[0] = {**entries[0], "forecasts": entries[1]["forecasts"]}
    with pytest.raises(ValueError, match="forecasts of different test windows"):
        score_folds(parse_params(PARAMS), store, entries, tmp_path)
