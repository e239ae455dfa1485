"""Unit tests for attn_forecast.train: the loop, early stopping, divergence, schedules."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from attn_forecast.errors import Interrupted, UserInputError
from attn_forecast.model import ModelSettings, build_model
from attn_forecast.params import TrainParams
from attn_forecast.train import (
    Progress, augment, evaluate_loss, fit, make_loss, make_scheduler, predict, select_device,
)
from attn_forecast.windows import gather_windows, make_split

W = 8


pytestmark = pytest.mark.usefixtures("one_torch_thread")


def _series(n=160, noise=0.1, seed=0):
    rng = np.random.default_rng(seed)
    x = np.sin(np.linspace(0, 6 * np.pi, n)) + rng.normal(0, noise, n)
    return torch.tensor(x, dtype=torch.float32)


def _tiny(seed=0, **kw):
    torch.manual_seed(seed)
    kw = {"d_model": 8, "ffn_dim": 16, **kw}
    return build_model(ModelSettings(window=W, **kw))


def _ends(n, h=1, tf=0.2, vf=0.0):
    s = make_split(n, W, h, tf, vf)
    return (torch.from_numpy(s.ends("train")), torch.from_numpy(s.ends("val")),
            torch.from_numpy(s.ends("test")))


NO_VAL = torch.zeros(0, dtype=torch.int64)


def test_fit_reduces_loss_full_batch():
    z = _series()
    tr, _, te = _ends(len(z))
    m = _tiny()
    loss_fn = make_loss("mse")
    before = evaluate_loss(m, z, tr, W, 1, loss_fn)
    res = fit(m, z, tr, NO_VAL, W, 1, TrainParams(epochs=60, lr=0.01), progress=False)
    assert len(res.history) == 60
    assert res.best_epoch == 60
    assert res.history[-1]["train_loss"] < 0.3 * res.history[0]["train_loss"]
    after = evaluate_loss(m, z, tr, W, 1, loss_fn)
    assert after < 0.3 * before
    # the model learned the sine: better than predicting zero on the test windows too
    _, y = gather_windows(z, te, W, 1)
    assert evaluate_loss(m, z, te, W, 1, loss_fn) < float((y ** 2).mean())


def test_fit_minibatch_mode_and_horizon():
    z = _series()
    tr, _, _ = _ends(len(z), h=3)
    m = _tiny(horizon=3)
    p = TrainParams(epochs=12, lr=0.01, batch_size=16, seed=1)
    res = fit(m, z, tr, NO_VAL, W, 3, p, progress=False)
    losses = [h["train_loss"] for h in res.history]
    assert len(losses) == 12 and all(math.isfinite(v) for v in losses)
    assert losses[-1] < 0.5 * losses[0]
    assert [h["epoch"] for h in res.history] == list(range(1, 13))
    # same seed, same run
    m2 = _tiny(horizon=3)
    res2 = fit(m2, z, tr, NO_VAL, W, 3, p, progress=False)
    assert [h["train_loss"] for h in res2.history] == losses


@pytest.mark.parametrize("bs", [0, 16, 7])
def test_epoch_loss_is_mean_over_all_training_windows(bs):
    # with a negligible lr the weights do not move, so each epoch's loss must equal the
    # loss of the untouched model over every training window (last batch smaller when
    # the window count is not a multiple of the batch size)
    z = _series()
    tr, _, _ = _ends(len(z))
    assert len(tr) % 16 and len(tr) % 7
    m = _tiny()
    before = evaluate_loss(m, z, tr, W, 1, make_loss("mse"))
    res = fit(m, z, tr, NO_VAL, W, 1, TrainParams(epochs=2, lr=1e-12, batch_size=bs),
              progress=False)
    for h in res.history:
        assert h["train_loss"] == pytest.approx(before, rel=1e-5)


def test_minibatch_differs_from_full_batch():
    z = _series()
    tr, _, _ = _ends(len(z))
    a, b = _tiny(), _tiny()
    initial = evaluate_loss(a, z, tr, W, 1, make_loss("mse"))
    ra = fit(a, z, tr, NO_VAL, W, 1, TrainParams(epochs=3, lr=0.01), progress=False)
    rb = fit(b, z, tr, NO_VAL, W, 1, TrainParams(epochs=3, lr=0.01, batch_size=8),
             progress=False)
    # full batch: epoch 1 reports the untrained model's loss (one update, after the forward)
    assert ra.history[0]["train_loss"] == pytest.approx(initial, rel=1e-5)
    # mini-batches: many updates within epoch 1 already lower its mean loss
    assert rb.history[0]["train_loss"] < ra.history[0]["train_loss"]
    assert rb.history[-1]["train_loss"] < ra.history[-1]["train_loss"]


def test_early_stopping_restores_best_weights():
    # noise only: the validation loss stops improving quickly while training overfits
    g = torch.Generator().manual_seed(0)
    z = torch.randn(200, generator=g)
    tr, va, _ = _ends(len(z), tf=0.2, vf=0.2)
    m = _tiny(seed=1, d_model=16, ffn_dim=64)
    p = TrainParams(epochs=400, lr=0.02, patience=5)
    res = fit(m, z, tr, va, W, 1, p, progress=False)
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
    g = torch.Generator().manual_seed(2)
    z = torch.randn(150, generator=g)
    tr, va, _ = _ends(len(z), tf=0.2, vf=0.2)
    m = _tiny(seed=2, d_model=16, ffn_dim=64)
    res = fit(m, z, tr, va, W, 1, TrainParams(epochs=40, lr=0.02), progress=False)
    vals = [h["val_loss"] for h in res.history]
    assert len(vals) == 40
    assert res.best_epoch == int(np.argmin(vals)) + 1
    assert evaluate_loss(m, z, va, W, 1, make_loss("mse")) == pytest.approx(
        min(vals), rel=1e-6, abs=1e-7)


def test_huge_lr_diverges_with_user_error():
    z = _series()
    tr, _, _ = _ends(len(z))
    m = build_model(ModelSettings(window=W))
    torch.manual_seed(0)
    with pytest.raises(UserInputError) as info:
        fit(m, z, tr, NO_VAL, W, 1, TrainParams(epochs=50, lr=1e6), progress=False)
    msg = str(info.value)
    assert "epoch" in msg and "train.lr" in msg and "1000000.0" in msg


def test_non_finite_series_raises_at_epoch_one():
    z = _series()
    z[20] = float("inf")
    tr, _, _ = _ends(len(z))
    with pytest.raises(UserInputError, match=r"epoch 1\b.*train\.lr"):
        fit(_tiny(), z, tr, NO_VAL, W, 1, TrainParams(epochs=5), progress=False)


# ---------------------------------------------------------------- schedules
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
    z = _series(80)
    tr, _, _ = _ends(len(z))
    res = fit(_tiny(), z, tr, NO_VAL, W, 1,
              TrainParams(epochs=5, lr=0.01, scheduler="step", step_size=2, gamma=0.1),
              progress=False)
    assert [h["lr"] for h in res.history] == pytest.approx([0.01, 0.01, 0.001, 0.001, 0.0001])


# ---------------------------------------------------------------- helpers
def test_predict_matches_direct_call_and_batches():
    z = _series()
    tr, _, _ = _ends(len(z))
    m = _tiny().eval()
    x, _ = gather_windows(z, tr, W, 1)
    with torch.no_grad():
        direct = m(x)[0]
    assert torch.allclose(predict(m, z, tr, W, 1, batch=7), direct, atol=1e-6)
    assert predict(m, z, tr[:0], W, 1).shape == (0, 1)


def test_augment_scale_shift_apply_to_inputs_and_targets_alike():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(50, 6, generator=g)
    y = torch.randn(50, 2, generator=g)
    p = TrainParams(augment_scale=0.2, augment_shift=0.5)
    xa, ya = augment(x, y, p, torch.Generator().manual_seed(1))
    # per window: xa = x * s + b and ya = y * s + b with one (s, b)
    for i in range(50):
        s = (xa[i, 1] - xa[i, 0]) / (x[i, 1] - x[i, 0])
        b = xa[i, 0] - x[i, 0] * s
        assert 0.8 - 1e-4 <= s <= 1.2 + 1e-4 and -0.5 - 1e-4 <= b <= 0.5 + 1e-4
        assert torch.allclose(xa[i], x[i] * s + b, atol=1e-4)
        assert torch.allclose(ya[i], y[i] * s + b, atol=1e-4)
    xn, yn = augment(x, y, TrainParams(augment_noise=0.1), torch.Generator().manual_seed(1))
    assert torch.equal(yn, y) and not torch.equal(xn, x)
    assert 0.07 < float((xn - x).std()) < 0.13


def test_select_device():
    assert select_device("cpu") == torch.device("cpu")
    if not torch.cuda.is_available():
        assert select_device("auto") == torch.device("cpu")
        with pytest.raises(UserInputError, match="cuda"):
            select_device("cuda")


# ---------------------------------------------------------------- progress and Ctrl-C
class _FakeClock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def test_progress_quiet_for_short_runs_then_one_line_every_few_seconds():
    import io
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
    import io
    clock, out = _FakeClock(), io.StringIO()
    bar = Progress(10, tty=True, after=0.0, stream=out, clock=clock)
    for epoch in range(1, 11):
        clock.now = float(epoch)
        bar.update(epoch, 0.5, 0.25)
    bar.close()
    text = out.getvalue()
    assert text.count("\r") == 10 and text.endswith("\n") and "val 0.25000" in text


def test_ctrl_c_names_the_epoch():
    z = _series()
    tr, _, _ = _ends(len(z))
    m = _tiny()

    class Stop(Progress):
        def update(self, epoch, loss, val):
            if epoch == 4:
                raise KeyboardInterrupt

    with pytest.raises(Interrupted, match=r"^interrupted at epoch 4 of 50$"):
        fit(m, z, tr, NO_VAL, W, 1, TrainParams(epochs=50), progress=Stop(50, enabled=False))


# ---------------------------------------------------------------- seed ensembles
def test_ensemble_members_seeds_mean_and_determinism(tmp_path):
    from attn_forecast.model import Ensemble, ModelSettings, load_checkpoint, save_checkpoint
    from attn_forecast.train import train_model
    z = _series()
    tr, _, te = _ends(len(z))
    s = ModelSettings(window=W, d_model=8, ffn_dim=16)
    p = TrainParams(epochs=5, lr=0.01, seed=7)
    single, _ = train_model(s, z, tr, NO_VAL, p, torch.device("cpu"), progress=False)
    ens, results = train_model(s, z, tr, NO_VAL, p.model_copy(update={"ensemble": 3}),
                               torch.device("cpu"), progress=False)
    assert isinstance(ens, Ensemble) and len(ens.members) == 3 and len(results) == 3
    # member 0 is exactly the single model; the others start from seeds 8 and 9
    for a, b in zip(single.state_dict().values(), ens.members[0].state_dict().values()):
        assert torch.equal(a, b)
    assert not torch.equal(ens.members[0].embedding.weight, ens.members[1].embedding.weight)
    x, _ = gather_windows(z, te, W, 1)
    with torch.no_grad():
        mean = torch.stack([m(x)[0] for m in ens.members]).mean(dim=0)
        assert torch.allclose(ens(x)[0], mean)
    again, _ = train_model(s, z, tr, NO_VAL, p.model_copy(update={"ensemble": 3}),
                           torch.device("cpu"), progress=False)
    for a, b in zip(ens.state_dict().values(), again.state_dict().values()):
        assert torch.equal(a, b)                                    # deterministic
    save_checkpoint(tmp_path / "e.pt", ens, {})
    loaded, payload = load_checkpoint(tmp_path / "e.pt")
    assert payload["members"] == 3 and isinstance(loaded, Ensemble)
    with torch.no_grad():
        assert torch.equal(loaded(x)[0], ens.eval()(x)[0])


def test_progress_inside_one_long_epoch():
    import io
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
