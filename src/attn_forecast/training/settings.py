"""The training's settings as plain data: what the training loop, the batches and an
ensemble's members read, and their defaults (params.yaml's ``train`` section takes its
defaults for these keys from here, as ``model`` takes the architecture's from
``model.settings``). The pipeline builds them once from the validated params
(:meth:`TrainSettings.of`); the library never sees the params object."""
from __future__ import annotations

from dataclasses import asdict, dataclass, fields


@dataclass(frozen=True)
class TrainSettings:
    seed: int = 42                 # member i of an ensemble takes seed + i
    epochs: int = 300
    lr: float = 0.005
    batch_size: int | str = "auto"  # 0 = full batch; auto: full up to 1,024 windows, else 256
    max_steps: int = 0             # stop after this many optimizer steps (0 = epochs only)
    optimizer: str = "adam"        # adam | adamw
    weight_decay: float = 0.0
    loss: str = "mse"              # mse | mae | huber | smape | mape | mase
    scheduler: str = "none"        # none | step | cosine
    step_size: int = 100           # step: epochs per decay
    gamma: float = 0.5             # step: the decay factor
    warmup_epochs: int = 0
    grad_clip: float = 0.0         # the largest gradient norm; 0 = off
    patience: int = 0              # early stopping; 0 = off
    augment_noise: float = 0.3     # std of noise added to the inputs
    augment_units: str = "scaled"  # scaled | moves (the training part's one-step changes)
    augment_scale: float = 0.0
    augment_shift: float = 0.0
    precision: str = "fp32"        # fp32 | bf16 (autocast)
    ensemble: int = 3              # members of each settings and loss, seeds seed, seed + 1, ...

    @classmethod
    def of(cls, values: dict) -> TrainSettings:
        """These settings out of a mapping holding them and others (a params section's
        dump): the keys they do not have are left out."""
        return cls(**{f.name: values[f.name] for f in fields(cls) if f.name in values})

    def to_dict(self) -> dict:
        return asdict(self)
