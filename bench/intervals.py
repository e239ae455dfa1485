"""Interval benchmark on the built-in sine, whose noise is known (Gaussian, std
``data.noise_std``): a calibrated 80 % interval covers about 80 % of the test targets and is
2 x 1.2816 x noise_std wide, a 95 % one 2 x 1.96 x noise_std.

    python bench/intervals.py [--seeds 42,1,2,3,4] [-S key=value ...]

Runs the pipeline per seed (data and training alike) with the defaults (every forecaster's
quantiles at evaluate.quantiles, calibrated by split conformal on the calibration part), and
with a quantile head (``model.quantiles``, read off at the same levels, then calibrated), and
prints per seed and as medians the model's 80 % and 95 % coverage and width (against the
ideal width), its WQL and the naive random walk's, and what the ideal interval covers on the
same targets. Nothing is chosen here: the calibration method is the pipeline's own.
"""
from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import ROOT, pipeline_metrics, with_overrides  # noqa: E402

VARIANTS = {"point model, calibrated (the default)": [],
            "quantile head, calibrated": ["model.quantiles=[0.1,0.2,0.3,0.4,0.5,0.6,0.7,0.8,0.9]"]}
Z80, Z95 = 1.2816, 1.9600


def run(base: dict, overrides: list[str], seed: int) -> dict:
    return pipeline_metrics(with_overrides(base, overrides + [f"data.seed={seed}",
                                                               f"train.seed={seed}"]))


def row(label: str, m: list[dict] | dict, noise: float) -> str:
    ms = m if isinstance(m, list) else [m]
    med = lambda f: statistics.median(f(x) for x in ms)  # noqa: E731
    return (f"| {label} | {med(lambda x: x['model']['coverage_80']):.3f} | "
            f"{med(lambda x: x['model']['coverage_95']):.3f} | "
            f"{med(lambda x: x['model']['width_80']) / (2 * Z80 * noise):.3f} | "
            f"{med(lambda x: x['model']['width_95']) / (2 * Z95 * noise):.3f} | "
            f"{med(lambda x: x['model']['wql']):.4f} | {med(lambda x: x['naive']['wql']):.4f} | "
            f"{med(lambda x: x['ideal_coverage_80']):.3f} / "
            f"{med(lambda x: x['ideal_coverage_95']):.3f} |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seeds", default="42,1,2,3,4")
    ap.add_argument("-S", dest="overrides", action="append", default=[])
    args = ap.parse_args()
    base = yaml.safe_load((ROOT / "params.yaml").read_text())
    seeds = [int(s) for s in args.seeds.split(",")]
    noise = with_overrides(base, args.overrides)["data"]["noise_std"]
    print("command: python bench/intervals.py " + " ".join(sys.argv[1:]))
    print("| variant | coverage_80 | coverage_95 | width_80 / ideal | width_95 / ideal | wql "
          "| naive wql | ideal coverage 80 / 95 |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for name, extra in VARIANTS.items():
        rows = [run(base, args.overrides + extra, s) for s in seeds]
        print(row(f"{name} (median)", rows, noise), flush=True)
        for s, m in zip(seeds, rows):
            print(row(f"  seed {s}", m, noise), flush=True)


if __name__ == "__main__":
    main()
