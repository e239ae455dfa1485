"""An ensemble's members trained as one batched network (training/stacked.py) against the
loop path that trains them one by one (what ``stack="auto"`` trains): member 0 alike, the
others on member 0's batches and noise, one early stop on the summed validation losses; each
member's gradient by its own loss; the median rule; the plan of members (lookbacks x losses x
seeds); the checkpoint keeps how they combine."""
from __future__ import annotations

from dataclasses import replace

import copy

import numpy as np
import pytest
import torch

from attn_forecast.training.settings import TrainSettings
from attn_forecast.data.build import build
from attn_forecast.data.long_table import Raw
from attn_forecast.model import checkpoint
from attn_forecast.model.networks import Ensemble, build_model
from attn_forecast.model.settings import ModelSettings
from attn_forecast.data.windows import gather
from attn_forecast.training.batches import to_device
from attn_forecast.training.loop import evaluate_loss, fit_windows
from attn_forecast.training.losses import make_loss
from attn_forecast.training.members import QUIET, Job, plan, train_model
from attn_forecast.training.stacked import Stacked, StackedLoss

pytestmark = pytest.mark.usefixtures("one_torch_thread")

W = 8


def _store(n_series=3, n=120, seed=0):
    rs = np.random.default_rng(seed)
    t = np.arange(n)
    series = [50 + 10 * np.sin(2 * np.pi * t / 12 + k) + rs.normal(0, 1, n)
              for k in range(n_series)]
    offsets = np.r_[0, np.cumsum([n] * n_series)].astype(np.int64)
    raw = Raw(np.array([f"s{k}" for k in range(n_series)]), offsets,
              np.tile(t.astype(float), n_series), np.concatenate(series),
              np.full(n * n_series, np.nan))
    return build(raw, window=W, horizon=3, fracs={"test": 0.2, "val": 0.1, "cal": 0.0},
                 scaler="none", transform="none")


def _p(**kw) -> TrainSettings:
    return TrainSettings(**{"augment_noise": 0.0, "ensemble": 1, "epochs": 4, "lr": 0.01,
                          "batch_size": 32, **kw})


def test_the_plan_is_lookbacks_by_losses_by_seeds_each_with_its_own_seed():
    a, b = ModelSettings(window=12), ModelSettings(window=6)
    got = plan([a, b], _p(ensemble=2, seed=5), ("smape", "mase"))
    assert [(s.window, loss, seed) for s, loss, seed in got] == [
        (12, "smape", 5), (12, "smape", 6), (12, "mase", 7), (12, "mase", 8),
        (6, "smape", 9), (6, "smape", 10), (6, "mase", 11), (6, "mase", 12)]
    assert [(s.window, loss) for s, loss, _ in plan(a, _p(loss="mae"))] == [(12, "mae")]


@pytest.mark.parametrize("heads", [1, 2])
@pytest.mark.parametrize("losses", [(), ("mse", "huber", "mae")])
def test_a_stacked_members_gradient_is_its_own_loss_alone(losses, heads):
    """One batch through the stacked members: each member's forecasts and the gradient of
    its weights equal that member's own (built from its seed) under its own loss alone.
    (Losses with a kink, such as MAE, flip a gradient's sign where float rounding moves a
    forecast across the target: they agree to a looser tolerance. MKL, whose kernels are not
    pinned, takes other paths for the batched product on some CPUs (seen: AMX-capable Intel
    Xeons, forecasts 1e-4 and gradients 1e-3 apart; equal under MKL_CBWR=COMPATIBLE): hence
    the looser tolerances, still far below what a member mixed up with another would be off
    by.)"""
    store = _store()
    data = to_device(store, torch.device("cpu"))
    s = ModelSettings(window=W, horizon=3, d_model=8, ffn_dim=16, n_heads=heads)
    p = _p(ensemble=2, seed=3, loss="mse")
    members = plan(s, p, losses)
    alone = []
    for s_i, _, seed in members:
        torch.manual_seed(seed)
        alone.append(build_model(s_i))
    stacked = Stacked([copy.deepcopy(m) for m in alone])
    loss = StackedLoss([make_loss(name, ()) for _, name, _ in members])
    ends = data.train[:40]
    x, y = gather(data.z, ends, W, 3)
    sid = data.rows.sid(ends)
    pred = stacked(x)[0]                                      # (K, B, H)
    loss(pred, y, sid, data.rows).backward()
    grads = dict(zip(stacked.names, (q.grad for q in stacked.stacked)))
    for k, (m, (_, name, _)) in enumerate(zip(alone, members)):
        out = m(x, need_weights=True)[0]     # the explicit attention path, as stacked takes
        torch.testing.assert_close(pred[k].detach(), out.detach(), rtol=1e-3, atol=1e-4)
        make_loss(name, ())(out, y, sid, data.rows).backward()
        for key, q in m.named_parameters():
            scale = float(q.grad.abs().max()) + 1e-12
            tol = 5e-3 if name != "mae" else 5e-2
            torch.testing.assert_close(grads[key][k] / scale, q.grad / scale, rtol=0,
                                       atol=tol)


def _forecasts(model, data) -> list[torch.Tensor]:
    x, _ = gather(data.z, data.train, W, 3)
    with torch.no_grad():
        return [m(x)[0] for m in model.members]


def _close(a: torch.Tensor, b: torch.Tensor, y: torch.Tensor) -> bool:
    """Alike to float rounding: a mean difference under 1 % of the forecasts' mean error."""
    return float((a - b).abs().mean()) < 0.01 * float((b - y).abs().mean())


@pytest.mark.parametrize("ensemble,losses", [(2, ()), (1, ("mse", "huber"))])
def test_stacked_members_against_the_loop_path(ensemble, losses):
    """The real loop path (``stack=False``; ``"auto"`` trains the same bits) against the
    stacked one, the same two members (seeds 3 and 4), input noise on, no validation. Member
    0 takes the same batches and noise both ways: alike to float rounding (stacked takes the
    explicit attention path). Member 1 does not: stacked gives it member 0's batch order and
    noise (seed 3's, the loop its own seed 4's), so it is the loop's member 1 trained on seed
    3's batches, not the loop path's member 1. (A smooth loss: under sMAPE on raw levels a
    change of 1e-7 in the initial weights alone sends training down another path.)"""
    store = _store()
    data = to_device(store, torch.device("cpu"))
    s = ModelSettings(window=W, horizon=3, d_model=8, ffn_dim=16, n_heads=2)
    p = _p(ensemble=ensemble, seed=3, loss="mse", max_steps=12, augment_noise=0.1)
    none = torch.zeros(0, dtype=torch.int64)
    kw = dict(losses=losses)
    runs = {stack: train_model(s, replace(data, val=none), p, QUIET, stack=stack, **kw)[0]
            for stack in (True, False, "auto")}
    assert all(isinstance(m, Ensemble) for m in runs.values())
    for a, b in zip(runs[False].state_dict().values(), runs["auto"].state_dict().values()):
        assert torch.equal(a, b)                                 # auto: the loop
    _, y = gather(data.z, data.train, W, 3)
    stacked, loop = _forecasts(runs[True], data), _forecasts(runs[False], data)
    assert _close(stacked[0], loop[0], y)                          # member 0: the same
    (s1, loss1, seed1), first = plan(s, p, losses)[1], plan(s, p, losses)[0][2]
    torch.manual_seed(seed1)
    alone = build_model(s1)                 # member 1 in the loop on member 0's batches
    fit_windows(alone, data.z, data.train, none, replace(p, seed=first, loss=loss1),
                rows=data.rows, progress=False)
    with torch.no_grad():
        on_first = alone(gather(data.z, data.train, W, 3)[0])[0]
    assert _close(stacked[1], on_first, y)
    far, near = ((stacked[1] - b).abs().mean() for b in (loop[1], on_first))
    assert far > 100 * near                          # not the loop path's member 1
    assert not torch.allclose(stacked[0], stacked[1])


@pytest.mark.parametrize("device", ["cpu", pytest.param("cuda", marks=pytest.mark.skipif(
    not torch.cuda.is_available(), reason="no CUDA device"))])
def test_auto_never_stacks_and_a_bad_value_is_refused(monkeypatch, device):
    """``stack="auto"`` is the loop on every device (it stacked on CUDA before): the batched
    network is never built; a value other than True, False and "auto" is one line."""
    from attn_forecast.training import members

    def refuse(*args, **kwargs):
        raise AssertionError("stack='auto' built the batched network")
    monkeypatch.setattr(members, "Stacked", refuse)
    data = to_device(_store(), torch.device(device))
    s = ModelSettings(window=W, horizon=3, d_model=8, ffn_dim=16)
    model, _ = train_model(s, data, _p(ensemble=2, epochs=1), QUIET)
    assert isinstance(model, Ensemble) and len(model.members) == 2
    with pytest.raises(ValueError, match="stack must be True, False or 'auto', got 'yes'"):
        train_model(s, data, _p(ensemble=2, epochs=1), QUIET, stack="yes")


def test_stacked_members_stop_together_on_their_summed_validation_losses():
    """With a validation part, the stacked group keeps one best epoch for all its members,
    chosen on the sum of their validation losses (here MSE and MAE, of different scales): the
    history's validation loss at that epoch is the sum of each member's own loss there."""
    store = _store(seed=2)
    data = to_device(store, torch.device("cpu"))
    s = ModelSettings(window=W, horizon=3, d_model=8, ffn_dim=16)
    p = _p(seed=1, epochs=6, lr=0.02, patience=2)
    model, results = train_model(s, data, p, QUIET, losses=("mse", "mae"), stack=True)
    best = results[0].best_epoch
    assert best >= 1 and {r.best_epoch for r in results} == {best}
    own = [evaluate_loss(m, data.z, data.val, W, 3, make_loss(name, ()),
                         rows=data.rows) for m, name in zip(model.members, ("mse", "mae"))]
    assert own[0] > 3 * own[1]                           # losses of different scales
    summed = results[0].history[best - 1]["val_loss"]
    assert summed == pytest.approx(sum(own), rel=1e-4)
    assert summed != pytest.approx(sum(own) / 2, rel=0.1)                # not their mean


def test_the_median_rule_and_a_checkpoint_that_keeps_it(tmp_path):
    torch.manual_seed(0)
    s = ModelSettings(window=W, horizon=2, d_model=8, ffn_dim=16)
    ens = build_model(s, members=4, combine="median")
    x = torch.randn(5, W)
    with torch.no_grad():
        outs = torch.stack([m(x)[0] for m in ens.members])
        want = (outs.sort(dim=0).values[1] + outs.sort(dim=0).values[2]) / 2
        torch.testing.assert_close(ens(x)[0], want)
        assert not torch.allclose(want, outs.mean(dim=0))
    checkpoint.save(tmp_path / "m.pt", ens, {"prepare": {}})
    back = checkpoint.model_from(checkpoint.read(tmp_path / "m.pt"))
    assert back.combine == "median"
    with torch.no_grad():
        torch.testing.assert_close(back(x)[0], ens(x)[0])


def test_stacked_training_is_deterministic_and_the_history_is_the_groups():
    store = _store(seed=1)
    data = to_device(store, torch.device("cpu"))
    s = ModelSettings(window=W, horizon=3, d_model=8, ffn_dim=16)
    p = _p(ensemble=3, seed=0)
    seen = []
    a, ra = train_model(s, data, p, Job(progress=False, on_epoch=seen.append), stack=True)
    b, _ = train_model(s, data, p, QUIET, stack=True)
    for x, y in zip(a.state_dict().values(), b.state_dict().values()):
        assert torch.equal(x, y)
    assert seen == ra[0].history and len(seen) == 4 and ra[0].history == ra[2].history
