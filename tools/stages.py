"""The stages' command lines, read from dvc.yaml (the one place they are written), for what runs
the stage scripts outside DVC: the benchmarks and the tests run them in-process into a scratch
folder, each path of the pipeline there as ``<folder>/<key><suffix>`` (``prepared``,
``detail.json``...), but the inputs (users' CSV files, the committed prior), read where they
are."""
from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import yaml

INPUTS = ("inputs", "pretrained")     # read where they are, never written


def _spec(root: Path) -> dict:
    return yaml.safe_load((Path(root) / "dvc.yaml").read_text())


def paths(root: str | Path) -> dict[str, str]:
    """dvc.yaml's declared paths (its ``vars``), by key."""
    return next(v["p"] for v in _spec(Path(root))["vars"] if "p" in v)


def scratch(work: str | Path, root: str | Path) -> dict[str, Path]:
    """Where each path of the pipeline lies in the scratch folder ``work``."""
    return {k: Path(root) / v if k in INPUTS else Path(work) / f"{k}{Path(v).suffix}"
            for k, v in paths(root).items()}


def stage_args(work: str | Path, root: str | Path, inputs: str | Path | None = None
               ) -> dict[str, list[str]]:
    """Each stage's arguments (its dvc.yaml command after ``python stages/<name>.py``), into
    ``work``; ``inputs``: another folder of users' CSV files."""
    where = scratch(work, root)
    if inputs is not None:
        where["inputs"] = Path(inputs)
    return {name: _args(stage, name, where) for name, stage in _spec(Path(root))["stages"].items()}


def declared_args(name: str, root: str | Path) -> list[str]:
    """The stage's arguments with the paths dvc.yaml declares (relative to ``root``), as
    `dvc repro` runs it there."""
    return _args(_spec(Path(root))["stages"][name], name, paths(root))


def _args(stage: dict, name: str, where: dict) -> list[str]:
    words = str(stage["cmd"]).split()
    return [re.sub(r"\$\{p\.(\w+)\}", lambda m: str(where[m.group(1)]), w)
            for w in words[words.index(f"stages/{name}.py") + 1:]]


def load_stage(name: str, root: str | Path):
    """The stage script ``stages/<name>.py`` as a module (its ``main`` not run)."""
    spec = importlib.util.spec_from_file_location(f"stage_{name}",
                                                  Path(root) / "stages" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def run_stages(params_file: str | Path, work: str | Path, root: str | Path, stages,
               inputs: str | Path | None = None) -> dict:
    """Run ``stages`` in-process, one after the other, on ``params_file`` into ``work``;
    returns what each stage's ``main`` returned."""
    args = stage_args(work, root, inputs)
    return {name: load_stage(name, root).main(["--params", str(params_file)] + args[name])
            for name in stages}
