"""A hyperparameter search over a DVC pipeline, on Optuna's study/trial engine: the search
space and the study's settings read from a YAML file (``competitions/tune/space.yaml``), the
study's storage opened (a journal file in the project by default; an Optuna storage URL, a
database or a journal that several machines reach, runs one study from many workers), and
the hook a trial's training reports to, so that a trial going nowhere is pruned.

Each trial is one DVC experiment (:mod:`.search` runs them); nothing here imports torch.
"""
from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from ..errors import ParamsError, UserInputError
from ..config.load import read_yaml

TRIAL_ENV = "ATTN_FORECAST_TRIAL"   # {"storage", "study", "trial", "pruner"}: what a trial
                                    # reports to
HEARTBEAT_S = 60                    # a database storage: a worker silent 3x this is dead
SECTIONS = ("prepare", "model", "train", "evaluate")   # the sections a trial may set
SAMPLERS = ("tpe", "random")
PRUNERS = ("median", "none")
DIRECTIONS = ("minimize", "maximize")
STUDY_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


@dataclass
class Space:
    """A search: the study, where it is stored, how many trials, which pipeline each trial
    runs with which params file, the metric it is judged by, and each key's range."""
    path: Path
    study: str
    storage: str
    trials: int
    direction: str
    pipeline: str
    params: str
    metric_file: str
    metric: str
    space: dict[str, dict]
    sampler: dict = field(default_factory=dict)
    pruner: dict = field(default_factory=dict)
    best: str = ""
    apply: str = ""

    def storage_url(self, root: Path) -> str:
        """The storage as an absolute URL or path (a trial runs in another folder): a journal
        file's path, or a URL, a relative ``sqlite:///file.db`` made absolute."""
        if self.storage.startswith("sqlite:///") and not self.storage[10:].startswith("/"):
            return "sqlite:///" + str((root / self.storage[10:]).resolve())
        return self.storage if "://" in self.storage else str((root / self.storage).resolve())


def _need(raw: dict, key: str, kind: type, where: str):
    v = raw.get(key)
    if not isinstance(v, kind) or isinstance(v, bool) and kind is not bool:
        raise ParamsError(f"{where}: '{key}' must be a {kind.__name__}, got {v!r}")
    return v


def distribution(key: str, spec: Any, where: str) -> dict:
    """One key's range, checked: ``{choices: [...]}``, or ``{low, high}`` with ``log: true``
    or ``step`` (integers when low, high and step are)."""
    if not isinstance(spec, dict) or not ({"choices"} <= set(spec) or {"low", "high"} <= set(spec)):
        raise ParamsError(f"{where}: space.{key} must be {{choices: [...]}} or {{low: L, high: H}}"
                          f" (log: true, step: S), got {spec!r}")
    unknown = set(spec) - {"choices", "low", "high", "log", "step"}
    if unknown:
        raise ParamsError(f"{where}: space.{key} has unknown keys {sorted(unknown)}; allowed: "
                          "choices, low, high, log, step")
    if "choices" in spec:
        c = spec["choices"]
        if not isinstance(c, list) or not c:
            raise ParamsError(f"{where}: space.{key}.choices must be a non-empty list, got {c!r}")
        return {"choices": c}
    lo, hi = spec["low"], spec["high"]
    nums = all(isinstance(v, (int, float)) and not isinstance(v, bool)
               for v in (lo, hi, spec.get("step", 1)))
    if not nums or not lo < hi:
        raise ParamsError(f"{where}: space.{key} needs numbers low < high, got low {lo!r}, "
                          f"high {hi!r}")
    if spec.get("log") and spec.get("step") is not None:
        raise ParamsError(f"{where}: space.{key} takes log: true or a step, not both")
    if spec.get("log") and lo <= 0:
        raise ParamsError(f"{where}: space.{key} with log: true needs low > 0, got {lo!r}")
    return dict(spec)


def read_space(path: str | Path) -> Space:
    """The search file, checked before any trial runs (each problem in one line)."""
    path = Path(path)
    if not path.is_file():
        raise UserInputError(f"{path}: no such search file (see competitions/tune/space.yaml)")
    raw = read_yaml(path)
    where = str(path)
    if not isinstance(raw, dict):
        raise ParamsError(f"{where}: must be a mapping, got {type(raw).__name__}")
    known = {"study", "storage", "trials", "direction", "pipeline", "params", "metric",
             "space", "sampler", "pruner", "best", "apply"}
    unknown = set(raw) - known
    if unknown:
        raise ParamsError(f"{where}: unknown keys {sorted(unknown)}; allowed: {sorted(known)}")
    trials = _need(raw, "trials", int, where)
    if trials < 1:
        raise ParamsError(f"{where}: 'trials' must be >= 1, got {trials}")
    direction = raw.get("direction", "minimize")
    if direction not in DIRECTIONS:
        raise ParamsError(f"{where}: 'direction' must be one of {DIRECTIONS}, got {direction!r}")
    metric = _need(raw, "metric", dict, where)
    if not isinstance(metric.get("file"), str) or not isinstance(metric.get("key"), str):
        raise ParamsError(f"{where}: 'metric' must be {{file: <metrics json>, key: <name>}}, "
                          f"got {metric!r}")
    space = _need(raw, "space", dict, where)
    if not space:
        raise ParamsError(f"{where}: 'space' names no key to search")
    for key in space:
        if key.split(".")[0] not in SECTIONS or key.count(".") != 1:
            raise ParamsError(f"{where}: space.{key}: a key must be <section>.<name> of one of "
                              f"{SECTIONS}")
    study = _need(raw, "study", str, where)
    if not STUDY_NAME.fullmatch(study) or ".." in study:
        raise ParamsError(f"{where}: 'study' names each trial's experiment, so it may hold "
                          f"only letters, digits, '.', '_' and '-', got {study!r}")
    sampler, pruner = raw.get("sampler") or {}, raw.get("pruner") or {}
    for name, v in (("sampler", sampler), ("pruner", pruner)):
        if not isinstance(v, dict):
            raise ParamsError(f"{where}: '{name}' must be a mapping (name: ...), got {v!r}")
    if sampler.get("name", "tpe") not in SAMPLERS:
        raise ParamsError(f"{where}: sampler.name must be one of {SAMPLERS}, got "
                          f"{sampler.get('name')!r}")
    if pruner.get("name", "median") not in PRUNERS:
        raise ParamsError(f"{where}: pruner.name must be one of {PRUNERS}, got "
                          f"{pruner.get('name')!r}")
    return Space(path=path, study=study,
                 storage=_need(raw, "storage", str, where), trials=trials, direction=direction,
                 pipeline=_need(raw, "pipeline", str, where),
                 params=_need(raw, "params", str, where), metric_file=metric["file"],
                 metric=metric["key"],
                 space={k: distribution(k, v, where) for k, v in space.items()},
                 sampler=sampler, pruner=pruner, best=raw.get("best", ""),
                 apply=raw.get("apply", ""))


def suggest(trial, space: dict[str, dict]) -> dict[str, Any]:
    """A trial's value of every key (Optuna's suggest_* by each range)."""
    out = {}
    for key, spec in space.items():
        if "choices" in spec:
            out[key] = trial.suggest_categorical(key, spec["choices"])
        elif all(isinstance(spec[k], int) for k in ("low", "high")) \
                and isinstance(spec.get("step", 1), int):
            out[key] = trial.suggest_int(key, spec["low"], spec["high"],
                                         step=spec.get("step", 1), log=bool(spec.get("log")))
        else:
            out[key] = trial.suggest_float(key, float(spec["low"]), float(spec["high"]),
                                           step=spec.get("step"), log=bool(spec.get("log")))
    return out


def make_pruner(spec: dict):
    """The search file's pruner: ``median`` (Optuna's MedianPruner: a trial whose score at an
    epoch is worse than the median of earlier trials' at that epoch stops there, after
    ``startup`` finished trials, and never in its first ``warmup`` epochs) or ``none``."""
    import optuna
    if spec.get("name") == "none":
        return optuna.pruners.NopPruner()
    # epochs count from 1; Optuna prunes from step n_warmup_steps on
    return optuna.pruners.MedianPruner(n_startup_trials=int(spec.get("startup", 5)),
                                       n_warmup_steps=int(spec.get("warmup", 1)) + 1)


def open_storage(where: str):
    """An Optuna storage: a URL (``sqlite:////abs/study.db``, ``postgresql://...``: a database
    with a heartbeat, which the search records while a trial runs, so a trial whose worker died
    is failed and run again once) or a journal file (a path: Optuna's JournalFileBackend, which
    locks the file, so workers on one machine or on a shared file system share it)."""
    import optuna
    from optuna.storages.journal import JournalFileBackend, JournalStorage
    if "://" in where:
        try:
            return optuna.storages.RDBStorage(
                where, heartbeat_interval=HEARTBEAT_S, grace_period=3 * HEARTBEAT_S,
                heartbeat_stale_trial_callback=optuna.storages.RetryHeartbeatStaleTrialCallback(
                    max_retry=1))
        except Exception as err:  # noqa: BLE001  (the driver's own message, one line)
            raise UserInputError(f"cannot open the study storage {where!r}: "
                                 f"{str(err).splitlines()[0]}") from None
    Path(where).parent.mkdir(parents=True, exist_ok=True)
    return JournalStorage(JournalFileBackend(where))


class Pruned(Exception):
    """A trial the pruner stopped: its last reported value, at that epoch."""

    def __init__(self, value: float, epoch: int) -> None:
        super().__init__(f"pruned at epoch {epoch} ({value:.4g})")
        self.value, self.epoch = value, epoch


def trial_watch(score: Callable[[Any], float]) -> Callable[[dict, Any], None] | None:
    """In a trial's stage (the search sets ``ATTN_FORECAST_TRIAL``): a training ``watch`` that
    reports ``score(model)`` after every epoch to the trial and raises :class:`Pruned` when
    the pruner says so. None outside a search."""
    spec = os.environ.get(TRIAL_ENV)
    if not spec:
        return None
    import optuna
    d = json.loads(spec)
    storage = open_storage(d["storage"])
    study = optuna.load_study(study_name=d["study"], storage=storage,
                              pruner=make_pruner(d.get("pruner") or {}))
    trial_id = storage.get_trial_id_from_study_id_trial_number(
        storage.get_study_id_from_name(d["study"]), int(d["trial"]))
    trial = optuna.trial.Trial(study, trial_id)

    def watch(row: dict, model) -> None:
        value = float(score(model))
        trial.report(value, int(row["epoch"]))
        if trial.should_prune():
            raise Pruned(value, int(row["epoch"]))
    return watch


def trial_params(path: str | Path) -> tuple[str, dict]:
    """A trial's params file (competitions/tune/params.yaml): the subset, and the sections
    whose keys replace the subset's competition settings."""
    raw = read_yaml(path) or {}
    if not isinstance(raw, dict) or not isinstance(raw.get("subset"), str):
        raise ParamsError(f"{path}: must name a 'subset' and the sections {SECTIONS}")
    unknown = set(raw) - {"subset", *SECTIONS}
    if unknown:
        raise ParamsError(f"{path}: unknown keys {sorted(unknown)}; allowed: subset, "
                          f"{', '.join(SECTIONS)}")
    over = {s: raw.get(s) or {} for s in SECTIONS}
    bad = [s for s, v in over.items() if not isinstance(v, dict)]
    if bad:
        raise ParamsError(f"{path}: {bad[0]} must be a mapping of that section's keys")
    return raw["subset"], {s: v for s, v in over.items() if v}
