"""The competition leaderboard as Markdown (competitions/m3/leaderboard.md): this project's
rows from the committed leaderboard (a dict, as leaderboard.json holds it), the published
figures beside them, each labelled published with its source, never mixed with what was
measured; and the targets, each met or missed."""
from __future__ import annotations

import csv
from pathlib import Path

from ..evaluation.subset import COVERAGE_80
from ..forecasters.names import RAW_ROW

ALL = ["all (mean over all forecasts)", "all (mean over series)"]
# WQL over all is no mean: each level's pinball loss summed over every forecast, over the
# summed |y| (evaluation.leaderboard.pooled_intervals), as fev and Chronos pool a task
WQL_ALL = "all (pooled ratio over all forecasts)"
BOLD = ("model", "model+comb")


def _cell(v, digits: int = 2) -> str:
    return "" if v is None else f"{v:.{digits}f}"


def _label(n: str, board: dict) -> str:
    """A row's name and whose run it is: the project's forecasters "(this project)", a peer
    library's "(measured here with <library> <version>)" (the board's ``measured_with``)."""
    if n in board.get("measured_with", {}):
        return f"{n} (measured here with {board['measured_with'][n]})"
    return f"**{n}** (this project)" if n in BOLD else f"{n} (this project)"


def _head(cols: list[str]) -> list[str]:
    return ["| | " + " | ".join(cols) + " |", "|---|" + "---:|" * len(cols)]


def _rows(board: dict, subsets: list[str], names: list[str], metric: str, digits: int,
          every: bool, series: bool = True) -> list[str]:
    out = []
    for n in names:
        cols = [(board[s].get(n) or {}).get(metric) for s in subsets]
        if every:
            a = board["all"].get(n) or {}
            cols += [a.get(metric)] + ([a.get(f"{metric}_series")] if series else [])
        if any(c is not None for c in cols):
            out.append(f"| {_label(n, board)} | " + " | ".join(_cell(v, digits) for v in cols)
                       + " |")
    return out


def _published_tasks(rows: list[dict], subsets: list[str], metric: str, width: int
                     ) -> list[str]:
    """fev's published per-task rows (one row a model), in the subsets' columns."""
    by: dict[str, dict] = {}
    for r in rows:
        if r.get(metric) is not None:
            by.setdefault(r["model"], {})[r["task"].removeprefix("m3_")] = r[metric]
    return [f"| {m} (published, fev) | " + " | ".join(
        _cell(v.get(s), 3) for s in subsets) + " |" * (width - len(subsets)) + " |"
            for m, v in by.items()]


def markdown(board: dict, subsets: list[str], names: list[str], command: str, holdout: str,
             published: dict[str, list[dict]] | None = None, test_runs: int | None = None
             ) -> str:
    """The leaderboard as tables: sMAPE, MASE, OWA, then WQL, MSIS and the intervals'
    coverage (each subset, all by the field's rule and over series), the fev aggregate, the
    sign tests, the targets; the published figures on the test parts beside."""
    published = published or {}
    every = "all" in board
    test = holdout == "test"
    head = list(subsets) + (ALL if every else [])
    what = "test parts" if test else "validation cuts (the last horizon of each train part)"
    lines = [f"Scores on M3's {what}, every forecaster on the same series. \"all\": the mean "
             "over all forecasts (M3's own averaging) and over series.", "",
             "### Points", "", "sMAPE:", ""] + _head(head)
    smape_rows = published.get("m3_smape", []) if test and every else []
    for r in smape_rows:
        cols = [r.get(s) for s in subsets] + [r.get("all"), r.get("all_series")]
        lines.append(f"| {r['row']} (published) | " + " | ".join(_cell(v) for v in cols) + " |")
    lines += _rows(board, subsets, names, "smape", 2, every)
    fev = published.get("fev_m3", []) if test else []
    for metric in ("mase", "owa"):
        lines += ["", f"{metric.upper()}:", ""] + _head(head)
        if metric == "mase":
            lines += _published_tasks(fev, subsets, "mase", len(head))
        lines += _rows(board, subsets, names, metric, 3, every)
    if smape_rows:
        lines += ["", "Published (as published; all_series derived here from the published "
                  "subset figures, each weighted by its number of series):", ""]
        lines += [f"- {r['row']}: {r['source']}" for r in smape_rows]
    lines += _probabilistic(board, subsets, names, head, every, fev)
    lines += ["", "Against Theta, series by series (sMAPE; sign test, ties left out):", ""]
    lines += sign_lines(board, subsets)
    if test and every:
        lines += ["", "Targets:", ""] + targets(board, subsets, published)
        if test_runs is not None:
            lines += ["", f"The test parts were scored {test_runs} times while the settings "
                      "were developed, this leaderboard's run among them (every run recorded: "
                      "competitions/test_runs.csv). Every setting was chosen by a rule on the "
                      "validation cuts, but one of those runs (964ace1) printed the test parts' "
                      "coverage under four calibration variants before the rule that chose "
                      "among them was written."]
    lines += _fallbacks(board, subsets, names)
    lines += ["", "Comb: the mean of AutoARIMA (seasonal orders P, Q <= 1), ETS, CES and DOT "
              "(StatsForecast's M3 ensemble), not the M4 competition's Comb (SES, Holt and "
              "damped trend on the seasonally adjusted series).", "",
              "Settings: competitions/params.yaml, chosen on the validation cuts only (the "
              "search: `attn-forecast tune`, competitions/tune/; every run that chose them: "
              "bench/README.md, M3). Intervals: every forecaster's calibrated on each series' "
              "calibration cut (the horizon before the validation cut: nothing was chosen on "
              "it) by split conformal, each pair of levels per step ahead"
              + (", but the NeuralForecast peers' (their own)" if board.get("measured_with")
                 else "") + ".", "",
              f"Reproduce: `{command}`", ""]
    return "\n".join(lines)


def sign_lines(board: dict, subsets: list[str]) -> list[str]:
    """The model and model+comb against Theta, series by series: one line each per subset."""
    lines = []
    for s in subsets:
        for n in BOLD:
            t = board["sign_test_vs_theta"].get(s, {}).get(n)
            if t:
                lines.append(f"- {s}, {n}: better on {t['wins']:,} of {t['n']:,} series "
                             f"({100 * t['share']:.1f} %), p = {t['p_value']:.2g}")
    return lines


def _probabilistic(board: dict, subsets: list[str], names: list[str], head: list[str],
                   every: bool, fev: list[dict]) -> list[str]:
    """WQL (fev and Chronos' definition), MSIS (M4's), the coverage of the 80 % and 95 %
    intervals, and the fev aggregate."""
    lines = ["", "### Quantiles and intervals", "",
             "WQL (the mean over the levels 0.1 ... 0.9 of 2 x the summed pinball loss over the "
             "summed absolute targets, pooled over each task, as fev and Chronos score it; "
             "\"all\": every forecast pooled as one task, a ratio of sums, not a mean):",
             ""] + _head(list(subsets) + [WQL_ALL] if every else head)
    lines += _published_tasks(fev, subsets, "wql", len(subsets) + (1 if every else 0))
    lines += _rows(board, subsets, names, "wql", 3, every, series=False)
    lines += ["", "MSIS (the M4 competition's: the 95 % interval's score over the in-sample "
              "seasonal naive error, per series, then the mean):", ""] + _head(head)
    lines += _rows(board, subsets, names, "msis", 2, every)
    raws = [n for n in names if n.endswith(RAW_ROW)]
    cov_head = [f"{s} {p}" for s in subsets + (["all"] if every else []) for p in (80, 95)]
    lines += ["", "Coverage of the 80 % and 95 % intervals (the share of targets inside):",
              ""] + _head(cov_head)
    for n in names:
        cols = [(board[s].get(n) or {}).get(f"coverage_{p}") for s in subsets
                for p in (80, 95)]
        if every:
            cols += [(board["all"].get(n) or {}).get(f"coverage_{p}") for p in (80, 95)]
        if any(c is not None for c in cols):
            lines.append(f"| {_label(n, board)} | " + " | ".join(
                "" if v is None else f"{100 * v:.1f}" for v in cols) + " |")
    peers = [n for n in names if n in board.get("measured_with", {}) and n not in raws]
    if peers:
        lines += ["", f"{', '.join(peers)}: trained twice, on the holdout's training parts and "
                  "on the calibration cut's, so their quantiles are calibrated on the cut as "
                  "every row's are."]
    if raws:
        lines += ["", f"{', '.join(raws)}: the same networks' own quantiles (NeuralForecast's "
                  "multi-quantile loss), not calibrated: shown beside, not audited."]
    for n, why in (board.get("unfit") or {}).items():
        lines += ["", f"{n}: marked unfit for these series, no stage and no row: {why}."]
    lines += ["", f"Every calibrated row's median is its point forecast, and its 80 % interval "
              f"covers {100 * COVERAGE_80[0]:.0f}-{100 * COVERAGE_80[1]:.0f} % of the targets "
              "on every subset (the leaderboard stage's audit)."]
    agg = board.get("fev_aggregate") or {}
    if agg:
        tasks = next(iter(agg.values()))["tasks"]
        lines += ["", f"The fev aggregate: the geometric mean over M3's {', '.join(tasks)} "
                  "tasks of each score relative to seasonal naive's (naive's on yearly):", "",
                  "| | MASE relative | WQL relative |", "|---|---:|---:|"]
        for m, row in _published_aggregate(fev, tasks).items():
            lines.append(f"| {m} (published, fev) | {_cell(row, 3)} | |")
        for n in names:
            if n in agg:
                lines.append(f"| {_label(n, board)} | {_cell(agg[n].get('mase_relative'), 3)} | "
                             f"{_cell(agg[n].get('wql_relative'), 3)} |")
        lines += ["", "Published rows' WQL relative is left out: fev publishes no seasonal "
                  "naive WQL on these tasks."]
    return lines


def _published_aggregate(fev: list[dict], tasks: list[str]) -> dict[str, float]:
    """The published models' MASE relative to the published seasonal naive's, geometric mean
    over ``tasks`` (from the published rows alone)."""
    import math
    mase = {(r["model"], r["task"].removeprefix("m3_")): r["mase"] for r in fev
            if r.get("mase") is not None}
    out = {}
    for m in dict.fromkeys(r["model"] for r in fev):
        if m == "SeasonalNaive":
            continue
        pairs = [(mase.get((m, t)), mase.get(("SeasonalNaive", t))) for t in tasks]
        if all(a and b for a, b in pairs):
            out[m] = math.exp(sum(math.log(a / b) for a, b in pairs) / len(pairs))
    return out


def _fallbacks(board: dict, subsets: list[str], names: list[str]) -> list[str]:
    failed = [f"{n} on {board[s][n]['n_failed']} {s}" for s in subsets for n in names
              if (board[s].get(n) or {}).get("n_failed")]
    wide = [f"{n} on {board[s][n]['n_interval_fallback']} {s}" for s in subsets for n in names
            if (board[s].get(n) or {}).get("n_interval_fallback")]
    return ["", "Series where Naive2 stood in for a forecaster that could not forecast them: "
            + (", ".join(failed) if failed else "none") + ".",
            "Series where Naive2's interval stood in for one a forecaster could not give: "
            + (", ".join(wide) if wide else "none") + "."]


def targets(board: dict, subsets: list[str], published: dict[str, list[dict]] | None = None
            ) -> list[str]:
    """The competition's targets, each met or missed: the model alone below Theta (published
    and this project's) on every subset and over all, at or below N-BEATS over all,
    ``model+comb`` below the deep ensemble (sMAPE, the mean over all forecasts); the 80 % and
    95 % intervals within 3 points of nominal on every subset for the model and model+comb;
    WQL and MASE of model+comb below TiRex's and the model's WQL below AutoETS's on M3's
    yearly, quarterly and monthly tasks (the published fev figures)."""
    published = published or {}
    rows = {r["row"]: r for r in published.get("m3_smape", [])}
    theta = rows.get("Theta", {})
    cols = list(subsets) + ["all"]

    def v(col: str, name: str, metric: str = "smape"):
        return (board.get(col, {}).get(name) or {}).get(metric)

    def verdict(ok: bool) -> str:
        return "**met**" if ok else "missed"
    out = []
    for ref, label in (("published", "Theta (published)"), ("theta", "Theta (this project)")):
        pairs = [(c, v(c, "model"), theta.get(c) if ref == "published" else v(c, "theta"))
                 for c in cols]
        pairs = [(c, m, t) for c, m, t in pairs if m is not None and t is not None]
        if pairs:
            cells = ", ".join(f"{c} {m:.2f} vs {t:.2f}" for c, m, t in pairs)
            out.append(f"- the model below {label} on every subset and over all (sMAPE): "
                       f"{verdict(all(m < t for _, m, t in pairs))} ({cells})")
    m, nb = v("all", "model"), rows.get("N-BEATS", {}).get("all")
    if m is not None and nb is not None:
        out.append(f"- the model at or below N-BEATS ({nb:.2f}) over all (sMAPE): "
                   f"{verdict(m <= nb)} ({m:.2f})")
    mc, deep = v("all", "model+comb"), rows.get("deep ensemble (14 days)", {}).get("all")
    if mc is not None and deep is not None:
        out.append(f"- model+comb below the deep ensemble ({deep:.2f}) over all (sMAPE): "
                   f"{verdict(mc < deep)} ({mc:.2f})")
    for name in BOLD:
        cells = [(s, p, v(s, name, f"coverage_{p}")) for s in subsets for p in (80, 95)]
        cells = [(s, p, c) for s, p, c in cells if c is not None]
        if cells:
            ok = all(abs(100 * c - p) <= 3 for _, p, c in cells)
            out.append(f"- {name}'s 80 % and 95 % intervals within 3 points of nominal on every "
                       f"subset: {verdict(ok)} ("
                       + ", ".join(f"{s} {p} {100 * c:.1f}" for s, p, c in cells) + ")")
    fev = {(r["model"], r["task"].removeprefix("m3_")): r for r in published.get("fev_m3", [])}
    for name, peer, metric in (("model+comb", "TiRex", "wql"), ("model", "AutoETS", "wql"),
                               ("model+comb", "TiRex", "mase")):
        pairs = [(s, v(s, name, metric), (fev.get((peer, s)) or {}).get(metric))
                 for s in ("yearly", "quarterly", "monthly") if s in subsets]
        pairs = [(s, a, b) for s, a, b in pairs if a is not None and b is not None]
        if pairs:
            out.append(f"- {name}'s {metric.upper()} below {peer}'s (published, fev) on M3 "
                       f"yearly, quarterly and monthly: {verdict(all(a < b for _, a, b in pairs))}"
                       " (" + ", ".join(f"{s} {a:.3f} vs {b:.3f}" for s, a, b in pairs) + ")")
    return out


def test_runs(path: str | Path) -> int:
    """How many runs scored the test parts while settings were developed (the rows of the
    record, comment lines first)."""
    lines = [ln for ln in Path(path).read_text().splitlines()
             if ln.strip() and not ln.startswith("#")]
    return len(list(csv.DictReader(lines)))


def published(folder: str | Path) -> dict[str, list[dict]]:
    """The published figures (competitions/published/*.csv, comment lines first): each file's
    rows by its name (``m3_smape``, ``fev_m3``), values as numbers (None where empty)."""
    out = {}
    for path in sorted(Path(folder).glob("*.csv")):
        lines = [ln for ln in path.read_text().splitlines() if not ln.startswith("#")]
        rows = []
        for r in csv.DictReader(lines):
            rows.append({k: _number(v) if k not in ("row", "task", "model", "source") else v
                         for k, v in r.items()})
        out[path.stem] = rows
    return out


def _number(v: str):
    return float(v) if v not in ("", None) else None
