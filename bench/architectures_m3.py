"""The lecture's claim on M3, by step ahead: the project's attention model, its LSTM and its
MLP (model.kind attention | lstm | mlp), each trained by the same loop with each subset's
competition settings (competitions/params.yaml: window, instance norm, pooling, loss, learning
rate, batch, 1,000 optimizer steps), one member each (no lookbacks, seeds or losses ensembled:
the ablation's rule), on every series' training part, forecasting its test part. Only the
network differs. Per subset and step ahead: sMAPE and MASE (M4's: the in-sample seasonal
naive error), the mean over series; and pooled over every forecast (the field's rule).

    python bench/architectures_m3.py [--subsets yearly,quarterly,monthly,other]
        [--kinds attention,lstm,mlp] [--seeds 42] [--out bench/results/architectures_m3.json]

With several --seeds each architecture trains once per seed (the spread over seeds). Nothing
is chosen here: the settings are the competition's, fixed on the validation cuts before this
script existed; the test parts are read (a row of competitions/test_runs.csv says so).
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from datetime import date
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import ROOT  # noqa: E402

from attn_forecast.data.scaling import naive_scale  # noqa: E402
from attn_forecast.forecasters.neural import ModelForecaster  # noqa: E402
from attn_forecast.model.networks import n_parameters  # noqa: E402
from attn_forecast.pipeline.competition import model_store, subset_params  # noqa: E402
from attn_forecast.setup.forecasting import check_data  # noqa: E402
from attn_forecast.setup.training import fit  # noqa: E402

PARAMS = ROOT / "competitions" / "params.yaml"


def errors(store, point: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(N, H) sMAPE and scaled absolute errors (MASE's terms) of ``point`` at ``ends``."""
    y = store.targets(ends)
    smape = 200 * np.abs(y - point) / np.maximum(np.abs(y) + np.abs(point), 1e-12)
    sid, lags = store.series_of(ends), store.lags()
    scale = np.array([naive_scale(store.train_y(int(i)), int(lags[int(i)])) for i in sid])
    return smape, np.abs(y - point) / np.where(scale > 0, scale, np.nan)[:, None]


def one(subset: str, kind: str, seed: int) -> dict:
    over = {"model": {"kind": kind, "lookbacks": []},
            "train": {"ensemble": 1, "losses": [], "seed": seed}}
    p, prof = subset_params(PARAMS, subset, over, holdout="test")
    store = model_store(p, prof)
    season = check_data(p, store)
    t0 = time.perf_counter()
    fitted = fit(p, store, season)
    seconds = time.perf_counter() - t0
    ends = store.ends("test")
    point = ModelForecaster(fitted.model, fitted.dist.device).forecast(store, ends).point
    s, m = errors(store, point, ends)
    return {"subset": subset, "network": kind, "seed": seed, "series": int(store.n_series),
            "params": n_parameters(fitted.model), "seconds": round(seconds, 1),
            "smape_by_step": np.nanmean(s, axis=0).tolist(),
            "mase_by_step": np.nanmean(m, axis=0).tolist(),
            "smape": float(np.nanmean(s)), "mase": float(np.nanmean(m)),
            "sums": {"smape": float(np.nansum(s)), "mase": float(np.nansum(m)),
                     "forecasts": int(np.isfinite(s).sum())}}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--subsets", default="yearly,quarterly,monthly,other")
    ap.add_argument("--kinds", default="attention,lstm,mlp")
    ap.add_argument("--seeds", default="42")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    command = "python bench/architectures_m3.py " + " ".join(sys.argv[1:])
    print(f"command: {command}", flush=True)
    rows = []
    print("| subset | network | seed | parameters | seconds | sMAPE | MASE |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for subset in args.subsets.split(","):
        for kind in args.kinds.split(","):
            for seed in (int(s) for s in args.seeds.split(",")):
                r = one(subset, kind, seed)
                rows.append(r)
                print(f"| {subset} | {kind} | {seed} | {r['params']:,} | {r['seconds']:.0f} | "
                      f"{r['smape']:.2f} | {r['mase']:.3f} |", flush=True)
    if args.out:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT,
                                capture_output=True, text=True).stdout.strip()
        args.out.write_text(json.dumps({"command": command, "date": date.today().isoformat(),
                                        "commit": commit, "rows": rows}, indent=1) + "\n")


if __name__ == "__main__":
    main()
