"""The lecture's worked example as settings: every key given, so a run with them is the worked
example whatever params.yaml holds (``make source-baseline``).

    python -m tools.worked_example    # its `dvc exp run -S` arguments
"""
from __future__ import annotations

import json
from typing import Any

import yaml

from attn_forecast.config.schema import Params
from attn_forecast.io import dotted

# where the worked example differs from the defaults
SOURCE = {"prepare.window": 10, "prepare.scaler": "none", "model.pooling": "last",
          "train.batch_size": 0, "train.augment_noise": 0.0, "train.ensemble": 1,
          "prepare.cal_frac": 0.0, "evaluate.conformal": "none"}   # 80 % train, 20 % test
# keys that say how a run executes on this machine, not what it computes
EXECUTION_KEYS = ("train.threads", "backtest.jobs")


def leaves(values: dict[str, Any]) -> dict[str, Any]:
    """A params mapping as ``dotted.key -> value``, a nested section (``peers.nf_nhits``)
    down to its own keys (``peers.nf_nhits.max_steps``): each one a `-S` of its own."""
    return dotted(values)


def nested(settings: dict[str, Any]) -> dict[str, Any]:
    """:func:`leaves` undone: ``dotted.key -> value`` as a params mapping."""
    out: dict[str, Any] = {}
    for key, value in settings.items():
        *path, last = key.split(".")
        where = out
        for part in path:
            where = where.setdefault(part, {})
        where[last] = value
    return out


def source_settings() -> dict[str, Any]:
    """The worked example as ``section.key -> value`` for every key but the prior's."""
    out = {k: v for k, v in leaves({s: v for s, v in Params().model_dump().items()
                                    if s != "pretrain"}).items() if k not in EXECUTION_KEYS}
    return {**out, **SOURCE}


def dvc_set_args(settings: dict[str, Any]) -> list[str]:
    """``-S key=value`` arguments for ``dvc exp run`` (values in YAML, as DVC parses them)."""
    out = []
    for key, value in settings.items():
        text = json.dumps(value, separators=(",", ":")) if isinstance(value, list) else \
            yaml.safe_dump(value, default_flow_style=True).splitlines()[0]
        if any(c.isspace() for c in text):
            raise ValueError(f"{key}: {text!r} is not one shell word")
        out += ["-S", f"{key}={text}"]
    return out


if __name__ == "__main__":
    print(" ".join(dvc_set_args(source_settings())))
