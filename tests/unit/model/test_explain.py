"""Unit tests for attn_forecast.model.explain: the attention weights and lag tables the train
stage writes, the median series, and the saliency by lag."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from attn_forecast.data.windows import gather
from attn_forecast.model import explain
from attn_forecast.model.networks import build_model
from attn_forecast.model.settings import ModelSettings
from unit.model.helpers import small_store

pytestmark = pytest.mark.usefixtures("one_torch_thread")


# ---------------------------------------------------------------- explain: attention weights
def test_mean_attention_weights_are_the_mean_over_the_windows():
    rs = np.random.default_rng(0)
    store = small_store([rs.normal(size=40), rs.normal(size=50) * 3 + 10])
    torch.manual_seed(0)
    m = build_model(ModelSettings(window=6, horizon=2, d_model=8, ffn_dim=8, n_heads=2,
                                  n_layers=2))
    z = torch.from_numpy(np.asarray(store.z))
    ends = torch.from_numpy(store.ends("test"))
    got = explain.attention_weights(m, z, ends, 6, 2, batch=3)   # in batches of 3
    assert got.shape == (2, 2, 6, 6)
    want = np.zeros((2, 2, 6, 6))
    for e in ends.tolist():                                      # window by window
        x, _ = gather(z, torch.tensor([e]), 6, 2)
        with torch.no_grad():
            w = m(x, need_weights=True)[1]
        want += np.stack([layer[0].double().numpy() for layer in w])
    np.testing.assert_allclose(got, want / len(ends), atol=1e-6)
    np.testing.assert_allclose(got.sum(-1), 1.0, atol=1e-6)
    assert explain.attention_weights(m, z, ends[:0], 6, 2) is None
    lstm = build_model(ModelSettings(kind="lstm", window=6, horizon=2))
    assert explain.attention_weights(lstm, z, ends, 6, 2) is None


def test_lag_profile_by_pooling():
    # 1 layer, 2 heads, 3 tokens; rows are queries, columns keys (0 = oldest)
    w = np.array([[[[0.2, 0.3, 0.5], [0.1, 0.1, 0.8], [0.6, 0.3, 0.1]],
                   [[0.3, 0.3, 0.4], [0.5, 0.4, 0.1], [0.2, 0.2, 0.6]]]])
    # last pooling: the last query's row, mean over heads, newest key first
    np.testing.assert_allclose(explain.lag_profile(w, "last"), [0.35, 0.25, 0.4])
    # mean pooling: every query's row
    rows = (np.array([0.2, 0.3, 0.5]) + [0.1, 0.1, 0.8] + [0.6, 0.3, 0.1] + [0.3, 0.3, 0.4]
            + [0.5, 0.4, 0.1] + [0.2, 0.2, 0.6]) / 6
    np.testing.assert_allclose(explain.lag_profile(w, "mean"), rows[::-1])
    # only the last layer counts
    two = np.concatenate([np.full_like(w, 1 / 3), w])
    np.testing.assert_allclose(explain.lag_profile(two, "last"), [0.35, 0.25, 0.4])


def test_lags_table_names_the_lags_each_token_covers():
    s = ModelSettings(window=12, patch_len=4, pooling="last")
    newest, oldest = explain.token_lags(s)
    np.testing.assert_array_equal(newest, [0, 4, 8])            # newest patch first
    np.testing.assert_array_equal(oldest, [3, 7, 11])
    w = np.zeros((1, 1, 3, 3))
    w[0, 0, -1] = [0.5, 0.3, 0.2]                               # the oldest patch gets 0.5
    table = explain.lags_table(w, s)
    assert {k: list(v) for k, v in table.items()} == {
        "lag": [0, 4, 8], "lag_oldest": [3, 7, 11], "weight": [0.2, 0.3, 0.5]}
    one = explain.token_lags(ModelSettings(window=5))
    np.testing.assert_array_equal(one[0], np.arange(5))
    np.testing.assert_array_equal(one[1], np.arange(5))
    empty = explain.lags_table(None, s)
    assert list(empty) == ["lag", "lag_oldest", "weight"]
    assert all(len(v) == 0 for v in empty.values())


def test_median_series_ranks_the_series_by_mase():
    rs = np.random.default_rng(2)
    series = [rs.normal(size=60) * k + 50 for k in (1.0, 4.0, 0.5)]
    store = small_store(series)
    ends = store.ends("test")
    sid = store.series_of(ends)
    bias = np.array([3.0, 1.0, 0.2])[sid][:, None]              # each series' own error
    point = store.targets(ends) + bias
    mase = []
    for i, lv in enumerate(series):
        train = lv[:int(store.cuts.val_start[i])]
        mase.append(np.mean(np.abs(point[sid == i] - store.targets(ends[sid == i])))
                    / np.mean(np.abs(np.diff(train))))
    assert explain.median_series(store, ends, point) == int(np.argsort(mase)[1])
    # a series without a naive error in training (constant) scores inf and is not counted
    flat = np.r_[np.full(45, 50.0), rs.normal(size=15) + 50]
    four = small_store(series + [flat])
    ends4 = four.ends("test")
    sid4 = four.series_of(ends4)
    point4 = four.targets(ends4) + np.array([3.0, 1.0, 0.2, 0.0])[sid4][:, None]
    assert explain.median_series(four, ends4, point4) == int(np.argsort(mase)[1])


def test_explain_gives_the_mean_and_the_median_series_first_window():
    rs = np.random.default_rng(3)
    store = small_store([rs.normal(size=40), rs.normal(size=50) * 2, rs.normal(size=45) + 3])
    torch.manual_seed(0)
    m = build_model(ModelSettings(window=6, horizon=2, d_model=8, ffn_dim=8))
    ends = store.ends("test")
    sid = store.series_of(ends)
    point = store.targets(ends) + np.array([0.1, 5.0, 1.0])[sid][:, None]
    got = explain.explain(m, store, ends, point, "cpu")
    z = torch.from_numpy(np.asarray(store.z))
    np.testing.assert_allclose(got["mean"], explain.attention_weights(
        m, z, torch.from_numpy(ends), 6, 2), atol=1e-12)
    i = explain.median_series(store, ends, point)
    first = ends[sid == i][:1]
    np.testing.assert_allclose(got["example"], explain.attention_weights(
        m, z, torch.from_numpy(first), 6, 2), atol=1e-12)
    lstm = build_model(ModelSettings(kind="lstm", window=6, horizon=2))
    empty = explain.explain(lstm, store, ends, point, "cpu")
    assert empty["mean"].shape == (0, 0, 6, 6) and empty["example"].shape == (0, 0, 6, 6)


def test_saliency_by_lag_finds_the_one_input_a_forecast_reads():
    """A forecaster that reads only the value three steps before its newest input puts all
    of its saliency on lag 3 (0 = the newest), whatever the data; a real network's shares sum
    to 1 over the window."""
    class ThirdBack(torch.nn.Module):
        def forward(self, x, cal=None, **_):
            return 2.0 * x[:, -4:-3] ** 3, None
    z = torch.randn(40)
    ends = torch.arange(10, 35)
    got = explain.saliency_by_lag(ThirdBack(), z, ends, 8, 1)
    assert got.shape == (8,) and got[3] == pytest.approx(1.0) and got.sum() == pytest.approx(1.0)
    torch.manual_seed(0)
    mlp = build_model(ModelSettings(kind="mlp", window=8, horizon=2, d_model=8, ffn_dim=8))
    shares = explain.saliency_by_lag(mlp, z, ends, 8, 2, batch=7)
    assert shares.shape == (8,) and shares.sum() == pytest.approx(1.0) and (shares > 0).all()
