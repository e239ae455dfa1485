"""A search's file (``competitions/tune/space.yaml``): its study, storage, size, pipeline,
params file, metric and the ranges of the keys it tries, each checked against the params
schema before any trial; a trial's settings drawn from them, and its params file read back.
No torch here."""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from ..config.load import read_yaml
from ..errors import ParamsError, UserInputError

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


def trial_params(path: str | Path, text: str | None = None) -> tuple[str, dict]:
    """A trial's params file (competitions/tune/params.yaml): the subset, and the sections
    whose keys replace the subset's competition settings. ``text``: the file's content as
    given (its committed version) instead of the file's on disk."""
    if text is None:
        raw = read_yaml(path) or {}
    else:
        try:
            raw = yaml.safe_load(text) or {}
        except yaml.YAMLError:
            raise ParamsError(f"{path}: not valid YAML") from None
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
