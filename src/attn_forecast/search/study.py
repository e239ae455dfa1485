"""``attn-forecast tune``'s study: each trial asks it for settings, runs as a DVC experiment
(search/experiments.py) and tells it its metric; workers share it through its storage; at
the end, and on Ctrl-C, every trial is written to the search's table and the best one's
settings to its params file."""
from __future__ import annotations

import contextlib
import csv
import os
import signal
import sys
import time
from pathlib import Path

import yaml

from ..errors import UserInputError
from .experiments import (LOG_DIR, as_dvc_value, experiment_metric, head, in_project,
                          project_of, run_trial, shown)
from .space import Space, suggest
from .storage import BUDGET, make_pruner, open_storage, quiet

MAX_FAILED_IN_A_ROW = 3
SPACE_ATTR = "space"        # the study's user attr: the search space it was created with
TAKEN = ("COMPLETE", "PRUNED", "RUNNING")   # a trial that counts (a failed one runs again)


def make_study(space: Space, storage_url: str, named: str = "storage"):
    """The study, created or joined (refused if run with another space or direction). The
    sampler's seed is the file's for a fresh study's first worker; a worker joining one with
    trials offsets it by their count and its process, so none repeats another's draws (TPE's
    constant liar keeps workers apart after the random start too)."""
    import optuna
    from optuna.distributions import distribution_to_json, json_to_distribution
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    storage = open_storage(storage_url, named)
    with quiet():
        exists = space.study in {s.study_name for s in storage.get_all_studies()}
        study = (optuna.load_study if exists else optuna.create_study)(
            study_name=space.study, storage=storage, pruner=make_pruner(space.pruner),
            **({} if exists else {"direction": space.direction}))
    kept, mine = study.user_attrs.get(SPACE_ATTR), space.space
    theirs = {k: json_to_distribution(v) for k, v in kept.items()} if kept else {}
    for t in [] if kept else study.get_trials(deepcopy=False):   # an older study: its trials'
        theirs.update(t.distributions)
    was = study.direction.name.lower()
    if change := ([f"added {k}" for k in mine if theirs and k not in theirs]
                  + [f"removed {k}" for k in theirs if k not in mine]
                  + [f"changed {k}" for k in mine if k in theirs and mine[k] != theirs[k]]
                  + [f"direction {was}"] * (was != space.direction)):
        raise UserInputError(
            f"{space.path}: study {space.study} in {storage_url} was run with another search "
            f"({', '.join(change)}); keep its space, or name a new study (study: "
            f"{space.study}-2 in {space.path}) or another storage (--storage)")
    if SPACE_ATTR not in study.user_attrs:
        study.set_user_attr(SPACE_ATTR, {k: distribution_to_json(d)
                                         for k, d in space.space.items()})
    s, n = space.sampler, len(study.get_trials(deepcopy=False))
    seed = s.get("seed") if s.get("seed") is None or not n else s["seed"] + 7919 * n + os.getpid()
    with quiet():
        study.sampler = optuna.samplers.RandomSampler(seed=seed) if s.get("name") == "random" \
            else optuna.samplers.TPESampler(seed=seed, n_startup_trials=int(s.get("startup", 8)),
                                            constant_liar=True)
    return study


def count(study, *states: str, upto: int | None = None) -> int:
    """The study's trials in these states (names: ``COMPLETE``...), numbered up to ``upto``."""
    return sum(t.state.name in states and (upto is None or t.number <= upto)
               for t in study.get_trials(deepcopy=False))


def record(study, trial, m: dict, space: Space) -> tuple[float, bool]:
    """Tell the study a trial's metrics: its value, or pruned."""
    from optuna.trial import TrialState
    value, pruned = float(m[space.metric]), bool(m.get("pruned"))
    study.tell(trial, state=TrialState.PRUNED) if pruned else study.tell(trial, value)
    return value, pruned


def settle(root: Path, space: Space, study, trial, base: str) -> str:
    """After Ctrl-C, the trial under way ends one way: kept, if its experiment was saved
    before its run ended (scored from it), else failed and queued again; never both."""
    from optuna.trial import TrialState
    frozen = study._storage.get_trial(trial._trial_id)
    if frozen.state != TrialState.RUNNING:
        return "it had finished"
    with contextlib.suppress(UserInputError, KeyError, TypeError, ValueError):
        name = frozen.user_attrs.get("experiment")
        record(study, trial, experiment_metric(root, name, space, base), space)
        return f"its experiment {name} had finished: it is kept"
    study.tell(trial, state=TrialState.FAIL, skip_if_finished=True)
    if set(trial.params) != set(space.space):
        return "it had drawn no settings yet"
    study.enqueue_trial(trial.params)   # the next worker (or resume) runs it
    return "it is queued again"


def write_table(root: Path, space: Space, study) -> None:
    """Every trial of the study as a CSV table (number, state, value, experiment, settings,
    note), replaced whole: what a clone can check without the storage or the experiments."""
    keys = list(space.space)
    rows = [["number", "state", "value", "experiment", *keys, "note"]]
    for t in sorted(study.get_trials(deepcopy=False), key=lambda t: t.number):
        note = f"pruned at step {t.last_step} of {t.user_attrs.get(BUDGET, '?')}" \
            if t.state.name == "PRUNED" else t.user_attrs.get("fail_reason") or \
            "surplus" * bool(t.user_attrs.get("surplus"))
        rows.append([t.number, t.state.name.lower(), "" if t.value is None else repr(t.value),
                     t.user_attrs.get("experiment", ""), *(t.params.get(k, "") for k in keys),
                     note])
    tmp = root / f"{space.table}.tmp"
    with open(tmp, "w", newline="") as fh:
        csv.writer(fh, lineterminator="\n").writerows(rows)
    os.replace(tmp, root / space.table)


def write_best(root: Path, space: Space, study) -> str | None:
    """The best trial's settings as the trial params file with them set (``best``), and the
    commands that apply them; None before any trial finished."""
    try:
        b = study.best_trial
    except ValueError:
        return None
    if space.best:
        raw = yaml.safe_load((root / space.params).read_text()) or {}
        for key, v in b.params.items():
            section, k = key.split(".")
            raw[section] = {**(raw.get(section) or {}), k: v}
        top = (f"# The best trial of study {space.study}: trial {b.number}, {space.metric} "
               f"{b.value:.6g} (experiment {b.user_attrs.get('experiment')}), written by\n"
               f"# attn-forecast tune --space {space.path}; the trial params "
               f"file ({space.params}) with its settings.\n")
        (root / space.best).write_text(top + yaml.safe_dump(raw, sort_keys=False))
    apply = ""
    if space.apply:
        target, _, prefix = space.apply.partition("@")
        file, _, section = prefix.partition(":")
        sets = " ".join(f"-S '{in_project(root, file)}:++{section}.{k}={as_dvc_value(v)}'"
                        for k, v in b.params.items())
        apply = f"\n  or on the pipeline it tunes: {_cd(root, target)}dvc exp run " \
            f"{in_project(root, target)} {sets}"
    return (f"best: trial {b.number}, {space.metric} {b.value:.6g}: "
            + ", ".join(f"{k}={shown(v)}" for k, v in b.params.items())
            + (f" -> {space.best}" if space.best else "")
            + f"\n  apply it: {_cd(root, space.pipeline)}dvc exp apply "
            f"{b.user_attrs.get('experiment')}" + apply)


def _cd(root: Path, path: str) -> str:
    """``cd <project> && `` where ``path``'s DVC project is not ``root`` itself."""
    where = os.path.relpath(project_of(root, path), root)
    return "" if where == "." else f"cd {where} && "


def progress(space: Space, study, trial, value: float, pruned: bool, seconds: float) -> str:
    """A finished trial's line; its (k/N): the study's finished trials, every worker's."""
    t, b = study._storage.get_trial(trial._trial_id), (study.best_trials or [None])[0]
    what = (f"pruned at step {t.last_step} of {t.user_attrs.get(BUDGET, '?')} ({space.metric} "
            f"{value:.4g} there)") if pruned else f"{space.metric} {value:.4g}"
    return (f"tune {space.study}: trial {t.number} ({count(study, 'COMPLETE', 'PRUNED')}/"
            f"{space.trials} done) " + " ".join(f"{k}={shown(v)}" for k, v in t.params.items())
            + f": {what}, " + (f"best {b.value:.4g} (trial {b.number})" if b else "none finished")
            + f", {seconds:.0f} s [{t.user_attrs['experiment']}]")


def tune(space: Space, root: Path, storage: str | None = None, trials: int | None = None,
         named: str = "storage") -> int:
    """Take trials of the study until it holds ``trials`` finished or running ones; returns
    the trials this worker ran. ``named``: what the user calls the storage (for errors)."""
    import optuna
    from optuna.trial import TrialState
    space.storage, space.trials = storage or space.storage, trials or space.trials
    url, base = space.storage_url(root), head(root)
    study = make_study(space, url, named)
    ran, failed_in_a_row, trial, stopped = 0, 0, None, ""
    print(f"tune {space.study}: {count(study, *TAKEN)} of {space.trials} trials taken, "
          f"storage {url}", flush=True)
    try:
        while True:
            trial = None
            with quiet():                   # a dead worker's trial: failed, queued again
                optuna.storages.fail_stale_trials(study)
            if count(study, *TAKEN) >= space.trials:
                break
            try:
                with quiet():               # heartbeats outside study.optimize: meant
                    trial = study.ask()
                if count(study, *TAKEN, upto=trial.number) > space.trials:   # two asked at once
                    trial.set_user_attr("surplus", True)
                    study.tell(trial, state=TrialState.FAIL)
                    break
                t0 = time.perf_counter()
                log = root / space.path.parent / LOG_DIR / f"{space.study}-{trial.number:03d}.log"
                _, m = run_trial(root, space, trial, suggest(trial, space.space), url, log, base)
                value, pruned = record(study, trial, m, space)
            except (UserInputError, KeyError, TypeError, ValueError) as err:
                what = str(err) if isinstance(err, UserInputError) else \
                    f"its metrics have no number {space.metric!r} ({type(err).__name__}: {err})"
                if trial is not None:
                    with contextlib.suppress(RuntimeError):   # failed meanwhile (stale)
                        trial.set_user_attr("fail_reason", trial.user_attrs.get("fail_reason")
                                            or what)
                    study.tell(trial, state=TrialState.FAIL, skip_if_finished=True)
                failed_in_a_row += 1
                print(f"tune {space.study}: trial {trial.number if trial else '?'} failed: "
                      f"{what}", file=sys.stderr, flush=True)
                if failed_in_a_row >= MAX_FAILED_IN_A_ROW:
                    raise UserInputError(f"{failed_in_a_row} trials in a row failed; the last: "
                                         f"{what}") from None
                continue
            failed_in_a_row, ran = 0, ran + 1
            print(progress(space, study, trial, value, pruned, time.perf_counter() - t0),
                  flush=True)
    except KeyboardInterrupt:
        signal.signal(signal.SIGINT, signal.SIG_IGN)   # a second Ctrl-C waits for this
        stopped = f"in trial {trial.number}: {settle(root, space, study, trial, base)}" \
            if trial is not None else "between trials"
    finally:
        write_table(root, space, study)   # at every end: the table of every trial
    if stopped:
        print(f"\ninterrupted {stopped}; {count(study, 'COMPLETE', 'PRUNED')} finished trials "
              f"are kept in {url} (every trial: {space.table}); the same command resumes",
              file=sys.stderr)
        sys.exit(130)
    print(write_best(root, space, study) or f"tune {space.study}: no trial finished")
    print(f"every trial: {space.table}")
    return ran
