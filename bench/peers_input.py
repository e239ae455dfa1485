"""The NeuralForecast peers' input size on M3, chosen on the validation cuts (never on the test
parts): for each subset, NHITS (the probe: the cheapest of the four to train well) trained as
the competition's peers stage trains it (forecasters/peers.py; competitions/params.yaml's
steps and seed) with each candidate input size, its validation-cut sMAPE, the mean over
series; the smaller wins and stands for all four peers of that subset
(competitions/params.yaml peers.input_size). The candidates, fixed before any run: the
model's window (the same windows as the attention model) and twice the horizon (the shortest
of NeuralForecast's usual multiples of the horizon beyond one: M3's yearly series have 14 to
41 training values, shorter than the model's window of 42). Where the two are equal (monthly:
36) nothing is run.

    python bench/peers_input.py [--subsets yearly,quarterly,other]
        [--out bench/results/peers_input.json]
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

from attn_forecast.config.load import read_yaml  # noqa: E402
from attn_forecast.forecasters.peers import Peer  # noqa: E402
from attn_forecast.pipeline.competition import field_store, subset_params  # noqa: E402
from attn_forecast.setup.forecasting import levels_of  # noqa: E402

PARAMS = ROOT / "competitions" / "params.yaml"
PROBE = "nf_nhits"


def one(subset: str, input_size: int, p, store) -> dict:
    s = read_yaml(PARAMS)["peers"][PROBE]
    f = Peer(PROBE, input_size, s["max_steps"], s["seed"], levels_of(p))
    t0 = time.perf_counter()
    f.fit(store)
    ends = store.ends("test")          # the validation holdout's windows: one a series
    point = f.forecast(store, ends).point
    y = store.targets(ends)
    smape = 200 * np.abs(y - point) / np.maximum(np.abs(y) + np.abs(point), 1e-12)
    return {"subset": subset, "input_size": input_size, "horizon": store.horizon,
            "series": store.n_series, "smape": float(smape.mean()),
            "seconds": round(time.perf_counter() - t0, 1)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--subsets", default="yearly,quarterly,monthly,other")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    command = "python bench/peers_input.py " + " ".join(sys.argv[1:])
    print(f"command: {command}", flush=True)
    rows, chosen = [], {}
    for subset in args.subsets.split(","):
        p, prof = subset_params(PARAMS, subset, holdout="validation")
        store = field_store(p, prof)
        candidates = sorted({p.prepare.window, 2 * store.horizon})
        got = [one(subset, c, p, store) for c in candidates] if len(candidates) > 1 else []
        for r in got:
            print(f"{subset}: input {r['input_size']}: validation sMAPE {r['smape']:.2f} "
                  f"({r['seconds']:.0f} s)", flush=True)
        rows += got
        chosen[subset] = min(got, key=lambda r: r["smape"])["input_size"] if got \
            else candidates[0]
    print(f"chosen: {chosen}")
    if args.out:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT,
                                capture_output=True, text=True).stdout.strip()
        args.out.write_text(json.dumps({"command": command, "date": date.today().isoformat(),
                                        "commit": commit, "probe": PROBE, "rows": rows,
                                        "chosen": chosen}, indent=1) + "\n")


if __name__ == "__main__":
    main()
