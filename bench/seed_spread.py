"""The spread over seeds of the whole M3 model: the competition pipeline's model stage
(competitions/dvc.yaml `model@<subset>`, every member of each subset's ensemble) trained again
with other base seeds, scored on the same test parts by the pipeline's own leaderboard stage,
beside the committed run (seed 42).

    python bench/seed_spread.py --seeds 1000,2000

Each seed moves every member's seed (a member k of an ensemble takes seed + k), so the seeds'
members never overlap. Each seed runs in a clone of the project whose competitions/params.yaml
has it (the committed field and calibration-cut forecasts beside; the calibration cut's model
is the committed seed 42's, so the point scores, sMAPE and MASE, are the figures this
compares). Each seed's leaderboard is kept in bench/results/seed_spread/<seed>.json (the docs'
table is generated from them); a seed whose file is there is read, not run again, so after a
change of the model's settings or code delete the folder. Scores the test parts: each run is a
row in competitions/test_runs.csv. Nothing here chooses a setting.
"""
from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import ENV, ROOT  # noqa: E402

SUBSETS = ("yearly", "quarterly", "monthly", "other")
PUBLISHED_THETA = {"yearly": 16.90, "quarterly": 8.96, "monthly": 13.85, "other": 4.41}


def run_seed(seed: int, work: Path) -> dict:
    """The model stage at ``seed`` on every subset, then the leaderboard, in a clone of the
    project whose competitions/params.yaml has the seed (the stages read that file): its
    json."""
    subprocess.run(["git", "clone", "-q", str(ROOT), str(work)], check=True)
    shutil.copy2(ROOT / "models" / "pretrained.pt", work / "models" / "pretrained.pt")
    path = work / "competitions" / "params.yaml"
    params = yaml.safe_load(path.read_text())
    params["all"]["train"]["seed"] = seed
    path.write_text(yaml.safe_dump(params, sort_keys=False))
    env = {**ENV, "PYTHONPATH": "src"}
    for subset in SUBSETS:
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "stages/competition_model.py", "--params",
                        "competitions/params.yaml", "--subset", subset, "--out",
                        f"competitions/m3/{subset}/model.npz", "--pretrained",
                        "models/pretrained.pt"], cwd=work, env=env, check=True,
                       stdout=subprocess.DEVNULL)
        print(f"  seed {seed} {subset}: {time.perf_counter() - t0:.0f} s", flush=True)
    subprocess.run([sys.executable, "stages/competition_leaderboard.py", "--params",
                    "competitions/params.yaml", "--forecasts", "competitions/m3", "--metrics",
                    "competitions/m3/leaderboard.json", "--table", "competitions/m3/leaderboard.md",
                    "--published", "competitions/published", "--test-runs",
                    "competitions/test_runs.csv"], cwd=work, env=env, check=True,
                   stdout=subprocess.DEVNULL)
    return json.loads((work / "competitions" / "m3" / "leaderboard.json").read_text())


def row(board: dict, who: str) -> list[float]:
    return ([board[s][who]["smape"] for s in SUBSETS] + [board["all"][who]["smape"]]
            + [board[s][who]["mase"] for s in SUBSETS[:3]])


COLUMNS = [f"sMAPE {s}" for s in SUBSETS] + ["sMAPE all"] + [f"MASE {s}" for s in SUBSETS[:3]]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seeds", default="1000,2000", help="base seeds beside the committed 42")
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "seed_spread"),
                    help="each seed's leaderboard (<seed>.json) goes here; a seed whose file "
                    "is there is not run again")
    args = ap.parse_args()
    print("command: python bench/seed_spread.py " + " ".join(sys.argv[1:]), flush=True)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    committed = json.loads((ROOT / "competitions" / "m3" / "leaderboard.json").read_text())
    boards = {42: committed}
    for seed in (int(s) for s in args.seeds.split(",") if int(s) != 42):   # 42: committed
        path = out / f"{seed}.json"
        if not path.is_file():
            work = Path(tempfile.mkdtemp(prefix="attn-seeds-"))
            try:
                board = run_seed(seed, work / str(seed))
            finally:
                shutil.rmtree(work, ignore_errors=True)
            path.write_text(json.dumps({"command": "python bench/seed_spread.py "
                                        + " ".join(sys.argv[1:]), "seed": seed,
                                        "leaderboard": board}, indent=1) + "\n")
        boards[seed] = json.loads(path.read_text())["leaderboard"]
    print("| forecaster | seed | " + " | ".join(COLUMNS) + " |")
    print("|---|---:|" + "---:|" * len(COLUMNS))
    for who in ("model", "model+comb"):
        vals = np.array([row(b, who) for b in boards.values()])
        for seed, r in zip(boards, vals):
            print(f"| {who} | {seed} | " + " | ".join(f"{v:.3f}" for v in r) + " |")
        print(f"| {who} | max - min | " + " | ".join(
            f"{x:.3f}" for x in vals.max(0) - vals.min(0)) + " |")
    print("| theta (this project) | | " + " | ".join(f"{x:.3f}" for x in row(committed, "theta"))
          + " |")
    print("| Theta (published) | | " + " | ".join(f"{PUBLISHED_THETA[s]:.2f}" for s in SUBSETS)
          + " | | | | |")


if __name__ == "__main__":
    main()
