"""The M3 benchmark: one global attention model per subset against the statistical field, on
the competition's test parts (or, ``--holdout validation``, on the last horizon of every
train part: where settings are chosen), with the published figures beside.

    make bench-m3                     # python bench/m3.py
    python bench/m3.py [--holdout validation] [--subsets yearly,monthly] [-S key=value ...]
    python bench/m3.py --dvc          # each subset's run as a `dvc exp run` command

Each subset runs the pipeline's stages (generate, prepare, baselines, train, evaluate) on
``data.kind: competition`` with the configuration below (CONFIG, and SUBSET for what differs
by subset, chosen with ``--holdout validation``; nothing chosen on the test parts). "all"
pools the 3,003 series of the four runs by the field's rule: each forecaster's mean sMAPE
and MASE over every forecast (series x step, so monthly weighs 69 %), and OWA from those
means; the mean over series is printed beside it.
``--reuse DIR`` keeps each subset's baselines in DIR and reuses them when only the model's
settings change (for choosing settings; the reported run fits everything afresh).
"""
from __future__ import annotations

import argparse
import contextlib
import hashlib
import io
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import ROOT, load_stage, stage_args, with_overrides  # noqa: E402

HORIZON = {"yearly": 6, "quarterly": 8, "monthly": 18, "other": 8}
FIELD = ["naive", "seasonal_naive", "naive2", "ses", "theta", "dot", "ets", "ces", "arima",
         "comb"]   # and, on the test parts, zeroshot: the prior (models/pretrained.pt)
# the configuration for every subset (h: the subset's horizon), chosen on the validation cuts
CONFIG = {
    "prepare.window": lambda h: min(7 * h, 72),
    "model.lookbacks": lambda h: sorted({min(k * h, 72) for k in (2, 4, 7)}),
    "prepare.min_context": lambda h: 2, "prepare.scaler": "none", "prepare.test_frac": 0.2,
    "model.instance_norm": "last", "model.d_model": 32, "model.ffn_dim": 64,
    "model.n_heads": 4, "model.n_layers": 2, "model.residual": True, "model.pooling": "mean",
    "train.init": "scratch", "prepare.val_frac": 0.0, "train.patience": 0,
    "train.loss": "smape", "train.lr": 0.001, "train.batch_size": 256, "train.epochs": 200,
    "train.max_steps": 1000, "train.augment_noise": 0.0, "train.ensemble": 1,
    "evaluate.season": "auto", "evaluate.combinations": ["model+comb"],
}
# and what each subset's validation cut chose beside it (bench/README.md lists the runs)
SUBSET = {
    "yearly": {},
    "quarterly": {"model.instance_norm": "seasonal", "model.pooling": "flatten"},
    "monthly": {"model.instance_norm": "revin", "model.pooling": "flatten",
                "prepare.window": 36, "model.lookbacks": []},
    "other": {"model.instance_norm": "revin", "model.pooling": "flatten"},
}
PUBLISHED = [  # (row, yearly, quarterly, monthly, other, all per forecast, all per series):
    # as published (the published "all" is the mean over all 37,014 forecasts); the mean
    # over series is computed from the published subsets where they are given
    ("Theta (published, M3)", 16.90, 8.96, 13.85, 4.41, 13.01, 12.73),
    ("Comb (published, StatsForecast)", None, None, None, None, 12.63, None),
    ("N-BEATS (published)", 15.93, 8.84, 13.11, 4.24, 12.37, 12.13),
    ("deep ensemble (published, 14 days)", None, None, None, None, 12.27, None),
    ("Fracast-0 zero-shot (as the issue measured it, not rerun here)", 16.01, 10.10, 13.98,
     4.74, 13.21, 12.90),
    ("NHITS per subset (as the issue measured it, not rerun here)", 16.45, 9.71, 13.86, 5.35,
     13.13, 12.88),
]
ROWS = ["model", "model+comb", "zeroshot", "comb", "theta", "dot", "ets", "ces", "arima", "ses",
        "naive2", "naive", "seasonal_naive"]


def settings(subset: str, holdout: str, overrides: list[str]) -> list[str]:
    h = HORIZON[subset]
    field = FIELD + (["zeroshot"] if holdout == "test" else [])
    out = ["data.kind=competition", f"data.subset={subset}", f"data.holdout={holdout}",
           f"prepare.horizon={h}", f"evaluate.baselines=[{','.join(field)}]"]
    for key, value in {**CONFIG, **SUBSET[subset]}.items():
        value = value(h) if callable(value) else value
        text = json.dumps(value, separators=(",", ":")) if isinstance(value, list) else \
            str(value).lower() if isinstance(value, bool) else str(value)
        out.append(f"{key}={text}")
    return out + overrides


def run_subset(subset: str, holdout: str, overrides: list[str], reuse: Path | None,
               keep: bool = False) -> dict:
    base = yaml.safe_load((ROOT / "params.yaml").read_text())
    params = with_overrides(base, settings(subset, holdout, overrides))
    work = Path(tempfile.mkdtemp(prefix=f"attn-m3-{subset}-"))
    (work / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    args = stage_args(work)
    times = {}
    cached = None
    for stage in ("generate", "prepare", "baselines", "train", "evaluate"):
        t0 = time.perf_counter()
        if stage == "baselines" and reuse:
            # the baselines depend on the prepared data (its key) and the field, not on the
            # model's settings
            from attn_forecast.data.store_io import load
            key = hashlib.sha256(json.dumps([load(work / "prepared").key(),
                                             params["evaluate"]], sort_keys=True)
                                 .encode()).hexdigest()[:12]
            cached = reuse / f"{subset}-{holdout}-{key}-baselines.npz"
        if stage == "baselines" and cached is not None and cached.is_file():
            shutil.copy(cached, work / "baselines.npz")
        else:
            with contextlib.redirect_stdout(io.StringIO()), \
                    contextlib.redirect_stderr(io.StringIO()):
                load_stage(stage).main(["--params", str(work / "params.yaml")] + args[stage])
            if stage == "baselines" and cached is not None:
                cached.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy(work / "baselines.npz", cached)
        times[stage] = time.perf_counter() - t0
    out = {"metrics": json.loads((work / "detail.json").read_text()),
           "by_series": pd.read_csv(work / "by_series.csv", dtype={"id": str}), "times": times}
    if keep:
        print(f"{subset}: the run's files are in {work}", file=sys.stderr)
    else:
        shutil.rmtree(work)
    return out


def pooled(runs: dict, names: list[str]) -> dict:
    """The "all" column: metrics.pooled over the subsets' per-series tables (the mean over
    every forecast, the field's rule, and the mean over series beside it)."""
    from attn_forecast.evaluation.metrics import pooled as pool
    return pool([r["by_series"] for r in runs.values()], [HORIZON[s] for s in runs], names)


def cell(v) -> str:
    return "" if v is None else f"{v:.2f}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--holdout", default="test", choices=["test", "validation"])
    ap.add_argument("--subsets", default="yearly,quarterly,monthly,other")
    ap.add_argument("-S", dest="overrides", action="append", default=[])
    ap.add_argument("--reuse", type=Path, help="keep and reuse each subset's baselines here")
    ap.add_argument("--json", type=Path, help="also write the results here")
    ap.add_argument("--keep", action="store_true", help="keep each subset's run folder")
    ap.add_argument("--dvc", action="store_true",
                    help="print each subset's run as a `dvc exp run` command, run nothing")
    args = ap.parse_args()
    if args.dvc:
        for s in args.subsets.split(","):
            print(f"dvc exp run -n m3-{s}-{args.holdout} "
                  + " ".join(f"-S '{x}'" for x in settings(s, args.holdout, args.overrides)))
        return
    print("command: python bench/m3.py " + " ".join(sys.argv[1:]), flush=True)
    subsets = args.subsets.split(",")
    t0 = time.perf_counter()
    runs = {}
    for s in subsets:
        runs[s] = run_subset(s, args.holdout, args.overrides, args.reuse, args.keep)
        t = runs[s]["times"]
        m = runs[s]["metrics"]
        print(f"{s}: " + ", ".join(f"{n} sMAPE {m[n]['smape_mean']:.3f}"
                                   for n in ("model", "model+comb", "theta", "comb") if n in m)
              + "; " + ", ".join(f"{k} {v:.0f} s" for k, v in t.items()), file=sys.stderr, flush=True)
    total = time.perf_counter() - t0
    cols = subsets + (["all"] if len(subsets) == 4 else [])
    head = subsets + (["all (mean over all forecasts)", "all (mean over series)"]
                      if "all" in cols else [])
    every = pooled(runs, ROWS) if "all" in cols else {}
    what = "test parts" if args.holdout == "test" else "validation cuts (the last horizon " \
        "of each train part)"
    print(f"\nsMAPE on M3's {what}; MASE (in-sample seasonal naive scale) and OWA (relative "
          "to Naive2) below\n")
    print("| | " + " | ".join(head) + " |")
    print("|---|" + "---:|" * len(head))
    if args.holdout == "test" and len(subsets) == 4:
        for row in PUBLISHED:
            print(f"| {row[0]} | " + " | ".join(cell(v) for v in row[1:]) + " |")
    for name in ROWS:
        vals = [(runs[s]["metrics"].get(name) or {}).get("smape_mean") for s in subsets]
        vals += [every.get(name, {}).get(k) for k in ("smape", "smape_series")] \
            if "all" in cols else []
        label = f"**{name}** (this project)" if name.startswith("model") else \
            f"{name} (this project)"
        print(f"| {label} | " + " | ".join(cell(v) for v in vals) + " |")
    for metric in ("mase_mean", "owa"):
        print(f"\n{metric}:\n\n| | " + " | ".join(cols) + " |\n|---|" + "---:|" * len(cols))
        for name in ROWS:
            vals = [(runs[s]["metrics"].get(name) or {}).get(metric) for s in subsets]
            vals += [every.get(name, {}).get(metric.replace("_mean", ""))] \
                if "all" in cols else []
            print(f"| {name} | " + " | ".join(cell(v) for v in vals) + " |")
    print("\nthe model against Theta, series by series (sMAPE; sign test, ties left out):")
    for s in subsets:
        st = runs[s]["metrics"].get("sign_test", {}).get("theta", {})
        print(f"- {s}: better on {st.get('wins')} of {st.get('n')} series "
              f"({100 * (st.get('share') or 0):.1f} %), p = {st.get('p_value'):.2g}")
    print(f"\nwhole benchmark: {total / 60:.1f} min ("
          + "; ".join(f"{s}: " + ", ".join(f"{k} {v:.0f} s" for k, v in r["times"].items())
                      for s, r in runs.items()) + ")")
    if args.json:
        args.json.write_text(json.dumps({s: {"metrics": r["metrics"], "times": r["times"]}
                                         for s, r in runs.items()}, indent=1))


if __name__ == "__main__":
    main()
