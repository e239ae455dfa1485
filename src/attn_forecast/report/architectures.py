"""The docs' figures on attention against recurrence, generated from committed results (a
block of report/docs.py): bench/long_lag.py's rows (bench/results/long_lag.json)."""
from __future__ import annotations

import json
from pathlib import Path


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
