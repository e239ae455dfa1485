"""One global model over all four M3 subsets against one model per subset, on the validation
cuts (the last horizon of each train part; the competition's test parts are never read).

    python bench/global_m3.py [--steps 1000] [--out bench/results/global_m3.json]

Both sides use the same network and settings, so the one difference is how many series a model
learns from: the competition's ``all`` section with monthly's architecture (window 36, RevIN,
the flatten head; monthly holds 1,428 of the 3,003 series), one network (no lookbacks, one
seed, the sMAPE loss). The subsets' own horizons differ (6, 8, 18, 8), so the global model
forecasts 18 steps and each series is scored on its own first h: every series' validation
cut is followed by 18 - h copies of its last value, which only fill the test window's target
rows and are never scored or trained on (training windows end before the cut). Per subset,
``--steps`` steps of 256 windows (the competition's max_steps, 1,000); the global model gets
the four subsets' steps together (4,000 by default: the same compute), and, with
``--also-equal-steps``, a second global run with only ``--steps``.

Prints the sMAPE of each subset and over all forecasts (the field's average: every series x
horizon step), and each run's seconds; ``--out`` writes them as JSON.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import ROOT, train_on  # noqa: E402

from attn_forecast.data import sources  # noqa: E402
from attn_forecast.evaluation.metrics import smape  # noqa: E402
from attn_forecast.forecasters.neural import ModelForecaster  # noqa: E402
from attn_forecast.forecasters.run import run  # noqa: E402
from attn_forecast.pipeline.competition import model_store, subset_params  # noqa: E402
from attn_forecast.data.long_table import raw_of  # noqa: E402
from attn_forecast.pipeline.prepare import prepare  # noqa: E402

SUBSETS = ("yearly", "quarterly", "monthly", "other")
PARAMS = ROOT / "competitions" / "params.yaml"


def settings(steps: int) -> dict:
    """The one network both sides train: monthly's architecture, one seed, one loss."""
    return {"prepare": {"window": 36},
            "model": {"lookbacks": [], "instance_norm": "revin", "pooling": "flatten"},
            "train": {"ensemble": 1, "losses": [], "loss": "smape", "max_steps": steps}}


def fit_and_forecast(p, store) -> tuple[np.ndarray, np.ndarray, float]:
    """Train on ``store``'s training parts; the test windows' forecasts, their ends and the
    training seconds."""
    model, _, seconds, season = train_on(p, store)
    fc = run(store, [ModelForecaster(model)], ("test",), (), season=season)
    return fc.forecasts["model"]["test"].point, fc.ends["test"], seconds


def per_subset(steps: dict[str, int]) -> tuple[dict, float]:
    """Each subset's own model (``steps[subset]`` steps): its forecasts, targets, and the
    training seconds together."""
    out, total = {}, 0.0
    for subset in SUBSETS:
        p, prof = subset_params(PARAMS, subset, settings(steps[subset]), holdout="validation")
        store = model_store(p, prof)
        f, ends, seconds = fit_and_forecast(p, store)
        y = store.targets(ends)
        out[subset] = {"series": int(store.n_series), "y": y, "f": f}
        total += seconds
        print(f"  {subset}: one model, {store.n_series} series, {steps[subset]} steps, sMAPE "
              f"{smape(y, f):.3f} ({seconds:.0f} s)", flush=True)
    return out, total


def _global_params(steps: int):
    # no one season across the subsets: the model's RevIN reads none; it is scored by sMAPE
    over = {**settings(steps), "evaluate": {"season": 0}}
    return subset_params(PARAMS, "monthly", over, holdout="validation")


def pooled_store():
    """One store of every subset's series, each padded to the longest horizon, and each
    series' (subset, horizon)."""
    frames, horizon = [], {}
    for subset in SUBSETS:
        fr = sources.competition("m3", subset, "validation")
        horizon.update({i: (subset, int(h)) for i, h in
                        fr.groupby("id", sort=False)["horizon"].first().items()})
        frames.append(fr)
    H = max(h for _, h in horizon.values())
    padded = []
    for fr in frames:
        for sid, g in fr.groupby("id", sort=False):
            h = int(g["horizon"].iloc[0])
            pad = pd.DataFrame({"id": sid, "t": np.arange(len(g), len(g) + H - h),
                                "value": g["value"].iloc[-1], "signal": np.nan,
                                "horizon": H, "period": g["period"].iloc[0]})
            padded.append(pd.concat([g.assign(horizon=H), pad], ignore_index=True))
    frame = pd.concat(padded, ignore_index=True)
    p, prof = _global_params(1)
    store = prepare(p, raw_of(frame, []), {"name": prof["profile"], "resolved": prof})
    return store, horizon


def shares(store, horizon: dict) -> dict[str, float]:
    """Each subset's share of the pooled store's training windows (the batches draw windows
    uniformly, so each subset's share of the global model's steps)."""
    n = store.counts("train")
    of = np.array([horizon[i][0] for i in store.ids])
    return {s: float(n[of == s].sum() / n.sum()) for s in SUBSETS}


def pooled(steps: int, built) -> tuple[dict, float]:
    """The one model over the pooled store ``built`` (pooled_store's), scored per subset on
    each series' own first h steps."""
    store, horizon = built
    p, _ = _global_params(steps)
    f, ends, seconds = fit_and_forecast(p, store)
    y = store.targets(ends)
    ids = store.ids[store.series_of(ends)]
    out = {}
    for subset in SUBSETS:
        rows = np.array([horizon[i][0] == subset for i in ids])
        h = next(h for s, h in horizon.values() if s == subset)
        out[subset] = {"series": int(rows.sum()), "y": y[rows, :h], "f": f[rows, :h]}
    print(f"  global: one model, {store.n_series} series, horizon {store.horizon}, {steps} "
          f"steps ({seconds:.0f} s)", flush=True)
    return out, seconds


def summary(got: dict, seconds: float) -> dict:
    row = {s: round(smape(got[s]["y"], got[s]["f"]), 4) for s in SUBSETS}
    row["all"] = round(smape(np.concatenate([got[s]["y"].ravel() for s in SUBSETS]),
                             np.concatenate([got[s]["f"].ravel() for s in SUBSETS])), 4)
    row["series"] = sum(got[s]["series"] for s in SUBSETS)
    row["seconds"] = round(seconds, 1)
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--steps", type=int, default=1000, help="training steps per subset")
    ap.add_argument("--also-equal-steps", action="store_true",
                    help="also the global model with only --steps steps")
    ap.add_argument("--matched", action="store_true",
                    help="also each subset's model with its share of the global model's steps")
    ap.add_argument("--out")
    args = ap.parse_args()
    command = "python bench/global_m3.py " + " ".join(sys.argv[1:])
    print(f"command: {command}", flush=True)
    built = pooled_store()
    share = shares(*built)
    print("  the subsets' shares of the pooled training windows: "
          + ", ".join(f"{s} {share[s]:.1%}" for s in SUBSETS), flush=True)
    runs = {"per subset": per_subset({s: args.steps for s in SUBSETS}),
            f"global, {4 * args.steps} steps": pooled(4 * args.steps, built)}
    if args.also_equal_steps:
        runs[f"global, {args.steps} steps"] = pooled(args.steps, built)
    if args.matched:
        runs["per subset, the global model's steps each"] = per_subset(
            {s: max(1, round(4 * args.steps * share[s])) for s in SUBSETS})
    for got, _ in runs.values():   # every side scores the same targets (as multisets)
        for s in SUBSETS:
            mine, theirs = runs["per subset"][0][s]["y"], got[s]["y"]
            assert mine.shape == theirs.shape and np.array_equal(
                np.sort(mine, axis=None), np.sort(theirs, axis=None)), s
    rows = {name: summary(*r) for name, r in runs.items()}
    print("\n| validation cuts, sMAPE | " + " | ".join(SUBSETS) + " | all | seconds |")
    print("|---|" + "---:|" * (len(SUBSETS) + 2))
    for name, r in rows.items():
        print(f"| {name} | " + " | ".join(f"{r[s]:.2f}" for s in SUBSETS)
              + f" | {r['all']:.2f} | {r['seconds']:.0f} |")
    if args.out:
        Path(args.out).write_text(json.dumps({"command": command, "shares": share,
                                              "rows": rows}, indent=1)
                                  + "\n")


if __name__ == "__main__":
    main()
