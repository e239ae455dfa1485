"""Unit tests for attn_forecast.train, progress, runtime and wiring_torch: the loop on a store's
window ends (one series and a panel), early stopping, divergence, schedules, augmentation,
the loss, predictions, the model as a forecaster, seed ensembles, progress lines, Ctrl-C,
thread and memory choices, the model settings and device from params, and a backtest fold."""
from __future__ import annotations

import io
import shutil
import math

import numpy as np
import pandas as pd
import pytest
import torch

from attn_forecast.model import checkpoint
from attn_forecast.forecasters.run import run
from attn_forecast.forecasters.saved import load
from attn_forecast.training.distributed import Distributed
from attn_forecast.training.threads import (MAX_AUTO_THREADS, PARALLEL_FLOPS, activation_bytes,
                                           choose_threads, full_batch_warning, step_flops)
from attn_forecast.data import splits
from attn_forecast.pipeline.model import device
from attn_forecast.pipeline.fold_training import train_fold
from attn_forecast.pipeline.model import model_settings
from attn_forecast.data.build import build
from attn_forecast.data.store import Store
from attn_forecast.data.store_io import save
from attn_forecast.errors import Diverged, Interrupted, UserInputError
from attn_forecast.model.networks import Ensemble, build_model
from attn_forecast.model.settings import ModelSettings
from attn_forecast.config.load import parse_params
from attn_forecast.config.schema import TrainParams
from attn_forecast.errors import ParamsError
from attn_forecast.pipeline.keys import PARAMS_KEYS
from attn_forecast.progress import Progress
from attn_forecast.data.long_table import Raw
from attn_forecast.forecasters.neural import ModelForecaster
from attn_forecast.training.batches import augment, move_unit, to_device
from attn_forecast.training.loop import (evaluate_loss, fit_windows, make_optimizer, make_scheduler,
                                         predict)
from attn_forecast.training.members import train_model
from attn_forecast.training.losses import PinballLoss, make_loss
from attn_forecast.data.windows import gather, gather_side

pytestmark = pytest.mark.usefixtures("one_torch_thread")

W = 8
NO_VAL = torch.zeros(0, dtype=torch.int64)


def _raw(series: list[np.ndarray], t=None, ids=None) -> Raw:
    offsets = np.r_[0, np.cumsum([len(s) for s in series])].astype(np.int64)
    levels = np.concatenate(series).astype(np.float64)
    if t is None:
        t = np.concatenate([np.arange(len(s), dtype=np.float64) for s in series])
    ids = np.array(ids or [f"s{i}" for i in range(len(series))])
    return Raw(ids, offsets, t, levels, np.full(len(levels), np.nan))


def _store(series, *, horizon=1, test=0.2, val=0.0, transform="none", window=W,
           time_features=(), t=None) -> Store:
    return build(_raw(series, t), window=window, horizon=horizon,
                   fracs={"test": test, "val": val, "cal": 0.0}, scaler="zscore",
                   transform=transform, time_features=tuple(time_features))


def _sine(n=160, noise=0.1, seed=0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return np.sin(np.linspace(0, 6 * np.pi, n)) + rng.normal(0, noise, n)


def _data(store: Store) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    z = torch.from_numpy(np.asarray(store.z))
    return (z, *(torch.from_numpy(store.ends(p)) for p in ("train", "val", "test")))


def _p(**kw) -> TrainParams:
    """Training settings without input noise (params.yaml's 0.3) unless asked for."""
    return TrainParams(**{"augment_noise": 0.0, "ensemble": 1, **kw})


def _tiny(seed=0, **kw):
    torch.manual_seed(seed)
    kw = {"d_model": 8, "ffn_dim": 16, **kw}
    return build_model(ModelSettings(window=W, **kw))


# ---------------------------------------------------------------- the loop
def test_fit_reduces_loss_full_batch():
    z, tr, _, te = _data(_store([_sine()]))
    m = _tiny()
    loss_fn = make_loss("mse")
    before = evaluate_loss(m, z, tr, W, 1, loss_fn)
    rows = []
    res = fit_windows(m, z, tr, NO_VAL, _p(epochs=60, lr=0.01), progress=False,
              on_epoch=rows.append)
    assert len(res.history) == 60 and rows == res.history
    assert res.best_epoch == 60 and res.seconds > 0 and res.windows_per_s > 0
    assert res.history[-1]["train_loss"] < 0.3 * res.history[0]["train_loss"]
    after = evaluate_loss(m, z, tr, W, 1, loss_fn)
    assert after < 0.3 * before
    # the model learned the sine: better than predicting zero on the test windows too
    _, y = gather(z, te, W, 1)
    assert evaluate_loss(m, z, te, W, 1, loss_fn) < float((y ** 2).mean())


def test_fit_minibatch_mode_and_horizon():
    z, tr, _, _ = _data(_store([_sine()], horizon=3))
    m = _tiny(horizon=3)
    p = _p(epochs=12, lr=0.01, batch_size=16, seed=1)
    res = fit_windows(m, z, tr, NO_VAL, p, progress=False)
    losses = [h["train_loss"] for h in res.history]
    assert len(losses) == 12 and all(math.isfinite(v) for v in losses)
    assert losses[-1] < 0.5 * losses[0]
    assert [h["epoch"] for h in res.history] == list(range(1, 13))
    # same seed, same run
    m2 = _tiny(horizon=3)
    res2 = fit_windows(m2, z, tr, NO_VAL, p, progress=False)
    assert [h["train_loss"] for h in res2.history] == losses


@pytest.mark.parametrize("bs", [0, 16, 7])
@pytest.mark.parametrize("calendar", [False, True])
def test_epoch_loss_is_mean_over_all_training_windows(bs, calendar):
    # with a negligible lr the weights do not move, so each epoch's loss must equal the
    # loss of the untouched model over every training window (last batch smaller when
    # the window count is not a multiple of the batch size); with calendar inputs too
    t = pd.date_range("2024-01-01", periods=160, freq="h").to_numpy("datetime64[s]")
    store = _store([_sine()], time_features=("hour",) if calendar else (), t=t)
    z, tr, _, _ = _data(store)
    cal = to_device(store, torch.device("cpu"))["side"]
    assert (cal is not None) == calendar
    assert len(tr) % 16 and len(tr) % 7
    m = _tiny(n_time_features=store.n_time_features)
    before = evaluate_loss(m, z, tr, W, 1, make_loss("mse"), cal=cal)
    res = fit_windows(m, z, tr, NO_VAL, _p(epochs=2, lr=1e-12, batch_size=bs), progress=False,
              cal=cal)
    for h in res.history:
        assert h["train_loss"] == pytest.approx(before, rel=1e-5)


def test_minibatch_differs_from_full_batch():
    z, tr, _, _ = _data(_store([_sine()]))
    a, b = _tiny(), _tiny()
    initial = evaluate_loss(a, z, tr, W, 1, make_loss("mse"))
    ra = fit_windows(a, z, tr, NO_VAL, _p(epochs=3, lr=0.01), progress=False)
    rb = fit_windows(b, z, tr, NO_VAL, _p(epochs=3, lr=0.01, batch_size=8), progress=False)
    # full batch: epoch 1 reports the untrained model's loss (one update, after the forward)
    assert ra.history[0]["train_loss"] == pytest.approx(initial, rel=1e-5)
    # mini-batches: many updates within epoch 1 already lower its mean loss
    assert rb.history[0]["train_loss"] < ra.history[0]["train_loss"]
    assert rb.history[-1]["train_loss"] < ra.history[-1]["train_loss"]


def test_early_stopping_restores_best_weights():
    # noise only: the validation loss stops improving quickly while training overfits
    noise = np.random.default_rng(0).normal(size=200)
    z, tr, va, _ = _data(_store([noise], test=0.2, val=0.2))
    m = _tiny(seed=1, d_model=16, ffn_dim=64)
    p = _p(epochs=400, lr=0.02, patience=5)
    res = fit_windows(m, z, tr, va, p, progress=False)
    vals = [h["val_loss"] for h in res.history]
    assert len(res.history) < 400  # stopped early
    assert res.best_epoch > 1
    best = int(np.argmin(vals))
    assert res.best_epoch == best + 1
    assert len(res.history) == res.best_epoch + p.patience
    # the model now holds the best epoch's weights, not the last epoch's
    now = evaluate_loss(m, z, va, W, 1, make_loss("mse"))
    assert now == pytest.approx(vals[best], rel=1e-6, abs=1e-7)
    assert vals[-1] > vals[best]
    assert now != pytest.approx(vals[-1], rel=1e-6)


def test_validation_without_patience_runs_all_epochs_and_restores_best():
    noise = np.random.default_rng(2).normal(size=150)
    z, tr, va, _ = _data(_store([noise], test=0.2, val=0.2))
    m = _tiny(seed=2, d_model=16, ffn_dim=64)
    res = fit_windows(m, z, tr, va, _p(epochs=40, lr=0.02), progress=False)
    vals = [h["val_loss"] for h in res.history]
    assert len(vals) == 40
    assert res.best_epoch == int(np.argmin(vals)) + 1
    assert evaluate_loss(m, z, va, W, 1, make_loss("mse")) == pytest.approx(
        min(vals), rel=1e-6, abs=1e-7)


def test_huge_lr_diverges_with_a_user_error_naming_the_lr():
    z, tr, _, _ = _data(_store([_sine()]))
    m = build_model(ModelSettings(window=W))
    torch.manual_seed(0)
    with pytest.raises(Diverged) as info:
        fit_windows(m, z, tr, NO_VAL, _p(epochs=50, lr=1e6), progress=False)
    assert isinstance(info.value, UserInputError)
    assert str(info.value).startswith(f"training diverged at epoch {info.value.epoch} (loss ")
    # the stage's one line names the settings to change
    msg = str(info.value.named(PARAMS_KEYS))
    assert msg.startswith("training diverged at epoch") and "lower train.lr" in msg
    assert "train.grad_clip" in msg


def test_non_finite_series_raises_at_epoch_one():
    store = _store([_sine()])
    z, tr, _, _ = _data(store)
    z = z.clone()
    z[20] = float("inf")
    with pytest.raises(Diverged, match=r"^training diverged at epoch 1 \("):
        fit_windows(_tiny(), z, tr, NO_VAL, _p(epochs=5), progress=False)


# ---------------------------------------------------------------- schedules, optimizer, loss
def _lrs(params: TrainParams, epochs: int) -> list[float]:
    """The lr of each epoch as fit records it: read before the epoch, step after."""
    w = torch.nn.Parameter(torch.zeros(1))
    opt = torch.optim.SGD([w], lr=params.lr)
    sched = make_scheduler(opt, params)
    out = []
    for _ in range(epochs):
        out.append(opt.param_groups[0]["lr"])
        opt.step()
        if sched is not None:
            sched.step()
    return out


def test_no_scheduler_is_none():
    opt = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=0.1)
    assert make_scheduler(opt, TrainParams()) is None


def test_step_schedule():
    got = _lrs(TrainParams(lr=0.4, scheduler="step", step_size=3, gamma=0.5, epochs=10), 10)
    assert got == pytest.approx([0.4] * 3 + [0.2] * 3 + [0.1] * 3 + [0.05], rel=1e-12)


def test_cosine_schedule():
    E, lr = 8, 0.3
    got = _lrs(TrainParams(lr=lr, scheduler="cosine", epochs=E), E + 1)
    # eta_t = eta_max (1 + cos(pi t / T_max)) / 2 with T_max = epochs
    exp = [lr * (1 + math.cos(math.pi * t / E)) / 2 for t in range(E + 1)]
    assert got == pytest.approx(exp, abs=1e-12)


def test_warmup_only():
    got = _lrs(TrainParams(lr=0.4, warmup_epochs=3), 6)
    # linear from lr / (warmup + 1) up to lr over the warm-up epochs
    assert got == pytest.approx([0.1, 0.2, 0.3, 0.4, 0.4, 0.4], rel=1e-12)


def test_warmup_then_step():
    got = _lrs(TrainParams(lr=0.3, warmup_epochs=2, scheduler="step", step_size=2, gamma=0.5,
                           epochs=20), 8)
    assert got == pytest.approx([0.1, 0.2, 0.3, 0.3, 0.15, 0.15, 0.075, 0.075], rel=1e-9)


def test_warmup_then_cosine():
    lr, w, E = 0.6, 2, 10
    got = _lrs(TrainParams(lr=lr, warmup_epochs=w, scheduler="cosine", epochs=E), E)
    T = E - w
    exp = [lr / 3, 2 * lr / 3] + [lr * (1 + math.cos(math.pi * j / T)) / 2 for j in range(T)]
    assert got == pytest.approx(exp, abs=1e-9)


def test_fit_records_scheduled_lr():
    z, tr, _, _ = _data(_store([_sine(80)]))
    res = fit_windows(_tiny(), z, tr, NO_VAL, _p(epochs=5, lr=0.01, scheduler="step",
                                                  step_size=2, gamma=0.1), progress=False)
    assert [h["lr"] for h in res.history] == pytest.approx([0.01, 0.01, 0.001, 0.001, 0.0001])


def test_optimizer_kind_and_weight_decay():
    m = _tiny()
    adam = make_optimizer(m, TrainParams(lr=0.02, weight_decay=0.1))
    adamw = make_optimizer(m, TrainParams(optimizer="adamw", lr=0.03))
    assert type(adam) is torch.optim.Adam and type(adamw) is torch.optim.AdamW
    assert adam.param_groups[0]["lr"] == 0.02 and adam.param_groups[0]["weight_decay"] == 0.1
    assert adamw.param_groups[0]["weight_decay"] == 0.0
    assert len(adam.param_groups[0]["params"]) == len(list(m.parameters()))


def test_losses():
    assert type(make_loss("mse").loss) is torch.nn.MSELoss
    assert type(make_loss("mae").loss) is torch.nn.L1Loss
    assert type(make_loss("huber").loss) is torch.nn.HuberLoss
    pin = make_loss("mse", (0.1, 0.5, 0.9))
    assert isinstance(pin, PinballLoss)
    # y = 1; quantiles 0, 1, 2: 0.1 * 1, 0, max(0.9 * -1, -0.1 * -1) = 0.1 -> mean 0.2 / 3
    q = torch.tensor([[[0.0, 1.0, 2.0]]])
    assert float(pin(q, torch.tensor([[1.0]]))) == pytest.approx(0.2 / 3)
    # the constant minimizing the pinball loss at tau is the tau-quantile of the targets
    y = torch.arange(1.0, 11.0)[:, None]                    # 1 .. 10: F(7) < 0.75 < F(8)
    one = PinballLoss([0.75])
    losses = {c: float(one(torch.full((10, 1, 1), float(c)), y)) for c in range(1, 11)}
    assert min(losses, key=losses.get) == 8


def test_a_quantile_model_trains_on_the_pinball_loss():
    z, tr, va, _ = _data(_store([_sine(200, noise=0.3)], val=0.2))
    m = _tiny(quantiles=(0.1, 0.5, 0.9))
    res = fit_windows(m, z, tr, va, _p(epochs=30, lr=0.01), progress=False)
    assert res.history[-1]["train_loss"] < res.history[0]["train_loss"]
    q = predict(m, z, va, W, 1, quantiles=True)
    _, y = gather(z, va, W, 1)
    best = res.history[res.best_epoch - 1]["val_loss"]
    assert float(PinballLoss((0.1, 0.5, 0.9))(q, y)) == pytest.approx(best, rel=1e-5)
    assert (q[..., 0] <= q[..., 1]).all() and (q[..., 1] <= q[..., 2]).all()


# ---------------------------------------------------------------- predictions, augmentation
def test_predict_matches_direct_call_and_batches():
    z, tr, _, _ = _data(_store([_sine()]))
    m = _tiny().eval()
    x, _ = gather(z, tr, W, 1)
    with torch.no_grad():
        direct = m(x)[0]
    assert torch.allclose(predict(m, z, tr, W, 1, batch=7), direct, atol=1e-6)
    assert predict(m, z, tr[:0], W, 1).shape == (0, 1)
    q = _tiny(quantiles=(0.1, 0.5, 0.9))
    assert predict(q, z, tr[:0], W, 1, quantiles=True).shape == (0, 1, 3)
    # bf16 autocast: the same forecasts to bf16's precision, returned as float32
    half = predict(m, z, tr, W, 1, precision="bf16")
    assert half.dtype == torch.float32 and torch.allclose(half, direct, atol=0.05)


def test_augment_scale_shift_apply_to_inputs_and_targets_alike():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(50, 6, generator=g)
    y = torch.randn(50, 2, generator=g)
    p = TrainParams(augment_scale=0.2, augment_shift=0.5, augment_noise=0.0)
    xa, ya = augment(x, y, p, torch.Generator().manual_seed(1))
    # per window: xa = x * s + b and ya = y * s + b with one (s, b)
    for i in range(50):
        s = (xa[i, 1] - xa[i, 0]) / (x[i, 1] - x[i, 0])
        b = xa[i, 0] - x[i, 0] * s
        assert 0.8 - 1e-4 <= s <= 1.2 + 1e-4 and -0.5 - 1e-4 <= b <= 0.5 + 1e-4
        assert torch.allclose(xa[i], x[i] * s + b, atol=1e-4)
        assert torch.allclose(ya[i], y[i] * s + b, atol=1e-4)
    noisy = TrainParams(augment_noise=0.1)
    xn, yn = augment(x, y, noisy, torch.Generator().manual_seed(1))
    assert torch.equal(yn, y) and not torch.equal(xn, x)
    assert 0.07 < float((xn - x).std()) < 0.13
    # unit: the shift and the noise in other units (train.augment_units moves)
    xu, _ = augment(x, y, noisy, torch.Generator().manual_seed(1), unit=3.0)
    assert torch.allclose(xu - x, (xn - x) * 3.0, atol=1e-5)
    xs, ys = augment(x, y, TrainParams(augment_shift=0.5, augment_noise=0.0),
                     torch.Generator().manual_seed(1), unit=0.01)
    assert float((xs - x).abs().max()) <= 0.005 + 1e-6 and torch.allclose(
        ys - y, (xs - x)[:, :2], atol=1e-6)
    none_x, none_y = augment(x, y, TrainParams(augment_noise=0.0), torch.Generator())
    assert torch.equal(none_x, x) and torch.equal(none_y, y)


def test_move_unit_on_a_panel_sees_only_changes_inside_training_windows():
    """train.augment_units moves: the std of the one-step changes inside the training
    windows; on a panel never a change across two series, nor one after a series' training
    part (a single series: its training windows' whole span)."""
    rs = np.random.default_rng(7)
    series = [np.cumsum(rs.normal(0, s, n)) for s, n in ((1.0, 50), (5.0, 64), (0.2, 40))]
    H = 2
    store = _store(series, horizon=H, val=0.1)
    z = torch.from_numpy(np.asarray(store.z))
    ends = store.ends("train")
    rows = sorted({r for e in ends for r in range(e - W + 1, e + H)})
    zz = np.asarray(store.z, dtype=np.float64)
    want = np.std(zz[rows] - zz[np.array(rows) - 1], ddof=1)
    got = move_unit(z, torch.from_numpy(ends), W, H)
    assert got == pytest.approx(want, rel=1e-12)
    changed = [s.copy() for s in series]
    changed[1][int(store.cuts.val_start[1]):] *= 3        # after series 1's training part
    other = _store(changed, horizon=H, val=0.1)
    assert move_unit(torch.from_numpy(np.asarray(other.z)), torch.from_numpy(ends), W, H) \
        == got
    one = torch.from_numpy(np.asarray(store.z[store.rows(2)]))
    e1 = torch.arange(W, 30)
    assert move_unit(one, e1, W, H) == pytest.approx(
        float(np.std(np.diff(one[:29 + H].double().numpy()), ddof=1)), rel=1e-12)


# ---------------------------------------------------------------- the model as a forecaster
def test_to_device_holds_what_training_reads():
    t = pd.date_range("2024-01-01", periods=200, freq="D").to_numpy("datetime64[s]")
    store = _store([_sine(90), _sine(110, seed=1)], val=0.1, time_features=("dayofweek",),
                   t=t)
    got = to_device(store, torch.device("cpu"))
    assert got["z"].dtype == torch.float32 and np.array_equal(got["z"].numpy(), store.z)
    assert np.array_equal(got["side"].numpy(), store.side) and got["side"].shape[1] == 2
    for part in ("train", "val"):
        assert np.array_equal(got[part].numpy(), store.ends(part))
    assert to_device(_store([_sine()]), torch.device("cpu"))["side"] is None


@pytest.mark.parametrize("transform", ["none", "diff", "log_return"])
def test_model_forecaster_gives_each_window_in_its_series_levels(transform):
    rs = np.random.default_rng(1)
    series = [100 * np.exp(np.cumsum(rs.normal(0, 0.02, n))) for n in (60, 75)]
    store = _store(series, horizon=2, transform=transform)
    torch.manual_seed(0)
    m = build_model(ModelSettings(window=W, horizon=2, d_model=8, ffn_dim=8)).eval()
    f = ModelForecaster(m)
    assert f.fit(store) == [] and f.name == "model"
    ends = store.ends("test")
    got = f.forecast(store, ends)
    assert got.quantiles is None and got.members is None and got.point.shape == (len(ends), 2)
    for k, e in enumerate(ends):                       # window by window, by hand
        i = int(np.searchsorted(store.offsets, e, side="right") - 1)
        lv = series[i]
        a = int(store.offsets[i])
        e_loc = int(e) - a
        steps = {"none": lv, "diff": np.r_[0, np.diff(lv)],
                 "log_return": np.r_[0, np.diff(np.log(lv))]}[transform]
        c, s = store.scalers.center[i], store.scalers.scale[i]
        x = torch.tensor((steps[e_loc - W:e_loc] - c) / s, dtype=torch.float32)[None]
        with torch.no_grad():
            y = m(x)[0][0].double().numpy() * s + c
        want = {"none": y, "diff": lv[e_loc - 1] + np.cumsum(y),
                "log_return": lv[e_loc - 1] * np.exp(np.cumsum(y))}[transform]
        np.testing.assert_allclose(got.point[k], want, rtol=1e-5)


def test_model_forecaster_of_an_ensemble_and_a_quantile_head():
    store = _store([_sine(), _sine(120, seed=3) * 4 + 2], horizon=2, transform="diff")
    ends = store.ends("test")
    torch.manual_seed(0)
    ens = build_model(ModelSettings(window=W, horizon=2, d_model=8, ffn_dim=8), members=3)
    got = ModelForecaster(ens).forecast(store, ends)
    assert got.members.shape == (3, len(ends), 2)
    for j, member in enumerate(ens.members):
        np.testing.assert_allclose(got.members[j],
                                   ModelForecaster(member).forecast(store, ends).point)
    # diff and its scaler are linear: the mean forecast is the members' mean in levels
    np.testing.assert_allclose(got.point, got.members.mean(axis=0), rtol=1e-5)
    torch.manual_seed(1)
    q = build_model(ModelSettings(window=W, horizon=2, d_model=8, ffn_dim=8,
                                  quantiles=(0.1, 0.5, 0.9)))
    qf = ModelForecaster(q).forecast(store, ends, taus=(0.1, 0.5, 0.9))
    assert qf.quantiles.shape == (len(ends), 2, 3)
    np.testing.assert_allclose(qf.quantiles[..., 1], qf.point, rtol=1e-6)
    # the train stage's path: run over the parts it scores
    fs = run(store, [ModelForecaster(q)], ("test",), (0.1, 0.5, 0.9), season=0)
    np.testing.assert_array_equal(fs.ends["test"], ends)
    np.testing.assert_allclose(fs.forecasts["model"]["test"].point, qf.point)


# ---------------------------------------------------------------- seed ensembles
def test_ensemble_members_seeds_mean_and_determinism():
    z, tr, _, te = _data(_store([_sine()]))
    s = ModelSettings(window=W, d_model=8, ffn_dim=16)
    p = _p(epochs=5, lr=0.01, seed=7)
    single, res1 = train_model(s, z, tr, NO_VAL, p, torch.device("cpu"), progress=False)
    assert len(res1) == 1 and not isinstance(single, Ensemble)
    seen = []
    # one member after another (stack=False): each with its own seed's batches
    ens, results = train_model(s, z, tr, NO_VAL, p.model_copy(update={"ensemble": 3}),
                               torch.device("cpu"), progress=False, on_epoch=seen.append,
                               stack=False)
    assert isinstance(ens, Ensemble) and len(ens.members) == 3 and len(results) == 3
    assert seen == results[0].history                  # the first member's epochs only
    # member 0 is exactly the single model; the others start from seeds 8 and 9
    for a, b in zip(single.state_dict().values(), ens.members[0].state_dict().values()):
        assert torch.equal(a, b)
    other, _ = train_model(s, z, tr, NO_VAL, p.model_copy(update={"seed": 8}),
                           torch.device("cpu"), progress=False)
    for a, b in zip(other.state_dict().values(), ens.members[1].state_dict().values()):
        assert torch.equal(a, b)
    x, _ = gather(z, te, W, 1)
    with torch.no_grad():
        mean = torch.stack([m(x)[0] for m in ens.members]).mean(dim=0)
        assert torch.allclose(ens(x)[0], mean)
    again, _ = train_model(s, z, tr, NO_VAL, p.model_copy(update={"ensemble": 3}),
                           torch.device("cpu"), progress=False, stack=False)
    for a, b in zip(ens.state_dict().values(), again.state_dict().values()):
        assert torch.equal(a, b)                                    # deterministic


# ---------------------------------------------------------------- progress and Ctrl-C
class _FakeClock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def test_progress_quiet_for_short_runs_then_one_line_every_few_seconds():
    clock, out = _FakeClock(), io.StringIO()
    bar = Progress(100, tty=False, after=3.0, every=5.0, stream=out, clock=clock)
    for epoch in range(1, 101):
        clock.now = epoch * 0.5  # half a second an epoch: 50 s in all
        bar.update(epoch, 1.0 / epoch, None)
    bar.close()
    lines = out.getvalue().splitlines()
    # quiet for the first 3 s, then a line every 5 s, and the last epoch always
    assert lines[0].startswith("train: epoch 6/100")
    epochs = [int(ln.split()[2].split("/")[0]) for ln in lines]
    assert epochs == [6, 16, 26, 36, 46, 56, 66, 76, 86, 96, 100]
    assert "0:03 elapsed, 0:47 left" in lines[0]  # ETA from the pace so far
    assert all("\r" not in ln for ln in lines)


def test_progress_on_a_terminal_overwrites_one_line():
    clock, out = _FakeClock(), io.StringIO()
    bar = Progress(10, tty=True, after=0.0, stream=out, clock=clock)
    for epoch in range(1, 11):
        clock.now = float(epoch)
        bar.update(epoch, 0.5, 0.25)
    bar.close()
    text = out.getvalue()
    assert text.count("\r") == 10 and text.endswith("\n") and "val 0.25000" in text


def test_progress_inside_one_long_epoch():
    clock, out = _FakeClock(), io.StringIO()
    bar = Progress(1, tty=False, after=3.0, every=5.0, stream=out, clock=clock)
    for b in range(1, 21):                      # one epoch of 20 batches, 2 s each
        clock.now = 2.0 * b
        bar.batch(1, 100 * b, 2000)
    bar.update(1, 0.5, None)
    lines = out.getvalue().splitlines()
    assert lines[0].startswith("train: epoch 1/1, 200/2,000 windows")
    assert "0:04 elapsed, 0:36 left" in lines[0]
    # a line at 4, 10, 16, 22, 28 and 34 s (every 5 s at most), and the end of the epoch
    assert len(lines) == 7 and lines[-1].startswith("train: epoch 1/1  loss 0.50000")


def test_progress_shows_hours_and_stays_quiet_when_disabled():
    clock, out = _FakeClock(), io.StringIO()
    bar = Progress(2, tty=False, after=0.0, stream=out, clock=clock)
    clock.now = 3725.0                          # 1 h 2 min 5 s for the first of two epochs
    bar.update(1, 0.1, None)
    assert "1:02:05 elapsed, 1:02:05 left" in out.getvalue()
    quiet = io.StringIO()
    off = Progress(2, enabled=False, after=0.0, stream=quiet, clock=clock)
    off.update(2, 0.1, None)
    off.close()
    assert quiet.getvalue() == ""


def test_the_eta_counts_the_epochs_max_steps_leaves_and_says_when_it_is_a_bound(capsys):
    from attn_forecast.training.loop import planned_epochs
    # 200 epochs of 10 steps with max_steps 50: five epochs run, so the ETA is for five
    assert planned_epochs(_p(epochs=200, max_steps=50), 10) == 5
    assert planned_epochs(_p(epochs=200, max_steps=0), 10) == 200
    clock, out = _FakeClock(), io.StringIO()
    bar = Progress(5, tty=False, after=0.0, stream=out, clock=clock, at_most=True)
    clock.now = 2.0
    bar.update(1, 0.1, 0.2)
    assert out.getvalue().rstrip().endswith("0:02 elapsed, 0:08 left at most")


def test_ctrl_c_names_the_epoch():
    z, tr, _, _ = _data(_store([_sine()]))
    m = _tiny()

    class Stop(Progress):
        def update(self, epoch, loss, val):
            if epoch == 4:
                raise KeyboardInterrupt

    with pytest.raises(Interrupted, match=r"^interrupted at epoch 4 of 50$"):
        fit_windows(m, z, tr, NO_VAL, _p(epochs=50), progress=Stop(50, enabled=False))


# ---------------------------------------------------------------- runtime: threads, memory
def test_threads_by_the_size_of_a_step():
    small = step_flops(ModelSettings(), 256)          # the default model
    assert small < PARALLEL_FLOPS
    assert choose_threads("auto", small, n_cores=16) == 1
    big = step_flops(ModelSettings(window=336, d_model=128, n_layers=4), 1024)
    assert big >= PARALLEL_FLOPS
    assert choose_threads("auto", big, n_cores=16) == MAX_AUTO_THREADS
    assert choose_threads("auto", big, n_cores=2) == 2
    assert choose_threads(3, small, n_cores=16) == 3
    assert step_flops(ModelSettings(), 512) == pytest.approx(2 * small)


def test_full_batch_warning_only_for_a_full_batch_too_big():
    s = ModelSettings(window=96, d_model=64)
    need = activation_bytes(s, 100_000)
    assert need == pytest.approx(1000 * activation_bytes(s, 100))   # linear in batch
    msg = full_batch_warning(s, 100_000, 100_000, limit=need / 2)
    assert msg.startswith("warning: a full batch of 100,000 windows needs about")
    assert "set train.batch_size" in msg
    assert full_batch_warning(s, 100_000, 256, limit=need / 2) is None  # mini-batches
    assert full_batch_warning(s, 100_000, 100_000, limit=need * 2) is None


def test_a_single_process_without_compile_trains_the_bare_model():
    one = Distributed(0, 1, torch.device("cpu"))
    assert one.wrapper(False) is None
    one.close()                                          # nothing to tear down


# ---------------------------------------------------------------- wiring_torch
def _with_calendar_and_features() -> Store:
    rs = np.random.default_rng(0)
    levels = 10 + np.cumsum(rs.normal(size=120))
    t = pd.date_range("2024-01-01", periods=120, freq="D").to_numpy("datetime64[s]")
    raw = Raw(np.array(["x"]), np.array([0, 120]), t, levels, np.full(120, np.nan),
              rs.uniform(1, 2, (120, 3)), ("a", "b", "c"))
    return build(raw, window=14, horizon=3, fracs={"test": 0.2, "val": 0.0, "cal": 0.0},
                   scaler="zscore", transform="none", time_features=("dayofweek", "month"))


def test_model_settings_from_params_and_the_prepared_data():
    store = _with_calendar_and_features()
    p = parse_params({"model": {"d_model": 16, "n_heads": 2, "quantiles": [0.1, 0.5, 0.9],
                                "pooling": "last"}})
    s = model_settings(p, store, season=7)
    assert (s.window, s.horizon, s.n_time_features, s.n_features) == (14, 3, 4, 3)
    assert (s.d_model, s.n_heads, s.pooling, s.quantiles) == (16, 2, "last", (0.1, 0.5, 0.9))
    assert s.season == 0                                 # only a seasonal norm reads it
    seasonal = parse_params({"model": {"instance_norm": "seasonal"}})
    got = model_settings(seasonal, store, season=7)
    assert (got.instance_norm, got.season) == ("seasonal", 7)
    none = model_settings(seasonal, store, season=0)
    assert (none.instance_norm, none.season) == ("last", 0)   # no season: the last value
    build_model(got)(torch.zeros(2, 14), cal=(torch.zeros(2, 14, 7), torch.zeros(2, 3, 7)))


def test_training_device_and_the_settings_it_cannot_run(monkeypatch):
    assert device(parse_params({"train": {"device": "cpu"}}).train).type == "cpu"
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert device(parse_params({}).train) == torch.device("cpu")
    with pytest.raises(ParamsError, match="train.device is cuda but no CUDA device"):
        device(parse_params({"train": {"device": "cuda"}}).train)
    monkeypatch.setattr(shutil, "which", lambda name: None)
    with pytest.raises(ParamsError, match="train.compile on CPU needs a C/C.. compiler"):
        device(parse_params({"train": {"compile": True}}).train)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    assert device(parse_params({}).train) == torch.device("cuda")
    with pytest.raises(ParamsError, match="train.nproc is 2 but only 1 CUDA device"):
        device(parse_params({"train": {"nproc": 2}}).train)


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


def test_the_side_inputs_training_reads_are_the_stores_rows():
    store = _with_calendar_and_features()
    data = to_device(store, torch.device("cpu"))
    e = data["train"][:4]
    cin, cout = gather_side(data["side"], e, 14, 3)
    for k, end in enumerate(e.tolist()):
        assert np.array_equal(cin[k].numpy(), store.side[end - 14:end])
        assert np.array_equal(cout[k].numpy(), store.side[end:end + 3])


def test_progress_counts_forecasters_fitted():
    clock, out = _FakeClock(), io.StringIO()
    bar = Progress(4, tty=False, after=3.0, every=5.0, stream=out, clock=clock,
                   what="baselines: forecasters fitted")
    for k, (name, seconds) in enumerate([("naive", 0.1), ("ets", 6.0), ("theta", 12.0),
                                         ("arima", 30.0)], 1):
        clock.now = seconds
        bar.step(k, name)
    lines = out.getvalue().splitlines()
    # quiet while fast, then which are done and how long the rest may take; the last always
    assert lines[0] == "baselines: forecasters fitted 2/4 (ets)  0:06 elapsed, 0:06 left"
    assert lines[-1].startswith("baselines: forecasters fitted 4/4 (arima)  0:30 elapsed")
    assert len(lines) == 3


def test_watch_sees_the_first_member_after_each_epoch_and_may_end_the_run():
    """A search's hook: called with the epoch's row and the member itself (so it can score
    it); raising from it ends training there (a pruned trial)."""
    z, tr, _, _ = _data(_store([_sine()]))
    s = ModelSettings(window=W, d_model=8, ffn_dim=16)
    p = _p(epochs=4, lr=0.01, seed=7)
    seen, rows = [], []

    def watch(row, member):
        seen.append((row["epoch"], member))

    model, res = train_model(s, z, tr, NO_VAL, p, torch.device("cpu"), progress=False,
                             on_epoch=rows.append, watch=watch)
    assert [e for e, _ in seen] == [1, 2, 3, 4] and all(m is model for _, m in seen)
    assert rows == res[0].history                     # on_epoch still sees every row

    class Stop(Exception):
        pass

    def prune(row, member):
        if row["epoch"] == 2:
            raise Stop

    with pytest.raises(Stop):
        train_model(s, z, tr, NO_VAL, p.model_copy(update={"ensemble": 2}),
                    torch.device("cpu"), progress=False, watch=prune)
