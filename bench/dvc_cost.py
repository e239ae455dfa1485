"""What an experiment costs beyond its own work (issue 62), before and after, side by side in
one run on this machine: each revision in a fresh clone (as a user's: one pack, `dvc pull`
from the store inside the repository, as `make repro` does), beside the floors built here.

- a no-op `dvc exp run` (nothing changed) against the same command in a one-stage DVC project
  made on the fly (goal: at most 1.5x);
- a no-op `dvc repro` (goal: at most 1.0 s);
- the worked example's experiment (`make source-baseline`'s settings, one `train.lr` change,
  a new value each run so that it trains) against the worked example as a plain script
  (../shared/reference/seed_reference.py; goal: at most 2.5x);
- a user's first run on a CSV with only its path and columns (bench/first_run.py's files: 8,000
  daily points, goal at most 18x the script; 150 monthly points, at most 6x).

    python bench/dvc_cost.py --before 9d79232 --reference ../shared/reference/seed_reference.py

Medians of --runs (3) for the short commands, one run each for the first runs. Writes
bench/results/dvc_cost.json (--out); bench/README.md's block is generated from it.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import ENV, ROOT, commit, yardstick  # noqa: E402
from first_run import series  # noqa: E402

BIN = Path(sys.executable).parent
GOALS = {"noop_exp_over_floor": 1.5, "noop_repro_s": 1.0, "worked_over_script": 2.5,
         "first_8000_over_script": 18.0, "first_150_over_script": 6.0}


def run(cmd: list[str], cwd: Path) -> float:
    """``cmd``'s wall seconds (it must succeed)."""
    t0 = time.perf_counter()
    res = subprocess.run(cmd, cwd=cwd, env={**ENV, "PATH": f"{BIN}:{os.environ['PATH']}"},
                         capture_output=True, text=True)
    if res.returncode:
        raise SystemExit(f"{' '.join(cmd)} exited {res.returncode} in {cwd}:\n"
                         f"{res.stdout[-1500:]}\n{res.stderr[-1500:]}")
    return time.perf_counter() - t0


def median(fn, runs: int) -> float:
    return round(statistics.median(fn(i) for i in range(runs)), 2)


def floor_project(work: Path) -> Path:
    """A one-stage DVC project, committed: the least a `dvc exp run` can cost here."""
    path = work / "floor"
    path.mkdir()
    (path / "dvc.yaml").write_text("stages:\n  one:\n    cmd: echo one > out.txt\n"
                                   "    outs:\n      - out.txt\n")
    (path / "params.yaml").write_text("x: 1\n")
    for cmd in (["git", "init", "-q"], ["dvc", "init", "-q"],
                ["dvc", "config", "core.analytics", "false"],
                ["dvc", "config", "core.check_update", "false"], ["dvc", "repro", "-q"],
                ["git", "add", "-A"], ["git", "-c", "user.name=b", "-c", "user.email=b@x",
                                       "commit", "-qm", "floor"]):
        run(cmd, path)
    return path


def clone_at(rev: str, dest: Path) -> Path:
    subprocess.run(["git", "clone", "-q", "--no-local", str(ROOT), str(dest)], check=True)
    subprocess.run(["git", "checkout", "-q", rev], cwd=dest, check=True)
    run([str(BIN / "dvc"), "pull", "-q", "-r", "store", "--allow-missing"], dest)
    run([str(BIN / "dvc"), "repro", "-q"], dest)     # up to date: nothing runs
    return dest


def measure(rev: str, work: Path, runs: int) -> dict:
    path = clone_at(rev, work / f"at-{rev}")
    dvc = str(BIN / "dvc")
    module = ("tools.worked_example" if (path / "tools" / "worked_example.py").exists()
              else "attn_forecast.config.worked_example")          # where revisions kept it
    worked = subprocess.run([sys.executable, "-m", module],
                            cwd=path, env={**ENV, "PYTHONPATH": str(path / "src")},
                            capture_output=True, text=True, check=True).stdout.split()
    out = {"rev": rev,
           "noop_exp_s": median(lambda i: run([dvc, "exp", "run"], path), runs),
           "noop_repro_s": median(lambda i: run([dvc, "repro"], path), runs),
           "worked_s": median(lambda i: run([dvc, "exp", "run", *worked, "-S",
                                             f"train.lr={0.006 + 0.0001 * i:.4f}"], path),
                              runs)}
    run(["git", "reset", "-q", "--hard"], path)      # the committed run again: the first runs
    run([dvc, "checkout", "-q", "--force"], path)    # start from it, as a user's would
    for n in (8000, 150):
        rel = f"data/external/first_run_{n}.csv"
        series(n).to_csv(path / rel, index=False)
        run(["git", "add", rel], path)
        run(["git", "-c", "user.name=b", "-c", "user.email=b@x", "commit", "-qm", rel], path)
        out[f"first_{n}_s"] = round(run([dvc, "exp", "run", "--temp", "-S", "data.kind=csv",
                                         "-S", f"data.csv_path={rel}", "-S",
                                         "data.csv_column=demand", "-S",
                                         "data.csv_time_column=date"], path), 1)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--before", default="9d79232", help="the revision to compare against")
    ap.add_argument("--reference", type=Path,
                    default=ROOT.parent / "shared" / "reference" / "seed_reference.py",
                    help="the worked example as a plain script")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "dvc_cost.json")
    args = ap.parse_args()
    if not args.reference.is_file():
        ap.error(f"--reference: no such file {args.reference}")
    command = " ".join(["python bench/dvc_cost.py", *sys.argv[1:]])
    print(f"command: {command}", flush=True)
    work = Path(tempfile.mkdtemp(prefix="attn-dvc-cost-"))
    try:
        floor = floor_project(work)
        floors = {"noop_exp_s": median(lambda i: run([str(BIN / "dvc"), "exp", "run"], floor),
                                       args.runs),
                  "script_s": round(statistics.median(yardstick(args.reference)[1]
                                                      for _ in range(args.runs)), 2)}
        print(f"floors: {floors}", flush=True)
        revs = {}
        for name, rev in (("before", args.before), ("after", "HEAD")):
            revs[name] = measure(rev, work, args.runs)
            print(f"{name}: {revs[name]}", flush=True)
        ratios = {name: {"noop_exp_over_floor": m["noop_exp_s"] / floors["noop_exp_s"],
                         "noop_repro_s": m["noop_repro_s"],
                         "worked_over_script": m["worked_s"] / floors["script_s"],
                         "first_8000_over_script": m["first_8000_s"] / floors["script_s"],
                         "first_150_over_script": m["first_150_s"] / floors["script_s"]}
                  for name, m in revs.items()}
        result = {"command": command, "commit": commit(), "date": time.strftime("%Y-%m-%d"),
                  "machine": f"{os.cpu_count()} cores", "floors": floors, "revs": revs,
                  "ratios": {n: {k: round(v, 2) for k, v in r.items()}
                             for n, r in ratios.items()}, "goals": GOALS}
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(result, indent=1) + "\n")
        for k, goal in GOALS.items():
            b, a = ratios["before"][k], ratios["after"][k]
            print(f"{k}: before {b:.2f}, after {a:.2f} (goal <= {goal}): "
                  f"{'met' if a <= goal else 'missed'}")
        print(f"-> {args.out}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
