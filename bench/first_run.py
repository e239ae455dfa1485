"""A user's first run on their own CSV, timed: `dvc exp run --temp` with only the file and its
columns set (the real profile's defaults), from the command to the summary, stage by stage, on
a fresh clone of the project. Two files: an 8,000-point daily series (weekly and yearly
seasons, a trend, noise) and a 150-point monthly one (a yearly season); both made here from a
fixed seed, so every run times the same work.

    python bench/first_run.py                      # both files
    python bench/first_run.py --points 8000        # one of them
    python bench/first_run.py -S train.max_steps=100
    python bench/first_run.py --reference ../shared/reference/seed_reference.py
    python bench/first_run.py --readme             # the README's own line, its example CSV

The clone is made as a user's clone from a server is (`git clone --no-local`: the history in
one pack; a plain local clone links the source's loose objects, and DVC's temporary copy of
the project then takes twice as long to fill). Prints the command, each stage's seconds
(between DVC's "Running stage" lines; the last one includes DVC's experiment commit after it),
the whole run's, and the summary's first lines; with --reference, the source's worked example
timed as a process in the same run (its defaults, the median of 3) and each run's ratio to it.
The clone is removed at the end.
"""
from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import clone, timed, yardstick  # noqa: E402

FILES = {8000: ("daily", "D"), 150: ("monthly", "MS")}


def series(n: int) -> pd.DataFrame:
    """A demand-like series of ``n`` points: daily (weekly and yearly seasons) or monthly."""
    rs = np.random.default_rng(n)
    kind, freq = FILES[n]
    t = np.arange(n)
    if kind == "daily":
        y = 200 + 0.01 * t + 20 * np.sin(2 * np.pi * t / 7) + 30 * np.sin(2 * np.pi * t / 365.25)
    else:
        y = 200 + 0.5 * t + 25 * np.sin(2 * np.pi * t / 12)
    y = y + np.cumsum(rs.normal(0, 1.5, n)) + rs.normal(0, 5, n)
    return pd.DataFrame({"date": pd.date_range("2000-01-01", periods=n, freq=freq)
                         .strftime("%Y-%m-%d"), "demand": np.round(y, 2)})


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--points", type=int, choices=sorted(FILES), action="append")
    ap.add_argument("-S", dest="sets", action="append", default=[],
                    help="params.yaml key=value on top of the file and its columns")
    ap.add_argument("--reference", type=Path, help="the source's worked-example script")
    ap.add_argument("--readme", action="store_true",
                    help="time only the README's own line on its committed example CSV")
    args = ap.parse_args()
    if args.reference and not args.reference.is_file():
        ap.error(f"--reference: no such file {args.reference}")
    print("command: python bench/first_run.py " + " ".join(sys.argv[1:]), flush=True)
    work = Path(tempfile.mkdtemp(prefix="attn-first-run-"))
    try:
        clone(work)
        subprocess.run(["make", "-s", "repro", f"VENV={Path(sys.executable).parents[1]}",
                        "STAMP="], cwd=work, check=True, stdout=subprocess.DEVNULL)
        whole: dict = {}
        runs = (["readme"] if args.readme else []) + (
            args.points or ([] if args.readme else sorted(FILES, reverse=True)))
        for n in runs:
            cmd = ["dvc", "exp", "run", "--temp", "-S", "data.kind=csv"]
            if n != "readme":
                rel = f"data/external/first_run_{n}.csv"
                series(n).to_csv(work / rel, index=False)
                subprocess.run(["git", "add", rel], cwd=work, check=True)
                subprocess.run(["git", "commit", "-q", "-m", rel], cwd=work, check=True)
                cmd += ["-S", f"data.csv_path={rel}"]
            cmd += ["-S", "data.csv_column=demand", "-S", "data.csv_time_column=date"] + [
                x for s in args.sets for x in ("-S", s)]
            secs, stages, out = timed(cmd, work)
            whole[n] = secs
            what = ("the README's example CSV" if n == "readme"
                    else f"{n}-point {FILES[n][0]} CSV")
            print(f"\n{what}: {secs:.1f} s from `{' '.join(cmd)}` to the summary")
            for name, s in stages.items():
                print(f"  {name}: {s:.1f} s")
            for line in out.splitlines():
                if line.startswith(("prepare:", "train:", "baselines:", "evaluate:",
                                    "note:", "warning")):
                    print("  | " + line[:160])
        if args.reference:
            ref = sorted(yardstick(args.reference)[1] for _ in range(3))[1]
            print(f"\nyardstick: the source's worked example as a process, {ref:.1f} s "
                  "(median of 3)")
            for n, secs in whole.items():
                print(f"  {n}: {secs:.1f} s = {secs / ref:.1f}x the yardstick")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
