"""Unit tests for attn_forecast.commands.tune without processes: a trial's settings, the
study, Ctrl-C."""
from __future__ import annotations

from pathlib import Path

import optuna
import pytest
import yaml

from attn_forecast.errors import UserInputError
from attn_forecast.search import experiments as search_runs
from attn_forecast.search import space as search_space
from attn_forecast.search import storage as search_storage
from attn_forecast.search import study as search_study
from attn_forecast.commands import tune as tune_command
from unit.search.helpers import GOOD, _write

optuna.logging.set_verbosity(optuna.logging.WARNING)
Trial = optuna.trial.TrialState
pytestmark = pytest.mark.filterwarnings("ignore:Heartbeat of storage is supposed")


def test_a_trials_settings_are_set_keys_dvc_reads_back_exactly(tmp_path):
    s = search_space.read_space(_write(tmp_path, GOOD))
    args = search_runs.overrides(s, {"train.lr": 0.0012345678901234567, "model.d_model": 16,
                                "model.instance_norm": "revin", "model.residual": True})
    assert args[0].startswith("p/params.yaml:++train.lr=")
    for a in args:
        key, _, value = a.partition("=")
        assert key.startswith("p/params.yaml:++")
    values = [yaml.safe_load(a.partition("=")[2]) for a in args]
    assert values == [0.0012345678901234567, 16, "revin", True]


def test_a_study_is_never_resumed_with_another_search_space(tmp_path):
    """A study created with one space (or, older, whose trials drew from it) refuses another:
    one line naming the study, its storage, what differs and how to start anew, and the
    storage unchanged."""
    journal = str(tmp_path / "study.journal")
    space = search_space.read_space(_write(tmp_path, {**GOOD, "storage": journal}))
    study = search_study.make_study(space, journal)
    search_space.suggest(t := study.ask(), space.space)
    study.tell(t, 1.0)
    other = dict(GOOD["space"], **{"model.n_heads": {"choices": [2, 4]},
                                   "train.lr": {"low": 0.001, "high": 0.1, "log": True}})
    del other["model.dropout"]
    before = Path(journal).read_bytes()
    for change, differs in (({"space": other}, "added model.n_heads, removed model.dropout, "
                                               "changed train.lr"),
                            ({"direction": "maximize"}, "direction minimize")):
        changed = search_space.read_space(_write(tmp_path, {**GOOD, **change}))
        with pytest.raises(UserInputError) as err:
            search_study.make_study(changed, journal)
        assert str(err.value) == (
            f"{tmp_path / 'space.yaml'}: study s in {journal} was run with another search "
            f"({differs}); keep its space, or name a new study (study: s-2 in "
            f"{tmp_path / 'space.yaml'}) or another storage (--storage)")
    assert Path(journal).read_bytes() == before
    # an older study, without the space it was created with: its trials' ranges say it
    old = str(tmp_path / "old.journal")
    plain = optuna.create_study(study_name="s", storage=search_storage.open_storage(old))
    search_space.suggest(t := plain.ask(), space.space)
    plain.tell(t, 1.0)
    with pytest.raises(UserInputError, match="added model.n_heads, removed model.dropout, "
                                             "changed train.lr"):
        search_study.make_study(
            search_space.read_space(_write(tmp_path, {**GOOD, "space": other})), old)
    # the same: joined
    assert search_study.make_study(space, old).user_attrs[search_study.SPACE_ATTR]


def test_a_new_study_refused_for_another_space_names_the_keys(tmp_path):
    journal = str(tmp_path / "study.journal")
    search_study.make_study(search_space.read_space(_write(tmp_path, {**GOOD, "storage": journal})),
                      journal)
    other = dict(GOOD["space"], **{"model.n_heads": {"choices": [2, 4]}})
    with pytest.raises(UserInputError, match=r"another search \(added model.n_heads\); keep its "
                                             r"space, or name a new study \(study: s-2 in "):
        search_study.make_study(search_space.read_space(_write(tmp_path, {**GOOD, "space": other})),
                          journal)


def test_ctrl_c_keeps_a_trial_whose_experiment_was_saved_or_queues_it_again(tmp_path,
                                                                            monkeypatch):
    journal = str(tmp_path / "study.journal")
    space = search_space.read_space(_write(tmp_path, {**GOOD, "storage": journal}))
    study = search_study.make_study(space, journal)
    saved, lost = study.ask(), study.ask()
    for t in (saved, lost):
        search_space.suggest(t, space.space)
        t.set_user_attr("experiment", f"s-{t.number:03d}")

    def metric(root, name, space, base):
        if name != "s-000":
            raise UserInputError(f"experiment {name} was not saved with p/score.json")
        return {"smape": 3.0}
    monkeypatch.setattr(search_study, "experiment_metric", metric)
    assert search_study.settle(tmp_path, space, study, saved, "ab12") == \
        "its experiment s-000 had finished: it is kept"
    assert search_study.settle(tmp_path, space, study, lost, "ab12") == "it is queued again"
    trials = study.trials
    assert [t.state for t in trials] == [Trial.COMPLETE, Trial.FAIL, Trial.WAITING]
    assert trials[0].value == 3.0 and trials[2].system_attrs["fixed_params"] == trials[1].params


@pytest.mark.parametrize("argv, words", [
    (["--trials", "x"], "argument --trials: invalid int value: 'x'"),
    (["--trails", "3"], "unrecognized arguments: --trails 3"),
    (["--trials", "0"], "--trials must be >= 1, got 0"),
    (["--storage", ""], "--storage must name a journal file or a storage URL"),
])
def test_a_bad_flag_is_one_line(argv, words):
    with pytest.raises(UserInputError) as err:
        tune_command.main(argv)
    assert words in str(err.value) and "\n" not in str(err.value)


def test_the_best_trial_is_written_as_the_trial_params_file(tmp_path):
    (tmp_path / "p").mkdir()
    (tmp_path / "p" / "params.yaml").write_text("subset: monthly\nmodel: {d_model: 8}\n"
                                                "train: {}\n")
    s = search_space.read_space(_write(tmp_path, {**GOOD, "best": "p/best.yaml",
                                            "apply": "c/dvc.yaml@c/params.yaml:monthly"}))
    study = optuna.create_study()
    for value in (3.0, 2.0):
        t = study.ask({"train.lr": optuna.distributions.FloatDistribution(0.0001, 0.01)})
        t.set_user_attr("experiment", f"s-{t.number:03d}")
        study.tell(t, value)
    line = search_study.write_best(tmp_path, s, study)
    best = yaml.safe_load((tmp_path / "p" / "best.yaml").read_text())
    assert best["subset"] == "monthly" and best["model"] == {"d_model": 8}
    assert best["train"]["lr"] == study.best_trial.params["train.lr"]
    assert "dvc exp apply s-001" in line
    assert "dvc exp run c/dvc.yaml -S 'c/params.yaml:++monthly.train.lr=" in line


def test_the_start_checks_the_committed_trial_params_not_a_file_mid_rewrite(tmp_path,
                                                                           monkeypatch):
    """A second worker starts while the first one's `dvc exp run` rewrites the workspace's
    params file (empty for an instant): the check reads the committed version, which is what
    the trials run; a broken committed file is still refused, naming it."""
    import subprocess
    space = _write(tmp_path, GOOD)
    (tmp_path / "p").mkdir()
    (tmp_path / "p/dvc.yaml").write_text("stages: {}\n")
    params = tmp_path / "p/params.yaml"
    params.write_text(yaml.safe_dump({"subset": "monthly", "train": {"lr": 0.002}}))

    def git(*args):
        subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@x", *args],
                       cwd=tmp_path, check=True, capture_output=True)
    git("init", "-q")
    git("add", "-A")
    git("commit", "-qm", "search")
    ran = []
    monkeypatch.setattr(tune_command, "check_outputs", lambda root, s: None)
    monkeypatch.setattr(tune_command, "tune", lambda *a, **k: ran.append(a))
    monkeypatch.chdir(tmp_path)
    params.write_text("")                          # mid-rewrite by another worker's trial
    tune_command.main(["--space", str(space)])
    assert len(ran) == 1
    params.write_text("subset: [broken\n")
    git("add", "-A")
    git("commit", "-qm", "broken")
    with pytest.raises(Exception) as err:
        tune_command.main(["--space", str(space)])
    assert str(err.value).startswith("p/params.yaml: ") and len(ran) == 1
