"""The search's pieces without DVC: the search file checked line by line, each key's range
sampled by Optuna, a trial's -S arguments, the trial's params file, the hook that reports a
trial's epochs and prunes it, and the best trial's params file."""
from __future__ import annotations

import json
from pathlib import Path

import optuna
import pytest
import yaml

from attn_forecast.errors import ParamsError, UserInputError
from attn_forecast import search
from attn_forecast.pipeline import tuning
from conftest import ROOT

optuna.logging.set_verbosity(optuna.logging.WARNING)

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


def test_the_projects_search_file_reads():
    s = tuning.read_space(ROOT / "competitions" / "tune" / "space.yaml")
    assert s.trials >= 20 and s.direction == "minimize" and s.metric == "smape"
    assert (ROOT / s.pipeline).is_file() and (ROOT / s.params).is_file()
    subset, over = tuning.trial_params(ROOT / s.params)
    # committed: the competition's own settings, one model (a search compares single models)
    assert subset == "monthly" and over == {"train": {"ensemble": 1}}


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
    ({"sampler": {"name": "grid"}}, "sampler.name must be one of"),
    ({"pruner": {"name": "hyperband"}}, "pruner.name must be one of"),
    ({"pruner": "median"}, "'pruner' must be a mapping"),
    ({"space": {"train.lr": {"low": 0.1, "high": 1, "log": True, "step": 0.1}}},
     "log: true or a step, not both"),
    ({"study": "m3/monthly"}, "'study' names each trial's experiment"),
    ({"study": "a..b"}, "'study' names each trial's experiment"),
])
def test_a_bad_search_file_is_one_line_naming_the_key(tmp_path, change, words):
    with pytest.raises(ParamsError) as err:
        tuning.read_space(_write(tmp_path, {**GOOD, **change}))
    assert words in str(err.value) and "\n" not in str(err.value)


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


def test_a_trials_settings_are_set_keys_dvc_reads_back_exactly(tmp_path):
    s = tuning.read_space(_write(tmp_path, GOOD))
    args = search.overrides(s, {"train.lr": 0.0012345678901234567, "model.d_model": 16,
                                "model.instance_norm": "revin", "model.residual": True})
    assert args[0].startswith("p/params.yaml:++train.lr=")
    for a in args:
        key, _, value = a.partition("=")
        assert key.startswith("p/params.yaml:++")
    values = [yaml.safe_load(a.partition("=")[2]) for a in args]
    assert values == [0.0012345678901234567, 16, "revin", True]


def test_the_trial_params_file_is_checked(tmp_path):
    path = tmp_path / "params.yaml"
    path.write_text("subset: monthly\ntrain: {lr: 0.002}\nmodel: {}\n")
    assert tuning.trial_params(path) == ("monthly", {"train": {"lr": 0.002}})
    path.write_text("subset: monthly\ndata: {kind: csv}\n")
    with pytest.raises(ParamsError, match="unknown keys \\['data'\\]"):
        tuning.trial_params(path)
    path.write_text("train: {}\n")
    with pytest.raises(ParamsError, match="must name a 'subset'"):
        tuning.trial_params(path)
    path.write_text("subset: monthly\ntrain: 3\n")
    with pytest.raises(ParamsError, match="train must be a mapping"):
        tuning.trial_params(path)


def test_outside_a_search_there_is_no_watch(monkeypatch):
    monkeypatch.delenv(tuning.TRIAL_ENV, raising=False)
    assert tuning.trial_watch(lambda m: 0.0) is None


def test_the_watch_reports_every_epoch_and_prunes_a_trial_behind_the_median(tmp_path,
                                                                             monkeypatch):
    """Five finished trials scored 1.0 at every epoch; a trial at 5.0 after epoch 1 is pruned
    there (the median pruner, as the search file sets it), one at 0.5 runs on."""
    journal = str(tmp_path / "study.journal")
    study = optuna.create_study(study_name="s", storage=tuning.open_storage(journal),
                                pruner=optuna.pruners.MedianPruner(n_startup_trials=5,
                                                                   n_warmup_steps=0))
    for _ in range(5):
        t = study.ask()
        for e in (1, 2, 3):
            t.report(1.0, e)
        study.tell(t, 1.0)
    bad, good = study.ask(), study.ask()
    pruner = {"name": "median", "startup": 5, "warmup": 0}
    for trial, score in ((good, 0.5), (bad, 5.0)):
        monkeypatch.setenv(tuning.TRIAL_ENV, json.dumps(
            {"storage": journal, "study": "s", "trial": trial.number, "pruner": pruner}))
        watch = tuning.trial_watch(lambda m, v=score: v)
        if score > 1:
            with pytest.raises(tuning.Pruned) as stop:
                watch({"epoch": 1}, None)
            assert stop.value.epoch == 1 and stop.value.value == 5.0
        else:
            for e in (1, 2, 3):
                watch({"epoch": e}, None)
    # the reports are in the shared storage, as another process sees them
    again = optuna.load_study(study_name="s", storage=tuning.open_storage(journal))
    got = {t.number: t.intermediate_values for t in again.get_trials()}
    assert got[good.number] == {1: 0.5, 2: 0.5, 3: 0.5} and got[bad.number] == {1: 5.0}


def test_the_best_trial_is_written_as_the_trial_params_file(tmp_path):
    (tmp_path / "p").mkdir()
    (tmp_path / "p" / "params.yaml").write_text("subset: monthly\nmodel: {d_model: 8}\n"
                                                "train: {}\n")
    s = tuning.read_space(_write(tmp_path, {**GOOD, "best": "p/best.yaml",
                                            "apply": "c/dvc.yaml@c/params.yaml:monthly"}))
    study = optuna.create_study()
    for value in (3.0, 2.0):
        t = study.ask({"train.lr": optuna.distributions.FloatDistribution(0.0001, 0.01)})
        t.set_user_attr("experiment", f"s-{t.number:03d}")
        study.tell(t, value)
    line = search.write_best(tmp_path, s, study)
    best = yaml.safe_load((tmp_path / "p" / "best.yaml").read_text())
    assert best["subset"] == "monthly" and best["model"] == {"d_model": 8}
    assert best["train"]["lr"] == study.best_trial.params["train.lr"]
    assert "dvc exp apply s-001" in line
    assert "dvc exp run c/dvc.yaml -S 'c/params.yaml:++monthly.train.lr=" in line


def test_the_trial_prunes_by_the_search_files_pruner(tmp_path, monkeypatch):
    """pruner: none never prunes, whatever Optuna's default would; warmup: 2 waits past
    epoch 2."""
    journal = str(tmp_path / "study.journal")
    study = optuna.create_study(study_name="s", storage=tuning.open_storage(journal))
    for _ in range(5):
        t = study.ask()
        for e in (1, 2, 3):
            t.report(1.0, e)
        study.tell(t, 1.0)
    for spec, pruned_at in (({"name": "none"}, None), ({"name": "median", "startup": 5,
                                                          "warmup": 2}, 3)):
        trial = study.ask()
        monkeypatch.setenv(tuning.TRIAL_ENV, json.dumps(
            {"storage": journal, "study": "s", "trial": trial.number, "pruner": spec}))
        watch = tuning.trial_watch(lambda m: 9.0)
        stopped = None
        for e in (1, 2, 3):
            try:
                watch({"epoch": e}, None)
            except tuning.Pruned as stop:
                stopped = stop.epoch
                break
        assert stopped == pruned_at, spec
        study.tell(trial, state=optuna.trial.TrialState.FAIL)


def test_a_relative_sqlite_storage_is_made_absolute(tmp_path):
    s = tuning.read_space(_write(tmp_path, {**GOOD, "storage": "sqlite:///tune/study.db"}))
    assert s.storage_url(tmp_path) == f"sqlite:///{tmp_path.resolve()}/tune/study.db"
    s.storage = "sqlite:////abs/study.db"
    assert s.storage_url(tmp_path) == "sqlite:////abs/study.db"
    s.storage = "study.journal"
    assert s.storage_url(tmp_path) == str(tmp_path.resolve() / "study.journal")
