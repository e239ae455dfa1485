"""The M3 benchmark: the competition pipeline (competitions/dvc.yaml, its own DVC project) in a
fresh clone, from a
clean cache, timed stage by stage; then, on that clone, one experiment that changes a model
setting, timed (only the model's stages and the leaderboard rerun).

    make bench-m3                                   # python bench/m3.py
    python bench/m3.py --holdout validation         # the validation cuts: where settings are
                                                    # chosen (the test parts never read)
    python bench/m3.py --model-only all.train.lr=0.002  # the experiment that follows the run
    python bench/m3.py -S all.model.d_model=64      # the run itself with other settings

Prints the command, each stage's seconds (between DVC's "Running stage" lines), the whole run,
the experiment's, and the leaderboard. The clone is removed at the end (``--keep`` keeps it).
The settings live in competitions/params.yaml; nothing here chooses anything.
"""
from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import clone, timed  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--holdout", choices=["test", "validation"], default="test")
    ap.add_argument("-S", dest="sets", action="append", default=[],
                    help="competitions/params.yaml key=value for the run")
    ap.add_argument("--model-only", default="all.train.lr=0.002",
                    help="the model setting the experiment after the run changes ('' : none)")
    ap.add_argument("--keep", action="store_true", help="keep the clone")
    args = ap.parse_args()
    print("command: python bench/m3.py " + " ".join(sys.argv[1:]), flush=True)
    work = Path(tempfile.mkdtemp(prefix="attn-m3-"))
    clone(work)
    sets = [f"competitions/params.yaml:{kv}" for kv in
            args.sets + ([f"holdout={args.holdout}"] if args.holdout != "test" else [])]
    if sets:  # the run's own settings: set, as `dvc exp run -S` sets them
        from attn_forecast.config.load import read_yaml
        import yaml
        path = work / "competitions" / "params.yaml"
        raw = read_yaml(path)
        for kv in sets:
            key, _, value = kv.split(":", 1)[1].partition("=")
            node = raw
            *parents, last = key.split(".")
            for k in parents:
                node = node.setdefault(k, {})
            node[last] = yaml.safe_load(value)
        path.write_text(yaml.safe_dump(raw, sort_keys=False))
    # competitions/ is a DVC project of its own: its commands run there
    whole, stages, _ = timed(["dvc", "repro", "--force"], work / "competitions")
    print(f"\nwhole benchmark, from a clean cache: {whole / 60:.1f} min on {os.cpu_count()} "
          "CPU cores")
    for name, secs in stages.items():
        print(f"  {name}: {secs:.0f} s")
    board = (work / "competitions" / "m3" / "leaderboard.md").read_text()
    if args.model_only:
        cmd = ["dvc", "exp", "run", "-S", f"params.yaml:{args.model_only}"]
        secs, again, _ = timed(cmd, work / "competitions")
        print(f"\n`{' '.join(cmd)}`: {secs / 60:.1f} min, rerunning "
              + ", ".join(f"{n} ({s:.0f} s)" for n, s in again.items() if n != "pretrain"))
    print("\nthe run's leaderboard (competitions/m3/leaderboard.md):\n\n" + board)
    if args.keep:
        print(f"the clone: {work}")
    else:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
