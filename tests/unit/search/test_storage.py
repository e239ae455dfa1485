"""A study's storage (search/storage.py): the journal's heartbeats (a retried trial is not
stale by its first run's), a journal that cannot be made is one line, a database storage
opened without warnings."""
from __future__ import annotations

import time
import warnings
from pathlib import Path
from types import SimpleNamespace

import optuna
import pytest

from attn_forecast.errors import UserInputError
from attn_forecast.search import space as search_space
from attn_forecast.search import storage as search_storage
from attn_forecast.search import study as search_study
from unit.search.helpers import GOOD, _write

optuna.logging.set_verbosity(optuna.logging.WARNING)


Trial = optuna.trial.TrialState


pytestmark = pytest.mark.filterwarnings("ignore:Heartbeat of storage is supposed")


def test_a_retried_trial_is_not_stale_by_its_first_runs_heartbeat(tmp_path, monkeypatch):
    """The retry of a stale trial carries the first run's last beat; once a worker takes it,
    it is as fresh as its start."""
    journal = str(tmp_path / "study.journal")
    space = search_space.read_space(_write(tmp_path, {**GOOD, "storage": journal}))
    study = search_study.make_study(space, journal)
    search_space.suggest(first := study.ask(), space.space)
    study._storage.set_trial_system_attr(first._trial_id, search_storage.BEAT,   # its last beat
                                         time.time() - 4 * search_storage.HEARTBEAT_S)
    later = time.time() + 4 * search_storage.HEARTBEAT_S                # and its start: long ago
    with search_storage.quiet(), monkeypatch.context() as m:
        m.setattr(search_storage, "time", SimpleNamespace(time=lambda: later))
        optuna.storages.fail_stale_trials(study)
    with search_storage.quiet():
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
        search_storage.open_storage(str(where), "--storage")
    assert str(err.value).startswith("--storage: ") and str(where) in str(err.value)
    assert "\n" not in str(err.value)


def test_opening_a_database_storage_warns_nothing(tmp_path):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        search_storage.open_storage(f"sqlite:///{tmp_path}/study.db")
    assert not [w for w in caught if issubclass(w.category,
                                                optuna.exceptions.ExperimentalWarning)]
