"""The docs' figures on attention against recurrence, generated from committed results (a
block of tools/docs.py): bench/long_lag.py's rows (bench/results/long_lag.json)."""
from __future__ import annotations

import csv
import json
from pathlib import Path

import yaml

from attn_forecast.forecasters.names import PEERS, RAW_ROW, raw_row


def long_lag(root: Path) -> str:
    """The synthetic task whose next value depends on one value ``lag`` steps back: each
    network's share of the predictable variance captured at each lag (mean and range over
    seeds), its parameters and seconds, and the command that measured them."""
    got = json.loads((root / "bench" / "results" / "long_lag.json").read_text())
    kinds = list(dict.fromkeys(r["network"] for r in got["rows"]))
    lags = list(dict.fromkeys(r["lag"] for r in got["rows"]))
    at = {(r["lag"], r["network"]): r for r in got["rows"]}
    lines = ["| lag | " + " | ".join(kinds) + " |", "|---:|" + "---:|" * len(kinds)]
    for lag in lags:
        lines.append(f"| {lag} | " + " | ".join(
            f"{at[lag, k]['captured']:.2f} ({at[lag, k]['captured_min']:.2f}-"
            f"{at[lag, k]['captured_max']:.2f})" for k in kinds) + " |")
    looks = [r for r in got["rows"] if "saliency_at_lag" in r]
    where = ""
    if looks:
        heads = [*(f"{k}: saliency" for k in kinds),
                 *(f"{k}: attention weight" for k in kinds
                   if any(r.get("weight_at_lag") is not None for r in looks
                          if r["network"] == k))]
        rows = ["| lag | " + " | ".join(heads) + " |", "|---:|" + "---:|" * len(heads)]
        for lag in lags:
            cells = [f"{at[lag, k]['saliency_at_lag']:.2f}" for k in kinds]
            cells += [f"{at[lag, k]['weight_at_lag']:.2f}" for k in kinds
                      if at[lag, k].get("weight_at_lag") is not None]
            rows.append(f"| {lag} | " + " | ".join(cells) + " |")
        where = (f"\n\nWhere each looks: the share of its input-gradient saliency on the value "
                 f"`lag` steps back (1: only there; spread evenly over the window: "
                 f"{1 / got['window']:.3f}), and the attention model's share of attention "
                 f"weight there (mean over seeds):\n\n" + "\n".join(rows))
    sizes = []
    for k in kinds:
        mine = [r for r in got["rows"] if r["network"] == k]
        sizes.append(f"{k} {mine[0]['params']:,} parameters, about "
                     f"{sum(r['seconds'] for r in mine) / len(mine):.0f} s a run")
    return (f"Share of the predictable variance captured on the test windows (1: the best "
            f"forecast, 0: nothing of the value `lag` steps back; mean and range over seeds), "
            f"a window of {got['window']} steps, {got['steps']} optimizer steps each:\n\n"
            + "\n".join(lines) + where + f"\n\n{', '.join(sizes)}.\n\n`{got['command']}` "
            f"({got['date']}, {got['commit']})\n")


BUCKETS = ((1, 1), (2, 3), (4, 6), (7, 12), (13, 18))   # steps ahead, first and last


def architectures_m3(root: Path) -> str:
    """M3's test parts by network (bench/architectures_m3.py; with its seeds' run, the spread
    over seeds): each subset's sMAPE and MASE, pooled over every forecast, and sMAPE by steps
    ahead, so a reader sees whether attention's lead (or loss) grows with the horizon."""
    runs = [json.loads(f.read_text()) for f in sorted((root / "bench" / "results").glob(
        "architectures_m3*.json"))]
    rows = [r for got in runs for r in got["rows"]]
    subsets = list(dict.fromkeys(r["subset"] for r in rows))
    kinds = list(dict.fromkeys(r["network"] for r in rows))
    mine = {(s, k): [r for r in rows if r["subset"] == s and r["network"] == k]
            for s in subsets for k in kinds}

    def cell(values: list[float], digits: int) -> str:
        mean = sum(values) / len(values)
        return f"{mean:.{digits}f}" + (f" ({min(values):.{digits}f}-{max(values):.{digits}f})"
                                       if len(values) > 1 else "")
    head = ["| network | " + " | ".join(subsets) + " | all (every forecast) | parameters |",
            "|---|" + "---:|" * (len(subsets) + 2)]
    for k in kinds:
        got = [mine[s, k] for s in subsets]
        seeds = {r["seed"] for r in got[0]}
        pooled = [sum(r["sums"]["smape"] for g in got for r in g if r["seed"] == seed)
                  / sum(r["sums"]["forecasts"] for g in got for r in g if r["seed"] == seed)
                  for seed in seeds if all(any(r["seed"] == seed for r in g) for g in got)]
        sizes = ", ".join(f"{n:,}" for n in sorted({r["params"] for g in got for r in g}))
        head.append(f"| {k} | " + " | ".join(
            f"{cell([r['smape'] for r in g], 2)} / {cell([r['mase'] for r in g], 3)}"
            for g in got) + f" | {cell(pooled, 2) if pooled else 'n/a'} | {sizes} |")
    steps = ["| subset | network | " + " | ".join(
        f"step {a}" if a == b else f"steps {a}-{b}" for a, b in BUCKETS) + " |",
        "|---|---|" + "---:|" * len(BUCKETS)]
    for s in subsets:
        for k in kinds:
            cells = []
            for a, b in BUCKETS:
                got = [sum(r["smape_by_step"][a - 1:b]) / len(r["smape_by_step"][a - 1:b])
                       for r in mine[s, k] if len(r["smape_by_step"]) >= a]
                cells.append(cell(got, 2) if got else "")
            steps.append(f"| {s} | {k} | " + " | ".join(cells) + " |")
    commands = "; ".join(f"`{got['command']}` ({got['date']}, {got['commit']})" for got in runs)
    return ("sMAPE / MASE on the test parts, the mean over series (MASE: M4's, by the in-sample "
            "seasonal naive error), and sMAPE pooled over every forecast of the four subsets; "
            "one member each, trained with each subset's competition settings (a range: over "
            "seeds):\n\n" + "\n".join(head) + "\n\nsMAPE by steps ahead (the mean over the "
            "steps named up to the subset's horizon, each the mean over series):\n\n"
            + "\n".join(steps) + f"\n\n{commands}\n")


PEER_ROWS = ("model", *(m for n in PEERS for m in (n, raw_row(n))), "theta", "comb")


def m3_peers(root: Path) -> str:
    """The committed M3 leaderboard's model (the attention model's ensemble, as the
    competition runs it) beside NeuralForecast's networks measured here and the statistical
    field's Theta and Comb: sMAPE, MASE and WQL by subset and over every forecast, and sMAPE
    by steps ahead (competitions/m3/leaderboard.json)."""
    board = json.loads((root / "competitions" / "m3" / "leaderboard.json").read_text())
    subsets = [s for s in ("yearly", "quarterly", "monthly", "other") if s in board]
    names = [n for n in PEER_ROWS if all(n in board[s] for s in subsets)]
    by = board.get("measured_with", {})

    def label(n: str) -> str:
        return f"{n} ({by[n]})" if n in by else n

    def num(v, digits: int) -> str:
        return "" if v is None else f"{v:.{digits}f}"
    lines = ["| forecaster | " + " | ".join(subsets) + " | all (every forecast) |",
             "|---|" + "---:|" * (len(subsets) + 1)]
    for n in names:
        cols = [board[s][n] for s in subsets] + [board.get("all", {}).get(n, {})]
        lines.append(f"| {label(n)} | " + " | ".join(
            f"{num(c.get('smape'), 2)} / {num(c.get('mase'), 3)} / {num(c.get('wql'), 3)}"
            for c in cols) + " |")
    steps = ["| subset | forecaster | " + " | ".join(
        f"step {a}" if a == b else f"steps {a}-{b}" for a, b in BUCKETS) + " |",
        "|---|---|" + "---:|" * len(BUCKETS)]
    for s in subsets:
        for n in (n for n in names if not n.endswith(RAW_ROW)):   # a raw row: the same points
            got = board[s][n].get("smape_by_step") or []
            steps.append(f"| {s} | {label(n)} | " + " | ".join(
                num(sum(got[a - 1:b]) / len(got[a - 1:b]), 2) if len(got) >= a else ""
                for a, b in BUCKETS) + " |")
    chose = ""
    picked = root / "bench" / "results" / "peers_input.json"
    if picked.is_file():
        got = json.loads(picked.read_text())
        tried = "; ".join(f"{r['subset']} input {r['input_size']}: {r['smape']:.2f}"
                          for r in got["rows"])
        chose = (f"\n\nThe peers' input size, chosen on the validation cuts with "
                 f"{got['probe']} as the probe (validation sMAPE: {tried}): "
                 + ", ".join(f"{s} {n}" for s, n in got["chosen"].items())
                 + f". `{got['command']}` ({got['date']}, {got['commit']})")
    for found in sorted((root / "competitions" / "search").glob("*.yaml")):
        got = yaml.safe_load(found.read_text())
        net = ", ".join(f"{k} {v}" for k, v in got["settings"]["network"].items())
        chose += (f"\n\n{got['peer']}: NeuralForecast's Auto search on {got['subset']}'s "
                  f"validation cuts chose trial {got['trial']} (validation sMAPE "
                  f"{got['smape_validation']:.2f}, input {got['input_size']}): "
                  f"{got['settings']['max_steps']} steps, seed {got['settings']['seed']}, "
                  f"{net} (competitions/search/{found.stem}.csv: every trial)")
    for log in sorted((root / "competitions" / "search").glob("*.csv")):
        if log.with_suffix(".yaml").is_file():
            continue
        done = [r for r in csv.DictReader(log.open()) if r["state"] == "COMPLETE"]
        chose += (f"\n\n{log.stem.split('-', 1)[1]}: its search stopped at {len(done)} "
                  f"finished trials (competitions/search/{log.stem}.csv; best validation "
                  f"sMAPE so far {min(float(r['smape']) for r in done):.2f}), not yet a stage: "
                  "it runs at NeuralForecast's defaults but the stated few")
    return ("sMAPE / MASE / WQL on the test parts (the committed leaderboard: "
            "`cd competitions && dvc repro`; MASE the mean over series, WQL pooled; \"all\" "
            "over every forecast; a peer's row calibrated on the calibration cut as every "
            "row, its _raw row its own quantiles):\n\n" + "\n".join(lines)
            + "\n\nsMAPE by steps ahead (the mean over the steps named, each the mean over "
            "series):\n\n" + "\n".join(steps)
            + chose + "\n")
