"""Accuracy benchmark: the pipeline (generate -> prepare -> train -> evaluate) over seeds.

    python bench/accuracy.py [-S key=value ...] [--seeds 42,1,2,3,4] [--reference PATH]

Each seed sets data.seed and train.seed alike. Prints per seed and as medians the model's and
the ridge baseline's test RMSE and RMSE against the noise-free signal, the naive RMSE and the
train time. With --reference, also runs the source's worked example (a script taking
`SEED N_POINTS EPOCHS`, printing one JSON line) on the same seeds, in the same sitting.
"""
from __future__ import annotations

import argparse
import contextlib
import io
import json
import statistics
import subprocess
import sys
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import ROOT, run_pipeline, with_overrides  # noqa: E402

COLS = ("model_rmse", "model_signal_rmse", "ridge_rmse", "ridge_signal_rmse", "naive_rmse",
        "model_over_naive", "train_s")


def run_project(base: dict, overrides: list[str], seed: int) -> dict:
    p = with_overrides(base, overrides + [f"data.seed={seed}", f"train.seed={seed}"])
    with contextlib.redirect_stdout(io.StringIO()):
        fit, m = run_pipeline(p)
    return {"seed": seed, "model_rmse": m["model"]["rmse"],
            "model_signal_rmse": m["model"]["signal_rmse"], "ridge_rmse": m["ridge"]["rmse"],
            "ridge_signal_rmse": m["ridge"]["signal_rmse"], "naive_rmse": m["naive"]["rmse"],
            "model_over_naive": m["model"]["rmse"] / m["naive"]["rmse"], "train_s": fit.seconds}


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
    ap.add_argument("-S", dest="overrides", action="append", default=[])
    ap.add_argument("--seeds", default="42,1,2,3,4")
    ap.add_argument("--params", default=str(ROOT / "params.yaml"))
    ap.add_argument("--reference", type=Path, help="the source's worked-example script")
    ap.add_argument("--json", type=Path, help="also write the rows and medians here")
    args = ap.parse_args()
    base = yaml.safe_load(Path(args.params).read_text())
    seeds = [int(s) for s in args.seeds.split(",")]
    rows = [run_project(base, args.overrides, s) for s in seeds]
    text, med = table(f"project, overrides: {' '.join(args.overrides) or '(defaults)'}", rows)
    print(text)
    result = {"overrides": args.overrides, "rows": rows, "median": med}
    if args.reference and not args.reference.exists():
        print(f"\n(no reference script at {args.reference}: its table is left out)")
    elif args.reference:
        p = with_overrides(base, args.overrides)
        ref = [run_reference(args.reference, s, p["data"]["n_points"], p["train"]["epochs"])
               for s in seeds]
        rtext, rmed = table("\nreference (the source's worked example)", ref)
        print(rtext)
        ratio = med["model_rmse"] / rmed["model_rmse"]
        print(f"\nmedian test RMSE, project / reference: {ratio:.3f}")
        result.update(reference=ref, reference_median=rmed, ratio=ratio)
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
