"""A trial (search/trial.py): the watch its training reports to, which prunes against the
other trials at equal optimizer steps (never at the last), by the search file's pruner; the
step plan the training loop follows; the trial stage reads only the training parts."""
from __future__ import annotations

import importlib.util
import json
import os
import signal

import optuna
import pytest
import yaml

from attn_forecast.search import storage as search_storage
from attn_forecast.search import trial as search_trial
from conftest import ROOT


optuna.logging.set_verbosity(optuna.logging.WARNING)


Trial = optuna.trial.TrialState


pytestmark = pytest.mark.filterwarnings("ignore:Heartbeat of storage is supposed")


def test_outside_a_search_there_is_no_watch(monkeypatch):
    monkeypatch.delenv(search_storage.TRIAL_ENV, raising=False)
    assert search_trial.trial_watch(lambda m: 0.0, 10, 100) is None


def _finished(study, reports: dict[int, float], budget: int = 1000) -> None:
    """A finished trial that reported ``reports`` (step -> score) with this step budget."""
    t = study.ask()
    t.set_user_attr(search_storage.BUDGET, budget)
    for step, v in reports.items():
        t.report(v, step)
    study.tell(t, list(reports.values())[-1])


def _watch(monkeypatch, journal: str, trial, pruner: dict, score, per_epoch: int, budget: int):
    monkeypatch.setenv(search_storage.TRIAL_ENV, json.dumps(
        {"storage": journal, "study": "s", "trial": trial.number, "pruner": pruner,
         "worker": os.getpid()}))
    return search_trial.trial_watch(score, per_epoch, budget)


def _run(watch, epochs: int) -> int | None:
    """The epoch at which the watch prunes a run of ``epochs``, or None."""
    for e in range(1, epochs + 1):
        try:
            watch({"epoch": e}, None)
        except search_trial.Pruned as stop:
            return stop.epoch
    return None


def test_trials_are_compared_at_equal_optimizer_steps_not_epochs(tmp_path, monkeypatch):
    """Five finished trials of batch 128: 800 steps an epoch, capped at 1000, so they reported
    at steps 800 and 1000 (score 10, then 9). A trial of batch 512 takes 200 steps an epoch:
    its epochs 1-3 (steps 200-600) have nothing to be compared with, whatever its score; at
    epoch 4 (step 800) it meets their 10 there."""
    journal = str(tmp_path / "study.journal")
    study = optuna.create_study(study_name="s", storage=search_storage.open_storage(journal))
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
        study_name="s", storage=search_storage.open_storage(journal)).get_trials()}
    assert list(again[slow.number].intermediate_values) == [200, 400, 600, 800, 1000]
    assert again[behind.number].intermediate_values == {200: 11.0, 400: 11.0, 600: 11.0,
                                                        800: 11.0}
    assert again[slow.number].user_attrs[search_storage.BUDGET] == 1000


def test_a_trial_that_trained_to_its_last_step_is_never_pruned(tmp_path, monkeypatch):
    """The others scored 1.0 at every step; a trial far behind is pruned at its first epoch,
    unless that is its last step (its budget: one epoch's steps, or max_steps)."""
    journal = str(tmp_path / "study.journal")
    study = optuna.create_study(study_name="s", storage=search_storage.open_storage(journal))
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
    study = optuna.create_study(study_name="s", storage=search_storage.open_storage(journal))
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
    from attn_forecast.training.batches import TrainData, resolve_batch
    from attn_forecast.training.members import Job, train_model
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
        per_epoch, budget = search_trial.step_plan(len(ends), resolve_batch(batch, len(ends)),
                                             epochs, max_steps)
        taken[0], seen = 0, []
        train_model(ModelSettings(window=16, d_model=8, ffn_dim=16),
                    TrainData(series, ends, torch.zeros(0, dtype=torch.int64)), p,
                    Job(wrap=Counted, progress=False, watch=lambda row, m: seen.append(
                        (min(row["epoch"] * per_epoch, budget), taken[0]))))
        assert seen and all(planned == real for planned, real in seen), (batch, seen)
        assert seen[-1][0] == budget, (batch, seen)


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
    monkeypatch.delenv(search_storage.TRIAL_ENV, raising=False)
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
    monkeypatch.setattr(search_trial, "check_data", stop)
    with pytest.raises(Stop, match="validation"):
        stage.main(["--params", str(tmp_path / "competitions" / "params.yaml"),
                    "--trial", str(tmp_path / "competitions" / "tune" / "params.yaml"),
                    "--metrics", str(tmp_path / "score.json"), "--pretrained", "none"])
    assert read == ["validation"]
