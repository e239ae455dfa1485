"""A trial as a DVC experiment: its ``dvc exp run`` command (its stage alone, in a temporary
copy, with its settings), run in its own process group with its log, stopped on Ctrl-C, and
its metric read back; and the checks a search file's pipeline must pass before any trial."""
from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import yaml

from ..config.load import read_yaml
from ..errors import UserInputError
from .space import Space
from .storage import TRIAL_ENV

LOG_DIR = "logs"            # beside the search file: one log per trial (git-ignored)
DVC = [sys.executable, "-m", "dvc"]   # how a trial's `dvc` command runs
STOP_S = 30                 # Ctrl-C: how long a trial's run may take to stop before SIGKILL


def as_dvc_value(v) -> str:
    """A value as ``dvc exp run -S`` reads it (YAML flow style)."""
    return yaml.safe_dump(v, default_flow_style=True, width=10_000).strip().removesuffix("...")\
        .strip()


def shown(v) -> str:
    return f"{v:.4g}" if isinstance(v, float) else str(v)


def project_of(root: Path, path: str) -> Path:
    """The DVC project that holds ``path`` (relative to the repository ``root``): the nearest
    folder above it with a ``.dvc`` folder (the competitions are a project of their own, `dvc
    init --subdir`), else ``root``."""
    folder = (root / path).parent
    while folder != root and root in folder.parents and not (folder / ".dvc").is_dir():
        folder = folder.parent
    return folder if (folder / ".dvc").is_dir() else root


def in_project(root: Path, path: str) -> str:
    """``path`` as its DVC project (:func:`project_of`) names it."""
    return os.path.relpath(root / path, project_of(root, path))


def overrides(space: Space, values: dict, root: Path = Path(".")) -> list[str]:
    """The ``-S`` arguments of a trial: ``<params file>:<section>.<key>=<value>`` (``++``: the
    key is set whether or not the file names it yet), the file as its DVC project names it."""
    return [f"{in_project(root, space.params)}:++{k}={as_dvc_value(v)}"
            for k, v in values.items()]


def trial_command(space: Space, name: str, values: dict, root: Path = Path(".")
                  ) -> list[str]:
    """One trial's ``dvc`` command: its stage alone, always run (``-s -f``: never an upstream
    stage, such as the prior's), in a temporary copy, named, with its settings; run in the
    pipeline's DVC project (:func:`project_of`), which names the paths."""
    return ["dvc", "exp", "run", "--temp", "-s", "-f", "-n", name,
            in_project(root, space.pipeline)] \
        + [a for kv in overrides(space, values, root) for a in ("-S", kv)]


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
    out = subprocess.run(["git", "rev-parse", "--verify", "-q", "HEAD"], cwd=root,
                         capture_output=True, text=True)
    if out.returncode:
        raise UserInputError(f"{root}: no git commit; each trial runs `dvc exp run --temp` "
                             "on a commit of the project: commit it first")
    return out.stdout.strip()


def failure(log: Path) -> str:
    """Why a trial's run failed: its log's last one-line error, else traceback's end, else line."""
    lines = [ln.strip() for ln in log.read_text(errors="replace").splitlines() if ln.strip()]
    for pattern in (r"error: ", r"[A-Za-z_][\w.]*(Error|Exception|Interrupt|Exit)\b"):
        found = [ln for ln in lines if re.match(pattern, ln)]
        if found:
            return found[-1]
    return lines[-1] if lines else "no output"


def run_trial(root: Path, space: Space, trial, values: dict, storage_url: str, log: Path,
              base: str) -> tuple[str, dict]:
    """One trial as a DVC experiment, its run in a process group of its own, with the trial's
    heartbeat; returns its name and metrics. At Ctrl-C the group is ended first."""
    from optuna.storages._heartbeat import get_heartbeat_thread   # what study.optimize uses
    name = f"{space.study}-{trial.number:03d}"
    trial.set_user_attr("experiment", name)
    cmd = trial_command(space, name, values, root)
    where = project_of(root, space.pipeline)
    env = {**os.environ, TRIAL_ENV: json.dumps({"storage": storage_url, "study": space.study,
                                                 "trial": trial.number, "worker": os.getpid(),
                                                 "pruner": space.pruner})}
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "w") as fh, get_heartbeat_thread(trial._trial_id, trial.study._storage):
        fh.write(f"$ (in {os.path.relpath(where, root)}) " + " ".join(cmd) + "\n")
        fh.flush()
        proc = subprocess.Popen(DVC + cmd[1:], cwd=where, env=env, stdout=fh,
                                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                start_new_session=True)
        try:
            rc = proc.wait()
        except KeyboardInterrupt:
            end_group(proc)
            raise
    if rc:
        with contextlib.suppress(RuntimeError):   # a trial failed meanwhile (stale) keeps as is
            trial.set_user_attr("fail_reason", why := failure(log))
        raise UserInputError(f"dvc exp run exited {rc}: {why} (log: {log})")
    return name, experiment_metric(root, name, space, base)


def end_group(proc: subprocess.Popen, grace: float = STOP_S) -> None:
    """End a trial's run: Ctrl-C to its process group (the stage stops: dvc saves nothing),
    SIGKILL after ``grace`` s or at a second Ctrl-C, and to whatever of the group is left."""
    for sig, wait in ((signal.SIGINT, grace), (signal.SIGKILL, 30.0)):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, sig)
        with contextlib.suppress(subprocess.TimeoutExpired, KeyboardInterrupt):
            proc.wait(timeout=wait)
            break
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)


def check_outputs(root: Path, space: Space) -> None:
    """Before any trial: the metric file is an output of the pipeline, and the folders the
    search writes in (trial logs, the table, the best params file) exist or can be made."""
    spec = read_yaml(root / space.pipeline)
    stages = spec["stages"] if isinstance(spec, dict) and isinstance(spec.get("stages"), dict) \
        else {}
    outs = {os.path.normpath(Path(space.pipeline).parent / str(st.get("wdir", ".")) / str(
        next(iter(o)) if isinstance(o, dict) else o)) for s in stages.values()
        if isinstance(s, dict) for st in [s.get("do", s)]
        for kind in ("outs", "metrics", "plots") for o in st.get(kind) or []}
    if not any("${" in o for o in outs) and os.path.normpath(space.metric_file) not in outs:
        raise UserInputError(f"{space.path}: metric.file {space.metric_file} is not an output "
                             f"of {space.pipeline} (its outputs: {', '.join(sorted(outs))})")
    for key, path in (("table", space.table), ("best", space.best),
                      ("the trial logs", str(space.path.parent / LOG_DIR / "-"))):
        try:
            if path:
                (root / path).parent.mkdir(parents=True, exist_ok=True)
            ok = not path or not (root / path).is_dir() and os.access((root / path).parent,
                                                                       os.W_OK)
        except OSError as err:
            ok = f"cannot create {Path(path).parent} ({err.strerror or err})"
        if ok is not True:
            raise UserInputError(f"{space.path}: {key}: " + (ok or f"cannot write {path} (a "
                                 "folder, or one without write permission)"))
