"""The model's settings as plain data: what a checkpoint stores beside its weights, and the
architecture's defaults (the schema of params.yaml takes its model defaults from here)."""
from __future__ import annotations

from dataclasses import asdict, dataclass, fields



@dataclass(frozen=True)
class ModelSettings:
    kind: str = "attention"
    window: int = 10
    horizon: int = 1
    d_model: int = 32
    ffn_dim: int = 64
    n_heads: int = 1
    n_layers: int = 1
    positional: str = "sinusoidal"
    residual: bool = False
    pooling: str = "mean"          # last | mean | flatten
    dropout: float = 0.0
    instance_norm: str = "none"    # none | revin | last | seasonal | mean | delta
    revin_affine: bool = True
    patch_len: int = 0             # 0: one token per step
    patch_stride: int = 0          # 0: patch_len (patches side by side)
    n_time_features: int = 0       # calendar inputs per time step (sin/cos pairs)
    n_features: int = 0            # past covariates per input step (data.csv_feature_columns)
    season: int = 0                # instance_norm seasonal: the period (steps)
    quantiles: tuple = ()          # quantile levels of the head ((): a point forecast)
    highway: bool = False          # + a linear map of the window (LSTNet's autoregressive path)

    @classmethod
    def of(cls, values: dict, **over) -> ModelSettings:
        """These settings out of a mapping holding them and others (a params section's
        dump), ``over`` on top: the keys they do not have are left out."""
        given = {**values, **over}
        out = {f.name: given[f.name] for f in fields(cls) if f.name in given}
        if "quantiles" in out:
            out["quantiles"] = tuple(out["quantiles"])
        return cls(**out)

    def to_dict(self) -> dict:
        return {**asdict(self), "quantiles": list(self.quantiles)}

    @property
    def n_outputs(self) -> int:
        """Outputs per step: one per quantile level, or the point forecast."""
        return max(1, len(self.quantiles))

    @property
    def patch(self) -> tuple[int, int]:
        """(P, S): steps per token and between tokens; (1, 1) is one token per step."""
        p = self.patch_len or 1
        return p, (self.patch_stride or p) if self.patch_len else 1

    @property
    def n_tokens(self) -> int:
        p, stride = self.patch
        return (self.window - p) // stride + 1

    def token_steps(self) -> list[tuple[int, int]]:
        """Input steps [first, last] each token covers (0 = the oldest step)."""
        p, stride = self.patch
        return [(i * stride, i * stride + p - 1) for i in range(self.n_tokens)]


def context_of(meta: dict, window: int) -> int:
    """The fewest model values a history needs, from the prepared data's record ``meta``: its
    shortest context, or its window (a network whose own ``window`` is longer, the fine-tuned
    prior, pads the rest and masks the padding)."""
    return int(meta.get("context") or min(window, meta["window"]))


def takes_short(meta: dict, window: int) -> bool:
    """Whether a network of ``window`` steps forecasts from fewer values (padded, the padding
    masked by ``seen``): then every call passes ``seen`` (all true for a whole window), so a
    forecast is the same whichever series share its batch, and its export takes ``seen``."""
    return context_of(meta, window) < window
