"""Where a study lives and how it prunes: its storage opened (a journal file, or a database;
both keep heartbeats, so a dead worker's trial is run again) and its pruner, which compares
trials at equal training progress (by optimizer step)."""
from __future__ import annotations

import contextlib
import math
import statistics
import time
import warnings
from collections.abc import Iterator
from pathlib import Path

from ..errors import UserInputError

TRIAL_ENV = "ATTN_FORECAST_TRIAL"   # {storage, study, trial, pruner, worker (its process)}
HEARTBEAT_S = 60                    # every storage: a worker silent 3x this is dead
BEAT = "heartbeat"                  # a journal trial's system attr: its worker's last beat
BUDGET = "step_budget"              # a trial's user attr: the optimizer steps it trains at most


@contextlib.contextmanager
def quiet() -> Iterator[None]:
    """Optuna's ExperimentalWarning off (heartbeats, TPE's constant liar: relied on here)."""
    import optuna
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        warnings.filterwarnings("ignore", "Heartbeat of storage is supposed to be used with")
        yield


def value_at(trial, step: int) -> float | None:
    """A trial's score as of optimizer step ``step``: its last report at or before it."""
    seen = [s for s in trial.intermediate_values if s <= step]
    return trial.intermediate_values[max(seen)] if seen else None


def make_pruner(spec: dict):
    """The search file's pruner: ``median`` or ``none``. The median pruner compares trials at
    equal training progress, by optimizer step (a trial of larger batches takes fewer steps an
    epoch): a trial whose score at step s is worse than the median of the finished trials'
    scores as of step s (each one's last report at or before it) stops there, once ``startup``
    trials finished, never in the first ``warmup`` of its step budget, never at its end."""
    import optuna
    from optuna.study import StudyDirection
    from optuna.trial import TrialState
    if spec.get("name") == "none":
        return optuna.pruners.NopPruner()
    startup, warmup = int(spec.get("startup", 5)), float(spec.get("warmup", 0.25))

    class MedianAtStep(optuna.pruners.BasePruner):
        def prune(self, study, trial) -> bool:
            step, budget = trial.last_step, trial.user_attrs.get(BUDGET)
            if step is None or not budget or step >= budget or step < warmup * budget:
                return False
            done = [t for t in study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
                    if t.user_attrs.get(BUDGET)]       # reported by step (not by epoch)
            value = trial.intermediate_values[step]
            seen = [v for t in done if (v := value_at(t, step)) is not None and v == v]
            if len(done) < startup or not (seen or math.isnan(value)):
                return False
            median = statistics.median(seen) if seen else math.nan
            return math.isnan(value) or (value > median if study.direction ==
                                         StudyDirection.MINIMIZE else value < median)
    return MedianAtStep()


def _journal(path: str):
    """Optuna's JournalStorage of a file with the heartbeats a database keeps: a running
    trial's worker records the time every ``HEARTBEAT_S`` s (a system attr); a trial whose last
    beat (or start) is 3x that old is stale: ``fail_stale_trials`` fails it and queues it again
    once. The times are the workers' clocks (on several machines: within a minute)."""
    import optuna
    from optuna.storages._heartbeat import BaseHeartbeat   # the interface RDBStorage has
    from optuna.storages.journal import JournalFileBackend, JournalStorage
    from optuna.trial import TrialState

    class HeartbeatJournal(JournalStorage, BaseHeartbeat):
        def record_heartbeat(self, trial_id: int) -> None:
            self.set_trial_system_attr(trial_id, BEAT, time.time())

        def _get_stale_trial_ids(self, study_id: int) -> list[int]:
            now, out = time.time(), []
            for t in self.get_all_trials(study_id, deepcopy=False, states=(TrialState.RUNNING,)):
                beat = max(t.system_attrs.get(BEAT) or 0,   # (a retry keeps its first's)
                           t.datetime_start.timestamp() if t.datetime_start else 0)
                if beat and now - beat > 3 * HEARTBEAT_S:
                    out.append(t._trial_id)
            return out

        def get_heartbeat_interval(self) -> int:
            return HEARTBEAT_S

        def get_heartbeat_stale_trial_callback(self):
            return optuna.storages.RetryHeartbeatStaleTrialCallback(max_retry=1)
    return HeartbeatJournal(JournalFileBackend(path))


def open_storage(where: str, named: str = "storage"):
    """An Optuna storage: a URL (``sqlite:////abs/study.db``, ``postgresql://...``: a
    database) or a journal file (a path: Optuna's JournalFileBackend, which locks the file, so
    workers on one machine or a shared file system share it); both with heartbeats. ``named``:
    what the user calls it, for a one-line error (``--storage``)."""
    import optuna
    with quiet():
        if "://" in where:
            if where.startswith("sqlite:///"):
                with contextlib.suppress(OSError):   # the database's own error says why
                    Path(where[10:]).parent.mkdir(parents=True, exist_ok=True)
            try:
                return optuna.storages.RDBStorage(
                    where, heartbeat_interval=HEARTBEAT_S, grace_period=3 * HEARTBEAT_S,
                    heartbeat_stale_trial_callback=optuna.storages
                    .RetryHeartbeatStaleTrialCallback(max_retry=1))
            except Exception as err:  # noqa: BLE001  (any driver's error, as one line)
                raise UserInputError(f"{named}: cannot open the study storage {where!r}: "
                                     f"{str(err).splitlines()[0]}") from None
        if Path(where).is_dir():
            raise UserInputError(f"{named}: {where} is a folder; give the journal file's path "
                                 f"(e.g. {Path(where) / 'study.journal'})")
        try:
            Path(where).parent.mkdir(parents=True, exist_ok=True)
            return _journal(where)
        except OSError as err:
            raise UserInputError(f"{named}: cannot create the journal file {where} "
                                 f"({err.strerror or err}: {err.filename})") from None
