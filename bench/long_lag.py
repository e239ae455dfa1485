"""The lecture's claim put to a test built for it: a recurrent network forgets what lies far
back in its window, self-attention does not. A synthetic series whose next value depends on
one value ``lag`` steps back and on nothing else,

    y[t] = phi * y[t - lag] + sqrt(1 - phi^2) * e[t],   e ~ N(0, 1),  phi = 0.9,

so y has unit variance, the best forecast of y[t] is phi * y[t - lag] (its error's variance
1 - phi^2 = 0.19), and a forecaster that remembers nothing of it scores 1. The project's
attention model, its LSTM and its MLP (a plain MLP over the window: the ablation), trained by the
same loop on the same windows (one window length
for every lag, so only the distance to what matters changes), the same normalization, loss,
learning rate, batch and number of optimizer steps, one seed each of three; only the network
differs. Scored on the test part's windows nothing trained or stopped on, as the share of the
predictable variance each captures:

    captured = (1 - MSE) / phi^2     (1: the best forecast; 0: no memory of y[t - lag])

And where each network looks: the share of its input-gradient saliency on y[t - lag]
(model/explain.py: saliency_by_lag; 1: only there, 1 / window: spread evenly), and the
attention model's share of attention weight there (its last layer, as the lag figure shows).

    python bench/long_lag.py [--lags 4,16,48,96] [--window 112] [--steps 600] [--seeds 3]
                             [--points 6000] [--data-seed 1000]
                             [--out bench/results/long_lag.json]

Prints the command, one row per lag and network (parameters, seconds, the MSE and the share
captured, mean and range over seeds, the saliency and attention weight on the lag), and writes
them as JSON with ``--out``. Nothing is chosen on these windows: the settings are the defaults
below, fixed before the first run (the MLP's, the same sizes, before its first run).
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from dataclasses import replace
from datetime import date
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import ROOT  # noqa: E402

from attn_forecast.data.build import build  # noqa: E402
from attn_forecast.data.long_table import Raw  # noqa: E402
from attn_forecast.data.windows import spread  # noqa: E402
from attn_forecast.model import explain  # noqa: E402
from attn_forecast.forecasters.neural import ModelForecaster  # noqa: E402
from attn_forecast.model.networks import n_parameters  # noqa: E402
from attn_forecast.model.settings import ModelSettings  # noqa: E402
from attn_forecast.training.batches import to_device  # noqa: E402
from attn_forecast.training.members import QUIET, train_model  # noqa: E402
from attn_forecast.training.settings import TrainSettings  # noqa: E402

PHI = 0.9
KINDS = ("attention", "lstm", "mlp")
LOOKED_AT = 2000   # test windows the saliency and weights average over (spread)


def series(n: int, lag: int, seed: int) -> np.ndarray:
    rs = np.random.default_rng(seed)
    y = rs.normal(0, 1, n + lag)
    s = np.sqrt(1 - PHI ** 2)
    for t in range(lag, n + lag):
        y[t] = PHI * y[t - lag] + s * y[t]
    return y[lag:]


def store_of(y: np.ndarray, window: int):
    raw = Raw(np.array(["y"]), np.array([0, len(y)], np.int64), np.arange(len(y), dtype=float),
              y, np.full(len(y), np.nan), None, ())
    return build(raw, window=window, horizon=1, fracs={"test": 0.2, "val": 0.0, "cal": 0.0},
                 scaler="none", transform="none")


def run(kind: str, store, window: int, steps: int, seed: int, lag: int) -> dict:
    settings = ModelSettings(kind=kind, window=window, horizon=1, d_model=32, ffn_dim=64,
                             n_heads=1, n_layers=1, pooling="mean" if kind == "attention"
                             else "last", instance_norm="none")   # the same sizes each
    train = TrainSettings(seed=seed, epochs=10_000, max_steps=steps, lr=0.002,
                          batch_size=256, loss="mse", augment_noise=0.0, ensemble=1)
    data = to_device(store, torch.device("cpu"))
    t0 = time.perf_counter()
    model, _ = train_model(settings, replace(data, val=data.val[:0]), train, QUIET)
    secs = time.perf_counter() - t0
    model.eval()
    ends = store.ends("test")
    fc = ModelForecaster(model).forecast(store, ends).point[:, 0]
    mse = float(np.mean((fc - store.targets(ends)[:, 0]) ** 2))
    looked = torch.as_tensor(spread(ends, LOOKED_AT))
    saliency = explain.saliency_by_lag(model, data.z, looked, window, 1)
    weights = explain.attention_weights(model, data.z, looked, window, 1)
    weight = explain.lag_profile(weights, settings.pooling)[lag - 1] \
        if weights is not None else None
    return {"params": n_parameters(model), "seconds": secs, "mse": mse,
            "captured": (1 - mse) / PHI ** 2, "saliency_at_lag": float(saliency[lag - 1]),
            "weight_at_lag": None if weight is None else float(weight)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lags", default="4,16,48,96")
    ap.add_argument("--window", type=int, default=112)
    ap.add_argument("--steps", type=int, default=600)
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--points", type=int, default=6000)
    ap.add_argument("--data-seed", type=int, default=1000,
                    help="the series' seeds: this, +1, ... (a pilot run takes another)")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    lags = [int(x) for x in args.lags.split(",")]
    if max(lags) >= args.window:
        ap.error(f"--lags: each lag must be shorter than --window ({args.window}), "
                 f"got {max(lags)}")
    command = "python bench/long_lag.py " + " ".join(sys.argv[1:])
    print(f"command: {command}", flush=True)
    rows = []
    print("\n| lag | network | parameters | seconds | test MSE (best 0.19, none 1) | "
          "share captured (range over seeds) | saliency on the lag | attention on the lag |")
    print("|---:|---|---:|---:|---:|---:|---:|---:|")
    for lag in lags:
        for kind in KINDS:
            got = []
            for k in range(args.seeds):
                store = store_of(series(args.points, lag, args.data_seed + k), args.window)
                got.append(run(kind, store, args.window, args.steps, 42 + k, lag))
            cap = [g["captured"] for g in got]
            row = {"lag": lag, "network": kind, "params": got[0]["params"],
                   "seconds": float(np.mean([g["seconds"] for g in got])),
                   "mse": float(np.mean([g["mse"] for g in got])),
                   "captured": float(np.mean(cap)), "captured_min": float(min(cap)),
                   "captured_max": float(max(cap)),
                   "saliency_at_lag": float(np.mean([g["saliency_at_lag"] for g in got])),
                   "weight_at_lag": None if got[0]["weight_at_lag"] is None else
                   float(np.mean([g["weight_at_lag"] for g in got]))}
            rows.append(row)
            print(f"| {lag} | {kind} | {row['params']:,} | {row['seconds']:.1f} | "
                  f"{row['mse']:.3f} | {row['captured']:.2f} ({min(cap):.2f}-{max(cap):.2f}) | "
                  f"{row['saliency_at_lag']:.2f} | "
                  + ("-" if row["weight_at_lag"] is None else f"{row['weight_at_lag']:.2f}")
                  + " |", flush=True)
    if args.out:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT,
                                capture_output=True, text=True).stdout.strip()
        args.out.write_text(json.dumps({"command": command, "date": date.today().isoformat(),
                                        "commit": commit, "window": args.window,
                                        "steps": args.steps, "rows": rows}, indent=1) + "\n")


if __name__ == "__main__":
    main()
