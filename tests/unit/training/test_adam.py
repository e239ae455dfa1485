"""The project's Adam: torch's weights to the last bit, without importing torch._dynamo."""
import subprocess
import sys

import pytest
import torch
from torch import nn

from attn_forecast.training.adam import Adam


def _train(make_opt, steps=60, sched=False):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.LayerNorm(16), nn.ReLU(), nn.Linear(16, 3))
    opt = make_opt(model.parameters())
    lr_sched = torch.optim.lr_scheduler.StepLR(opt, step_size=10, gamma=0.5) if sched else None
    gen = torch.Generator().manual_seed(1)
    for _ in range(steps):
        x = torch.randn(32, 8, generator=gen)
        y = torch.randn(32, 3, generator=gen)
        opt.zero_grad(set_to_none=True)
        nn.functional.mse_loss(model(x), y).backward()
        opt.step()
        if lr_sched is not None:
            lr_sched.step()
    return [p.detach().clone() for p in model.parameters()]


@pytest.mark.parametrize("wd", [0.0, 1e-2])
@pytest.mark.parametrize("decoupled", [False, True])
@pytest.mark.parametrize("sched", [False, True])
def test_same_weights_as_torch(wd, decoupled, sched):
    ref_cls = torch.optim.AdamW if decoupled else torch.optim.Adam
    ours = _train(lambda ps: Adam(ps, lr=3e-3, weight_decay=wd, decoupled=decoupled),
                  sched=sched)
    ref = _train(lambda ps: ref_cls(ps, lr=3e-3, weight_decay=wd), sched=sched)
    assert all(torch.equal(a, b) for a, b in zip(ours, ref))
    assert not all(torch.equal(a, b) for a, b in
                   zip(ours, _train(lambda ps: Adam(ps, lr=3e-3, weight_decay=wd,
                                                     decoupled=decoupled), steps=59)))


def test_training_never_imports_the_compiler():
    code = ("import sys, torch\n"
            "from attn_forecast.training.adam import Adam\n"
            "m = torch.nn.Linear(4, 2)\n"
            "o = Adam(m.parameters(), lr=0.01)\n"
            "s = torch.optim.lr_scheduler.CosineAnnealingLR(o, T_max=3)\n"
            "for _ in range(3):\n"
            "    o.zero_grad(set_to_none=True); m(torch.ones(1, 4)).sum().backward(); o.step()\n"
            "    s.step()\n"
            "print('torch._dynamo' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.strip()
    assert out == "False"


def test_complex_weights_and_sparse_gradients_are_refused_by_name():
    w = nn.Parameter(torch.tensor([1 + 1j, 2 - 1j]))
    w.grad = torch.ones_like(w)
    with pytest.raises(TypeError, match="real weights with dense gradients"):
        Adam([w], lr=0.1).step()
    emb = nn.Embedding(4, 2, sparse=True)
    emb(torch.tensor([1])).sum().backward()
    with pytest.raises(TypeError, match="real weights with dense gradients"):
        Adam(emb.parameters(), lr=0.1).step()


def test_the_loop_takes_this_optimizer_on_a_cpu():
    from attn_forecast.training.loop import make_optimizer
    from attn_forecast.training.settings import TrainSettings
    opt = make_optimizer(nn.Linear(2, 1), TrainSettings(optimizer="adamw", weight_decay=0.1))
    assert type(opt) is Adam and opt.param_groups[0]["decoupled"]


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")
def test_the_loop_takes_torchs_optimizer_on_a_gpu():
    from attn_forecast.training.loop import make_optimizer
    from attn_forecast.training.settings import TrainSettings
    opt = make_optimizer(nn.Linear(2, 1).cuda(), TrainSettings(optimizer="adamw"))
    assert type(opt) is torch.optim.AdamW
