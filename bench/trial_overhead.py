"""What a search trial costs around its own work: one trial of the quick search
(competitions/tune/quick/) run as `attn-forecast tune` runs it, `dvc exp run --temp -s -f -n
<name> <pipeline> -S ...`, against the same stage run as a bare process, in a fresh clone.

    python bench/trial_overhead.py [--space competitions/tune/quick/space.yaml] [--runs 3]

Prints, per run: the experiment's wall seconds, the stage process's wall seconds (run alone,
the same command dvc.yaml gives it), the stage's own seconds (its score.json: after its
imports), and the two overheads: DVC's (experiment - stage process) and the trial's in all
(experiment - the stage's own seconds). Medians at the end.
"""
from __future__ import annotations

import argparse
import json
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import ENV, ROOT, clone  # noqa: E402
from attn_forecast.search.experiments import in_project, project_of  # noqa: E402


def clock(cmd: list[str] | str, cwd: Path) -> float:
    t0 = time.perf_counter()
    subprocess.run(cmd, cwd=cwd, env=ENV, check=True, shell=isinstance(cmd, str),
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--space", default="competitions/tune/quick/space.yaml")
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    print("command: python bench/trial_overhead.py " + " ".join(sys.argv[1:]), flush=True)
    space = yaml.safe_load((ROOT / args.space).read_text())
    pipeline, metric = space["pipeline"], space["metric"]["file"]
    stage = yaml.safe_load((ROOT / pipeline).read_text())["stages"]["trial"]["cmd"]
    work = Path(tempfile.mkdtemp(prefix="attn-trial-"))
    try:
        clone(work)
        subprocess.run(["dvc", "pull", "-q", "-r", "store", "--allow-missing"], cwd=work,
                       env=ENV, check=True)   # as make repro: the prior, from the store
        rows = []
        for i in range(args.runs):
            lr = 0.001 + 0.0001 * i   # a trial's setting, as the search gives one
            # as attn-forecast tune runs a trial: in the pipeline's DVC project
            project = project_of(work, pipeline)
            exp = clock(["dvc", "exp", "run", "--temp", "-s", "-f", "-n", f"overhead-{i}",
                         in_project(work, pipeline), "-S",
                         f"{in_project(work, space['params'])}:++train.lr={lr}"], project)
            shown = subprocess.run(["dvc", "exp", "show", "--json", "--no-fetch"],
                                   cwd=project, env=ENV, capture_output=True, text=True,
                                   check=True).stdout
            own = _own_seconds(json.loads(shown), f"overhead-{i}", in_project(work, metric))
            bare = clock(stage, work / Path(pipeline).parent / yaml.safe_load(
                (ROOT / pipeline).read_text())["stages"]["trial"].get("wdir", "."))  # its wdir
            rows.append((exp, bare, own))
            print(f"run {i}: experiment {exp:.1f} s, stage process {bare:.1f} s, the stage's "
                  f"own work {own:.1f} s; DVC's overhead {exp - bare:.1f} s, the trial's "
                  f"{exp - own:.1f} s", flush=True)
        med = [statistics.median(c) for c in zip(*rows)]
        print(f"\nmedian of {args.runs}: experiment {med[0]:.1f} s, stage process {med[1]:.1f} "
              f"s, own work {med[2]:.1f} s; DVC's overhead {med[0] - med[1]:.1f} s, the trial's "
              f"overhead (experiment - own work) {med[0] - med[2]:.1f} s")
        print(f"stage: {shlex.quote(stage)}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _own_seconds(shown: list, name: str, metric: str) -> float:
    """The ``seconds`` of experiment ``name``'s metrics file in `dvc exp show --json`."""
    for rev in shown:
        for exp in rev.get("experiments") or []:
            for run in exp.get("revs") or []:
                if run.get("name") == name:
                    data = run["data"]["metrics"][metric]["data"]
                    return float(data["seconds"])
    raise SystemExit(f"experiment {name} not found in dvc exp show")


if __name__ == "__main__":
    main()
