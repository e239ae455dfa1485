"""dvc.yaml declares every param a stage reads: each stage runs (in-process, on tiny data)
with its params read through a recorder, and a key it reads that its dvc.yaml entry does not
declare fails the test. (A stage that reads an undeclared key is not rerun when that key
changes, and its output goes stale silently: a model trained with another season, say.)"""
from __future__ import annotations

import contextlib
import copy
import importlib
import importlib.util
import io
from pathlib import Path

import pytest
import yaml

from attn_forecast.config.load import load_params, load_with_choices
from conftest import ROOT, dvc_spec, pipeline_stages, with_overrides

STAGES = pipeline_stages()


class Section:
    """A params section that records each key read (a whole dump or copy reads them all)."""

    def __init__(self, name: str, real, log: set) -> None:
        self._name, self._real, self._log = name, real, log

    def __getattr__(self, key):
        value = getattr(self._real, key)
        if key in type(self._real).model_fields:
            self._log.add(f"{self._name}.{key}")
            return value
        if callable(value):  # model_dump, model_copy...: every key of the section
            self._log.update(f"{self._name}.{k}" for k in type(self._real).model_fields)
        return value

    def __reduce__(self):  # handed to a worker process: the whole section is read
        self._log.update(f"{self._name}.{k}" for k in type(self._real).model_fields)
        return (copy.copy, (self._real,))


class Recorder:
    def __init__(self, real, log: set) -> None:
        self._real, self._log = real, log

    def __getattr__(self, name):
        value = getattr(self._real, name)
        if name in type(self._real).model_fields:
            return Section(name, value, self._log)
        self._log.update(f"{s}.{k}" for s, sec in type(self._real).model_fields.items()
                         for k in sec.annotation.model_fields)
        return value


def _declared(stage: str) -> set[str]:
    return {str(p) for p in dvc_spec()["stages"][stage].get("params", [])}


def _covered(key: str, declared: set[str]) -> bool:
    return key in declared or key.split(".")[0] in declared


def _load(stage: str, log: set, patch: pytest.MonkeyPatch):
    """The stage's script, its step's module (pipeline/<stage>.py, where params are read)
    reading through a recorder for as long as ``patch`` lasts."""
    spec = importlib.util.spec_from_file_location(f"recorded_{stage}",
                                                  ROOT / "stages" / f"{stage}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    step = importlib.import_module(f"attn_forecast.pipeline.{stage}")
    if hasattr(step, "load_params"):
        patch.setattr(step, "load_params",
                      lambda path, prof=None: Recorder(load_params(path, prof), log))
    if hasattr(step, "load_with_choices"):
        def with_choices(path):
            p, chosen, prof = load_with_choices(path)
            return Recorder(p, log), chosen, prof
        patch.setattr(step, "load_with_choices", with_choices)
    return mod

CONFIGS = {
    "default": {},
    "seasonal, quantiles, conformal, folds": {
        "data.kind": "seasonal", "data.n_points": 160, "prepare.window": 24,
        "evaluate.season": 12, "model.instance_norm": "seasonal",
        "model.quantiles": [0.1, 0.5, 0.9], "prepare.cal_frac": 0.1, "prepare.val_frac": 0.1,
        "evaluate.conformal": "split", "backtest.folds": 2, "train.patience": 2,
        "evaluate.baselines": ["naive", "seasonal_naive", "ridge"]},
    "a CSV with the real profile: the prior fine-tuned, zeroshot, folds": {
        "data.kind": "csv", "data.csv_path": "data/external/example.csv",
        "data.csv_column": "demand", "data.csv_time_column": "date", "backtest.folds": 2,
        "evaluate.baselines": ["naive", "ridge", "zeroshot"]},
}


@pytest.fixture(scope="module")
def reads(tmp_path_factory) -> dict[str, dict[str, set[str]]]:
    from tools.stages import stage_args
    out = {}
    for label, over in CONFIGS.items():
        work = tmp_path_factory.mktemp("reads")
        params = with_overrides(yaml.safe_load((ROOT / "params.yaml").read_text()), [
            "data.n_points=90", "train.epochs=2", "train.ensemble=1", "backtest.jobs=1",
            "evaluate.baselines=[naive,seasonal_naive,mean,ridge]"]
            + [f"{k}={yaml.safe_dump(v, default_flow_style=True).strip()}"
               for k, v in over.items()])
        (work / "params.yaml").write_text(yaml.safe_dump(params))
        args = stage_args(work, ROOT)
        out[label] = {}
        for stage in STAGES:
            log: set[str] = set()
            with contextlib.redirect_stdout(io.StringIO()), \
                    contextlib.redirect_stderr(io.StringIO()), pytest.MonkeyPatch.context() as m:
                _load(stage, log, m).main(["--params", str(work / "params.yaml")] + args[stage])
            out[label][stage] = log
    return out


@pytest.mark.parametrize("config", list(CONFIGS))
@pytest.mark.parametrize("stage", STAGES)
def test_a_stage_reads_only_the_params_its_dvc_entry_declares(stage, config, reads):
    read = reads[config][stage]
    undeclared = sorted(k for k in read if not _covered(k, _declared(stage)))
    assert not undeclared, (f"stages/{stage}.py reads {undeclared}, which dvc.yaml does not "
                            f"list for it ({config} config)")


def test_the_stages_reads_were_recorded(reads):
    """The recorder saw the reads: training reads the learning rate, prepare the window."""
    for config in CONFIGS:
        assert "train.lr" in reads[config]["train"]
        assert "prepare.window" in reads[config]["prepare"]


def test_the_recorder_sees_a_read_that_is_not_declared():
    """The check can fail: a key read outside a stage's declared list is caught."""
    log: set[str] = set()
    p = Recorder(load_params(Path(ROOT / "params.yaml")), log)
    assert p.train.lr is not None
    assert "train.lr" in log and not _covered("train.lr", _declared("prepare"))
