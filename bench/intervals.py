"""Interval benchmark on the built-in sine, whose noise is known (Gaussian, std
``data.noise_std``): a calibrated 80 % interval covers about 80 % of the test targets and is
2 x 1.2816 x noise_std wide.

    python bench/intervals.py [--seeds 42,1,2,3,4] [-S key=value ...]

Runs the pipeline per seed with ``model.quantiles: [0.1, 0.5, 0.9]``, with and without
``evaluate.conformal: split`` (on a calibration part, ``prepare.cal_frac: 0.1``), beside the
point model, and prints per seed and as medians the
80 % coverage and width (against the ideal width), the median's signal RMSE (against the point
model's), and the pinball loss of the model and of the naive random-walk interval.
"""
from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import ROOT, pipeline_metrics, with_overrides  # noqa: E402

QUANTILES = ["model.quantiles=[0.1,0.5,0.9]"]
# conformal calibration needs its own part: the last 10 % before the test part
CONFORMAL = ["evaluate.conformal=split", "prepare.cal_frac=0.1"]
VARIANTS = {"quantile head": QUANTILES,
            "quantile head + conformal": QUANTILES + CONFORMAL,
            "point model + conformal": CONFORMAL}


def run(base: dict, overrides: list[str], seed: int) -> dict:
    return pipeline_metrics(with_overrides(base, overrides + [f"data.seed={seed}",
                                                               f"train.seed={seed}"]))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seeds", default="42,1,2,3,4")
    ap.add_argument("-S", dest="overrides", action="append", default=[])
    args = ap.parse_args()
    base = yaml.safe_load((ROOT / "params.yaml").read_text())
    seeds = [int(s) for s in args.seeds.split(",")]
    ideal = 2 * 1.2816 * with_overrides(base, args.overrides)["data"]["noise_std"]
    print("command: python bench/intervals.py " + " ".join(sys.argv[1:]))
    point = {s: run(base, args.overrides, s) for s in seeds}
    print(f"ideal 80 % width: {ideal:.4f}; point model's median signal RMSE: "
          f"{statistics.median(point[s]['model']['signal_rmse'] for s in seeds):.4f}\n")
    print("| variant | coverage_80 | width_80 / ideal | signal_rmse | pinball | naive pinball |"
          " ideal coverage |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name, extra in VARIANTS.items():
        rows = [run(base, args.overrides + extra, s) for s in seeds]
        med = lambda f: statistics.median(f(m) for m in rows)  # noqa: E731
        print(f"| {name} | {med(lambda m: m['model']['coverage_80']):.3f} | "
              f"{med(lambda m: m['model']['width_80']) / ideal:.3f} | "
              f"{med(lambda m: m['model']['signal_rmse']):.4f} | "
              f"{med(lambda m: m['model']['pinball']):.4f} | "
              f"{med(lambda m: m['naive']['pinball']):.4f} | "
              f"{med(lambda m: m['ideal_coverage_80']):.3f} |", flush=True)
        for s, m in zip(seeds, rows):
            print(f"|   seed {s} | {m['model']['coverage_80']:.3f} | "
                  f"{m['model']['width_80'] / ideal:.3f} | {m['model']['signal_rmse']:.4f} | "
                  f"{m['model']['pinball']:.4f} | {m['naive']['pinball']:.4f} | "
                  f"{m['ideal_coverage_80']:.3f} |", flush=True)


if __name__ == "__main__":
    main()
