"""Forecasters: the source's Q/K/V attention predictor (and its deeper variants), an LSTM and
an MLP (the ablations: the same loop, norms and head, only the network differs).

Each maps a window (B, W) of scaled values to the next H values (B, H). The model settings are
plain data, saved in the checkpoint beside the ``state_dict``.

Attention model, with the defaults being the source's model (5,313 parameters)::

    x (B, W) -> [instance norm] -> tokens -> Linear(P + C, d) -> + positions
             -> [block] x n_layers -> pool -> head -> [undo instance norm] -> (B, H)
    tokens: one per step (P = 1, the source), or patches of P steps every S steps (PatchTST)
    block, residual off:  x = attn(x)                     (the source: no norm, no skip)
    block, residual on:   x = x + attn(LN(x));  x = x + FFN(LN(x))          (pre-norm)
    head:  Linear(d + H * C, ffn_dim) -> ReLU -> Linear(ffn_dim, H)
    highway (optional): + Linear(W, H) of the (normalized) window, added to the head's output

Instance norm (``instance_norm``, norms.py; ``none`` or one of five): ``revin`` normalizes
each window by its own mean and std (with a learned affine if ``revin_affine``) and maps the
output back (Kim et al., RevIN); ``last`` subtracts the window's last value and adds it back
(NLinear); ``seasonal`` also subtracts the last value but adds back, for each step, the value
one season before it, so the model learns the change from seasonal naive; ``mean`` divides by
the window's mean absolute value (DeepAR's and Chronos' scaling); ``delta`` forecasts the change
from the last value in units of the window's typical move. Each lets a model trained on one
level forecast at another (a trend carries the test part past every training value).

Calendar features (C of them) enter with each token (of its newest step) and, for the target
times, beside the pooled vector. Past covariates (F of them) enter with each input step's token
only, after the calendar: the ``cal`` tensors carry C + F columns, and the target times' F
columns are never read.
The highway (LSTNet's autoregressive component, Lai et al. 2018) adds a linear forecast from
the window, so the attention part models what a linear autoregression misses; on short series
it keeps the model from doing worse than its linear part.
"""
from __future__ import annotations

import math

import torch
from torch import nn

from .attention import SelfAttention
from .kinds import LSTM, MLP, Attention, Kind
from .norms import InstanceNorm
from .settings import ModelSettings


def sinusoidal_positions(length: int, d_model: int) -> torch.Tensor:
    """(length, d_model): PE[p, 2i] = sin(p / 10000^(2i/d)), PE[p, 2i+1] = cos(...)."""
    pos = torch.arange(length, dtype=torch.float64)[:, None]
    div = torch.exp(torch.arange(0, d_model, 2, dtype=torch.float64)
                    * -(math.log(10000.0) / d_model))
    pe = torch.zeros(length, d_model, dtype=torch.float64)
    pe[:, 0::2] = torch.sin(pos * div)
    pe[:, 1::2] = torch.cos(pos * div)
    return pe.float()


def non_crossing(raw: torch.Tensor, mid: int) -> torch.Tensor:
    """(..., Q) raw head outputs -> increasing quantiles: the median is ``raw[..., mid]``; each
    level above adds a positive step (softplus) to the one below it, each level below takes
    one off, so the quantiles can never cross whatever the weights."""
    steps = nn.functional.softplus(raw)
    up = raw[..., mid:mid + 1] + torch.cumsum(steps[..., mid + 1:], dim=-1)
    down = raw[..., mid:mid + 1] - torch.cumsum(steps[..., :mid].flip(-1), dim=-1)
    return torch.cat([down.flip(-1), raw[..., mid:mid + 1], up], dim=-1)


class Network(nn.Module):
    """What every network shares: its settings, then after its own parts (in its creation
    order, so a seed gives the same weights) the head, the instance norm and the highway; a
    window in through the norm, its states pooled, the head beside the target times'
    calendar, the highway added, the norm undone. A network names its :attr:`kind`
    (model/kinds.py: how many states it hands the head, its size, its rules)."""
    kind: type[Kind] = Kind

    def __init__(self, s: ModelSettings) -> None:
        super().__init__()
        self.settings = s

    def shared_parts(self) -> None:
        """The head (its width: the pooled states beside the target times' calendar), the
        instance norm and the highway, created after the network's own parts."""
        s = self.settings
        pooled = s.d_model * self.kind.states(s) if s.pooling == "flatten" else s.d_model
        width = pooled + s.horizon * s.n_time_features  # + the target times' calendar
        self.head = nn.Sequential(nn.Linear(width, s.ffn_dim), nn.ReLU(),
                                  nn.Linear(s.ffn_dim, s.horizon * s.n_outputs))
        self.inorm = InstanceNorm(s.instance_norm, s.revin_affine, season=s.season,
                                  horizon=s.horizon) if s.instance_norm != "none" else None
        self.highway = nn.Linear(s.window, s.horizon) if s.highway else None

    def normalized(self, x: torch.Tensor, seen: torch.Tensor | None) -> tuple:
        """The window after the instance norm (and its statistics, or None); padding is 0."""
        if self.inorm is not None:
            return self.inorm.normalize(x, seen)
        return (x if seen is None else x * seen), None

    def outputs(self, y: torch.Tensor, quantiles: bool) -> torch.Tensor:
        """The head's (B, H * Q) as quantiles (B, H, Q), or the point forecast (B, H)."""
        s = self.settings
        if not s.quantiles:
            return y.unsqueeze(-1) if quantiles else y
        q = non_crossing(y.view(y.shape[0], s.horizon, len(s.quantiles)),
                         list(s.quantiles).index(0.5))
        return q if quantiles else q[..., list(s.quantiles).index(0.5)]

    def with_future(self, pooled: torch.Tensor, cal: tuple | None) -> torch.Tensor:
        """The pooled (B, d) vector beside the target times' calendar features (B, H * C). The
        past covariates' columns of the target times (after the calendar's) are never read:
        they are not known when the forecast is made."""
        n = self.settings.n_time_features
        if cal is None or not n:
            return pooled
        return torch.cat([pooled, cal[1][..., :n].flatten(1)], dim=1)

    def finish(self, h: torch.Tensor, keep: torch.Tensor | None, x: torch.Tensor,
               cal: tuple | None, stats, quantiles: bool) -> torch.Tensor:
        """The network's (B, T, d) states pooled (the last, each in its place: flatten, or
        their mean; padding, ``keep`` False, left out), then the head beside the target times'
        calendar, the highway's forecast from the window, the norm undone."""
        how = self.settings.pooling
        h = h if keep is None or how == "last" else h * keep[..., None]
        pooled = h[:, -1] if how == "last" else h.flatten(1) if how == "flatten" else \
            h.mean(dim=1) if keep is None else h.sum(dim=1) / keep.sum(dim=1, keepdim=True)
        y = self.outputs(self.head(self.with_future(pooled, cal)), quantiles)
        if self.highway is not None:
            y = y + (self.highway(x).unsqueeze(-1) if y.dim() == 3 else self.highway(x))
        if stats is not None:
            y = self.inorm.denormalize(y, stats)
        return y


class Block(nn.Module):
    def __init__(self, s: ModelSettings) -> None:
        super().__init__()
        self.attn = SelfAttention(s.d_model, s.n_heads, s.dropout)
        self.residual = s.residual
        self.drop = nn.Dropout(s.dropout) if s.dropout else nn.Identity()
        if s.residual:
            self.norm1 = nn.LayerNorm(s.d_model)
            self.norm2 = nn.LayerNorm(s.d_model)
            self.ffn = nn.Sequential(nn.Linear(s.d_model, s.ffn_dim), nn.ReLU(),
                                     nn.Linear(s.ffn_dim, s.d_model))

    def forward(self, x: torch.Tensor, need_weights: bool, keep: torch.Tensor | None = None):
        if not self.residual:
            out, w = self.attn(x, need_weights, keep)
            return self.drop(out), w
        out, w = self.attn(self.norm1(x), need_weights, keep)
        x = x + self.drop(out)
        return x + self.drop(self.ffn(self.norm2(x))), w


class AttentionForecaster(Network):
    kind = Attention

    def __init__(self, s: ModelSettings) -> None:
        super().__init__(s)
        p, _ = s.patch
        T = s.n_tokens
        # creation order = the source's, so a seed gives the source's initial weights
        self.embedding = nn.Linear(p + s.n_time_features + s.n_features, s.d_model)
        if s.positional == "learned":
            self.pos = nn.Parameter(torch.randn(T, s.d_model) * 0.02)
        else:
            pe = sinusoidal_positions(T, s.d_model) if s.positional == "sinusoidal" \
                else torch.zeros(T, s.d_model)
            self.register_buffer("pos", pe, persistent=False)
        self.blocks = nn.ModuleList(Block(s) for _ in range(s.n_layers))
        self.norm = nn.LayerNorm(s.d_model) if s.residual else nn.Identity()
        self.shared_parts()

    def tokens(self, x: torch.Tensor, cal: tuple | None) -> torch.Tensor:
        """(B, W) values [+ (B, W, C) calendar] -> (B, T, P + C) token inputs."""
        p, stride = self.settings.patch
        tok = x.unfold(1, p, stride) if p > 1 else x.unsqueeze(-1)  # (B, T, P)
        s = self.settings
        if cal is not None and (s.n_time_features or s.n_features):  # each token carries its
            # newest step's calendar (a model without side inputs, the prior, takes none)
            last = torch.arange(p - 1, x.shape[1], stride, device=x.device)
            tok = torch.cat([tok, cal[0][:, last]], dim=-1)
        return tok

    def forward(self, x: torch.Tensor, need_weights: bool = False, cal: tuple | None = None,
                quantiles: bool = False, seen: torch.Tensor | None = None):
        """x (B, W) -> prediction (B, H), and per layer the weights (B, heads, T, T).
        ``cal``: (inputs (B, W, C), targets (B, H, C)) calendar features, or None.
        ``quantiles``: return the quantiles (B, H, Q) instead (Q = 1 for a point model).
        ``seen`` (B, W) bool: the input steps that hold values; the others are padding, never
        attended to nor pooled (a token of several steps counts if one of them is seen)."""
        x, stats = self.normalized(x, seen)
        keep = None
        if seen is not None:
            p, stride = self.settings.patch
            keep = seen.unfold(1, p, stride).any(dim=-1) if p > 1 else seen     # (B, T)
        h = self.embedding(self.tokens(x, cal)) + self.pos  # (B, T, d)
        weights = []
        for block in self.blocks:
            h, w = block(h, need_weights, keep)
            weights.append(w)
        return self.finish(self.norm(h), keep, x, cal, stats, quantiles), \
            (weights if need_weights else None)


class LSTMForecaster(Network):
    """The lecture's RNN comparison: LSTM(hidden d_model, n_layers) -> last state -> head."""
    kind = LSTM

    def __init__(self, s: ModelSettings) -> None:
        super().__init__(s)
        self.lstm = nn.LSTM(1 + s.n_time_features + s.n_features, s.d_model, num_layers=s.n_layers,
                            batch_first=True, dropout=s.dropout if s.n_layers > 1 else 0.0)
        self.shared_parts()

    def forward(self, x: torch.Tensor, need_weights: bool = False, cal: tuple | None = None,
                quantiles: bool = False, seen: torch.Tensor | None = None):
        x, stats = self.normalized(x, seen)
        inp = x.unsqueeze(-1) if cal is None else torch.cat([x.unsqueeze(-1), cal[0]], dim=-1)
        out, _ = self.lstm(inp)  # (B, W, d)
        return self.finish(out, None, x, cal, stats, quantiles), None


class MLPForecaster(Network):
    """The ablation without attention or recurrence: the window's values (with each step's
    calendar and covariates) flattened -> n_layers x [Linear(d_model), ReLU] -> the head.
    Every input step has its own weights, so it reaches any lag in the window, but it shares
    nothing across positions."""
    kind = MLP

    def __init__(self, s: ModelSettings) -> None:
        super().__init__(s)
        width, layers = s.window * (1 + s.n_time_features + s.n_features), []
        for i in range(s.n_layers):
            layers += [nn.Linear(width if i == 0 else s.d_model, s.d_model), nn.ReLU()]
            layers += [nn.Dropout(s.dropout)] if s.dropout else []
        self.body = nn.Sequential(*layers)
        self.shared_parts()

    def forward(self, x: torch.Tensor, need_weights: bool = False, cal: tuple | None = None,
                quantiles: bool = False, seen: torch.Tensor | None = None):
        x, stats = self.normalized(x, seen)
        inp = x if cal is None else torch.cat([x.unsqueeze(-1), cal[0]], dim=-1).flatten(1)
        h = self.body(inp).unsqueeze(1)   # (B, 1, d): one state
        return self.finish(h, None, x, cal, stats, quantiles), None


# each model.kind's network (model/kinds.py: REGISTRY), by its kind's name
NETWORKS = {n.kind.name: n for n in (AttentionForecaster, LSTMForecaster, MLPForecaster)}
COMBINES = ("mean", "median")


class Ensemble(nn.Module):
    """The mean (or median) forecast of several models: other seeds (``train.ensemble``),
    other training losses (``train.losses``) and other windows (``model.lookbacks``: a member
    of a shorter window reads the newest steps of the window). The first member has the
    longest window; the attention weights it reports, and its settings, are the ensemble's.
    The median (``combine``) is N-BEATS' rule for its ensembles: a member far off counts
    less."""

    def __init__(self, members: list[nn.Module], combine: str = "mean") -> None:
        super().__init__()
        assert combine in COMBINES, combine
        self.members = nn.ModuleList(members)
        self.settings = members[0].settings
        self.combine = combine
        assert all(m.settings.window <= self.settings.window for m in members), "longest first"

    @property
    def blocks(self):  # the first member's attention blocks (None for an LSTM)
        return getattr(self.members[0], "blocks", None)

    def forward(self, x: torch.Tensor, need_weights: bool = False, cal: tuple | None = None,
                quantiles: bool = False, seen: torch.Tensor | None = None):
        outs = []
        for i, m in enumerate(self.members):
            w = m.settings.window
            c = (cal[0][:, -w:], cal[1]) if cal is not None else None
            outs.append(m(x[:, -w:], need_weights and i == 0, c, quantiles,
                          seen[:, -w:] if seen is not None else None))
        stacked = torch.stack([o[0] for o in outs])
        return (stacked.mean(dim=0) if self.combine == "mean" else median(stacked)), outs[0][1]


def median(x: torch.Tensor) -> torch.Tensor:
    """The median over dim 0, an even count's the middle two's mean: the same bits as
    ``torch.quantile(x, 0.5, dim=0)`` (its sort and its lerp), in operators ONNX exports."""
    k = x.shape[0]
    s = x.sort(dim=0).values
    return torch.lerp(s[(k - 1) // 2], s[k // 2], 0.5) if k % 2 == 0 else s[(k - 1) // 2]


def build_model(s: ModelSettings | list[ModelSettings], members: int = 1,
                combine: str = "mean") -> nn.Module:
    """The model ``s`` describes; an :class:`Ensemble` of ``members`` of them if > 1, or of
    one member per settings in a list, combined by ``combine``."""
    if isinstance(s, list):
        return Ensemble([build_model(m) for m in s], combine) if len(s) > 1 else \
            build_model(s[0])
    if members > 1:
        return Ensemble([build_model(s) for _ in range(members)], combine)
    return NETWORKS[s.kind](s)


def with_horizon(model: nn.Module, horizon: int) -> nn.Module:
    """A copy of an attention model (the prior) for ``horizon`` steps: the head's last layer
    keeps the outputs of the first ``horizon`` steps (laid out step by step, the quantile
    levels of a step side by side); a longer horizon extends it, each step past the model's
    own starting as a copy of its last step's outputs (a flat continuation that fine-tuning
    then learns). The other weights are copied as they are."""
    import copy
    s = model.settings
    keep = torch.arange(horizon * s.n_outputs)
    # the rows of a step past the model's last take the last step's rows
    step = torch.clamp(keep // s.n_outputs, max=s.horizon - 1)
    keep = step * s.n_outputs + keep % s.n_outputs
    out = copy.deepcopy(model)
    last = out.head[-1]
    new = nn.Linear(last.in_features, len(keep))
    with torch.no_grad():
        new.weight.copy_(last.weight[keep])
        new.bias.copy_(last.bias[keep])
    out.head[-1] = new
    if out.highway is not None:
        rows = torch.clamp(torch.arange(horizon), max=s.horizon - 1)
        hw = nn.Linear(out.highway.in_features, horizon)
        with torch.no_grad():
            hw.weight.copy_(out.highway.weight[rows])
            hw.bias.copy_(out.highway.bias[rows])
        out.highway = hw
    from dataclasses import replace
    out.settings = replace(s, horizon=horizon)
    if out.inorm is not None:
        out.inorm.horizon = horizon
    return out


class Rollout(nn.Module):
    """A model forecasting ``horizon`` steps past its own, recursively: its own horizon at a
    time, the median fed back as the newest values of the window (as the forecast command
    rolls any model forward; Chronos forecasts past its prediction length the same way).
    The steps past the first block take the fed-back medians as known, so their quantiles are
    narrower than the truth's: calibration widens them. Levels only (no calendar inputs)."""

    def __init__(self, model: nn.Module, horizon: int) -> None:
        super().__init__()
        from dataclasses import replace
        self.inner = model
        self.settings = replace(model.settings, horizon=horizon)

    def forward(self, x: torch.Tensor, need_weights: bool = False, cal=None,
                quantiles: bool = False, seen: torch.Tensor | None = None):
        s, H = self.inner.settings, self.settings.horizon
        mid = list(s.quantiles).index(0.5) if s.quantiles else None
        outs = []
        while sum(o.shape[1] for o in outs) < H:
            y = self.inner(x, quantiles=quantiles, seen=seen)[0]   # (B, h[, Q])
            outs.append(y)
            med = y[..., mid] if quantiles and mid is not None else y   # (B, h)
            x = torch.cat([x, med], dim=1)[:, -x.shape[1]:]
            if seen is not None:
                seen = torch.cat([seen, torch.ones_like(med, dtype=torch.bool)],
                                 dim=1)[:, -seen.shape[1]:]
        return torch.cat(outs, dim=1)[:, :H], None


def n_parameters(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters() if p.requires_grad)
