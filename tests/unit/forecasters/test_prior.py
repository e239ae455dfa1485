"""The prior in use: the defaults each kind of data resolves ``auto`` to, a prior cut to a
shorter horizon, zero-shot forecasts of windows shorter than the prior's context, and
fine-tuning that starts from the prior's weights."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from attn_forecast.model import checkpoint
from attn_forecast.data.build import build
from attn_forecast.forecasters.zeroshot import ZeroShot, load_prior
from attn_forecast.model.networks import build_model, with_horizon
from attn_forecast.model.settings import ModelSettings
from attn_forecast.config.load import parse_params
from attn_forecast.errors import ParamsError
from attn_forecast.config.profiles import profiles
from attn_forecast.data.long_table import Raw
from attn_forecast.forecasters.neural import ModelForecaster
from attn_forecast.training.batches import TrainData, rows_of
from attn_forecast.training.members import QUIET, train_model
from attn_forecast.setup.training import model_settings, prior

pytestmark = pytest.mark.usefixtures("one_torch_thread")

PRIOR = ModelSettings(window=32, horizon=6, d_model=16, n_heads=2, n_layers=1, ffn_dim=16,
                      patch_len=4, patch_stride=4, instance_norm="revin",
                      quantiles=(0.1, 0.5, 0.9))


def _prior(tmp_path, seed=0):
    torch.manual_seed(seed)
    model = build_model(PRIOR)
    path = tmp_path / "prior.pt"
    checkpoint.save(path, model, {"prepare": {}, "kind": "pretrained"})
    return model, str(path)


def _store(n=90, horizon=3, window=12, val=0.0, seed=0):
    rng = np.random.default_rng(seed)
    x = 10 + np.sin(np.arange(n) * 2 * np.pi / 7) + rng.normal(0, 0.2, n)
    raw = Raw(np.array(["s"]), np.array([0, n]), np.arange(n, dtype=np.float64), x,
              np.full(n, np.nan))
    return build(raw, window=window, horizon=horizon,
                   fracs={"test": 0.2, "val": val, "cal": 0.0}, scaler="zscore",
                   transform="none", time_features=())


# ---------------------------------------------------------------- defaults by kind of data
def test_the_builtin_sine_keeps_its_own_settings_and_a_csv_gets_the_real_ones():
    sine = parse_params({})
    csv = parse_params({"data": {"kind": "csv", "csv_path": "x.csv"}})
    assert sine == parse_params({"data": {"kind": "sine"}})     # the schema's defaults
    for key, value in profiles()["real"].items():
        sec, name = key.split(".")
        got = getattr(getattr(csv, sec), name)
        assert got == value or (isinstance(value, list) and list(got) == value), key
    assert (csv.train.init, csv.train.patience, csv.prepare.val_frac) == ("pretrained", 10, 0.1)
    assert "zeroshot" in csv.evaluate.baselines and "zeroshot" not in sine.evaluate.baselines


def test_a_competition_keeps_every_point_of_its_short_series_for_training(tmp_path):
    """Without the competition pipeline's settings (an empty project), the competition
    profile: the real one, every point of a short series for training."""
    p = parse_params({"data": {"kind": "competition"}}, root=tmp_path)
    assert (p.prepare.val_frac, p.train.patience, p.train.init) == (0.0, 0, "pretrained")
    assert p.prepare.horizon == "auto"               # the competition's horizon, at prepare
    # with them, the subset's settings (chosen on its validation cut)
    from conftest import ROOT
    m = parse_params({"data": {"kind": "competition", "subset": "monthly"}}, root=ROOT)
    assert (m.train.init, m.train.loss, m.prepare.window, m.model.pooling) == \
        ("scratch", "smape", 36, "flatten")


def test_a_value_the_user_sets_wins_over_the_profile():
    p = parse_params({"data": {"kind": "csv", "csv_path": "x.csv"},
                      "train": {"init": "scratch", "lr": 0.01}})
    assert (p.train.init, p.train.lr, p.train.patience) == ("scratch", 0.01, 10)


@pytest.mark.parametrize("raw", [{"prepare": {"time_features": ["dayofweek"]}},
                                 {"model": {"lookbacks": [16, 32]}}])
def test_auto_init_trains_from_scratch_where_the_prior_cannot_read_the_inputs(raw):
    p = parse_params({"data": {"kind": "csv", "csv_path": "x.csv"}, **raw})
    assert p.train.init == "scratch"


def test_pretrained_with_calendar_features_names_the_keys():
    with pytest.raises(ParamsError, match="prepare.time_features needs train.init scratch"):
        parse_params({"data": {"kind": "csv", "csv_path": "x.csv"},
                      "prepare": {"time_features": ["month"]}, "train": {"init": "pretrained"}})


# ---------------------------------------------------------------- the prior on a user's data
def test_a_shorter_horizon_keeps_the_first_steps_of_the_prior():
    torch.manual_seed(0)
    full = build_model(PRIOR).eval()
    short = with_horizon(full, 2).eval()
    x = torch.randn(5, PRIOR.window)
    with torch.no_grad():
        a, b = full(x, quantiles=True)[0], short(x, quantiles=True)[0]
    assert b.shape == (5, 2, 3)
    torch.testing.assert_close(b, a[:, :2])


def test_a_longer_horizon_extends_the_head_with_copies_of_its_last_step():
    torch.manual_seed(0)
    full = build_model(PRIOR).eval()
    H = PRIOR.horizon
    longer = with_horizon(full, H + 4).eval()
    x = torch.randn(5, PRIOR.window)
    with torch.no_grad():
        a, b = full(x, quantiles=True)[0], longer(x, quantiles=True)[0]
    assert b.shape == (5, H + 4, 3)
    torch.testing.assert_close(b[:, :H], a)
    for k in range(H, H + 4):           # a flat continuation until fine-tuning learns more
        torch.testing.assert_close(b[:, k], a[:, H - 1])


def test_the_prior_fine_tunes_at_a_horizon_longer_than_its_own(tmp_path):
    _, path = _prior(tmp_path)
    model = prior(path, _store(horizon=8))
    assert model.settings.horizon == 8


def test_zero_shot_past_the_priors_horizon_rolls_the_median_forward(tmp_path):
    model, path = _prior(tmp_path)
    H = model.settings.horizon
    rolled = load_prior(path, H + 2).eval()
    x = torch.randn(4, PRIOR.window)
    with torch.no_grad():
        q = rolled(x, quantiles=True)[0]
        first = model.eval()(x, quantiles=True)[0]
        mid = list(PRIOR.quantiles).index(0.5)
        nxt = model(torch.cat([x, first[..., mid]], dim=1)[:, -PRIOR.window:],
                    quantiles=True)[0]
    assert q.shape == (4, H + 2, 3)
    torch.testing.assert_close(q[:, :H], first)
    torch.testing.assert_close(q[:, H:], nxt[:, :2])
    store = _store(horizon=H + 2)
    fc = ZeroShot(path).forecast(store, store.ends("test"), levels=(0.1, 0.9))
    assert fc.point.shape[1] == H + 2 and np.isfinite(fc.quantiles).all()


def test_zero_shot_reads_the_priors_context_padded_before_the_series_start(tmp_path):
    model, path = _prior(tmp_path)
    store = _store(window=12)            # the store's windows: 12 steps; the prior's: 32
    ends = store.ends("test")
    fc = ZeroShot(path).forecast(store, ends, levels=(0.1, 0.9))
    assert fc.point.shape == (len(ends), 3) and np.isfinite(fc.point).all()
    assert fc.quantiles.shape == (len(ends), 3, 2)
    assert (fc.quantiles[..., 0] <= fc.quantiles[..., 1] + 1e-9).all()
    # a window of the first steps of the series is padded: still finite, never an error
    early = store.ends("train")[:2]
    assert np.isfinite(ZeroShot(path).forecast(store, early).point).all()
    # levels the prior has not: read off its own, between them and past the outermost
    m = ModelForecaster(with_horizon(model, 3))
    own = m.forecast(store, ends, (0.1, 0.5, 0.9)).quantiles
    got = m.forecast(store, ends, (0.05, 0.1, 0.5, 0.9, 0.95)).quantiles
    np.testing.assert_allclose(got[..., 1:4], own, rtol=1e-12)
    assert (got[..., 0] <= own[..., 0]).all() and (got[..., 4] >= own[..., 2]).all()


def test_fine_tuning_starts_from_the_prior_and_leaves_it_untouched(tmp_path):
    model, path = _prior(tmp_path)
    store = _store(val=0.15)
    from attn_forecast.config.load import parse_params as pp
    p = pp({"data": {"kind": "csv", "csv_path": "x.csv"}})
    settings = model_settings(p, store, season=7, prior_path=path)
    assert (settings.window, settings.horizon, settings.d_model) == (32, 3, 16)
    start = prior(path, store)
    before = {k: v.clone() for k, v in start.state_dict().items()}
    z = torch.from_numpy(np.asarray(store.z))
    tr, va = (torch.from_numpy(store.ends(k)) for k in ("train", "val"))
    from attn_forecast.training.settings import TrainSettings

    def tune(**kw):
        p = TrainSettings(**{"epochs": 2, "ensemble": 1, "augment_noise": 0.0, **kw})
        return train_model(settings, TrainData(z, tr, va, rows=rows_of(store, "cpu")), p,
                           QUIET, init=start)[0]
    for k, v in tune(lr=1e-9).state_dict().items():   # a step of nothing: the prior's weights
        torch.testing.assert_close(v, before[k])
    tuned = tune(lr=1e-2)
    assert any(not torch.equal(v, before[k]) for k, v in tuned.state_dict().items())
    for k, v in start.state_dict().items():     # the prior itself is copied, not trained
        torch.testing.assert_close(v, before[k])


def test_fine_tuning_that_never_helps_on_validation_returns_the_prior(tmp_path):
    model, path = _prior(tmp_path)
    store = _store(val=0.15)
    p = parse_params({"data": {"kind": "csv", "csv_path": "x.csv"}})
    settings = model_settings(p, store, season=7, prior_path=path)
    start = prior(path, store)
    before = {k: v.clone() for k, v in start.state_dict().items()}
    z = torch.from_numpy(np.asarray(store.z))
    tr, va = (torch.from_numpy(store.ends(k)) for k in ("train", "val"))
    from attn_forecast.training.settings import TrainSettings
    # a learning rate that wrecks the weights: every epoch is worse than the start
    tp = TrainSettings(epochs=3, ensemble=1, augment_noise=0.0, lr=50.0, patience=0)
    tuned, res = train_model(settings, TrainData(z, tr, va, rows=rows_of(store, "cpu")),
                             tp, QUIET, init=start)
    assert res[0].best_epoch == 0 and len(res[0].history) == 3
    for k, v in tuned.state_dict().items():
        torch.testing.assert_close(v, before[k])
