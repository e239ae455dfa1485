"""The search's pieces in attn_forecast.pipeline.tuning, without DVC: the search file checked
line by line (against the params schema too), each key's range sampled by Optuna, the trial's
params file, the hook that reports a trial's training by optimizer step and prunes it, the
journal's heartbeats and storage, and the trial stage's holdout. (The driver, commands/tune.py:
tests/unit/commands/test_tune.py, and with real processes tests/e2e/test_search_processes.py.)"""
from __future__ import annotations

import importlib.util
import json
import os
import signal
import time
import warnings
from pathlib import Path
from types import SimpleNamespace

import optuna
import pytest
import yaml

from attn_forecast.errors import ParamsError, UserInputError
from attn_forecast.commands import tune as search
from attn_forecast.pipeline import tuning
from conftest import ROOT
from unit.pipeline.helpers import GOOD, _write

optuna.logging.set_verbosity(optuna.logging.WARNING)
Trial = optuna.trial.TrialState
pytestmark = pytest.mark.filterwarnings("ignore:Heartbeat of storage is supposed")


def test_the_projects_search_file_reads():
    s = tuning.read_space(ROOT / "competitions" / "tune" / "space.yaml")
    assert s.trials >= 20 and s.direction == "minimize" and s.metric == "smape"
    assert (ROOT / s.pipeline).is_file() and (ROOT / s.params).is_file()
    assert s.table == "competitions/tune/trials.csv" and 0 < s.pruner["warmup"] < 1
    subset, over = tuning.trial_params(ROOT / s.params)
    # committed: the competition's own settings, one model (a search compares single models)
    assert subset == "monthly" and over == {"train": {"ensemble": 1}}


def test_the_quick_search_is_a_folder_of_its_own():
    """competitions/tune/quick/: its own pipeline, params, score, storage, table and best,
    all in the folder (so copying it starts a search that touches no other), one network a
    trial on M3 other."""
    folder = "competitions/tune/quick"
    s = tuning.read_space(ROOT / folder / "space.yaml")
    own = [s.pipeline, s.params, s.metric_file, s.storage, s.table, s.best]
    assert all(f.startswith(folder + "/") for f in own), own
    assert s.apply == "competitions/dvc.yaml@competitions/params.yaml:other"
    subset, over = tuning.trial_params(ROOT / s.params)
    assert subset == "other" and over["model"] == {"lookbacks": []}
    cmd = (ROOT / s.pipeline).read_text()
    assert f"--trial {s.params}" in cmd and f"--metrics {s.metric_file}" in cmd


@pytest.mark.parametrize("change, words", [
    ({"trials": 0}, "'trials' must be >= 1"),
    ({"trials": "many"}, "'trials' must be a int"),
    ({"direction": "down"}, "'direction' must be one of"),
    ({"colour": 1}, "unknown keys ['colour']"),
    ({"metric": {"file": "x.json"}}, "'metric' must be {file"),
    ({"space": {}}, "'space' names no key"),
    ({"space": {"lr": {"low": 1, "high": 2}}}, "space.lr: a key must be <section>.<name>"),
    ({"space": {"data.kind": {"choices": ["a"]}}}, "a key must be <section>.<name> of one of"),
    ({"space": {"train.lr": {"low": 2, "high": 1}}}, "needs numbers low < high"),
    ({"space": {"train.lr": {"low": 0, "high": 1, "log": True}}}, "log: true needs low > 0"),
    ({"space": {"train.lr": {"choices": []}}}, "choices must be a non-empty list"),
    ({"space": {"train.lr": {"min": 1}}}, "must be {choices: [...]} or {low: L, high: H}"),
    ({"space": {"train.lr": {"low": 1, "high": 2, "scale": 3}}}, "unknown keys ['scale']"),
    ({"space": {"train.lr": {"low": 0.1, "high": 1, "step": 0}}}, "step must be > 0"),
    ({"space": {"model.lookbacks": {"choices": [[16, 32], []]}}},
     "choices may hold numbers, strings, true, false or null"),
    ({"sampler": {"name": "grid"}}, "sampler.name must be one of"),
    ({"sampler": {"seed": "zero"}}, "sampler.seed must be an integer >= 0, got 'zero'"),
    ({"sampler": {"startup": 8, "trials": 3}}, "sampler has unknown keys ['trials']"),
    ({"pruner": {"name": "hyperband"}}, "pruner.name must be one of"),
    ({"pruner": "median"}, "'pruner' must be a mapping"),
    ({"pruner": {"warmup": 1}}, "pruner.warmup is the part of a trial's step budget"),
    ({"space": {"train.lr": {"low": 0.1, "high": 1, "log": True, "step": 0.1}}},
     "log: true needs low > 0 and no step"),
    ({"study": "m3/monthly"}, "'study' names each trial's experiment"),
    ({"study": "a..b"}, "'study' names each trial's experiment"),
    ({"best": 3}, "'best' must name a file"),
    ({"storage": ""}, "'storage' must name a file"),
    ({"apply": "competitions/dvc.yaml"}, "'apply' must be <dvc.yaml>@<params file>:<section>"),
    # the params schema: a key it does not know, a value it refuses
    ({"space": {"train.learning_rate": {"low": 0.001, "high": 0.01}}},
     "space.train.learning_rate is not a params key: unknown key train.learning_rate (known "
     "keys here: seed, init, epochs, lr,"),
    ({"space": {"train.lr": {"low": -1, "high": 0.01}}},
     "space.train.lr: its low -1.0 is refused: train.lr must be a number > 0, got -1.0"),
    ({"space": {"model.n_layers": {"choices": [0, 2]}}},
     "space.model.n_layers: its choice 0 is refused: model.n_layers must be an integer >= 1"),
    ({"space": {"model.pooling": {"choices": ["mean", "max"]}}},
     "its choice 'max' is refused: model.pooling must be one of 'last' | 'mean' | 'flatten'"),
    ({"space": {"model.dropout": {"low": 0, "high": 1}}},
     "space.model.dropout: its high 1 is refused: model.dropout must be a number >= 0 and < 1"),
])
def test_a_bad_search_file_is_one_line_naming_the_key(tmp_path, change, words):
    with pytest.raises(ParamsError) as err:
        tuning.read_space(_write(tmp_path, {**GOOD, **change}))
    assert words in str(err.value) and "\n" not in str(err.value)
    assert str(err.value).startswith(str(tmp_path / "space.yaml"))


def test_a_missing_search_file_says_so(tmp_path):
    with pytest.raises(UserInputError, match="no such search file"):
        tuning.read_space(tmp_path / "nope.yaml")


def test_suggest_draws_each_key_in_its_range_and_kind():
    spec = {k: tuning.distribution(k, v, "x") for k, v in GOOD["space"].items()}
    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=0))
    for _ in range(20):
        t = study.ask()
        v = tuning.suggest(t, spec)
        assert 0.0001 <= v["train.lr"] <= 0.01 and isinstance(v["train.lr"], float)
        assert v["model.d_model"] in (16, 32)
        assert v["model.n_layers"] in (1, 2, 3) and isinstance(v["model.n_layers"], int)
        assert min(abs(v["model.dropout"] - d) for d in (0.0, 0.1, 0.2)) < 1e-9
        study.tell(t, 1.0)
    # what the trials drew from is the space, as a study keeps it
    assert study.trials[0].distributions == spec


def test_the_trial_params_file_is_checked(tmp_path):
    path = tmp_path / "params.yaml"
    path.write_text("subset: monthly\ntrain: {lr: 0.002}\nmodel: {}\n")
    assert tuning.trial_params(path) == ("monthly", {"train": {"lr": 0.002}})
    for text, words in (("subset: monthly\ndata: {kind: csv}\n", "unknown keys ['data']"),
                        ("train: {}\n", "must name a 'subset'"),
                        ("subset: monthly\ntrain: 3\n", "train must be a mapping"),
                        ("subset: monthly\ntrain: {lrate: 0.1}\n",
                         "train.lrate: unknown key train.lrate"),
                        ("subset: monthly\ntrain: {ensemble: 0}\n",
                         "train.ensemble: train.ensemble must be an integer >= 1"),
                        ("subset: weekly\n", "subset: data.subset must be one of")):
        path.write_text(text)
        with pytest.raises(ParamsError) as err:
            tuning.trial_params(path)
        assert words in str(err.value) and str(err.value).startswith(str(path)), text


def test_outside_a_search_there_is_no_watch(monkeypatch):
    monkeypatch.delenv(tuning.TRIAL_ENV, raising=False)
    assert tuning.trial_watch(lambda m: 0.0, 10, 100) is None


def _finished(study, reports: dict[int, float], budget: int = 1000) -> None:
    """A finished trial that reported ``reports`` (step -> score) with this step budget."""
    t = study.ask()
    t.set_user_attr(tuning.BUDGET, budget)
    for step, v in reports.items():
        t.report(v, step)
    study.tell(t, list(reports.values())[-1])


def _watch(monkeypatch, journal: str, trial, pruner: dict, score, per_epoch: int, budget: int):
    monkeypatch.setenv(tuning.TRIAL_ENV, json.dumps(
        {"storage": journal, "study": "s", "trial": trial.number, "pruner": pruner,
         "worker": os.getpid()}))
    return tuning.trial_watch(score, per_epoch, budget)


def _run(watch, epochs: int) -> int | None:
    """The epoch at which the watch prunes a run of ``epochs``, or None."""
    for e in range(1, epochs + 1):
        try:
            watch({"epoch": e}, None)
        except tuning.Pruned as stop:
            return stop.epoch
    return None


def test_trials_are_compared_at_equal_optimizer_steps_not_epochs(tmp_path, monkeypatch):
    """Five finished trials of batch 128: 800 steps an epoch, capped at 1000, so they reported
    at steps 800 and 1000 (score 10, then 9). A trial of batch 512 takes 200 steps an epoch:
    its epochs 1-3 (steps 200-600) have nothing to be compared with, whatever its score; at
    epoch 4 (step 800) it meets their 10 there."""
    journal = str(tmp_path / "study.journal")
    study = optuna.create_study(study_name="s", storage=tuning.open_storage(journal))
    for _ in range(5):
        _finished(study, {800: 10.0, 1000: 9.0})
    median = {"name": "median", "startup": 5, "warmup": 0.0}
    slow, behind, ahead = study.ask(), study.ask(), study.ask()
    # far behind at its first epochs, where the others have no score yet: not pruned there
    scores = iter([50.0, 40.0, 30.0, 9.5, 9.0])
    assert _run(_watch(monkeypatch, journal, slow, median, lambda m: next(scores), 200,
                       1000), 5) is None
    assert _watch(monkeypatch, journal, behind, median, lambda m: 11.0, 200, 1000) is not None
    assert _run(_watch(monkeypatch, journal, behind, median, lambda m: 11.0, 200, 1000),
                5) == 4
    assert _run(_watch(monkeypatch, journal, ahead, median, lambda m: 9.9, 200, 1000), 5) \
        is None
    # the reports are at optimizer steps, in the shared storage, as another process sees them
    again = {t.number: t for t in optuna.load_study(
        study_name="s", storage=tuning.open_storage(journal)).get_trials()}
    assert list(again[slow.number].intermediate_values) == [200, 400, 600, 800, 1000]
    assert again[behind.number].intermediate_values == {200: 11.0, 400: 11.0, 600: 11.0,
                                                        800: 11.0}
    assert again[slow.number].user_attrs[tuning.BUDGET] == 1000


def test_a_trial_that_trained_to_its_last_step_is_never_pruned(tmp_path, monkeypatch):
    """The others scored 1.0 at every step; a trial far behind is pruned at its first epoch,
    unless that is its last step (its budget: one epoch's steps, or max_steps)."""
    journal = str(tmp_path / "study.journal")
    study = optuna.create_study(study_name="s", storage=tuning.open_storage(journal))
    for _ in range(5):
        _finished(study, {s: 1.0 for s in (100, 200, 300)}, budget=300)
    median = {"name": "median", "startup": 5, "warmup": 0.0}
    for budget, pruned_at in ((300, 1), (100, None)):
        trial = study.ask()
        assert _run(_watch(monkeypatch, journal, trial, median, lambda m: 9.0, 100, budget),
                    budget // 100) == pruned_at, budget
        study.tell(trial, state=Trial.FAIL)


def test_the_trial_prunes_by_the_search_files_pruner(tmp_path, monkeypatch):
    """pruner: none never prunes; warmup: 0.5 waits past half the step budget; startup: 6
    waits for six finished trials."""
    journal = str(tmp_path / "study.journal")
    study = optuna.create_study(study_name="s", storage=tuning.open_storage(journal))
    for _ in range(5):
        _finished(study, {s: 1.0 for s in (100, 200, 300, 400)}, budget=400)
    for spec, pruned_at in (({"name": "none"}, None),
                            ({"name": "median", "startup": 5, "warmup": 0.5}, 2),
                            ({"name": "median", "startup": 5, "warmup": 0.6}, 3),
                            ({"name": "median", "startup": 6, "warmup": 0.0}, None)):
        trial = study.ask()
        assert _run(_watch(monkeypatch, journal, trial, spec, lambda m: 9.0, 100, 400), 4) \
            == pruned_at, spec
        study.tell(trial, state=Trial.FAIL)


def test_the_step_plan_is_the_training_loops(monkeypatch):
    """The steps a trial reports at are those the training loop took: every optimizer step
    is a forward pass of the step model (a counter wraps it), whatever the batch size, the
    step cap, and a last batch smaller than the others."""
    import torch
    from torch import nn
    from attn_forecast.training.settings import TrainSettings
    from attn_forecast.model.settings import ModelSettings
    from attn_forecast.training.batches import resolve_batch
    from attn_forecast.training.members import train_model
    torch.set_num_threads(1)
    series = torch.sin(torch.arange(300, dtype=torch.float32) / 5)
    ends = torch.arange(16, 250)                       # 234 training windows
    taken = [0]

    class Counted(nn.Module):
        def __init__(self, m: nn.Module) -> None:
            super().__init__()
            self.m = m

        def forward(self, *a, **k):
            taken[0] += 1
            return self.m(*a, **k)
    for batch, epochs, max_steps in ((64, 3, 0), (100, 5, 7), (0, 2, 0), (16, 9, 40)):
        p = TrainSettings(epochs=epochs, batch_size=batch, max_steps=max_steps, ensemble=1,
                        augment_noise=0.0)
        per_epoch, budget = tuning.step_plan(len(ends), resolve_batch(batch, len(ends)),
                                             epochs, max_steps)
        taken[0], seen = 0, []
        train_model(ModelSettings(window=16, d_model=8, ffn_dim=16), series, ends,
                    torch.zeros(0, dtype=torch.int64), p, torch.device("cpu"), wrap=Counted,
                    progress=False, watch=lambda row, m: seen.append(
                        (min(row["epoch"] * per_epoch, budget), taken[0])))
        assert seen and all(planned == real for planned, real in seen), (batch, seen)
        assert seen[-1][0] == budget, (batch, seen)


def test_a_retried_trial_is_not_stale_by_its_first_runs_heartbeat(tmp_path, monkeypatch):
    """The retry of a stale trial carries the first run's last beat; once a worker takes it,
    it is as fresh as its start."""
    journal = str(tmp_path / "study.journal")
    space = tuning.read_space(_write(tmp_path, {**GOOD, "storage": journal}))
    study = search.make_study(space, journal)
    tuning.suggest(first := study.ask(), space.space)
    study._storage.set_trial_system_attr(first._trial_id, tuning.BEAT,   # its last beat
                                         time.time() - 4 * tuning.HEARTBEAT_S)
    later = time.time() + 4 * tuning.HEARTBEAT_S                # and its start: long ago
    with tuning.quiet(), monkeypatch.context() as m:
        m.setattr(tuning, "time", SimpleNamespace(time=lambda: later))
        optuna.storages.fail_stale_trials(study)
    with tuning.quiet():
        retry = study.ask()                                     # a worker takes it now
        optuna.storages.fail_stale_trials(study)
    assert [t.state for t in study.trials] == [Trial.FAIL, Trial.RUNNING]
    assert retry.params == first.params


@pytest.mark.parametrize("what", ["folder", "under a file", "unwritable"])
def test_a_journal_that_cannot_be_made_is_one_line(tmp_path, what):
    (tmp_path / "f").write_text("")
    where = {"folder": tmp_path, "under a file": tmp_path / "f" / "study.journal",
             "unwritable": Path("/proc/self/study.journal")}[what]
    with pytest.raises(UserInputError) as err:
        tuning.open_storage(str(where), "--storage")
    assert str(err.value).startswith("--storage: ") and str(where) in str(err.value)
    assert "\n" not in str(err.value)


def test_the_trial_forces_the_validation_holdout(tmp_path, monkeypatch):
    """Whatever competitions/params.yaml says (holdout: test), the trial stage reads each
    series' training part alone: the test part is never read."""
    from attn_forecast.data import sources
    (tmp_path / "competitions" / "tune").mkdir(parents=True)
    raw = yaml.safe_load((ROOT / "competitions" / "params.yaml").read_text())
    (tmp_path / "competitions" / "params.yaml").write_text(
        yaml.safe_dump({**raw, "holdout": "test"}))
    (tmp_path / "competitions" / "tune" / "params.yaml").write_text(
        "subset: other\nprepare: {window: 24}\nmodel: {lookbacks: []}\n")
    monkeypatch.setenv("ATTN_FORECAST_NATIVE_CPU", "1")      # importing the stage pins nothing
    monkeypatch.delenv(tuning.TRIAL_ENV, raising=False)
    handler = signal.getsignal(signal.SIGINT)
    spec = importlib.util.spec_from_file_location("trial_stage",
                                                  ROOT / "stages" / "competition_trial.py")
    stage = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(stage)
    finally:
        signal.signal(signal.SIGINT, handler)
    read, real = [], sources.competition

    def competition(name, subset, holdout):
        read.append(holdout)
        return real(name, subset, holdout)

    class Stop(Exception):
        pass

    def stop(p, store):
        raise Stop(p.data.holdout)
    monkeypatch.setattr(sources, "competition", competition)
    monkeypatch.setattr(stage, "check_data", stop)
    with pytest.raises(Stop, match="validation"):
        stage.main(["--params", str(tmp_path / "competitions" / "params.yaml"),
                    "--trial", str(tmp_path / "competitions" / "tune" / "params.yaml"),
                    "--metrics", str(tmp_path / "score.json"), "--pretrained", "none"])
    assert read == ["validation"]


def test_a_relative_sqlite_storage_is_made_absolute(tmp_path):
    s = tuning.read_space(_write(tmp_path, {**GOOD, "storage": "sqlite:///tune/study.db"}))
    assert s.storage_url(tmp_path) == f"sqlite:///{tmp_path.resolve()}/tune/study.db"
    s.storage = "sqlite:////abs/study.db"
    assert s.storage_url(tmp_path) == "sqlite:////abs/study.db"
    s.storage = "study.journal"
    assert s.storage_url(tmp_path) == str(tmp_path.resolve() / "study.journal")


def test_opening_a_database_storage_warns_nothing(tmp_path):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        tuning.open_storage(f"sqlite:///{tmp_path}/study.db")
    assert not [w for w in caught if issubclass(w.category,
                                                optuna.exceptions.ExperimentalWarning)]
