"""Members of an ensemble that share a shape (the same settings: seeds, losses), trained as
one batched network: their weights stacked member by member (torch.func.stack_module_state),
one forward pass over all of them by torch.func.vmap, each member scored by its own loss, and
one optimizer over the stacked weights (Adam and AdamW act element by element, so each member
is stepped as it would be alone; a gradient clip is applied member by member). The one
training loop (loop.fit) trains it like any model::

    x (B, W) --vmap over K members--> (K, B, H) --member k's loss--> sum over k --> backward

Afterwards each member module gets its trained weights back (:meth:`Stacked.unstack`), and
the ensemble forecasts as before.

It trains a different ensemble than the loop that trains the members one after another
(members.py), so it is off unless asked for (``train_model(..., stack=True)``):

- every member sees the first member's batches in its order and its input noise (the loop:
  each member its own seed's); they differ only by their initial weights and their losses,
  so member 0 alone is the loop's member 0 (to float rounding: the explicit attention path);
- one early stop for the group: its validation score is the *sum* of its members' validation
  losses, losses of different scales where the members' losses differ, and they keep their
  best epoch and stop together (the loop: each member on its own loss);
- never measured on a GPU (bench/members.py measured it on a CPU: no faster there).
"""
from __future__ import annotations

import copy

import torch
from torch import nn
from torch.func import functional_call, stack_module_state, vmap

from .losses import PinballLoss


class Stacked(nn.Module):
    """K members of one architecture as one module: ``forward`` gives their forecasts
    (K, B, H) (or quantiles (K, B, H, Q)); ``members`` are the original modules."""

    def __init__(self, members: list[nn.Module]) -> None:
        super().__init__()
        params, buffers = stack_module_state(members)
        self.names = list(params)
        self.stacked = nn.ParameterList([nn.Parameter(params[k]) for k in self.names])
        self.buffer_names = list(buffers)
        for i, k in enumerate(self.buffer_names):
            self.register_buffer(f"buffer_{i}", buffers[k])
        base = copy.deepcopy(members[0]).to("meta")       # the architecture, without weights
        object.__setattr__(self, "_base", base)            # not a submodule: no parameters
        object.__setattr__(self, "_members", members)
        self.settings = members[0].settings
        self.k = len(members)

    def _state(self) -> tuple[dict, dict]:
        return ({k: p for k, p in zip(self.names, self.stacked)},
                {k: getattr(self, f"buffer_{i}") for i, k in enumerate(self.buffer_names)})

    def forward(self, x: torch.Tensor, need_weights: bool = False, cal: tuple | None = None,
                quantiles: bool = False, seen: torch.Tensor | None = None):
        params, buffers = self._state()

        def one(p: dict, b: dict) -> torch.Tensor:
            # need_weights: the explicit attention path (scaled_dot_product_attention has no
            # batching rule under vmap: its fallback loops over the members)
            return functional_call(self._base, (p, b), (x,),
                                   {"need_weights": True, "cal": cal, "quantiles": quantiles,
                                    "seen": seen})[0]
        return vmap(one, randomness="different")(params, buffers), None

    def clip_gradients(self, max_norm: float) -> None:
        """Each member's gradient clipped to ``max_norm`` on its own (as if trained alone)."""
        grads = [p.grad for p in self.stacked if p.grad is not None]
        if not grads:
            return
        norms = torch.sqrt(sum(g.pow(2).reshape(self.k, -1).sum(dim=1) for g in grads))
        factor = (max_norm / (norms + 1e-6)).clamp(max=1.0)
        for g in grads:
            g.mul_(factor.view(-1, *([1] * (g.dim() - 1))))

    def unstack(self) -> list[nn.Module]:
        """The member modules, each with its trained weights."""
        params, buffers = self._state()
        state = {**params, **buffers}
        for i, m in enumerate(self._members):   # (a buffer outside the state_dict: constant)
            m.load_state_dict({k: state[k][i].detach().clone() for k in m.state_dict()})
        return self._members


class StackedLoss(nn.Module):
    """The sum over members of each one's own loss of its forecasts (K, B, ...) against the
    targets (B, H): each member's gradient is that of its loss alone."""

    def __init__(self, losses: list[nn.Module]) -> None:
        super().__init__()
        self.losses = nn.ModuleList(losses)
        # a quantile head's members score its quantiles (the pinball loss), all alike
        self.quantiles = all(isinstance(fn, PinballLoss) for fn in losses)

    def forward(self, pred: torch.Tensor, y: torch.Tensor, sid=None, rows=None
                ) -> torch.Tensor:
        return sum(fn(pred[k], y, sid, rows) for k, fn in enumerate(self.losses))

    def per_member(self, pred: torch.Tensor, y: torch.Tensor, sid=None, rows=None
                   ) -> torch.Tensor:
        return torch.stack([fn(pred[k], y, sid, rows) for k, fn in enumerate(self.losses)])
