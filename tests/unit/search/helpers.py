"""Helpers shared by the tests of the search (the search package and the tune command): a
search file and its writer."""
from __future__ import annotations

from pathlib import Path

import yaml

GOOD = {"study": "s", "storage": "study.journal", "trials": 4, "pipeline": "p/dvc.yaml",
        "params": "p/params.yaml", "metric": {"file": "p/score.json", "key": "smape"},
        "space": {"train.lr": {"low": 0.0001, "high": 0.01, "log": True},
                  "model.d_model": {"choices": [16, 32]},
                  "model.n_layers": {"low": 1, "high": 3},
                  "model.dropout": {"low": 0.0, "high": 0.2, "step": 0.1}}}


def _write(tmp_path: Path, raw: dict) -> Path:
    path = tmp_path / "space.yaml"
    path.write_text(yaml.safe_dump(raw))
    return path
