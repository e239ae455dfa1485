"""``attn-forecast tune``: an Optuna study whose every trial is a DVC experiment.

    attn-forecast tune --space competitions/tune/space.yaml      # the study's file
    attn-forecast tune --storage sqlite:///competitions/tune/study.db   # a database
    attn-forecast tune --storage postgresql://host/db   # one study, workers on many machines

Each trial asks the study for settings, runs ``dvc exp run --temp <pipeline> -S <params>:
<key>=<value> ... -n <study>-<number>`` (a temporary copy: the workspace is never touched, and
``dvc exp show`` lists the trial with its settings and metric), reads the metric from the
experiment's commit and tells the study. The trial's training reports a score after every
epoch (``ATTN_FORECAST_TRIAL``), so the pruner can stop it early; a pruned trial is still an
experiment (its metrics file says ``pruned: true``).

Workers: run the same command again, in another terminal or on another machine that reaches
the storage; each takes trials until the study holds ``trials`` finished or running ones.
Ctrl-C: the trial under way is marked failed and queued again; the finished ones stay in the
storage, and the same command resumes the study. At the end the best trial's settings are
written as a params file (``best``) and printed as the ``dvc exp`` commands that apply them.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import yaml

from .errors import UserInputError
from .pipeline.tuning import (TRIAL_ENV, Space, make_pruner, open_storage, read_space,
                              suggest, trial_params)

LOG_DIR = "logs"            # beside the search file: one log per trial (git-ignored)
MAX_FAILED_IN_A_ROW = 3


def _value(v) -> str:
    """A value as ``dvc exp run -S`` reads it (YAML flow style)."""
    return yaml.safe_dump(v, default_flow_style=True, width=10_000).strip().removesuffix("...")\
        .strip()


def _short(v) -> str:
    return f"{v:.4g}" if isinstance(v, float) else str(v)


def overrides(space: Space, values: dict) -> list[str]:
    """The ``-S`` arguments of a trial: ``<params file>:<section>.<key>=<value>`` (``++``: the
    key is set whether or not the file names it yet)."""
    return [f"{space.params}:++{k}={_value(v)}" for k, v in values.items()]


def experiment_metric(root: Path, name: str, space: Space, base: str) -> dict:
    """The metrics file of experiment ``name`` run from commit ``base``
    (refs/exps/<base[:2]>/<base[2:]>/<name>: an older experiment of that name is not it)."""
    ref = f"refs/exps/{base[:2]}/{base[2:]}/{name}"
    out = subprocess.run(["git", "show", f"{ref}:{space.metric_file}"], cwd=root,
                         capture_output=True, text=True)
    if out.returncode:
        raise UserInputError(f"experiment {name} was not saved with {space.metric_file}")
    try:
        return json.loads(out.stdout)
    except ValueError:
        raise UserInputError(f"experiment {name}: {space.metric_file} is not JSON") from None


def head(root: Path) -> str:
    return subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True,
                          text=True, check=True).stdout.strip()


def make_study(space: Space, storage_url: str):
    """The study, created or joined. The sampler's seed is the search file's for the first
    worker of a fresh study (the same search again draws the same trials); a worker that joins
    a study with trials offsets it by their count and its process, so two workers, or a
    resumed search, never repeat each other's draws. TPE's constant liar keeps workers apart
    after the random start too."""
    import optuna
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    storage = open_storage(storage_url)
    study = optuna.create_study(study_name=space.study, storage=storage,
                                pruner=make_pruner(space.pruner), direction=space.direction,
                                load_if_exists=True)
    s, n = space.sampler, len(study.get_trials(deepcopy=False))
    seed = s.get("seed")
    if seed is not None and n:
        seed = int(seed) + 7919 * n + os.getpid()
    study.sampler = optuna.samplers.RandomSampler(seed=seed) if s.get("name") == "random" \
        else optuna.samplers.TPESampler(seed=seed, n_startup_trials=int(s.get("startup", 8)),
                                        constant_liar=True)
    return study


def taken(study, upto: int | None = None) -> int:
    """Trials finished or under way (a failed one does not count: it is run again); with
    ``upto``, those numbered up to it (two workers asking at once: the later one is surplus)."""
    from optuna.trial import TrialState
    return sum(t.state in (TrialState.COMPLETE, TrialState.PRUNED, TrialState.RUNNING)
               and (upto is None or t.number <= upto)
               for t in study.get_trials(deepcopy=False))


def best_line(study) -> str:
    try:
        b = study.best_trial
    except ValueError:
        return "no trial finished yet"
    return f"best {b.value:.4g} (trial {b.number})"


def run_trial(root: Path, space: Space, trial, values: dict, storage_url: str, log: Path
              ) -> tuple[str, dict]:
    """One trial as a DVC experiment; returns its name and metrics."""
    name = f"{space.study}-{trial.number:03d}"
    trial.set_user_attr("experiment", name)
    base = head(root)
    # -s -f: the trial's stage alone, always run (never an upstream one, such as the prior's)
    cmd = [sys.executable, "-m", "dvc", "exp", "run", "--temp", "-s", "-f", "-n", name,
           space.pipeline] + [a for kv in overrides(space, values) for a in ("-S", kv)]
    env = {**os.environ, TRIAL_ENV: json.dumps({"storage": storage_url, "study": space.study,
                                                 "trial": trial.number,
                                                 "pruner": space.pruner})}
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "w") as fh, heartbeat(trial):
        fh.write("$ " + " ".join(cmd[2:]) + "\n")
        fh.flush()
        proc = subprocess.Popen(cmd, cwd=root, env=env, stdout=fh, stderr=subprocess.STDOUT)
        try:
            rc = proc.wait()
        except KeyboardInterrupt:
            _stop(proc)
            raise
    if rc:
        tail = [ln for ln in log.read_text().splitlines() if ln.strip()][-1:]
        raise UserInputError(f"dvc exp run exited {rc}: {tail[0] if tail else ''} (log: {log})")
    return name, experiment_metric(root, name, space, base)


@contextlib.contextmanager
def heartbeat(trial):
    """While a trial runs: its heartbeat, where the storage keeps them (a database), so a
    worker that dies leaves a trial that the next ``fail_stale_trials`` fails (and retries)."""
    storage = trial.study._storage
    interval = storage.get_heartbeat_interval() \
        if hasattr(storage, "get_heartbeat_interval") else None
    if not interval:
        yield
        return
    stop = threading.Event()

    def beat() -> None:
        while not stop.is_set():
            storage.record_heartbeat(trial._trial_id)
            stop.wait(interval)
    thread = threading.Thread(target=beat, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()


def _fail(study, trial) -> None:
    """Mark a trial failed, unless it already ended (a tell that failed half way)."""
    from optuna.trial import TrialState
    if trial is None:
        return
    with contextlib.suppress(Exception):
        if study._storage.get_trial(trial._trial_id).state == TrialState.RUNNING:
            study.tell(trial, state=TrialState.FAIL)


def _stop(proc: subprocess.Popen) -> None:
    """Ctrl-C: the experiment's own Ctrl-C (it shares the terminal's, or is sent one)."""
    try:
        proc.wait(timeout=3)
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def write_best(root: Path, space: Space, study) -> str | None:
    """The best trial's settings as the trial params file with them set (``best``), and the
    commands that apply them; None before any trial finished."""
    try:
        b = study.best_trial
    except ValueError:
        return None
    if space.best:
        subset, _ = trial_params(root / space.params)
        raw = yaml.safe_load((root / space.params).read_text()) or {}
        for key, v in b.params.items():
            section, k = key.split(".")
            raw.setdefault(section, {})
            raw[section] = {**(raw[section] or {}), k: v}
        head = (f"# The best trial of study {space.study}: trial {b.number}, {space.metric} "
                f"{b.value:.6g} (experiment {b.user_attrs.get('experiment')}), written by\n"
                f"# attn-forecast tune --space {space.path}; the trial params "
                f"file ({space.params}) with its settings.\n")
        (root / space.best).write_text(head + yaml.safe_dump(raw, sort_keys=False))
    apply = ""
    if space.apply:
        target, _, prefix = space.apply.partition("@")
        file, _, section = prefix.partition(":")
        sets = " ".join(f"-S '{file}:++{section}.{k}={_value(v)}'" for k, v in b.params.items())
        apply = f"\n  or on the pipeline it tunes: dvc exp run {target} {sets}"
    return (f"best: trial {b.number}, {space.metric} {b.value:.6g}: "
            + ", ".join(f"{k}={_short(v)}" for k, v in b.params.items())
            + (f" -> {space.best}" if space.best else "")
            + f"\n  apply it: dvc exp apply {b.user_attrs.get('experiment')}" + apply)


def tune(space: Space, root: Path, storage: str | None = None, trials: int | None = None
         ) -> int:
    """Take trials of the study until it holds ``trials`` finished or running ones; returns
    the trials this worker ran."""
    import optuna
    from optuna.trial import TrialState
    if storage:
        space.storage = storage
    if trials:
        space.trials = trials
    url = space.storage_url(root)
    study = make_study(space, url)
    ran = failed_in_a_row = 0
    print(f"tune {space.study}: {taken(study)} of {space.trials} trials taken, storage {url}")
    while True:
        optuna.storages.fail_stale_trials(study)     # a dead worker's (database storage)
        if taken(study) >= space.trials:
            break
        trial = None
        try:
            trial = study.ask()
            if taken(study, upto=trial.number) > space.trials:   # another worker took the last
                trial.set_user_attr("surplus", True)
                study.tell(trial, state=TrialState.FAIL)
                break
            t0 = time.perf_counter()
            log = root / space.path.parent / LOG_DIR / f"{space.study}-{trial.number:03d}.log"
            values = suggest(trial, space.space)
            name, m = run_trial(root, space, trial, values, url, log)
            value = float(m[space.metric])
            pruned = bool(m.get("pruned"))
            if pruned:
                study.tell(trial, state=TrialState.PRUNED)
            else:
                study.tell(trial, value)
        except KeyboardInterrupt:
            again = trial is not None and set(trial.params) == set(space.space)
            if trial is not None:
                _fail(study, trial)
                if again:
                    study.enqueue_trial(trial.params)   # the next worker (or resume) runs it
            done = sum(t.state == TrialState.COMPLETE for t in study.get_trials())
            where = f"in trial {trial.number}" if trial is not None else "between trials"
            print(f"\ninterrupted {where}" + (": it is queued again" if again else "")
                  + f"; {done} finished trials are kept in {url}; the same command resumes",
                  file=sys.stderr)
            sys.exit(130)
        except (UserInputError, KeyError, TypeError, ValueError) as err:
            _fail(study, trial)
            failed_in_a_row += 1
            what = str(err) if isinstance(err, UserInputError) else \
                f"its metrics have no number {space.metric!r} ({type(err).__name__}: {err})"
            print(f"tune {space.study}: trial {trial.number if trial else '?'} failed: {what}",
                  file=sys.stderr)
            if failed_in_a_row >= MAX_FAILED_IN_A_ROW:
                raise UserInputError(f"{failed_in_a_row} trials in a row failed; the last: "
                                     f"{what}") from None
            continue
        failed_in_a_row, ran = 0, ran + 1
        settings = " ".join(f"{k}={_short(v)}" for k, v in trial.params.items())
        what = f"pruned at epoch {m.get('epochs')} ({space.metric} {value:.4g} there)" \
            if pruned else f"{space.metric} {value:.4g}"
        print(f"tune {space.study}: trial {trial.number} ({taken(study)}/{space.trials}) "
              f"{settings}: {what}, {best_line(study)}, {time.perf_counter() - t0:.0f} s "
              f"[{name}]", flush=True)
    line = write_best(root, space, study)
    print(line or f"tune {space.study}: no trial finished")
    return ran


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="attn-forecast tune", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--space", default="competitions/tune/space.yaml",
                    help="the search file (study, storage, trials, pipeline, params, metric, "
                    "space)")
    ap.add_argument("--storage", help="instead of the file's: a journal file, or an Optuna "
                    "storage URL (sqlite:///..., postgresql://...) that several workers reach")
    ap.add_argument("--trials", type=int, help="instead of the file's: the study's size")
    args = ap.parse_args(argv)
    if args.trials is not None and args.trials < 1:
        raise UserInputError(f"--trials must be >= 1, got {args.trials}")
    root = Path.cwd()
    space = read_space(args.space)
    for f in (space.pipeline, space.params):
        if not (root / f).is_file():
            raise UserInputError(f"{args.space}: {f} does not exist (run from the project's "
                                 "folder)")
        if subprocess.run(["git", "ls-files", "--error-unmatch", f], cwd=root,
                          capture_output=True).returncode:
            raise UserInputError(f"{f} is not in git: each trial runs `dvc exp run --temp` on "
                                 f"a copy of the git project; `git add {f}` and commit it")
    trial_params(root / space.params)
    tune(space, root, args.storage, args.trials)
