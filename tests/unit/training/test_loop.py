"""Unit tests for attn_forecast.training.loop: the loop on a store's window ends (one series
and a panel), early stopping, divergence, schedules, the optimizer, a quantile model,
predictions and Ctrl-C."""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import torch

from attn_forecast.errors import Diverged, Interrupted, UserInputError
from attn_forecast.model.networks import build_model
from attn_forecast.model.settings import ModelSettings
from attn_forecast.training.settings import TrainSettings
from attn_forecast.setup.keys import PARAMS_KEYS
from attn_forecast.progress import Progress
from attn_forecast.training.batches import to_device
from attn_forecast.training.loop import (evaluate_loss, fit_windows, make_optimizer, make_scheduler,
                                         predict)
from attn_forecast.training.losses import PinballLoss, make_loss
from attn_forecast.data.windows import gather
from unit.training.helpers import NO_VAL, W, _data, _p, _sine, _store

pytestmark = pytest.mark.usefixtures("one_torch_thread")


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
    cal = to_device(store, torch.device("cpu")).side
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


# ---------------------------------------------------------------- schedules, optimizer
def _lrs(params: TrainSettings, epochs: int) -> list[float]:
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
    assert make_scheduler(opt, TrainSettings()) is None


def test_step_schedule():
    got = _lrs(TrainSettings(lr=0.4, scheduler="step", step_size=3, gamma=0.5, epochs=10), 10)
    assert got == pytest.approx([0.4] * 3 + [0.2] * 3 + [0.1] * 3 + [0.05], rel=1e-12)


def test_cosine_schedule():
    E, lr = 8, 0.3
    got = _lrs(TrainSettings(lr=lr, scheduler="cosine", epochs=E), E + 1)
    # eta_t = eta_max (1 + cos(pi t / T_max)) / 2 with T_max = epochs
    exp = [lr * (1 + math.cos(math.pi * t / E)) / 2 for t in range(E + 1)]
    assert got == pytest.approx(exp, abs=1e-12)


def test_warmup_only():
    got = _lrs(TrainSettings(lr=0.4, warmup_epochs=3), 6)
    # linear from lr / (warmup + 1) up to lr over the warm-up epochs
    assert got == pytest.approx([0.1, 0.2, 0.3, 0.4, 0.4, 0.4], rel=1e-12)


def test_warmup_then_step():
    got = _lrs(TrainSettings(lr=0.3, warmup_epochs=2, scheduler="step", step_size=2, gamma=0.5,
                           epochs=20), 8)
    assert got == pytest.approx([0.1, 0.2, 0.3, 0.3, 0.15, 0.15, 0.075, 0.075], rel=1e-9)


def test_warmup_then_cosine():
    lr, w, E = 0.6, 2, 10
    got = _lrs(TrainSettings(lr=lr, warmup_epochs=w, scheduler="cosine", epochs=E), E)
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
    adam = make_optimizer(m, TrainSettings(lr=0.02, weight_decay=0.1))
    adamw = make_optimizer(m, TrainSettings(optimizer="adamw", lr=0.03))
    assert isinstance(adam, torch.optim.Optimizer)
    assert adam.param_groups[0]["decoupled"] is False and adamw.param_groups[0]["decoupled"]
    assert adam.param_groups[0]["lr"] == 0.02 and adam.param_groups[0]["weight_decay"] == 0.1
    assert adamw.param_groups[0]["weight_decay"] == 0.0
    assert len(adam.param_groups[0]["params"]) == len(list(m.parameters()))


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


# ---------------------------------------------------------------- predictions
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


def test_ctrl_c_names_the_epoch():
    z, tr, _, _ = _data(_store([_sine()]))
    m = _tiny()

    class Stop(Progress):
        def update(self, epoch, loss, val):
            if epoch == 4:
                raise KeyboardInterrupt

    with pytest.raises(Interrupted, match=r"^interrupted at epoch 4 of 50$"):
        fit_windows(m, z, tr, NO_VAL, _p(epochs=50), progress=Stop(50, enabled=False))
