"""Accuracy benchmark: the pipeline (generate -> prepare -> train -> evaluate) over seeds.

    python bench/accuracy.py [--source] [-S key=value ...] [--seeds 42,1,2,3,4]
                             [--reference PATH]

``--source`` starts from the worked example's settings (``make source-baseline``) instead of
params.yaml; ``-S`` overrides apply on top. Each seed sets data.seed and train.seed alike.
Prints per seed and as medians the model's and the ridge baseline's test RMSE and RMSE against
the noise-free signal, the naive RMSE and the train time, computed from the evaluate stage's
predictions. With --reference, also runs the source's worked example (a script taking
`SEED N_POINTS EPOCHS`, printing one JSON line) on the same seeds, in the same sitting, and
scores both on the same targets: the worked example's own test targets (its window of 10 and
`split = int(len(X) * 0.8)`: targets 242-299 of 300), which lie inside the project's (the last
20 % of the series, 240-299).
"""
from __future__ import annotations

import argparse
import contextlib
import io
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import ROOT, run_pipeline, source_base, with_overrides  # noqa: E402

COLS = ("model_rmse", "model_signal_rmse", "ridge_rmse", "ridge_signal_rmse", "naive_rmse",
        "model_over_naive", "dm_p_naive", "dm_p_ridge", "train_s")


def _rmse(a, b) -> float:
    return float(np.sqrt(np.mean((np.asarray(a) - np.asarray(b)) ** 2)))


def run_project(base: dict, overrides: list[str], seed: int,
                first_target: int | None = None) -> dict:
    """One seed through the pipeline. Errors over every test target and step (metrics.json),
    or, with ``first_target``, over the first-step test targets at time index >= it (from
    predictions.csv and the series' signal: the worked example's targets)."""
    p = with_overrides(base, overrides + [f"data.seed={seed}", f"train.seed={seed}"])
    work = Path(tempfile.mkdtemp(prefix="attn-accuracy-"))
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        fit, m = run_pipeline(p, work)
    pred = pd.read_csv(work / "predictions.csv")
    series = pd.read_csv(work / "series.csv")
    shutil.rmtree(work)
    if first_target is None:
        sig = m.get("significance", {})
        row = {"seed": seed, "n_targets": m["n_test"], "model_rmse": m["model"]["rmse"],
               "model_signal_rmse": m["model"]["signal_rmse"], "ridge_rmse": m["ridge"]["rmse"],
               "ridge_signal_rmse": m["ridge"]["signal_rmse"], "naive_rmse": m["naive"]["rmse"],
               "dm_p_naive": sig.get("naive", {}).get("p_value"),
               "dm_p_ridge": sig.get("ridge", {}).get("p_value"), "train_s": fit.seconds}
    else:
        t = pred["t"].to_numpy()
        keep = t >= first_target
        pred, signal = pred[keep], series["signal"].to_numpy()[t[keep].astype(int)]
        row = {"seed": seed, "n_targets": int(keep.sum()),
               "model_rmse": _rmse(pred["predicted"], pred["actual"]),
               "model_signal_rmse": _rmse(pred["predicted"], signal),
               "ridge_rmse": _rmse(pred["ridge"], pred["actual"]),
               "ridge_signal_rmse": _rmse(pred["ridge"], signal),
               "naive_rmse": _rmse(pred["naive"], pred["actual"]), "dm_p_naive": None,
               "dm_p_ridge": None, "train_s": fit.seconds}
    row["model_over_naive"] = row["model_rmse"] / row["naive_rmse"]
    return row


def reference_first_target(n_points: int, window: int = 10) -> int:
    """The worked example's first test target: windows of 10, `split = int(len(X) * 0.8)`."""
    return window + int((n_points - window) * 0.8)


def run_reference(script: Path, seed: int, n_points: int, epochs: int) -> dict:
    out = subprocess.run([sys.executable, str(script), str(seed), str(n_points), str(epochs)],
                         check=True, capture_output=True, text=True).stdout
    r = json.loads(out.strip().splitlines()[-1])
    return {"seed": seed, "model_rmse": r["test_rmse"], "model_signal_rmse": r["rmse_vs_clean"],
            "ridge_rmse": None, "ridge_signal_rmse": None, "naive_rmse": r["naive_rmse"],
            "model_over_naive": r["test_rmse"] / r["naive_rmse"], "train_s": r["train_s"]}


def table(title: str, rows: list[dict]) -> tuple[str, dict]:
    fmt = lambda v: "-" if v is None else f"{v:.4f}"  # noqa: E731
    lines = [f"{title}", "| seed | " + " | ".join(COLS) + " |", "|---" * (len(COLS) + 1) + "|"]
    for r in rows:
        lines.append(f"| {r['seed']} | " + " | ".join(fmt(r[c]) for c in COLS) + " |")
    med = {c: statistics.median([r[c] for r in rows if r[c] is not None])
           if any(r[c] is not None for r in rows) else None for c in COLS}
    lines.append("| **median** | " + " | ".join(fmt(med[c]) for c in COLS) + " |")
    return "\n".join(lines), med


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--source", action="store_true",
                    help="start from the worked example's settings, not params.yaml")
    ap.add_argument("-S", dest="overrides", action="append", default=[])
    ap.add_argument("--seeds", default="42,1,2,3,4")
    ap.add_argument("--params", default=str(ROOT / "params.yaml"))
    ap.add_argument("--reference", type=Path, help="the source's worked-example script")
    ap.add_argument("--json", type=Path, help="also write the rows and medians here")
    args = ap.parse_args()
    base = yaml.safe_load(Path(args.params).read_text())
    if args.source:
        base = source_base(base)
    seeds = [int(s) for s in args.seeds.split(",")]
    print("command: python bench/accuracy.py " + " ".join(sys.argv[1:]))
    ref_ok = bool(args.reference and args.reference.exists())
    n_points = with_overrides(base, args.overrides)["data"]["n_points"]
    first = reference_first_target(n_points) if ref_ok else None
    rows = [run_project(base, args.overrides, s, first) for s in seeds]
    where = (f"targets {first}-{n_points - 1} (the worked example's)" if first is not None
             else "every test target")
    start = "the worked example's settings" if args.source else "params.yaml"
    text, med = table(f"project, {start} + overrides: {' '.join(args.overrides) or '(none)'}; "
                      f"scored on {where}", rows)
    print(text)
    result = {"overrides": args.overrides, "rows": rows, "median": med}
    if args.reference and not args.reference.exists():
        print(f"\n(no reference script at {args.reference}: its table is left out)")
    elif args.reference:
        p = with_overrides(base, args.overrides)
        ref = [run_reference(args.reference, s, p["data"]["n_points"], p["train"]["epochs"])
               for s in seeds]
        rtext, rmed = table("\nreference (the source's worked example), on the same targets",
                            ref)
        print(rtext)
        ratio = med["model_rmse"] / rmed["model_rmse"]
        print(f"\nmedian test RMSE, project / reference: {ratio:.3f}")
        result.update(reference=ref, reference_median=rmed, ratio=ratio)
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
