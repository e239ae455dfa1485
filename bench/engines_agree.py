"""The statistical field of an M3 subset on an embedded Dask cluster against the committed one
(computed on ``local``, this machine's processes): the competition pipeline's own field stage
(stages/competition_field.py) run as a process with the competition params and only
``evaluate.engine: dask`` added to their ``all`` section, its forecasts written to a scratch
folder and compared array by array with ``competitions/m3/<subset>/field.npz``: every
forecaster's points and quantiles, every failed-series mark, the same NaN places. Exits
non-zero where any value differs by more than ``--tol`` (issue 39: 1e-9).

    python bench/engines_agree.py                   # M3 other
    python bench/engines_agree.py --subset yearly --tol 1e-9
    python bench/engines_agree.py --out bench/results/engines_agree.json

``--out`` adds the result to a JSON list (the command, the date, the commit), which
bench/README.md's table is generated from (tools/docs.py).
"""
from __future__ import annotations

import argparse
import datetime
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import ENV, ROOT, commit, record  # noqa: E402  (and the project on sys.path)

from attn_forecast.io import read_npz  # noqa: E402


def compare(a: dict, b: dict) -> tuple[int, float, list[str]]:
    """The values compared, the largest difference between two files' arrays, and the
    arrays that differ in name, shape or NaN places (each a line)."""
    wrong = [f"only in one file: {k}" for k in sorted(set(a) ^ set(b))]
    n, worst = 0, 0.0
    for k in sorted(set(a) & set(b)):
        x, y = np.asarray(a[k]), np.asarray(b[k])
        if x.shape != y.shape:
            wrong.append(f"{k}: shape {x.shape} and {y.shape}")
        elif x.dtype.kind != "f":
            if k != "record" and not np.array_equal(x, y):
                wrong.append(f"{k}: differs")
        elif not np.array_equal(np.isnan(x), np.isnan(y)):
            wrong.append(f"{k}: NaN in different places")
        else:
            ok = ~np.isnan(x)
            n += int(ok.sum())
            if ok.any():
                worst = max(worst, float(np.abs(x[ok] - y[ok]).max()))
    return n, worst, wrong


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--subset", default="other", choices=["yearly", "quarterly", "monthly",
                                                           "other"])
    ap.add_argument("--tol", type=float, default=1e-9)
    ap.add_argument("--out", type=Path, help="add the result to this JSON file")
    args = ap.parse_args()
    command = "python bench/engines_agree.py " + " ".join(sys.argv[1:])
    print(f"command: {command}", flush=True)
    at = commit()
    committed = ROOT / "competitions" / "m3" / args.subset / "field.npz"
    params = yaml.safe_load((ROOT / "competitions" / "params.yaml").read_text())
    if params.get("holdout", "test") != "test":
        raise SystemExit("engines_agree: competitions/params.yaml's holdout is not test; the "
                         "committed field is the test part's")
    params["all"].setdefault("evaluate", {})["engine"] = "dask"
    with tempfile.TemporaryDirectory(prefix="engines_agree_") as tmp:
        (Path(tmp) / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "stages/competition_field.py", "--params",
                        str(Path(tmp) / "params.yaml"), "--subset", args.subset,
                        "--out", str(Path(tmp) / "field.npz")],
                       cwd=ROOT, env={**ENV, "PYTHONPATH": str(ROOT / "src")}, check=True)
        seconds = time.perf_counter() - t0
        n, worst, wrong = compare(read_npz(committed), read_npz(Path(tmp) / "field.npz"))
    print(f"M3 {args.subset}: the field on dask ({seconds:.0f} s) against the committed "
          f"local one: {n:,} values, largest difference {worst:.3g}"
          + "".join(f"\n  {w}" for w in wrong))
    if args.out:
        record(args.out, {"command": command, "date": datetime.date.today().isoformat(),
                          "commit": at, "subset": args.subset, "values": n,
                          "largest_difference": worst, "differing_arrays": len(wrong),
                          "tol": args.tol, "seconds": round(seconds, 1)})
    if wrong or worst > args.tol:
        raise SystemExit(f"engines_agree: the engines differ (tolerance {args.tol:g})")


if __name__ == "__main__":
    main()
