"""dvc.yaml's deps are honest: each stage depends on the src its script imports (directly or
through other src modules, at import time or inside a function), by package where it uses a
package broadly and by file otherwise, each listed once, so an edit reruns the stages it must
and no others."""
from __future__ import annotations

import pytest

from conftest import ROOT, dvc_spec, pipeline_stages
from import_graph import closure

STAGES = pipeline_stages(prior=True)


def _competition(pipeline: str = "competitions/dvc.yaml") -> dict[str, dict]:
    """A competition pipeline's stages (a foreach stage: its ``do``), by name."""
    import yaml
    spec = yaml.safe_load((ROOT / pipeline).read_text())["stages"]
    return {name: st.get("do", st) for name, st in spec.items()}


def _script(stage: dict) -> str:
    return next(w for w in str(stage["cmd"]).split() if w.startswith("stages/"))


ALL = [(s, dvc_spec()["stages"][s]) for s in STAGES] + \
    [(f"competitions:{k}", v) for k, v in _competition().items()] + \
    [(f"{f.parent.relative_to(ROOT)}:{k}", v)                 # every search's pipeline
     for f in sorted((ROOT / "competitions" / "tune").rglob("dvc.yaml"))
     for k, v in _competition(str(f.relative_to(ROOT))).items()]


@pytest.mark.parametrize("stage, spec", ALL, ids=[a for a, _ in ALL])
def test_stage_depends_on_the_src_it_imports_and_only_on_it(stage, spec):
    deps = [str(d).rstrip("/") for d in spec["deps"]]
    declared = [d for d in deps if d.startswith("src/")]
    needed = closure(ROOT / _script(spec))
    missing = sorted(f for f in needed if not any(f == d or f.startswith(d + "/")
                                                   for d in declared))
    unused = sorted(d for d in declared if not any(f == d or f.startswith(d + "/")
                                                    for f in needed))
    assert not missing and not unused, f"{stage}: missing {missing}, not imported {unused}"
    assert _script(spec) in deps
    assert len(deps) == len(set(deps)), f"{stage}: a dep listed twice"


def test_the_competitions_field_never_depends_on_the_models_code_or_settings():
    """A change of the model's code or settings reruns the model's stages, never the
    statistical field (ARIMA and CES on 1,428 monthly series); of the evaluation, only the
    calibration of its own intervals (its step: the calibration cut's forecasts are no
    output of their own) reruns it, never the scores."""
    field = _competition()["field"]
    plain = ("src/attn_forecast/training/__init__.py",   # the defaults the schema reads
             "src/attn_forecast/training/settings.py",   # (plain data, as model/settings.py)
             "src/attn_forecast/evaluation/__init__.py",
             "src/attn_forecast/evaluation/calibration.py",
             "src/attn_forecast/evaluation/intervals.py")
    assert not [d for d in field["deps"] if d not in plain and d.startswith((
        "src/attn_forecast/training", "src/attn_forecast/model/networks",
        "src/attn_forecast/forecasters/neural", "src/attn_forecast/pipeline/model",
        "src/attn_forecast/evaluation"))]
    read = field["params"][0]["params.yaml"]     # competitions/params.yaml: its own project's
    assert not [k for k in read if k.endswith((".model", ".train", ".prepare"))
                or k in ("all", "${item}")]


def test_an_edit_of_evaluation_or_report_never_refits_the_baselines():
    deps = [str(d) for d in dvc_spec()["stages"]["baselines"]["deps"]]
    assert not [d for d in deps if d.startswith(("src/attn_forecast/evaluation",
                                                 "src/attn_forecast/report"))]


def test_the_closure_sees_imports_inside_functions():
    """The check can fail: a module imported only inside a function is still needed."""
    got = closure(ROOT / "stages" / "baselines.py")
    assert "src/attn_forecast/forecasters/zeroshot.py" in got    # imported lazily by name


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
