"""Past covariates (``data.csv_feature_columns``) on generated daily OHLCV bars.

    python bench/features.py [--seeds 0,1,2] [--points 1000] [-S key=value ...]

Two series from ``attn_forecast.data.ohlcv``, each run through the pipeline (close as the
target, log returns) without and with the features (open, high, low as log returns, volume as
log1p), on the same targets:

- ``random walk``: the bars carry nothing about the next close, so the model's RMSE must stay
  within 0.97-1.10 of naive's with the features too (no false skill);
- ``volume leads``: the next log return is 0.8 volatility x this bar's standardized log
  volume plus noise, so the features must help (the RMSE ratio without / with them is the
  gain; the best possible is 1 / sqrt(1 + 0.8^2) = 0.78 of the noise-only error).

Prints per seed and medians: the model's RMSE / naive RMSE without and with the features, and
the ridge baseline's without them and with them (``ridge_features``).
"""
from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import ROOT, pipeline_metrics, with_overrides  # noqa: E402

FEATURES = ["data.csv_feature_columns=[open,high,low,volume]",
            "prepare.feature_transforms=[log_return,log_return,log_return,log1p]"]
# one configuration for both series (not tuned on either): returns, no input noise
BASE = ["data.kind=csv", "data.csv_column=close", "data.csv_time_column=date",
        "prepare.transform=log_return", "prepare.window=20", "prepare.val_frac=0.1",
        "train.patience=30", "train.augment_noise=0.0", "train.ensemble=1",
        "evaluate.baselines=[naive,mean,ridge]", "evaluate.season=0"]
SERIES = {"random walk": 0.0, "volume leads": 0.8}


def run(params: dict, csv: Path) -> dict:
    return pipeline_metrics(with_overrides(params, [f"data.csv_path={csv}"]), inputs=csv.parent)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seeds", default="0,1,2")
    ap.add_argument("--points", type=int, default=1000)
    ap.add_argument("-S", dest="overrides", action="append", default=[])
    args = ap.parse_args()
    sys.path.insert(0, str(ROOT / "src"))
    from attn_forecast.data.sources import ohlcv
    base = with_overrides(yaml.safe_load((ROOT / "params.yaml").read_text()),
                          BASE + args.overrides)
    seeds = [int(s) for s in args.seeds.split(",")]
    print("command: python bench/features.py " + " ".join(sys.argv[1:]))
    print("| series | seed | model / naive, close only | with OHLCV features | ridge / naive | "
          "ridge with the features |")
    print("|---|---:|---:|---:|---:|---:|")
    summary = {}
    folder = Path(tempfile.mkdtemp(prefix="attn-ohlcv-"))
    for name, lead in SERIES.items():
        rows = []
        for seed in seeds:
            csv = folder / f"bars_{seed}_{lead}.csv"
            ohlcv(args.points, seed, lead=lead).to_csv(csv, index=False)
            p = with_overrides(base, [f"train.seed={seed}"])
            plain, feats = run(p, csv), run(with_overrides(p, FEATURES), csv)
            naive = plain["naive"]["rmse"]
            row = (plain["model"]["rmse"] / naive, feats["model"]["rmse"] / naive,
                   plain["ridge"]["rmse"] / naive, feats["ridge_features"]["rmse"] / naive)
            rows.append(row)
            print(f"| {name} | {seed} | " + " | ".join(f"{v:.3f}" for v in row) + " |",
                  flush=True)
        summary[name] = [statistics.median(r[k] for r in rows) for k in range(4)]
    shutil.rmtree(folder)
    for name, row in summary.items():
        print(f"| {name} | median | " + " | ".join(f"{v:.3f}" for v in row) + " |")
    rw = summary["random walk"][1]
    lead = summary["volume leads"]
    print(f"\n- random walk with features: RMSE / naive {rw:.3f} (target 0.97-1.10: "
          f"{'met' if 0.97 <= rw <= 1.10 else 'missed'})")
    print(f"- volume leads: RMSE / naive {lead[0]:.3f} without the features, {lead[1]:.3f} "
          f"with them: the features cut the error by {100 * (1 - lead[1] / lead[0]):.1f} %")


if __name__ == "__main__":
    main()
