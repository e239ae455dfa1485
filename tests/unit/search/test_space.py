"""The search file (search/space.py), checked against the params schema, without DVC: the
project's own search files read, a bad one refused in one line naming the key, the keys
drawn in their ranges, a trial's params file checked, a storage path made absolute."""
from __future__ import annotations


import optuna
import pytest

from attn_forecast.errors import ParamsError, UserInputError
from attn_forecast.search import space as search_space
from conftest import ROOT
from unit.search.helpers import GOOD, _write

optuna.logging.set_verbosity(optuna.logging.WARNING)



pytestmark = pytest.mark.filterwarnings("ignore:Heartbeat of storage is supposed")


def test_the_projects_search_file_reads():
    s = search_space.read_space(ROOT / "competitions" / "tune" / "space.yaml")
    assert s.trials >= 20 and s.direction == "minimize" and s.metric == "smape"
    assert (ROOT / s.pipeline).is_file() and (ROOT / s.params).is_file()
    assert s.table == "competitions/tune/trials.csv" and 0 < s.pruner["warmup"] < 1
    subset, over = search_space.trial_params(ROOT / s.params)
    # committed: the competition's own settings, one model (a search compares single models)
    assert subset == "monthly" and over == {"train": {"ensemble": 1}}


def test_the_quick_search_is_a_folder_of_its_own():
    """competitions/tune/quick/: its own pipeline, params, score, storage, table and best,
    all in the folder (so copying it starts a search that touches no other), one network a
    trial on M3 other."""
    folder = "competitions/tune/quick"
    s = search_space.read_space(ROOT / folder / "space.yaml")
    own = [s.pipeline, s.params, s.metric_file, s.storage, s.table, s.best]
    assert all(f.startswith(folder + "/") for f in own), own
    assert s.apply == "competitions/dvc.yaml@competitions/params.yaml:other"
    subset, over = search_space.trial_params(ROOT / s.params)
    assert subset == "other" and over["model"] == {"lookbacks": []}
    cmd = (ROOT / s.pipeline).read_text()       # run in competitions/, its own DVC project
    assert f"--trial {s.params.removeprefix('competitions/')}" in cmd
    assert f"--metrics {s.metric_file.removeprefix('competitions/')}" in cmd


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
        search_space.read_space(_write(tmp_path, {**GOOD, **change}))
    assert words in str(err.value) and "\n" not in str(err.value)
    assert str(err.value).startswith(str(tmp_path / "space.yaml"))


def test_a_missing_search_file_says_so(tmp_path):
    with pytest.raises(UserInputError, match="no such search file"):
        search_space.read_space(tmp_path / "nope.yaml")


def test_suggest_draws_each_key_in_its_range_and_kind():
    spec = {k: search_space.distribution(k, v, "x") for k, v in GOOD["space"].items()}
    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=0))
    for _ in range(20):
        t = study.ask()
        v = search_space.suggest(t, spec)
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
    assert search_space.trial_params(path) == ("monthly", {"train": {"lr": 0.002}})
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
            search_space.trial_params(path)
        assert words in str(err.value) and str(err.value).startswith(str(path)), text


def test_a_relative_sqlite_storage_is_made_absolute(tmp_path):
    s = search_space.read_space(_write(tmp_path, {**GOOD, "storage": "sqlite:///tune/study.db"}))
    assert s.storage_url(tmp_path) == f"sqlite:///{tmp_path.resolve()}/tune/study.db"
    s.storage = "sqlite:////abs/study.db"
    assert s.storage_url(tmp_path) == "sqlite:////abs/study.db"
    s.storage = "study.journal"
    assert s.storage_url(tmp_path) == str(tmp_path.resolve() / "study.journal")


def test_a_pipeline_in_a_dvc_project_of_its_own_runs_there(tmp_path):
    """competitions/ is a DVC project of its own (`dvc init --subdir`): a trial's command runs
    in it and names the pipeline and the params file as that project does; a pipeline of the
    repository's own project keeps the repository's paths."""
    from types import SimpleNamespace
    from attn_forecast.search.experiments import project_of, trial_command
    (tmp_path / ".dvc").mkdir()
    (tmp_path / "comp" / ".dvc").mkdir(parents=True)
    (tmp_path / "comp" / "tune").mkdir()
    space = SimpleNamespace(pipeline="comp/tune/dvc.yaml", params="comp/tune/params.yaml")
    assert project_of(tmp_path, space.pipeline) == tmp_path / "comp"
    assert trial_command(space, "s-000", {"train.lr": 0.01}, tmp_path)[-3:] == \
        ["tune/dvc.yaml", "-S", "tune/params.yaml:++train.lr=0.01"]
    top = SimpleNamespace(pipeline="dvc.yaml", params="params.yaml")
    assert project_of(tmp_path, top.pipeline) == tmp_path
    assert trial_command(top, "s-000", {"train.lr": 0.01}, tmp_path)[-3:] == \
        ["dvc.yaml", "-S", "params.yaml:++train.lr=0.01"]
