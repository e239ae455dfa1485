"""Real-series benchmark: the blend (the real profile's default: the model and the
statistical members weighted by their validation errors) and other blend rules scored from
the same forecasts (VARIANTS), the model (the prior fine-tuned on each series), the prior
zero-shot, the model averaged with ETS and Theta, and Fracast-0 zero-shot (an offline
pretrained peer), against naive, seasonal naive, ridge, ETS, Theta and ARIMA on public series
shipped inside Python packages (no download), by the rolling-origin backtest.

    make bench-real                      # installs the bench extra (pmdarima, statsmodels,
                                         # fracast)
    python bench/real.py [--series taylor,wineind] [--folds 3] [--validation] [--scratch]
                         [-S key=value]

Series (pmdarima's datasets, statsmodels' datasets, and the built-in random walk):

| series | frequency | points | season |
|---|---|---:|---:|
| taylor | half-hourly electricity demand | 4,032 | 48 (and 336) |
| wineind | monthly wine sales | 176 | 12 |
| woolyrnq | quarterly woollen yarn | 119 | 4 |
| airpassengers | monthly airline passengers | 144 | 12 |
| lynx | yearly lynx trappings | 114 | ~10 (a cycle) |
| heartrate | heart rate every 0.5 s | 150 | - |
| elnino | monthly sea temperature | 732 | 12 |
| realgdp, cpi, unemp | quarterly US macro (macrodata) | 203 | 4 |
| random_walk, random_walk_logret | built-in GBM prices, as levels and as log returns | 1,000 | - |

Every series runs the pipeline with the project's defaults for real data (params.yaml's
``auto`` values: the window and season from the training part, the prior fine-tuned with
early stopping on a validation part; see PROFILES in src/attn_forecast/params.py), the same
for all (nothing set per series or per frequency), and is scored by a rolling-origin backtest
over the last 20 %% of the series (``--folds``, each fold fine-tuned afresh). Fracast-0 (the
``fracast`` package) forecasts each fold's test windows from the same history. ``--scratch``
adds the model trained from scratch (the configuration this benchmark used before the prior:
SCRATCH). ``--validation`` keeps only the first 80 %% of every series (its training part), so
that settings can be chosen there without touching the reported targets. Prints a table of
RMSE and MASE (backtest means) with the wins marked, and the targets' verdicts.
"""
from __future__ import annotations

import argparse
import contextlib
import io
import json
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import ROOT, commit, run_pipeline, with_overrides  # noqa: E402
from tools.docs import quantile_verdicts  # noqa: E402

STAGES = ("generate", "prepare", "baselines", "train", "evaluate", "backtest_train")
STATS = ("seasonal_naive", "ridge", "ets", "theta", "arima")
# the blend as the real profile makes it (evaluate.blend), and the same blend shrunk toward
# equal weights by other amounts (forecasters/combination.py:SHRINK; 0: the weights as
# learned), scored from the same forecasts of every fold (each learns its weights on the
# fold's own validation part), to choose among on --validation
BLEND = ["model", "naive", "seasonal_naive", "ets", "theta", "arima"]
VARIANTS = {"blend_shrink0": (BLEND, 3.0, 0.0), "blend_shrink5": (BLEND, 3.0, 5.0),
            "blend_shrink20": (BLEND, 3.0, 20.0), "blend_stats": (BLEND[1:], 3.0),
            "blend_equal5": (BLEND, 3.0, 5.0, "equal"), "blend_kept5": (BLEND, 3.0, 5.0, "kept")}
FORECASTERS = ("blend", *VARIANTS, "model", "zeroshot", "model+stats", "fracast", "scratch",
               "naive", *STATS)
SEASONAL = {"taylor", "wineind", "woolyrnq", "airpassengers", "lynx", "elnino", "realgdp",
            "cpi", "unemp"}
RANDOM_WALKS = {"random_walk", "random_walk_logret"}

# What every series gets on top of params.yaml: the forecasters to compare, nothing else.
COMMON = ["evaluate.baselines=[naive,seasonal_naive,ridge,ets,theta,arima,zeroshot]",
          "evaluate.combinations=[model+ets+theta]"]
# --scratch: the configuration the model trained from scratch had here before the prior
SCRATCH = ["train.init=scratch", "model.instance_norm=seasonal", "train.lr=0.005",
           "train.patience=30", "train.epochs=300", "train.ensemble=3",
           "evaluate.baselines=[naive]", "evaluate.combinations=[]"]


class Fracast:
    """Fracast-0 zero-shot (the fracast package's bundled weights), as a forecaster of the
    windows ``ends``: each from its series' levels before it (the last 512 at most)."""
    name = "fracast"

    def __init__(self) -> None:
        from fracast import FracastModel
        self.model = FracastModel.from_pretrained()

    def fit(self, store):
        return []

    def forecast(self, store, ends, levels=()):
        from attn_forecast.forecasters.protocol import Forecast
        W, H = self.model.context_length, store.horizon
        first = store.offsets[store.series_of(ends)] + store.offset
        ctx = np.full((len(ends), W), np.nan, dtype=np.float32)
        for k, (e, f) in enumerate(zip(ends, first)):
            hist = np.asarray(store.y[max(f, e - W):e], dtype=np.float32)
            ctx[k, W - len(hist):] = hist
        q = self.model.forecast_batch(ctx, horizon=H)
        mid = int(np.argmin(np.abs(np.asarray(self.model.quantiles) - 0.5)))
        return Forecast(np.asarray(q[..., mid], dtype=np.float64))


def _dates(start: str, n: int, freq: str) -> list[str]:
    return list(pd.date_range(start, periods=n, freq=freq).strftime(
        "%Y-%m-%dT%H:%M:%S" if freq.endswith(("h", "min")) else "%Y-%m-%d"))


def load(name: str) -> tuple[pd.DataFrame, str]:
    """(frame with `time` and `value`, frequency) of one benchmark series."""
    if name in RANDOM_WALKS:
        from attn_forecast.data.sources import random_walk
        v = random_walk(1000, 7, start_price=100.0, drift=0.0002, volatility=0.01)["value"]
        return pd.DataFrame({"time": np.arange(len(v)), "value": v}), "steps"
    if name in ("realgdp", "cpi", "unemp", "elnino"):
        import statsmodels.api as sm
        if name == "elnino":
            d = sm.datasets.elnino.load_pandas().data.drop(columns="YEAR").to_numpy().ravel()
            return pd.DataFrame({"time": _dates("1950-01-01", len(d), "MS"), "value": d}), \
                "monthly"
        d = sm.datasets.macrodata.load_pandas().data
        return pd.DataFrame({"time": _dates("1959-01-01", len(d), "QS"), "value": d[name]}), \
            "quarterly"
    from pmdarima import datasets as pm
    y = getattr(pm, f"load_{name}")(as_series=True).to_numpy(dtype=np.float64)
    spec = {"taylor": ("2000-06-05", "30min", "half-hourly"),
            "wineind": ("1980-01-01", "MS", "monthly"),
            "woolyrnq": ("1965-01-01", "QS", "quarterly"),
            "airpassengers": ("1949-01-01", "MS", "monthly"),
            "lynx": ("1821-01-01", "YS", "yearly"), "heartrate": (None, None, "steps")}
    start, freq, kind = spec[name]
    time_col = _dates(start, len(y), freq) if start else np.arange(len(y))
    return pd.DataFrame({"time": time_col, "value": y}), kind


def backtest(p: dict, work: Path, inputs: Path, peers: tuple) -> dict:
    """The pipeline on ``p`` in ``work``, then every fold scored (the backtest_evaluate
    stage's scoring, with the benchmark's ``peers`` on the same windows): backtest.json's
    content."""
    from attn_forecast.data.store_io import load, profile
    from attn_forecast.pipeline.backtest_evaluate import score_folds
    from attn_forecast.io import read_json
    from attn_forecast.config.load import load_params
    from common import PRIOR
    run_pipeline(p, work, stages=STAGES, inputs=inputs)
    params = load_params(work / "params.yaml", profile(work / "prepared"))
    entries = read_json(work / "backtest_models" / "folds.json")["folds"]
    return score_folds(params, load(work / "prepared"), entries, work / "backtest_models",
                       prior=str(PRIOR), extra=peers,
                       blends=VARIANTS if params.evaluate.blend else None)[0]


def run_series(name: str, base: dict, overrides: list[str], folds: int, validation: bool,
               scratch: bool = False, peers: tuple = ()) -> dict:
    frame, freq = load(name)
    if validation:  # the training part only: choose settings without the reported targets
        frame = frame.iloc[:int(len(frame) * 0.8)]
    work = Path(tempfile.mkdtemp(prefix=f"attn-real-{name}-"))
    inputs = work / "inputs"
    inputs.mkdir()
    frame.to_csv(inputs / "series.csv", index=False)
    extra = ["prepare.transform=log_return"] if name == "random_walk_logret" else []
    data = ["data.kind=csv", f"data.csv_path={inputs / 'series.csv'}", "data.csv_column=value",
            "data.csv_time_column=time", f"backtest.folds={folds}"]
    t0 = time.perf_counter()
    with contextlib.redirect_stdout(io.StringIO()) as out, \
            contextlib.redirect_stderr(io.StringIO()):
        bt = backtest(with_overrides(base, COMMON + extra + overrides + data), work / "run",
                      inputs, peers)
        if scratch:
            bt["scratch"] = backtest(with_overrides(base, SCRATCH + extra + overrides + data),
                                     work / "scratch", inputs, ())["model"]
    seconds = time.perf_counter() - t0
    meta = json.loads((work / "run" / "prepared" / "store.json").read_text())
    shutil.rmtree(work)
    bt["model+stats"] = bt.get("model+ets+theta")
    row = {"series": name, "freq": freq, "n": len(frame), "seconds": seconds,
           "season": meta["auto"]["season"]["season"], "window": meta["window"],
           "horizon": meta["horizon"],
           "horizon_reason": (meta["auto"].get("horizon") or {}).get("reason", "")}
    for f in FORECASTERS:
        m = bt.get(f)
        row[f] = (m["rmse_mean"], m["mase_mean"]) if m else None
        if m and "coverage_80_mean" in m:  # with intervals (quantiles or conformal)
            row[f"{f}_intervals"] = (m["coverage_80_mean"], m["pinball_mean"])
            row[f"{f}_quantiles"] = {k: m.get(f"{k}_mean") for k in
                                     ("wql", "coverage_80", "coverage_95", "mase")}
    row["log"] = out.getvalue()
    return row


def verdicts(rows: list[dict], who: str = "model") -> list[str]:
    """The issue's targets for forecaster ``who`` (MASE, backtest means; RMSE beside)."""
    lines = []
    seasonal = [r for r in rows if r["series"] in SEASONAL and r.get(who)]
    if seasonal:
        mase = [r[who][1] for r in seasonal]
        ets = [r["ets"][1] for r in seasonal if r["ets"]]
        best = [min(r[f][1] for f in STATS if r[f]) for r in seasonal]
        best_rmse = [min(r[f][0] for f in STATS if r[f]) for r in seasonal]
        ratio = [m / b for m, b in zip(mase, best)]
        n = len(seasonal)
        lines += [
            f"- {who}: median MASE over the {n} seasonal/trending series "
            f"{statistics.median(mase):.3f}, AutoETS's {statistics.median(ets):.3f} (target: "
            "at or below)",
            f"- {who} at or below the best of seasonal naive, ridge, ETS, Theta, ARIMA: "
            f"{sum(m <= b for m, b in zip(mase, best))} of {n} by MASE, "
            f"{sum(r[who][0] <= b for r, b in zip(seasonal, best_rmse))} of {n} by RMSE "
            "(target: at least 4)",
            f"- {who}'s worst MASE / the best baseline's: {max(ratio):.2f} "
            f"({seasonal[int(np.argmax(ratio))]['series']}; target: at most 1.2)",
            f"- {who} below naive: {sum(r[who][1] < r['naive'][1] for r in seasonal)} of {n} "
            "(target: all)"]
    return lines + walk_verdicts(rows, who, 1.10)


def walk_verdicts(rows: list[dict], who: str, high: float) -> list[str]:
    """``who``'s RMSE against naive's on the random walks (no false skill: 0.97 to ``high``)."""
    lines = []
    for r in rows:
        if r["series"] in RANDOM_WALKS and r.get(who):
            ratio = r[who][0] / r["naive"][0]
            ok = 0.97 <= ratio <= high
            lines.append(f"- {who} on {r['series']}: RMSE / naive RMSE = {ratio:.3f} (target "
                         f"0.97-{high:.2f}: {'met' if ok else 'missed'})")
    return lines


def blend_verdicts(rows: list[dict], who: str = "blend") -> list[str]:
    """The blend issue's targets for ``who`` (MASE, backtest means)."""
    seasonal = [r for r in rows if r["series"] in SEASONAL and r.get(who)]
    lines = []
    if seasonal:
        n = len(seasonal)
        best = [min(r[f][1] for f in STATS if r[f]) for r in seasonal]
        ratio = [r[who][1] / b for r, b in zip(seasonal, best)]
        worst = int(np.argmax(ratio))
        lines += [
            f"- {who} at or below the best single statistical baseline (seasonal naive, "
            f"ridge, ETS, Theta, ARIMA) by MASE: {sum(x <= 1 for x in ratio)} of {n} "
            "(target: at least 6)",
            f"- {who}'s worst MASE / the best baseline's: {max(ratio):.2f} "
            f"({seasonal[worst]['series']}; target: at most 1.1)",
            f"- {who} below naive: {sum(r[who][1] < r['naive'][1] for r in seasonal)} of {n} "
            "(target: 9 of 9)"]
    lines += walk_verdicts(rows, who, 1.03)
    mase = {f: statistics.median(r[f][1] for r in rows if r.get(f)) for f in
            (who, *[m for m in BLEND if m != "model"], "model")
            if all(r.get(f) for r in rows)}
    if who in mase:
        below = all(mase[who] < v for f, v in mase.items() if f != who)
        lines.append(f"- median MASE over the {len(rows)} series: {who} {mase[who]:.3f}; "
                     + ", ".join(f"{f} {v:.3f}" for f, v in mase.items() if f != who)
                     + f" (target: below every member: {'met' if below else 'missed'})")
    return lines


def table(rows: list[dict]) -> str:
    shown = [f for f in FORECASTERS if any(r.get(f) for r in rows)]
    head = "| series | season, window | " + " | ".join(shown) + " | s |"
    lines = [head, "|---|---|" + "---:|" * (len(shown) + 1)]
    for r in rows:
        scores = [r[f][0] for f in shown if r.get(f) is not None]
        best = min(scores)
        cells = []
        for f in shown:
            if r.get(f) is None:
                cells.append("n/a")
                continue
            rmse, mase = r[f]
            mark = "**" if rmse == best else ""
            cells.append(f"{mark}{rmse:.4g}{mark} ({mase:.2f})" if mase is not None
                         else f"{mark}{rmse:.4g}{mark}")
        lines.append(f"| {r['series']} | {r['season'] or '-'}, {r['window']} | "
                     + " | ".join(cells) + f" | {r['seconds']:.0f} |")
    return "\n".join(lines)


ALL = ["taylor", "wineind", "woolyrnq", "airpassengers", "lynx", "heartrate", "elnino",
       "realgdp", "cpi", "unemp", "random_walk", "random_walk_logret"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--series", default=",".join(ALL))
    ap.add_argument("--folds", type=int, default=3)
    ap.add_argument("--validation", action="store_true",
                    help="the first 80 %% of each series only (for choosing settings)")
    ap.add_argument("--scratch", action="store_true",
                    help="also the model trained from scratch (SCRATCH), a second run each")
    ap.add_argument("--no-fracast", action="store_true", help="leave Fracast-0 out")
    ap.add_argument("-S", dest="overrides", action="append", default=[])
    ap.add_argument("--json", type=Path, help="also write the rows here")
    args = ap.parse_args()
    peers = () if args.no_fracast else (Fracast(),)
    base = yaml.safe_load((ROOT / "params.yaml").read_text())
    print("command: python bench/real.py " + " ".join(sys.argv[1:]), flush=True)
    rows = []
    for name in args.series.split(","):
        rows.append(run_series(name, base, args.overrides, args.folds, args.validation,
                               args.scratch, peers))
        r = rows[-1]
        print(f"{name}: model {r['model'][0]:.4g}, naive {r['naive'][0]:.4g}, "
              f"{r['seconds']:.0f} s", file=sys.stderr, flush=True)
    print("RMSE (MASE) over the backtest's folds; the best of each row in bold\n")
    print(table(rows))
    print("\nthe forecast to use at each series' auto horizon (issue 50's targets):\n")
    print("\n".join(quantile_verdicts(rows, "blend", STATS)))
    for who in ("blend", *VARIANTS):
        if any(r.get(who) for r in rows):
            print()
            print("\n".join(blend_verdicts(rows, who)))
    for who in ("model", "zeroshot", "model+stats", "fracast", "scratch"):
        if any(r.get(who) for r in rows):
            print()
            print("\n".join(verdicts(rows, who)))
    if any("model_intervals" in r for r in rows):
        print("\n80 % intervals, means over the folds: coverage (pinball)\n")
        print("| series | model | naive | ridge | ets | arima |")
        print("|---|---:|---:|---:|---:|---:|")
        for r in rows:
            cells = [f"{r[k][0]:.3f} ({r[k][1]:.4g})" if k in r else "n/a"
                     for k in ("model_intervals", "naive_intervals", "ridge_intervals",
                               "ets_intervals", "arima_intervals")]
            print(f"| {r['series']} | " + " | ".join(cells) + " |")
        cov = [r["model_intervals"][0] for r in rows if "model_intervals" in r]
        print(f"\n- the model's 80 % coverage within 0.75-0.85: "
              f"{sum(0.75 <= c <= 0.85 for c in cov)} of {len(cov)} series")
        seasonal = [r for r in rows if r["series"] in SEASONAL and "model_intervals" in r]
        print(f"- the model's pinball loss below the naive interval's on the seasonal series: "
              f"{sum(r['model_intervals'][1] < r['naive_intervals'][1] for r in seasonal)} of "
              f"{len(seasonal)}")
    print()
    for who in ("blend", *VARIANTS, "model", "zeroshot", "model+stats", "fracast", "scratch"):
        mase = [r[who][1] for r in rows if r.get(who) and r[who][1] is not None]
        if mase:
            print(f"- {who}: median MASE over these {len(mase)} series "
                  f"{statistics.median(mase):.3f}")
    print(f"\nwhole benchmark: {sum(r['seconds'] for r in rows) / 60:.1f} min")
    if args.json:      # bench/README.md's "real-quantiles" block reads it (make docs)
        args.json.write_text(json.dumps({
            "command": "python bench/real.py " + " ".join(sys.argv[1:]),
            "date": time.strftime("%Y-%m-%d"), "commit": commit(), "stats": list(STATS),
            "rows": [{k: v for k, v in r.items() if k != "log"} for r in rows]}, indent=1))


if __name__ == "__main__":
    main()
