"""``attn-forecast tune``: an Optuna study whose every trial is a DVC experiment.

    attn-forecast tune --space competitions/tune/space.yaml      # the study's file
    attn-forecast tune --storage sqlite:///competitions/tune/study.db   # a database

Each trial asks the study for settings, runs (its stage alone, in a temporary copy, in the
pipeline's DVC project: competitions/ is one of its own; the search file's paths are the
repository's)

    {command}

and tells the study its experiment's metric (the pruner sees its score each epoch, at its
optimizer step). Workers: the same command again, where the storage is reached (a dead
worker's trial runs again once its heartbeat is 3 min old). Ctrl-C stops the trial's run and
queues it again (or keeps it, if its experiment had finished). At the end, and on Ctrl-C,
every trial is written to ``table`` (trials.csv) and the best one's settings to ``best``.
"""
from __future__ import annotations

import argparse
import signal
import subprocess
import threading
from pathlib import Path
from types import SimpleNamespace

from ..errors import UserInputError
from ..search.experiments import check_outputs, trial_command
from ..search.space import read_space, trial_params
from ..search.study import tune


class _Args(argparse.ArgumentParser):
    def error(self, message: str):   # one line and exit 2, as every other bad input
        raise UserInputError(f"attn-forecast tune: {message} (see --help)")


def main(argv: list[str] | None = None) -> None:
    blank = SimpleNamespace(pipeline="<pipeline>", params="<params file>")
    cmd = "(in <project>) " + " ".join(trial_command(blank, "<study>-<number>",
                                                     {"<section>.<key>": 0}))
    ap = _Args(prog="attn-forecast tune", description=__doc__.replace(
        "{command}", cmd.replace("=0", "=<value> ...")),
        formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--space", default="competitions/tune/space.yaml", help="the search file")
    ap.add_argument("--storage", help="instead of the file's: a journal file, or an Optuna "
                    "storage URL (sqlite:///..., postgresql://...) that several workers reach")
    ap.add_argument("--trials", type=int, help="instead of the file's: the study's size")
    args = ap.parse_args(argv)
    if args.trials is not None and args.trials < 1:
        raise UserInputError(f"--trials must be >= 1, got {args.trials}")
    if args.storage is not None and not args.storage.strip():
        raise UserInputError("--storage must name a journal file or a storage URL, got ''")
    root = Path.cwd()
    space = read_space(args.space)
    for f in (space.pipeline, space.params):
        if subprocess.run(["git", "ls-files", "--error-unmatch", f], cwd=root,
                          capture_output=True).returncode == 0:
            continue
        if not (root / f).is_file():
            raise UserInputError(f"{args.space}: {f} does not exist (run from the project's "
                                 "folder)")
        raise UserInputError(f"{f} is not in git: each trial runs `dvc exp run --temp` on "
                             f"a copy of the git project; `git add {f}` and commit it")
    # another worker's trial may be rewriting the params file this instant (`dvc exp run`
    # applies its -S to the workspace's file before copying the project): its committed
    # version is what trials run, so that is what is checked here (each trial checks its own)
    committed = subprocess.run(["git", "show", f"HEAD:./{space.params}"], cwd=root,
                               capture_output=True, text=True)
    if committed.returncode == 0:
        trial_params(space.params, committed.stdout)
    check_outputs(root, space)
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, signal.default_int_handler)   # kill: as Ctrl-C
    tune(space, root, args.storage, args.trials,
         "--storage" if args.storage else f"{args.space}: storage")
