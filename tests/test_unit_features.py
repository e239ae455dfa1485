"""Unit tests of past covariates (``data.csv_feature_columns``): reading, transforms, scaling on
the training part only, alignment with the model series, the model never reading a feature of
a target time, the backtest's refit, and the forecast command's inputs matching training's."""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd
import pytest
import torch

from attn_forecast.data import FEATURE_PREFIX, ohlcv, read_csv_series
from attn_forecast.errors import UserInputError
from attn_forecast.forecast import forecast_levels
from attn_forecast.model import ModelSettings, build_model
from attn_forecast.params import ParamsError, Params, parse_params
from attn_forecast.windows import (Split, feature_series, gather_calendar, gather_windows,
                                   load_prepared, prepare, refit, save_prepared, to_levels)

NAMES = ("open", "high", "low", "volume")
KINDS = ("log_return", "log_return", "log_return", "log1p")


def _bars(n=200, seed=0, lead=0.0) -> pd.DataFrame:
    return ohlcv(n, seed, lead=lead)


def _prep(bars: pd.DataFrame, transform="log_return", window=12, horizon=1, time_features=(),
          val_frac=0.0):
    return prepare(bars["close"].to_numpy(), np.full(len(bars), np.nan),
                   bars["date"].to_numpy(str), window=window, horizon=horizon, test_frac=0.2,
                   val_frac=val_frac, scaler="zscore", transform=transform,
                   time_features=list(time_features),
                   features={n: bars[n].to_numpy() for n in NAMES}, feature_transforms=KINDS)


# ---------------------------------------------------------------- reading
def test_feature_columns_are_read_sorted_with_the_value(tmp_path):
    bars = _bars(30)
    shuffled = bars.sample(frac=1.0, random_state=1)
    path = tmp_path / "bars.csv"
    shuffled.to_csv(path, index=False)
    got = read_csv_series(path, "close", "date", features=list(NAMES))
    assert list(got.columns) == ["t", "value", "signal"] + [FEATURE_PREFIX + n for n in NAMES]
    np.testing.assert_array_equal(got["value"], bars["close"])
    np.testing.assert_array_equal(got[FEATURE_PREFIX + "volume"], bars["volume"])


def test_a_missing_feature_column_names_the_key(tmp_path):
    path = tmp_path / "bars.csv"
    _bars(30).to_csv(path, index=False)
    with pytest.raises(UserInputError, match=r"data.csv_feature_columns: column 'vol' not in"):
        read_csv_series(path, "close", "date", features=["open", "vol"])


def test_empty_feature_cells_follow_data_missing(tmp_path):
    bars = _bars(30)
    bars.loc[5, "volume"] = np.nan
    path = tmp_path / "bars.csv"
    bars.to_csv(path, index=False)
    with pytest.raises(UserInputError, match="'volume' has 1 empty cell"):
        read_csv_series(path, "close", "date", features=["volume"])
    filled = read_csv_series(path, "close", "date", "ffill", features=["volume"])
    assert filled[FEATURE_PREFIX + "volume"][5] == bars["volume"][4]   # from the past
    dropped = read_csv_series(path, "close", "date", "drop", features=["volume"])
    assert len(dropped) == 29 and bars["close"][5] not in dropped["value"].to_numpy()


# ---------------------------------------------------------------- transforms and scaling
def test_feature_transforms_against_numpy():
    x = np.array([1.0, 2.0, 4.0, 3.0])
    np.testing.assert_allclose(feature_series(x, "log_return", "f")[1:], np.diff(np.log(x)))
    np.testing.assert_allclose(feature_series(x, "diff", "f")[1:], np.diff(x))
    np.testing.assert_allclose(feature_series(x, "log1p", "f"), np.log1p(x))
    assert np.isnan(feature_series(x, "diff", "f")[0])
    with pytest.raises(UserInputError, match="positive values in feature 'f'"):
        feature_series(np.array([1.0, 0.0]), "log_return", "f")


def test_features_are_scaled_on_the_training_part_only():
    bars = _bars()
    prep = _prep(bars)
    poisoned = bars.copy()
    end = prep.split.train_end + prep.offset            # first level after the training part
    poisoned.loc[end:, list(NAMES)] *= 1000.0
    other = _prep(poisoned)
    assert other.feature_scalers == prep.feature_scalers
    C = prep.n_time_features
    np.testing.assert_array_equal(other.cal[:prep.split.train_end, C:],
                                  prep.cal[:prep.split.train_end, C:])
    train = prep.cal[1:prep.split.train_end, C:]      # row 0: no return before it
    np.testing.assert_allclose(train.mean(axis=0), 0, atol=0.02)


def test_feature_rows_align_with_the_model_series_steps():
    bars = _bars()
    prep = _prep(bars, time_features=("dayofweek",))
    assert (prep.n_time_features, prep.n_features) == (2, 4)
    j = 50  # z[j] is the log return into level j + 1; so is the open column's row j
    s = prep.feature_scalers[0]
    expected = (np.log(bars["open"][j + 1] / bars["open"][j]) - s.center) / s.scale
    assert prep.cal[j, 2] == pytest.approx(expected, rel=1e-5)


def test_saved_and_loaded_features_are_the_same(tmp_path):
    prep = _prep(_bars())
    save_prepared(tmp_path / "p", prep)
    back = load_prepared(tmp_path / "p")
    np.testing.assert_array_equal(back.cal, prep.cal)
    np.testing.assert_array_equal(back.feature_raw, prep.feature_raw)
    assert (back.features, back.feature_transforms, back.feature_scalers) == \
        (prep.features, prep.feature_transforms, prep.feature_scalers)


def test_a_backtest_fold_refits_the_feature_scalers_before_its_origin():
    prep = _prep(_bars(300))
    s = prep.split
    fold = Split(s.n, s.window, s.horizon, train_end=150, val_end=150, test_end=170)
    got = refit(prep, fold)
    assert got.feature_scalers != prep.feature_scalers
    poisoned = prep.feature_raw.copy()
    poisoned[150 + prep.offset:] *= 1000.0
    again = refit(replace(prep, feature_raw=poisoned), fold)
    assert again.feature_scalers == got.feature_scalers
    # a sliding training part (backtest.train_size): rows before it do not count either
    sliding = Split(s.n, s.window, s.horizon, train_end=150, val_end=150, test_end=170,
                    train_start=60)
    early = prep.feature_raw.copy()
    early[:60] *= 1000.0
    assert refit(replace(prep, feature_raw=early), sliding).feature_scalers == \
        refit(prep, sliding).feature_scalers


def test_a_constant_feature_is_refused():
    bars = _bars()
    bars["volume"] = 5.0
    with pytest.raises(UserInputError, match="feature 'volume' is constant"):
        _prep(bars)


# ---------------------------------------------------------------- the model
@pytest.mark.parametrize("kind", ["attention", "lstm"])
def test_the_model_reads_input_features_and_never_a_target_times(kind):
    torch.manual_seed(0)
    s = ModelSettings(kind=kind, window=12, horizon=3, n_time_features=2, n_features=4)
    model = build_model(s).eval()
    x = torch.randn(5, 12)
    cal = (torch.randn(5, 12, 6), torch.randn(5, 3, 6))
    y = model(x, cal=cal)[0]
    future = (cal[0], cal[1].clone())
    future[1][..., 2:] = 1e6                          # the features of the target times
    assert torch.equal(model(x, cal=future)[0], y)
    past = (cal[0].clone(), cal[1])
    past[0][:, -1, 2:] += 1.0                         # the newest input step's features
    assert not torch.allclose(model(x, cal=past)[0], y)
    calendar = (cal[0], cal[1].clone())
    calendar[1][..., :2] += 1.0                       # the target times' calendar is read
    assert not torch.allclose(model(x, cal=calendar)[0], y)


def test_the_forecast_command_feeds_what_training_fed():
    bars = _bars(160, lead=0.8)
    prep = _prep(bars, horizon=2)
    torch.manual_seed(0)
    s = ModelSettings(window=12, horizon=2, n_features=4)
    model = build_model(s).eval()
    L = 120                                      # forecast after the first L levels
    e = L - prep.offset                          # the window ending there, as training sees it
    x, _ = gather_windows(prep.z, np.array([e]), 12, 2)
    c = gather_calendar(prep.cal, np.array([e]), 12, 2)
    with torch.no_grad():
        z = model(torch.from_numpy(x), cal=tuple(torch.from_numpy(a) for a in c))[0]
    want = to_levels(prep.scaler.inverse(z.double().numpy()), prep.levels[L - 1:L],
                     prep.transform)[0]
    got = forecast_levels(model, prep.meta(), prep.levels[:L], 2, None,
                          prep.feature_raw[:L])
    np.testing.assert_allclose(got, want, rtol=1e-6)
    with pytest.raises(UserInputError, match="--steps must be <= 2"):
        forecast_levels(model, prep.meta(), prep.levels[:L], 3, None, prep.feature_raw[:L])
    with pytest.raises(UserInputError, match="feature columns open, high, low, volume"):
        forecast_levels(model, prep.meta(), prep.levels[:L], 1, None, None)


def test_ridge_with_features_is_sklearns_ridge_on_both_windows():
    from sklearn.linear_model import Ridge

    from attn_forecast.baselines import fit_baselines
    prep = _prep(_bars(200, lead=0.8), window=8, horizon=2)
    got = fit_baselines(prep, ["naive", "ridge"], ridge_alpha=0.5, season=0)
    s, W, H = prep.split, 8, 2
    tr, te = s.ends("train"), s.ends("test")

    def inputs(ends):
        x = np.stack([prep.z[e - W:e] for e in ends])
        f = np.stack([prep.cal[e - W:e, prep.n_time_features:].ravel() for e in ends])
        return np.concatenate([x, f], axis=1)
    y = np.stack([prep.z[e:e + H] for e in tr])
    z = Ridge(alpha=0.5).fit(inputs(tr), y).predict(inputs(te))
    last = prep.levels[prep.first_target_level(te) - 1]
    want = to_levels(prep.scaler.inverse(z), last, prep.transform)
    np.testing.assert_allclose(got.forecasts["ridge_features"], want, rtol=1e-6)
    assert not np.allclose(got.forecasts["ridge"], want)


# ---------------------------------------------------------------- params and data
def _params(**data) -> dict:
    p = Params().model_dump()
    p["data"].update(kind="csv", csv_column="close", csv_time_column="date", **data)
    return p


def test_feature_params_are_checked():
    parse_params(_params(csv_feature_columns=list(NAMES)))
    p = _params(csv_feature_columns=["open"])
    p["prepare"]["feature_transforms"] = ["log_return", "log1p"]
    with pytest.raises(ParamsError, match="one transform per data.csv_feature_columns entry"):
        parse_params(p)
    with pytest.raises(ParamsError, match="distinct columns other than data.csv_column"):
        parse_params(_params(csv_feature_columns=["open", "close"]))
    p = _params(csv_feature_columns=["open"])
    p["data"]["kind"] = "sine"
    with pytest.raises(ParamsError, match="needs data.kind csv"):
        parse_params(p)
    p = _params(csv_feature_columns=["open"])
    p["prepare"]["feature_transforms"] = ["log"]
    with pytest.raises(ParamsError, match="prepare.feature_transforms may hold only"):
        parse_params(p)


def test_generated_volume_leads_the_next_return_only_when_asked():
    for lead, low, high in ((0.0, -0.1, 0.1), (0.8, 0.55, 0.75)):
        bars = ohlcv(4000, 3, lead=lead)
        r = np.diff(np.log(bars["close"].to_numpy()))       # r[i]: into bar i + 1
        u = np.log(bars["volume"].to_numpy())
        corr = np.corrcoef(u[:-1][1:], r[1:])[0, 1]         # bar i's volume, next return
        assert low < corr < high, (lead, corr)
        assert (bars["high"] >= bars[["open", "close"]].max(axis=1)).all()
        assert (bars["low"] <= bars[["open", "close"]].min(axis=1)).all()
