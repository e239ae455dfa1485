"""Tuning grid: one line per configuration, each over seeds 42, 1, 2, 3, 4.

``--source``: the overrides apply on top of the worked example's settings instead of
params.yaml (a grid file can ask for it with a `# base: source` line).

    python bench/grid.py docs/grids/step2_lr.txt [--seeds 42,1,2,3,4] [--source]

A grid file holds one configuration a line, as space-separated `-S`-style overrides
(`prepare.window=40 model.pooling=mean`); `#` starts a comment. Prints a Markdown row per
configuration: medians of the model's and ridge's test RMSE and signal RMSE, on how many seeds
the model beats ridge, and the median train time. The same overrides run as DVC experiments
with `dvc exp run --queue -S ...`; this script is the quicker way to get a median over seeds.
"""
from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from accuracy import COLS, run_project  # noqa: E402
from common import ROOT, source_base  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("grid", type=Path)
    ap.add_argument("--seeds", default="42,1,2,3,4")
    ap.add_argument("--params", default=str(ROOT / "params.yaml"))
    ap.add_argument("--source", action="store_true")
    args = ap.parse_args()
    base = yaml.safe_load(Path(args.params).read_text())
    text = args.grid.read_text()
    if args.source or "# base: source" in text:
        base = source_base(base)
    print(f"command: python bench/grid.py {' '.join(sys.argv[1:])}")
    seeds = [int(s) for s in args.seeds.split(",")]
    print("| overrides | model rmse | model signal_rmse | ridge rmse | ridge signal_rmse | "
          "beats ridge | beats naive, DM p < 0.05 | train s |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for line in text.splitlines():
        overrides = line.split("#")[0].split()
        if not line.split("#")[0].strip():
            continue
        rows = [run_project(base, overrides, s) for s in seeds]
        med = {k: statistics.median(r[k] for r in rows) for k in COLS if k.endswith(("rmse", "_s"))}
        wins = sum(r["model_rmse"] < r["ridge_rmse"] for r in rows)
        sig = sum(r["model_rmse"] < r["naive_rmse"] and (r["dm_p_naive"] or 1) < 0.05
                  for r in rows)
        print(f"| `{' '.join(overrides) or '(defaults)'}` | {med['model_rmse']:.4f} | "
              f"{med['model_signal_rmse']:.4f} | {med['ridge_rmse']:.4f} | "
              f"{med['ridge_signal_rmse']:.4f} | {wins}/{len(rows)} | {sig}/{len(rows)} | "
              f"{med['train_s']:.1f} |", flush=True)


if __name__ == "__main__":
    main()
