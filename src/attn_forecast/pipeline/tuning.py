"""A hyperparameter search over a DVC pipeline, on Optuna's study/trial engine: the search
file (``competitions/tune/space.yaml``) read and checked against the params schema, the study's
storage opened (a journal file, or a database; both keep heartbeats, so a dead worker's trial is
run again), and the hook a trial's training reports to by optimizer step, so that a trial going
nowhere is pruned against the others at equal training progress.

Each trial is one DVC experiment (:mod:`attn_forecast.commands.tune` runs them); no torch here.
"""
from __future__ import annotations

import contextlib
import json
import math
import os
import re
import statistics
import time
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import ParamsError, UserInputError
from ..config.load import read_yaml

TRIAL_ENV = "ATTN_FORECAST_TRIAL"   # {storage, study, trial, pruner, worker (its process)}
HEARTBEAT_S = 60                    # every storage: a worker silent 3x this is dead
BEAT = "heartbeat"                  # a journal trial's system attr: its worker's last beat
BUDGET = "step_budget"              # a trial's user attr: the optimizer steps it trains at most
SECTIONS = ("prepare", "model", "train", "evaluate")   # the sections a trial may set
SAMPLERS = ("tpe", "random")
PRUNERS = ("median", "none")
DIRECTIONS = ("minimize", "maximize")
STUDY_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
APPLY = re.compile(r"[^@\s]+@[^:@\s]+:[A-Za-z0-9_]+")
SCALARS = (str, int, float, bool, type(None))


@dataclass
class Space:
    """A search: its study, storage, size, pipeline, params file, metric and ranges."""
    path: Path
    study: str
    storage: str
    trials: int
    direction: str
    pipeline: str
    params: str
    metric_file: str
    metric: str
    space: dict[str, Any]               # each key's Optuna distribution
    sampler: dict = field(default_factory=dict)
    pruner: dict = field(default_factory=dict)
    best: str = ""
    apply: str = ""
    table: str = ""

    def storage_url(self, root: Path) -> str:
        """The storage as an absolute path or URL (a trial runs in another folder)."""
        if self.storage.startswith("sqlite:///") and not self.storage[10:].startswith("/"):
            return "sqlite:///" + str((root / self.storage[10:]).resolve())
        return self.storage if "://" in self.storage else str((root / self.storage).resolve())


@contextlib.contextmanager
def quiet() -> Iterator[None]:
    """Optuna's ExperimentalWarning off (heartbeats, TPE's constant liar: relied on here)."""
    import optuna
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        warnings.filterwarnings("ignore", "Heartbeat of storage is supposed to be used with")
        yield


def _need(raw: dict, key: str, kind: type, where: str):
    v = raw.get(key)
    if not isinstance(v, kind) or isinstance(v, bool) and kind is not bool:
        raise ParamsError(f"{where}: '{key}' must be a {kind.__name__}, got {v!r}")
    return v


def distribution(key: str, spec: Any, where: str):
    """One key's range, checked, as Optuna's distribution: ``{choices: [...]}``, or ``{low,
    high}`` with ``log: true`` or ``step`` (integers when low, high and step are)."""
    from optuna.distributions import (CategoricalDistribution, FloatDistribution,
                                      IntDistribution)
    if not isinstance(spec, dict) or not ({"choices"} <= set(spec) or {"low", "high"} <= set(spec)):
        raise ParamsError(f"{where}: space.{key} must be {{choices: [...]}} or {{low: L, high: H}}"
                          f" (log: true, step: S), got {spec!r}")
    if unknown := set(spec) - {"choices", "low", "high", "log", "step"}:
        raise ParamsError(f"{where}: space.{key} has unknown keys {sorted(unknown)}; allowed: "
                          "choices, low, high, log, step")
    if "choices" in spec:
        c = spec["choices"]
        if not isinstance(c, list) or not c:
            raise ParamsError(f"{where}: space.{key}.choices must be a non-empty list, got {c!r}")
        if any(not isinstance(v, SCALARS) for v in c):
            raise ParamsError(f"{where}: space.{key}.choices may hold numbers, strings, true, "
                              f"false or null, got {c!r}")
        return CategoricalDistribution(c)
    lo, hi = spec["low"], spec["high"]
    nums = all(isinstance(v, (int, float)) and not isinstance(v, bool)
               for v in (lo, hi, spec.get("step", 1)))
    if not nums or not lo < hi:
        raise ParamsError(f"{where}: space.{key} needs numbers low < high, got low {lo!r}, "
                          f"high {hi!r}")
    if spec.get("log") and (lo <= 0 or spec.get("step") is not None):
        raise ParamsError(f"{where}: space.{key} with log: true needs low > 0 and no step, got "
                          f"low {lo!r}, step {spec.get('step')!r}")
    if not spec.get("step", 1) > 0:
        raise ParamsError(f"{where}: space.{key}.step must be > 0, got {spec['step']!r}")
    if all(isinstance(spec.get(k, 1), int) for k in ("low", "high", "step")):
        return IntDistribution(lo, hi, log=bool(spec.get("log")), step=spec.get("step", 1))
    return FloatDistribution(float(lo), float(hi), log=bool(spec.get("log")),
                             step=spec.get("step"))


def schema_problem(key: str, value: Any) -> str | None:
    """Why params.yaml would refuse ``value`` for ``key`` (one line), or None."""
    from pydantic import ValidationError
    from ..config.messages import one_line
    from ..config.schema import Params
    section, _, name = key.partition(".")
    try:
        Params.model_validate({section: {name: value}})
    except ValidationError as err:
        return one_line(err).removeprefix("params.yaml: ")
    return None


def check_schema(space: dict, where: str) -> None:
    """Every key a params key, every value it may draw (choices, low, high) one it takes."""
    for key, d in space.items():
        draws = [(f"choice {v!r}", v) for v in d.choices] if hasattr(d, "choices") \
            else [(f"low {d.low!r}", d.low), (f"high {d.high!r}", d.high)]
        for what, value in draws:
            problem = schema_problem(key, value)
            if problem and problem.startswith("unknown key"):
                raise ParamsError(f"{where}: space.{key} is not a params key: {problem}")
            if problem:
                raise ParamsError(f"{where}: space.{key}: its {what} is refused: {problem}")


def _settings(raw: dict, where: str) -> tuple[dict, dict]:
    """The sampler's and the pruner's settings, checked."""
    out = []
    for name, keys, names in (("sampler", ("name", "seed", "startup"), SAMPLERS),
                              ("pruner", ("name", "startup", "warmup"), PRUNERS)):
        v = raw.get(name) or {}
        if not isinstance(v, dict):
            raise ParamsError(f"{where}: '{name}' must be a mapping (name: ...), got {v!r}")
        if set(v) - set(keys):
            raise ParamsError(f"{where}: {name} has unknown keys {sorted(set(v) - set(keys))}; "
                              f"allowed: {', '.join(keys)}")
        if v.get("name", names[0]) not in names:
            raise ParamsError(f"{where}: {name}.name must be one of {names}, got {v['name']!r}")
        for k in ("seed", "startup"):
            if (n := v.get(k)) is not None and (type(n) is not int or n < 0):
                raise ParamsError(f"{where}: {name}.{k} must be an integer >= 0, got {n!r}")
        out.append(v)
    w = out[1].get("warmup", 0.25)
    if not isinstance(w, (int, float)) or isinstance(w, bool) or not 0 <= w < 1:
        raise ParamsError(f"{where}: pruner.warmup is the part of a trial's step budget never "
                          f"pruned, a number in [0, 1) (e.g. 0.25), got {w!r}")
    return out[0], out[1]


def read_space(path: str | Path) -> Space:
    """The search file, checked before any trial runs (each problem in one line)."""
    path = Path(path)
    if not path.is_file():
        raise UserInputError(f"{path}: no such search file (see competitions/tune/space.yaml)")
    raw, where = read_yaml(path), str(path)
    if not isinstance(raw, dict):
        raise ParamsError(f"{where}: must be a mapping, got {type(raw).__name__}")
    known = {"study", "storage", "trials", "direction", "pipeline", "params", "metric",
             "space", "sampler", "pruner", "best", "apply", "table"}
    if unknown := set(raw) - known:
        raise ParamsError(f"{where}: unknown keys {sorted(unknown)}; allowed: {sorted(known)}")
    if (trials := _need(raw, "trials", int, where)) < 1:
        raise ParamsError(f"{where}: 'trials' must be >= 1, got {trials}")
    if (direction := raw.get("direction", "minimize")) not in DIRECTIONS:
        raise ParamsError(f"{where}: 'direction' must be one of {DIRECTIONS}, got {direction!r}")
    metric = _need(raw, "metric", dict, where)
    if not isinstance(metric.get("file"), str) or not isinstance(metric.get("key"), str):
        raise ParamsError(f"{where}: 'metric' must be {{file: <metrics json>, key: <name>}}, "
                          f"got {metric!r}")
    if not (space := _need(raw, "space", dict, where)):
        raise ParamsError(f"{where}: 'space' names no key to search")
    for key in space:
        if key.split(".")[0] not in SECTIONS or key.count(".") != 1:
            raise ParamsError(f"{where}: space.{key}: a key must be <section>.<name> of one of "
                              f"{SECTIONS}")
    if not STUDY_NAME.fullmatch(study := _need(raw, "study", str, where)) or ".." in study:
        raise ParamsError(f"{where}: 'study' names each trial's experiment, so it may hold "
                          f"only letters, digits, '.', '_' and '-', got {study!r}")
    files = {k: raw.get(k, "") for k in ("best", "apply", "table")}
    for k, v in {**{k: raw.get(k) for k in ("storage", "pipeline", "params")}, **files}.items():
        if not isinstance(v, str) or k not in files and not v.strip():
            raise ParamsError(f"{where}: '{k}' must name a file (a string), got {v!r}")
    if files["apply"] and not APPLY.fullmatch(files["apply"]):
        raise ParamsError(f"{where}: 'apply' must be <dvc.yaml>@<params file>:<section> (e.g. "
                          f"competitions/dvc.yaml@competitions/params.yaml:monthly), got "
                          f"{files['apply']!r}")
    sampler, pruner = _settings(raw, where)
    check_schema(ranges := {k: distribution(k, v, where) for k, v in space.items()}, where)
    return Space(path=path, study=study, storage=raw["storage"], trials=trials,
                 direction=direction, pipeline=raw["pipeline"], params=raw["params"],
                 metric_file=metric["file"], metric=metric["key"], space=ranges,
                 sampler=sampler, pruner=pruner, best=files["best"], apply=files["apply"],
                 table=files["table"] or str(path.parent / "trials.csv"))


def suggest(trial, space: dict) -> dict[str, Any]:
    """A trial's value of every key (Optuna's suggest_* by each distribution)."""
    from optuna.distributions import CategoricalDistribution, IntDistribution
    out = {}
    for key, d in space.items():
        if isinstance(d, CategoricalDistribution):
            out[key] = trial.suggest_categorical(key, list(d.choices))
        elif isinstance(d, IntDistribution):
            out[key] = trial.suggest_int(key, d.low, d.high, step=d.step, log=d.log)
        else:
            out[key] = trial.suggest_float(key, d.low, d.high, step=d.step, log=d.log)
    return out


def step_plan(n_windows: int, batch: int, epochs: int, max_steps: int) -> tuple[int, int]:
    """The training loop's optimizer steps over ``n_windows`` windows in batches of ``batch``
    (resolved): per epoch, and in all (``epochs`` of them, at most ``max_steps``; 0: no cap)."""
    per_epoch = -(-n_windows // max(batch, 1))
    return per_epoch, min(epochs * per_epoch, max_steps) if max_steps else epochs * per_epoch


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


class Pruned(Exception):
    """A trial the pruner stopped: its last reported value, at that epoch and step."""

    def __init__(self, value: float, epoch: int, step: int = 0) -> None:
        super().__init__(f"pruned at step {step}, epoch {epoch} ({value:.4g})")
        self.value, self.epoch, self.step = value, epoch, step


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:     # alive, another user's
        pass
    return True


def trial_watch(score: Callable[[Any], float], per_epoch: int, budget: int
                ) -> Callable[[dict, Any], None] | None:
    """In a trial's stage (the search sets ``ATTN_FORECAST_TRIAL``): a training ``watch``
    that reports ``score(model)`` after every epoch at its optimizer step (``per_epoch`` an
    epoch, ``budget`` in all: :func:`step_plan`) and raises :class:`Pruned` when the pruner says
    so, never at the last step (a trial that trained to the end is scored); a one-line error
    once the worker that runs the trial is gone. None outside a search."""
    spec = os.environ.get(TRIAL_ENV)
    if not spec:
        return None
    import optuna
    d = json.loads(spec)
    storage = open_storage(d["storage"])
    with quiet():
        study = optuna.load_study(study_name=d["study"], storage=storage,
                                  pruner=make_pruner(d.get("pruner") or {}))
    trial_id = storage.get_trial_id_from_study_id_trial_number(
        storage.get_study_id_from_name(d["study"]), int(d["trial"]))
    trial = optuna.trial.Trial(study, trial_id)
    trial.set_user_attr(BUDGET, int(budget))

    def watch(row: dict, model) -> None:
        epoch = int(row["epoch"])
        if d.get("worker") and not _alive(worker := int(d["worker"])):
            raise UserInputError(f"the search's worker (process {worker}) has ended; trial "
                                 f"{d['trial']} stops at epoch {epoch}")
        step, value = min(epoch * per_epoch, budget), float(score(model))
        trial.report(value, step)
        if step < budget and trial.should_prune():
            raise Pruned(value, epoch, step)
    return watch


def trial_params(path: str | Path) -> tuple[str, dict]:
    """A trial's params file (competitions/tune/params.yaml): the subset, and the sections
    whose keys replace the subset's competition settings."""
    raw = read_yaml(path) or {}
    if not isinstance(raw, dict) or not isinstance(raw.get("subset"), str):
        raise ParamsError(f"{path}: must name a 'subset' and the sections {SECTIONS}")
    if unknown := set(raw) - {"subset", *SECTIONS}:
        raise ParamsError(f"{path}: unknown keys {sorted(unknown)}; allowed: subset, "
                          f"{', '.join(SECTIONS)}")
    over = {s: raw.get(s) or {} for s in SECTIONS}
    if bad := [s for s, v in over.items() if not isinstance(v, dict)]:
        raise ParamsError(f"{path}: {bad[0]} must be a mapping of that section's keys")
    for name, key, value in [("subset", "data.subset", raw["subset"])] + [
            (f"{s}.{k}", f"{s}.{k}", v) for s, keys in over.items() for k, v in keys.items()]:
        if problem := schema_problem(key, value):
            raise ParamsError(f"{path}: {name}: {problem}")
    return raw["subset"], {s: v for s, v in over.items() if v}
