"""Panels at scale, and one global model against one model per series.

    python bench/panel.py [--only memory speed global] [--series N] [--points N]
                          [--epoch-limit S] [--device cpu|cuda]

  memory   peak RSS of generate, prepare and one whole train epoch (each stage its own
           process, as DVC runs them) on the synthetic panel of 10,000 series x 2,000 points
           (20M values), window 96; train with a small patched model (d_model 16, patches of
           8 steps, batch 1,024) so the whole epoch ends in minutes on a CPU
  speed    windows/s of the train loop against a TensorDataset + DataLoader loop over the same
           windows, materialized for the comparison only (200,000 training windows spread over
           a 2,000 x 2,000 panel, window 96, batch 512, one epoch each), for the default model
           and the small patched one, at fp32 and bf16; the host's peak RSS, and on CUDA the
           peak GPU memory
  global   200 related synthetic series of 400 points: one global model against 200 separate
           models trained with the same settings (window 24, 30 epochs, batch 64), each series'
           MASE on its own test part (the last 20 %), mean over series; time of each

Nothing here is tuned on what it reports: every setting is fixed above, before the run.
"""
from __future__ import annotations

import argparse
import shutil
import sys
import time
from pathlib import Path

import numpy as np
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import ROOT, stage_memory, with_overrides  # noqa: E402

BASE = yaml.safe_load((ROOT / "params.yaml").read_text())
PANEL = ["data.kind=panel", "evaluate.season=0", "evaluate.baselines=[naive,mean,ridge]",
         "train.ensemble=1", "train.augment_noise=0.0", "prepare.val_frac=0.0",
         "train.patience=0", "train.max_steps=0"]


def bench_memory(n_series: int, n_points: int, limit_s: float | None) -> None:
    p = with_overrides(BASE, PANEL + [f"data.n_series={n_series}", f"data.n_points={n_points}",
                                      "prepare.window=96", "train.epochs=1",
                                      "train.batch_size=1024", "model.d_model=16",
                                      "model.ffn_dim=32", "model.patch_len=8",
                                      "train.device=cpu"])
    work = stage_memory(p, f", panel of {n_series:,} x {n_points:,} points, window 96", limit_s,
                        2048)
    meta = yaml.safe_load((work / "prepared" / "store.json").read_text())
    rows = int(np.load(work / "prepared" / "index.npz")["offsets"][-1])
    print(f"memory: {rows:,} values, {meta['n_windows']['train']:,} training windows; "
          f"store {sum(f.stat().st_size for f in (work / 'prepared').iterdir()) / 2**20:,.0f} "
          "MiB", flush=True)
    shutil.rmtree(work)


def _raw(n_series: int, n_points: int, seed: int = 42):
    import pandas as pd

    from attn_forecast.data.sources import panel
    from attn_forecast.data.long_table import Raw
    frame = pd.concat(panel(n_series, n_points, 0, seed, 0.15, 0.002))
    idv = frame["id"].to_numpy()
    starts = np.flatnonzero(np.r_[True, idv[1:] != idv[:-1]])
    return Raw(idv[starts].astype(str), np.r_[starts, len(frame)].astype(np.int64),
               frame["t"].to_numpy(np.float64), frame["value"].to_numpy(),
               frame["signal"].to_numpy())


def _store(raw, window: int):
    from attn_forecast.data.build import build
    return build(raw, window=window, horizon=1, fracs={"test": 0.2, "val": 0.0, "cal": 0.0},
                 scaler="zscore", transform="none")


def _panel(n_series: int, n_points: int, window: int, seed: int = 42):
    return _store(_raw(n_series, n_points, seed), window)


MODELS = {  # the default model (one token per step), and the memory run's small patched one
    "default model": [],
    "small patched model": ["model.d_model=16", "model.ffn_dim=32", "model.patch_len=8"],
}


def bench_speed(device: str, n_windows: int = 200_000) -> None:
    import resource

    import torch
    from attn_forecast.model.networks import build_model
    from attn_forecast.config.load import parse_params
    from attn_forecast.training.loop import autocast, fit_windows
    from attn_forecast.data.windows import spread
    from attn_forecast.setup.training import model_settings, train_settings
    panel = _panel(2_000, 2_000, 96)
    dev = torch.device(device)
    ends = spread(panel.ends("train"), n_windows)
    zz = np.asarray(panel.z)
    for label, model_keys in MODELS.items():
        for precision in ("fp32", "bf16"):
            params = parse_params(with_overrides(BASE, PANEL + model_keys + [
                "prepare.window=96", "train.epochs=1", "train.batch_size=512",
                f"train.precision={precision}", f"train.device={device}"]))
            settings = model_settings(params, panel, 0)
            torch.manual_seed(0)
            model = build_model(settings).to(dev)
            if dev.type == "cuda":
                torch.cuda.reset_peak_memory_stats()
            z = torch.from_numpy(panel.z).to(dev)
            res = fit_windows(model, z, torch.from_numpy(ends).to(dev),
                              torch.zeros(0, dtype=torch.int64, device=dev),
                              train_settings(params), progress=False)
            ours = res.windows_per_s
            gpu = f", peak GPU {torch.cuda.max_memory_allocated() / 2**20:,.0f} MiB" \
                if dev.type == "cuda" else ""
            # the same windows, materialized, through the usual Dataset/DataLoader loop
            X = np.stack([zz[e - 96:e] for e in ends])
            Y = zz[ends][:, None].copy()
            torch.manual_seed(0)
            model = build_model(settings).to(dev)
            ds = torch.utils.data.TensorDataset(torch.from_numpy(X), torch.from_numpy(Y))
            dl = torch.utils.data.DataLoader(ds, batch_size=512, shuffle=True)
            opt = torch.optim.Adam(model.parameters(), lr=params.train.lr)
            loss_fn = torch.nn.MSELoss()
            t0 = time.perf_counter()
            model.train()
            for x, y in dl:
                x, y = x.to(dev), y.to(dev)
                opt.zero_grad()
                with autocast(dev, precision):
                    pred = model(x)[0]
                loss_fn(pred.float(), y).backward()
                opt.step()
            if dev.type == "cuda":
                torch.cuda.synchronize()
            base = len(X) / (time.perf_counter() - t0)
            host = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
            print(f"speed: {label}, {precision} on {device}, {len(ends):,} windows of a "
                  f"2,000 x 2,000 panel: train loop {ours:,.0f} windows/s vs "
                  f"TensorDataset+DataLoader {base:,.0f}: {ours / base:.2f}x (target >= 1.3x)"
                  f"{gpu}; host peak RSS so far {host:,.0f} MiB", flush=True)
            del X, Y, ds, dl


def bench_global(n_series: int = 200, n_points: int = 400) -> None:
    import torch

    from attn_forecast.forecasters.run import run as run_forecasters
    from attn_forecast.forecasters.simple import Naive
    from attn_forecast.evaluation.scoring import evaluate
    from attn_forecast.config.load import parse_params
    from attn_forecast.forecasters.neural import ModelForecaster
    from attn_forecast.training.batches import to_device
    from attn_forecast.training.members import QUIET, train_model
    from attn_forecast.setup.training import model_settings, train_settings
    params = parse_params(with_overrides(BASE, PANEL + [
        "prepare.window=24", "train.epochs=30", "train.batch_size=64", "train.device=cpu"]))
    raw = _raw(n_series, n_points)

    def run(store) -> tuple[np.ndarray, np.ndarray, float]:
        t0 = time.perf_counter()
        data = to_device(store, torch.device("cpu"))
        model, _ = train_model(model_settings(params, store, 0), data,
                               train_settings(params), QUIET)
        secs = time.perf_counter() - t0
        fs = run_forecasters(store, [ModelForecaster(model), Naive()], ("test",))
        ev = evaluate(store, fs, noise_std=None)
        return ev.by_series["model_mase"].to_numpy(), ev.by_series["naive_mase"].to_numpy(), \
            secs

    g_mase, naive, g_secs = run(_store(raw, 24))
    local, l_secs = [], 0.0
    for i in range(n_series):   # each series alone: a store of one
        m, _, s = run(_store(raw.take(np.array([i])), 24))
        local.append(m[0])
        l_secs += s
    local = np.array(local)
    print(f"global: {n_series} related series of {n_points} points, window 24, 30 epochs, "
          f"batch 64, test = each series' last 20 %", flush=True)
    print(f"global: one global model  mean MASE {g_mase.mean():.4f} (median "
          f"{np.median(g_mase):.4f}), trained in {g_secs:.1f} s", flush=True)
    print(f"global: {n_series} separate models mean MASE {local.mean():.4f} (median "
          f"{np.median(local):.4f}), trained in {l_secs:.1f} s", flush=True)
    print(f"global: naive mean MASE {naive.mean():.4f}; the global model is better on "
          f"{int((g_mase < local).sum())} of {n_series} series", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", nargs="*", default=["memory", "speed", "global"],
                    choices=["memory", "speed", "global"])
    ap.add_argument("--series", type=int, default=10_000, help="memory: series")
    ap.add_argument("--points", type=int, default=2_000, help="memory: points per series")
    ap.add_argument("--epoch-limit", type=float, default=0,
                    help="memory: stop the train epoch after this many seconds (0 = never)")
    ap.add_argument("--device", default="cpu", choices=["cpu", "cuda"], help="speed: device")
    args = ap.parse_args()
    print("command: python bench/panel.py " + " ".join(sys.argv[1:]), flush=True)
    sys.path.insert(0, str(ROOT / "src"))
    for name in args.only:
        if name == "memory":
            bench_memory(args.series, args.points, args.epoch_limit or None)
        elif name == "speed":
            bench_speed(args.device)
        else:
            bench_global()


if __name__ == "__main__":
    main()
