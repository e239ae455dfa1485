"""Unit tests for attn_forecast.pipeline.backtest_train: a fold trained on its own scalers."""
from __future__ import annotations

import numpy as np
import pytest

from attn_forecast.model import checkpoint
from attn_forecast.forecasters.saved import load
from attn_forecast.data import splits
from attn_forecast.pipeline.backtest_train import train_fold
from attn_forecast.data.store_io import save
from attn_forecast.model.settings import ModelSettings
from attn_forecast.forecasters.neural import ModelForecaster
from unit.training.helpers import W, _p, _store

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def test_train_fold_trains_on_the_folds_own_scalers_and_saves_its_forecasts(tmp_path):
    rs = np.random.default_rng(4)
    series = [np.sin(np.arange(n) / 3.0) * k + 5 * k + rs.normal(0, 0.05, n)
              for n, k in ((80, 1.0), (96, 3.0))]
    store = _store(series, horizon=2, test=0.3)
    save(tmp_path / "prepared", store)
    cuts = splits.folds(store.cuts, 2, fold_size=0, train_size=0, gap=0,
                        val_size=np.zeros(2, np.int64), cal_size=np.zeros(2, np.int64),
                        horizon=2)[0]
    settings = ModelSettings(window=W, horizon=2, d_model=8, ffn_dim=8)
    out, fc = tmp_path / "fold.pt", tmp_path / "fold.npz"
    got = train_fold(str(tmp_path / "prepared"), cuts.to_dict(), settings,
                                  _p(epochs=3), "cpu", str(out), str(fc), "key1", 1, (),
                                  ("test",))
    assert got["epochs"] == 3 and got["seconds"] > 0
    model, payload = checkpoint.load(out)
    fold = store.refit(cuts)
    assert payload["fold_key"] == "key1" and payload["prepare"] == fold.meta()
    assert len(payload["history"]) == 3
    # the fold's scalers come from its own (shorter) training parts
    assert not np.allclose(fold.scalers.center, store.scalers.center)
    saved = load(fc)
    np.testing.assert_array_equal(saved.ends["test"], fold.ends("test"))
    want = ModelForecaster(model).forecast(fold, fold.ends("test")).point
    np.testing.assert_allclose(saved.forecasts["model"]["test"].point, want, rtol=1e-6)
