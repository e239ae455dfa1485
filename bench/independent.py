"""The independent check: the M3 settings, unchanged, on M1 and Tourism (kept out of every
choice: nothing is tuned or selected on them). Each subset takes competitions/params.yaml's
`all` and the M3 section of the same name (M1 and Tourism have yearly, quarterly and monthly);
the attention model is trained on the subset's series and forecasts each test part, beside
Theta, Comb (ARIMA, ETS, CES, DOT) and Naive2 fitted on the same series; every forecaster
covers every series (Naive2 where a member cannot fit). Scored the field's way: each subset and
"all" as the mean over all forecasts, beside the mean over series.

    python bench/independent.py                        # M1 and Tourism
    python bench/independent.py --competitions m1 --subsets yearly

Prints the command, one line per subset as it finishes, and the table.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
import attn_forecast.cpu as _cpu  # noqa: E402
_cpu.pin()
from attn_forecast.forecasters.neural import ModelForecaster  # noqa: E402
from attn_forecast.forecasters.run import run  # noqa: E402
from attn_forecast.pipeline import competition_leaderboard as L  # noqa: E402
from attn_forecast.pipeline.competition import (SUBSETS, field_store, model_store,  # noqa: E402
                                                subset_params)
from attn_forecast.pipeline.competition_field import statistical_field  # noqa: E402
from attn_forecast.setup.forecasting import check_data, parts, levels_of  # noqa: E402
from attn_forecast.setup.training import fit  # noqa: E402

PARAMS = ROOT / "competitions" / "params.yaml"
FIELD = {"evaluate": {"baselines": ["naive2", "theta", "comb"], "blend": []}}
ROWS = ["model", "model+comb", "theta", "comb", "naive2"]


def one(competition: str, subset: str):
    t0 = time.perf_counter()
    p, prof = subset_params(PARAMS, subset, FIELD, holdout="test", competition=competition)
    store = model_store(p, prof)
    season = check_data(p, store)
    fitted = fit(p, store, season, str(ROOT / "models" / "pretrained.pt"))
    model_fs = run(store, [ModelForecaster(fitted.model, fitted.dist.device)], parts(p, store),
                   levels_of(p),
                   record={"data": store.key()}, season=season)
    t1 = time.perf_counter()
    fstore = field_store(p, prof)
    field = statistical_field(p, fstore, check_data(p, fstore))
    ev = L.evaluated(p, fstore, model_fs, field)
    m = ev.metrics
    print(f"{competition} {subset}: {int(m['n_series'])} series, model "
          f"{m['model']['smape_mean']:.2f}, theta {m['theta']['smape_mean']:.2f}, comb "
          f"{m['comb']['smape_mean']:.2f}, model+comb {m['model+comb']['smape_mean']:.2f} "
          f"(model {t1 - t0:.0f} s, field {time.perf_counter() - t1:.0f} s)", flush=True)
    return ev


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--competitions", default="m1,tourism")
    ap.add_argument("--subsets", default="", help="comma-separated (default: every one)")
    args = ap.parse_args()
    print("command: python bench/independent.py " + " ".join(sys.argv[1:]), flush=True)
    for comp in args.competitions.split(","):
        subsets = [s for s in SUBSETS[comp] if not args.subsets or s in args.subsets.split(",")]
        evs = {s: one(comp, s) for s in subsets}
        board = L.leaderboard(evs, L.horizons_of(evs), ROWS)
        cols = subsets + (["all"] if "all" in board else [])
        print(f"\n{comp} (sMAPE; each column the mean over all forecasts; all per series in "
              "brackets)\n\n| | " + " | ".join(cols) + " |\n" + "|---" * (len(cols) + 1) + "|")
        for name in ROWS:
            cells = []
            for c in cols:
                v = board.get(c, {}).get(name, {})
                cell = f"{v['smape']:.2f}" if v.get("smape") is not None else ""
                if c == "all" and v.get("smape_series") is not None:
                    cell += f" ({v['smape_series']:.2f})"
                cells.append(cell)
            print(f"| {name} | " + " | ".join(cells) + " |")
        wins = [c for c in cols if board.get(c, {}).get("model", {}).get("smape", 1e9)
                < board.get(c, {}).get("theta", {}).get("smape", -1)]
        print(f"\nthe model below Theta: {', '.join(wins) or 'nowhere'} (of {', '.join(cols)})",
              flush=True)


if __name__ == "__main__":
    main()
