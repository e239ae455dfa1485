"""Adam and AdamW as torch computes them on a CPU, without torch's compiler package.

Every ``torch.optim`` optimizer's ``step`` (and its ``add_param_group``, ``zero_grad``) first
imports ``torch._dynamo``, whose import is a large share of every training process's start
(bench/README.md): of a small experiment's train stage, and of what each
search trial pays around its work. This optimizer is a ``torch.optim.Optimizer`` (torch's
learning-rate schedulers drive it as they drive torch's), whose update is torch's
single-tensor Adam, the path torch takes for tensors on a CPU, op for op: the same weights to
the last bit (tests/unit/training/test_adam.py checks it against ``torch.optim.Adam`` and
``AdamW``). It has no amsgrad, maximize, foreach or fused variants, and refuses complex
weights and sparse gradients: the project uses none. On a GPU, where the import is small beside
the device's start and torch's multi-tensor update launches fewer kernels, the training loop
takes torch's own (loop.make_optimizer). It reads torch's undecorated ``add_param_group`` and
``zero_grad`` (``__wrapped__``), as torch 2.13 (pinned) defines them.
"""
from __future__ import annotations

import torch
from torch.optim import Optimizer


class Adam(Optimizer):
    """Adam (``decoupled=False``: weight decay added to the gradient) or AdamW (``True``:
    the weights shrunk by ``lr * weight_decay`` before the update)."""

    # the base class's own methods, without the wrapper that imports torch._dynamo first
    add_param_group = Optimizer.add_param_group.__wrapped__
    zero_grad = Optimizer.zero_grad.__wrapped__

    def __init__(self, params, lr: float, weight_decay: float = 0.0,
                 decoupled: bool = False, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8) -> None:
        super().__init__(params, {"lr": lr, "betas": betas, "eps": eps,
                                  "weight_decay": weight_decay, "decoupled": decoupled})

    @torch.no_grad()
    def step(self, closure=None):
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        scalar = torch.float64 if torch.get_default_dtype() == torch.float64 else torch.float32
        for group in self.param_groups:
            beta1, beta2 = group["betas"]
            lr, wd, eps = group["lr"], group["weight_decay"], group["eps"]
            for param in group["params"]:
                if param.grad is None:
                    continue
                state = self.state[param]
                if not state:
                    state["step"] = torch.tensor(0.0, dtype=scalar)
                    state["exp_avg"] = torch.zeros_like(param,
                                                        memory_format=torch.preserve_format)
                    state["exp_avg_sq"] = torch.zeros_like(param,
                                                           memory_format=torch.preserve_format)
                if param.grad.is_sparse or torch.is_complex(param):
                    raise TypeError("training.adam.Adam takes real weights with dense "
                                    "gradients; use torch.optim.Adam for others")
                grad, exp_avg, exp_avg_sq = param.grad, state["exp_avg"], state["exp_avg_sq"]
                state["step"] += 1
                if wd != 0:
                    if group["decoupled"]:
                        param.mul_(1 - lr * wd)
                    else:
                        grad = grad.add(param, alpha=wd)
                exp_avg.lerp_(grad, 1 - beta1)
                exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
                step = state["step"].item()
                bias_correction1 = 1 - beta1 ** step
                bias_correction2 = 1 - beta2 ** step
                step_size = lr / bias_correction1
                denom = (exp_avg_sq.sqrt() / bias_correction2 ** 0.5).add_(eps)
                param.addcdiv_(exp_avg, denom, value=-step_size)
        return loss
