"""Training throughput and memory on the machine's accelerator (CUDA) or its CPU.

    python bench/device.py [--device cuda|cpu] [--points N] [--epochs N]

The large configuration of ``speed.py --only train_large`` (window 96, d_model 64, 4 heads,
2 residual layers, batch 512; 200,000 points by default) through the real stages (generate,
prepare, train, in-process), once per precision (fp32, bf16) and with ``train.compile``
(fp32): windows/s of the train stage's loop, the peak accelerator memory (CUDA only), the
process's peak host RSS, and the final training loss. Then the default configuration through
every stage (evaluate included) on the same device, with its test RMSE beside naive's, so a
CUDA run can be compared with the committed CPU metrics.
"""
from __future__ import annotations

import argparse
import contextlib
import io
import json
import shutil
import sys
import tempfile
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import ROOT, run_pipeline, with_overrides  # noqa: E402
from attn_forecast.training.distributed import peak_rss_mib  # noqa: E402

LARGE = ["prepare.window=96", "model.d_model=64", "model.ffn_dim=128", "model.n_heads=4",
         "model.n_layers=2", "model.residual=true", "train.batch_size=512",
         "prepare.val_frac=0.0", "train.patience=0", "train.augment_noise=0.0",
         "train.ensemble=1"]


def run(params: dict, stages: tuple) -> tuple:
    import torch
    work = Path(tempfile.mkdtemp(prefix="attn-device-"))
    if torch.cuda.is_available():
        torch.cuda.reset_peak_memory_stats()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        fit, metrics = run_pipeline(params, work, stages=stages)
    gpu = torch.cuda.max_memory_allocated() / 2 ** 20 if torch.cuda.is_available() else 0.0
    shutil.rmtree(work)
    return fit, metrics, gpu


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    ap.add_argument("--points", type=int, default=200_000)
    ap.add_argument("--epochs", type=int, default=2)
    args = ap.parse_args()
    import torch
    if args.device == "cuda" and not torch.cuda.is_available():
        raise SystemExit("error: --device cuda, but torch sees no CUDA device; use --device cpu")
    name = torch.cuda.get_device_name() if args.device == "cuda" else "CPU"
    print(f"command: python bench/device.py {' '.join(sys.argv[1:])}")
    print(f"device: {name}; torch {torch.__version__}\n")
    base = yaml.safe_load((ROOT / "params.yaml").read_text())
    large = with_overrides(base, LARGE + [f"data.n_points={args.points}",
                                          f"train.epochs={args.epochs}",
                                          f"train.device={args.device}"])
    print(f"large config, {args.points:,} points, {args.epochs} epochs (the first includes "
          "warm-up and, with compile, compilation):\n")
    print("| variant | windows/s | peak GPU MiB | peak host RSS MiB | final train loss |")
    print("|---|---:|---:|---:|---:|")
    variants = {"fp32": [], "bf16": ["train.precision=bf16"], "fp32 + compile":
                ["train.compile=true"]}
    for label, extra in variants.items():
        try:
            fit, _, gpu = run(with_overrides(large, extra), ("generate", "prepare", "train"))
        except Exception as err:  # noqa: BLE001  (a variant this machine cannot run)
            print(f"| {label} | failed: {type(err).__name__}: {str(err).splitlines()[0][:80]} "
                  "| | | |")
            continue
        print(f"| {label} | {fit.windows_per_s:,.0f} | {gpu:,.0f} | {peak_rss_mib():,.0f} | "
              f"{fit.history[-1]['train_loss']:.5f} |", flush=True)
    default = with_overrides(base, [f"train.device={args.device}",
                                    "evaluate.baselines=[naive,mean,ridge]"])
    fit, m, _ = run(default, ("generate", "prepare", "baselines", "train", "evaluate"))
    print(f"\ndefault config on {args.device}: train {fit.seconds:.2f} s, model RMSE "
          f"{m['model']['rmse']:.4f}, signal RMSE {m['model']['signal_rmse']:.4f}, naive RMSE "
          f"{m['naive']['rmse']:.4f} (committed CPU metrics: "
          f"{json.loads((ROOT / 'reports/metrics.json').read_text())['model']['rmse']})")


if __name__ == "__main__":
    main()
