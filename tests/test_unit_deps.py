"""dvc.yaml's deps are honest: each stage depends on exactly the src modules its script
imports (directly or through other src modules, at import time or inside a function), so an
edit reruns the stages it must and no others."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

from conftest import ROOT, dvc_spec

PKG = ROOT / "src" / "attn_forecast"
STAGES = ["generate", "prepare", "baselines", "train", "evaluate", "backtest_train",
          "backtest_evaluate", "render"]


def _imports(path: Path) -> set[str]:
    """attn_forecast module names one file imports anywhere in it."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: from .x import y / from . import x
                mods = [base] if base else [a.name for a in node.names]
                found |= {f"attn_forecast.{m}" for m in mods}
            elif base == "attn_forecast":
                found |= {f"attn_forecast.{a.name}" for a in node.names
                          if (PKG / f"{a.name}.py").exists()}
            elif base.startswith("attn_forecast."):
                found.add(base)
        elif isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.startswith("attn_forecast.")}
    return found


def _closure(script: Path) -> set[str]:
    # every import of the package runs its __init__ first
    todo, seen = list(_imports(script) | _imports(PKG / "__init__.py")), set()
    while todo:
        mod = todo.pop()
        if mod in seen:
            continue
        seen.add(mod)
        todo += _imports(PKG / f"{mod.split('.', 1)[1]}.py")
    return {f"src/attn_forecast/{m.split('.', 1)[1]}.py" for m in seen} | \
        {"src/attn_forecast/__init__.py"}


@pytest.mark.parametrize("stage", STAGES)
def test_stage_depends_on_exactly_the_src_it_imports(stage):
    deps = {str(d) for d in dvc_spec()["stages"][stage]["deps"]}
    declared = {d for d in deps if d.startswith("src/")}
    needed = _closure(ROOT / "stages" / f"{stage}.py")
    assert declared == needed, (f"{stage}: missing {sorted(needed - declared)}, "
                                f"not imported {sorted(declared - needed)}")
    assert f"stages/{stage}.py" in deps


@pytest.mark.parametrize("stage", STAGES)
def test_every_path_a_stage_is_given_is_a_dependency_or_an_output(stage):
    """A path on the stage's command line that is neither a dep nor an out would not be
    restored, hashed or rerun by DVC (a fresh clone would then skip the stage and miss it)."""
    spec = dvc_spec()["stages"][stage]
    words = str(spec["cmd"]).split()
    paths = {w for i, w in enumerate(words[1:], 1) if words[i - 1].startswith("--")
             and not w.startswith("-")}
    listed = {str(d) for d in spec["deps"]}
    for kind in ("outs", "metrics", "plots"):
        for item in spec.get(kind) or []:
            listed |= set(item) if isinstance(item, dict) else {str(item)}
    assert paths - listed == set(), f"{stage}: {sorted(paths - listed)} not declared"


@pytest.mark.parametrize("stage", STAGES)
def test_the_committed_lock_lists_the_deps_dvc_yaml_declares(stage):
    """DVC does not rerun a stage for a dep removed from dvc.yaml, so a stale dvc.lock would
    differ from the one a fresh clone's `make repro` writes."""
    import yaml
    lock = yaml.safe_load((ROOT / "dvc.lock").read_text())["stages"][stage]
    locked = {d["path"] for d in lock.get("deps", [])}
    declared = {str(d).rstrip("/") for d in dvc_spec()["stages"][stage]["deps"]}
    assert locked == declared, (f"{stage}: dvc.lock has {sorted(locked - declared)} extra, "
                                f"misses {sorted(declared - locked)}: run dvc repro --force")


def test_the_committed_prior_is_up_to_date_so_a_clone_never_pretrains():
    """The pretrain stage's lock entry matches the committed files (its code, its params and
    its outputs, byte for byte), so `dvc repro` on a fresh clone skips it. After an edit
    that cannot change the prior: `dvc commit pretrain`; after one that can: `dvc repro
    pretrain`."""
    import hashlib

    import yaml
    entry = yaml.safe_load((ROOT / "dvc.lock").read_text())["stages"]["pretrain"]
    stale = [d["path"] for d in entry["deps"] + entry["outs"]
             if hashlib.md5((ROOT / d["path"]).read_bytes()).hexdigest() != d["md5"]]
    assert not stale, f"pretrain is stale for {stale}: dvc commit pretrain (or dvc repro " \
                      "pretrain when the prior would change)"
    params = yaml.safe_load((ROOT / "params.yaml").read_text())["pretrain"]
    assert entry["params"]["params.yaml"]["pretrain"] == params
    assert (ROOT / "models/pretrained.pt").stat().st_size < 5 * 2 ** 20
