"""The figures the docs quote, generated from committed files, never typed: each block of a
Markdown page between ``<!-- generated: NAME -->`` and ``<!-- /generated -->`` is what
:data:`BLOCKS` [NAME] makes from the committed file it reads (`make docs` rewrites them;
tests/unit/tools/test_docs.py fails when a page and its files disagree).

    <!-- generated: m3-points -->
    | | yearly | ... |                       <- from competitions/m3/leaderboard.json
    <!-- /generated -->
"""
from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from statistics import fmean

from attn_forecast.report.leaderboard import (ALL, BOLD, _cell, _published_aggregate,
                                              published, sign_lines, targets)
from .architectures import architectures_m3, long_lag, m3_peers
from .choices import dvc_cost, real_edges
from .serving import serve_load

BLOCK = re.compile(r"(<!-- generated: ([\w-]+) -->\n)(.*?)(<!-- /generated -->)", re.S)
SUBSETS = ("yearly", "quarterly", "monthly", "other")
ROWS = ("model", "model+comb", "comb", "theta")


def _read(root: Path, rel: str):
    return json.loads((root / rel).read_text())


def _published(root: Path) -> dict:
    return published(root / "competitions" / "published")


def m3_points(root: Path) -> str:
    """sMAPE (each subset; all over every forecast and over series) and MASE of the
    model, model+comb, Comb and Theta, the published rows beside."""
    board = _read(root, "competitions/m3/leaderboard.json")
    pub = _published(root)
    head = list(SUBSETS) + ALL
    lines = ["sMAPE:", "", "| | " + " | ".join(head) + " |", "|---|" + "---:|" * len(head)]
    for r in pub.get("m3_smape", []):
        if r["row"] in ("Theta", "N-BEATS"):
            cols = [r.get(s) for s in SUBSETS] + [r.get("all"), r.get("all_series")]
            lines.append(f"| {r['row']} (published) | " + " | ".join(_cell(v) for v in cols)
                         + " |")
    for n in ROWS:
        a = board["all"].get(n) or {}
        cols = [(board[s].get(n) or {}).get("smape") for s in SUBSETS] + \
            [a.get("smape"), a.get("smape_series")]
        lines.append(f"| {_bold(n)} | " + " | ".join(_cell(v) for v in cols) + " |")
    return "\n".join(lines) + "\n"


def m3_intervals(root: Path) -> str:
    """WQL, MASE and the 80 % and 95 % intervals' coverage on M3's fev tasks and over all, the
    published fev rows of TiRex and AutoETS beside, and the fev aggregate."""
    board = _read(root, "competitions/m3/leaderboard.json")
    fev = _published(root).get("fev_m3", [])
    tasks = ("yearly", "quarterly", "monthly")
    head = [f"{t} {m}" for t in tasks for m in ("WQL", "MASE")] + ["cov. 80 / 95 (all)"]
    lines = ["| | " + " | ".join(head) + " |", "|---|" + "---:|" * len(head)]
    by = {(r["model"], r["task"].removeprefix("m3_")): r for r in fev}
    for peer in ("TiRex", "AutoETS"):
        cols = [(by.get((peer, t)) or {}).get(m) for t in tasks for m in ("wql", "mase")]
        lines.append(f"| {peer} (published, fev) | " + " | ".join(_cell(v, 3) for v in cols)
                     + " | |")
    for n in ROWS:
        cols = [(board[t].get(n) or {}).get(m) for t in tasks for m in ("wql", "mase")]
        a = board["all"].get(n) or {}
        cov = "" if a.get("coverage_80") is None else \
            f"{100 * a['coverage_80']:.1f} / {100 * a['coverage_95']:.1f}"
        lines.append(f"| {_bold(n)} | " + " | ".join(_cell(v, 3) for v in cols)
                     + f" | {cov} |")
    agg = board.get("fev_aggregate") or {}
    if agg:
        ref = _published_aggregate(fev, list(tasks))
        lines += ["", "The fev aggregate (geometric mean over the three tasks, relative to "
                  "seasonal naive): MASE " + ", ".join(
                      [f"{m} {v:.3f} (published)" for m, v in ref.items() if m in
                       ("TiRex", "AutoETS")]
                      + [f"{n} {agg[n]['mase_relative']:.3f}" for n in ROWS if n in agg])
                  + "; WQL " + ", ".join(f"{n} {agg[n]['wql_relative']:.3f}" for n in ROWS
                                          if n in agg and "wql_relative" in agg[n]) + "."]
    return "\n".join(lines) + "\n"


def m3_targets(root: Path) -> str:
    """The leaderboard's targets, each met or missed (as competitions/m3/leaderboard.md)."""
    board = _read(root, "competitions/m3/leaderboard.json")
    return "\n".join(targets(board, list(SUBSETS), _published(root))) + "\n"


def m3_sign(root: Path) -> str:
    """The model and model+comb against Theta, series by series (sMAPE, the sign test)."""
    return "\n".join(sign_lines(_read(root, "competitions/m3/leaderboard.json"),
                                list(SUBSETS))) + "\n"


def ensembles(root: Path) -> str:
    """bench/ensembles.py's committed results (bench/results/ensembles_<subset>.json): each
    configuration's members and the ensemble's sMAPE on the M3 validation cuts."""
    lines = ["| subset | configuration | members | each member (min / mean / max) | their "
             "mean | their median | seconds |", "|---|---|---:|---|---:|---:|---:|"]
    for s in SUBSETS:
        path = root / "bench" / "results" / f"ensembles_{s}.json"
        if not path.is_file():
            continue
        for name, r in json.loads(path.read_text())["results"].items():
            each = [m["smape"] for m in r["members"]]
            lines.append(f"| {s} | {name} | {len(each)} | {min(each):.2f} / "
                         f"{sum(each) / len(each):.2f} / {max(each):.2f} | {r['mean']:.2f} | "
                         f"{r['median']:.2f} | {r['seconds']:.0f} |")
    return "\n".join(lines) + "\n"


def global_m3(root: Path) -> str:
    """bench/global_m3.py's committed result (bench/results/global_m3.json): one model per
    subset against one global model, sMAPE on the M3 validation cuts, each subset and over
    all forecasts, the lowest of each column in bold."""
    got = _read(root, "bench/results/global_m3.json")
    rows = got["rows"]
    cols = list(SUBSETS) + ["all"]
    best = {c: min(round(r[c], 2) for r in rows.values()) for c in cols}   # as shown
    lines = ["| validation cuts, sMAPE | " + " | ".join(cols) + " | training s |",
             "|---|" + "---:|" * (len(cols) + 1)]
    for name, r in rows.items():
        lines.append(f"| {name} | " + " | ".join(
            f"**{r[c]:.2f}**" if round(r[c], 2) == best[c] else f"{r[c]:.2f}" for c in cols)
            + f" | {r['seconds']:.0f} |")
    return "\n".join(lines) + f"\n\n`{got['command']}`\n"


def seed_spread(root: Path) -> str:
    """bench/seed_spread.py's committed results (bench/results/seed_spread/<seed>.json, each a
    seed's leaderboard; seed 42's is the committed one): the whole model's and model+comb's
    test-part sMAPE and MASE at each base seed and their spread (max - min), beside Theta
    (this project's and published)."""
    board = _read(root, "competitions/m3/leaderboard.json")
    runs = [json.loads(f.read_text()) for f in (root / "bench" / "results" /
                                                 "seed_spread").glob("*.json")]
    boards = {42: board} | {r["seed"]: r["leaderboard"] for r in
                            sorted(runs, key=lambda r: r["seed"]) if r["seed"] != 42}
    cols = [f"sMAPE {s}" for s in SUBSETS] + ["sMAPE all"] + [f"MASE {s}" for s in SUBSETS[:3]]

    def row(b: dict, who: str) -> list[float]:
        return [b[s][who]["smape"] for s in SUBSETS] + [b["all"][who]["smape"]] + \
            [b[s][who]["mase"] for s in SUBSETS[:3]]

    def cells(v: list) -> str:
        return " | ".join("" if x is None else f"{x:.2f}" if i < 5 else f"{x:.3f}"
                          for i, x in enumerate(v))
    lines = ["| | base seed | " + " | ".join(cols) + " |", "|---|---:|" + "---:|" * len(cols)]
    for who in ("model", "model+comb"):
        rows = {seed: row(b, who) for seed, b in boards.items()}
        lines += [f"| {who} | {seed} | {cells(v)} |" for seed, v in rows.items()]
        lines.append(f"| {who}: spread (max - min) | | "
                     f"{cells([max(c) - min(c) for c in zip(*rows.values())])} |")
    lines.append(f"| theta (this project) | | {cells(row(board, 'theta'))} |")
    pub = next((r for r in _published(root).get("m3_smape", []) if r["row"] == "Theta"), {})
    lines.append("| Theta (published) | | " + cells(
        [pub.get(s) for s in SUBSETS] + [pub.get("all"), None, None, None]) + " |")
    return "\n".join(lines) + "\n"


# bench/field_scale.py's memory columns: each step in its own process (as the pipeline runs
# them), and the earlier rows', all steps in one process
PER_PROCESS = [("prepare_peak_mib", "prepare MiB"), ("field_peak_mib", "field MiB"),
               ("field_peak_worker_mib", "field's worker MiB"),
               ("evaluate_peak_mib", "evaluate MiB")]
ONE_PROCESS = [("peak_rss_main_mib", "peak RSS main MiB"),
               ("peak_rss_worker_mib", "peak RSS worker MiB"),
               ("field_peak_main_mib", "in the field: main MiB"),
               ("field_peak_worker_mib", "in the field: worker MiB")]


def field_scale(root: Path) -> str:
    """bench/field_scale.py's committed rows (bench/results/field_scale.json, each with the
    command, the date and the commit it ran at, where recorded): the statistical field on a
    synthetic panel of M4's shape, by size and engine: each step's seconds, the cost per series,
    the peak memory of each process, and ETS's mean MASE; in two tables: the rows whose steps
    ran each in its own process (prepare's, the field's and its largest worker's, evaluate's
    peaks), then the earlier rows that ran every step in one process (its peak and its largest
    worker's, since the process began and during the field alone). A cell the row does not hold
    is left blank; a row's note (how it was run) is numbered, the notes after both tables."""
    timing = [("prepare_s", "prepare s", "{:.0f}"), ("field_s", "field s", "{:,.0f}"),
              ("evaluate_s", "evaluate s", "{:.0f}"),
              ("ms_per_series", "ms per series (field)", "{:.1f}")]
    rows = sorted(_read(root, "bench/results/field_scale.json"),
                  key=lambda r: (r["series"], r["engine"]))
    notes: dict[str, int] = {}          # a note's text -> its number (one per distinct note)

    def table(part: list[dict], memory: list[tuple[str, str]]) -> list[str]:
        cols = timing + [(k, name, "{:,}") for k, name in memory] + \
            [("ets_mase", "ETS mean MASE", "{:.3f}")]
        lines = ["| series | engine | " + " | ".join(c[1] for c in cols) + " | date | commit |",
                 "|---:|---|" + "---:|" * len(cols) + "---|---|"]
        for r in part:
            cells = [fmt.format(r[key]) if r.get(key) is not None else ""
                     for key, _, fmt in cols]
            if r.get("note"):
                notes.setdefault(r["note"], len(notes) + 1)
            mark = f" ({notes[r['note']]})" if r.get("note") else ""
            lines.append(f"| {r['series']:,}{mark} | {r['engine']} | " + " | ".join(cells) +
                         f" | {r['date']} | {r.get('commit') or ''} |")
        return lines
    apart = [r for r in rows if "field_peak_mib" in r]
    together = [r for r in rows if "field_peak_mib" not in r]
    lines: list[str] = []
    for title, part, memory in (("Each step in its own process, as `dvc repro` runs them:",
                                 apart, PER_PROCESS),
                                ("Every step in one process (the earlier runs):",
                                 together, ONE_PROCESS)):
        if part:
            lines += ([""] if lines else []) + [title, ""] + table(part, memory)
    return "\n".join(lines + ([""] + [f"({i}) {n}" for n, i in notes.items()]
                               if notes else [])) + "\n"


def _pair(rows: list[dict], a: tuple[int, str], b: tuple[int, str]
          ) -> tuple[dict, dict, bool] | None:
    """The rows of ``a`` and ``b`` (a size within 10 % and an engine each) to compare: the
    latest two of one run (the same commit, or the same date where a row has none), else the
    latest of each and False (rows of different runs: the machine's speed moves between them)."""
    def of(size: int, engine: str) -> list[dict]:
        return [r for r in rows if r["engine"] == engine and abs(r["series"] - size) <= size / 10]
    xs, ys = of(*a), of(*b)
    if not xs or not ys:
        return None
    run = [(x, y) for x in xs for y in ys if (x.get("commit") or x["date"]) ==
           (y.get("commit") or y["date"])]
    if run:
        return (*max(run, key=lambda xy: (rows.index(xy[0]), rows.index(xy[1]))), True)
    return xs[-1], ys[-1], False


def field_scale_targets(root: Path) -> str:
    """issue 39's three targets from bench/results/field_scale.json: the cost per series at
    100,000 series within 1.2x of that at 10,000 (each engine) and each other engine within
    1.3x of ``local`` (each size both ran), each ratio between the latest two rows of one run
    (:func:`_pair`; rows of different runs only where no run holds both, and said so),
    and every process's peak memory under 2 GiB (each size and engine: prepare's, the field's,
    its largest worker's and evaluate's where the row ran each step in its own process; the
    one process's and its largest worker's in the earlier rows; the latest row of each size
    and engine). A ratio is judged as printed
    (two decimals); a target without its rows says so."""
    rows = _read(root, "bench/results/field_scale.json")
    latest = {(r["series"], r["engine"]): r for r in rows}
    engines = sorted({e for _, e in latest}, key=lambda e: (e != "local", e))
    lines = ["| target | measured | met |", "|---|---|---|"]

    def ratio(a: tuple[int, str], b: tuple[int, str], limit: float) -> str:
        pair = _pair(rows, a, b)
        if pair is None:
            return "not measured |"
        x, y, one_run = pair
        q = round(x["ms_per_series"] / y["ms_per_series"], 2)
        return (f"{x['ms_per_series']:.1f} / {y['ms_per_series']:.1f} = {q:.2f}x"
                f"{'' if one_run else ' (rows of different runs)'} | "
                f"{'yes' if q <= limit else '**no**'}")
    for e in engines:
        lines.append(f"| {e}: ms per series at 100,000 within 1.2x of 10,000 | "
                     f"{ratio((100_000, e), (10_000, e), 1.2)} |")
    for n in sorted({n for n, _ in latest}):
        for e in engines[1:]:
            if (n, "local") in latest and (n, e) in latest:
                lines.append(f"| {n:,} series: {e} within 1.3x of local | "
                             f"{ratio((n, e), (n, 'local'), 1.3)} |")
    for (n, e), r in sorted(latest.items(), key=lambda kv: (kv[0][0], engines.index(kv[0][1]))):
        memory = PER_PROCESS if "field_peak_mib" in r else \
            [("peak_rss_main_mib", "main"), ("peak_rss_worker_mib", "largest worker")]
        peaks = {name.removesuffix(" MiB"): r.get(k) for k, name in memory}
        if None in peaks.values():
            lines.append(f"| {n:,} series, {e}: every process under 2 GiB | not recorded | |")
            continue
        lines.append(f"| {n:,} series, {e}: every process under 2 GiB | " +
                     ", ".join(f"{k} {v:,} MiB" for k, v in peaks.items()) + " | " +
                     f"{'yes' if max(peaks.values()) < 2048 else '**no**'} |")
    return "\n".join(lines) + "\n"


def engines_agree(root: Path) -> str:
    """bench/engines_agree.py's committed rows (bench/results/engines_agree.json): an M3
    subset's competition field stage run on an embedded Dask cluster against the committed
    field (made on ``local``): the values compared, the largest difference, the arrays that
    differ in name, shape or NaN places, and whether they agree within the tolerance."""
    lines = ["| M3 subset | values compared | largest difference | arrays differing | "
             "tolerance | agree | seconds | date | commit |",
             "|---|---:|---:|---:|---:|---|---:|---|---|"]
    for r in _read(root, "bench/results/engines_agree.json"):
        ok = not r["differing_arrays"] and r["largest_difference"] <= r["tol"]
        lines.append(f"| {r['subset']} | {r['values']:,} | {r['largest_difference']:.3g} | "
                     f"{r['differing_arrays']} | {r['tol']:g} | {'yes' if ok else '**no**'} | "
                     f"{r['seconds']:.0f} | {r['date']} | {r['commit']} |")
    return "\n".join(lines) + "\n"


def m3_quantiles(root: Path) -> str:
    """bench/m3_intervals.py's committed result (bench/results/m3_intervals.json): on M3's
    validation cuts, each unit and way of making the model's quantiles, the WQL and the 80 %
    and 95 % coverage of the model, model+comb and Comb over all forecasts and per subset,
    and what the rule chose."""
    got = _read(root, "bench/results/m3_intervals.json")
    subsets = got["subsets"]
    head = ["WQL all"] + [f"cov. 80 / 95 {s}" for s in subsets] + ["cov. 80 / 95 all",
                                                                    "sMAPE all"]
    lines = ["| unit | model's quantiles | forecaster | " + " | ".join(head) + " |",
             "|---|---|---|" + "---:|" * len(head)]
    for unit, variants in got["units"].items():
        for variant, rows in variants.items():
            for name, r in rows.items():
                cov = [f"{100 * r[s]['coverage_80']:.1f} / {100 * r[s]['coverage_95']:.1f}"
                       for s in subsets + ["all"]]
                lines.append(f"| {unit} | {variant} | {name} | {r['all']['wql']:.4f} | "
                             + " | ".join(cov) + f" | {r['all']['smape']:.2f} |")
    chose = f"the unit **{got['unit']}**" + (
        f", the model's quantiles **{got['model']}**" if got.get("model") else "")
    return "\n".join(lines) + f"\n\nThe rule chose {chose}. `{got['command']}`\n"


def quantile_verdicts(rows: list[dict], who: str, stats_named) -> list[str]:
    """The horizon issue's targets for ``who`` on bench/real.py's rows (each series at its
    auto horizon): its MASE and WQL (means over the folds) averaged over the series at or
    below the best single statistical forecaster's of ``stats_named`` (the one with the
    lowest such mean), its 80 % and 95 % coverage within 4 points averaged over the series
    and within 10 points on every one."""
    have = [r for r in rows if r.get(f"{who}_quantiles")]
    if not have:
        return []
    stats = [f for f in stats_named if all(r.get(f"{f}_quantiles") for r in have)]
    lines = ["- horizons: " + ", ".join(f"{r['series']} {r['horizon']}" for r in have)]
    for metric in ("mase", "wql"):
        mean = {f: fmean(r[f"{f}_quantiles"][metric] for r in have) for f in (who, *stats)}
        best = min(stats, key=lambda f: mean[f])
        lines.append(f"- {who}'s {metric.upper()} averaged over the {len(have)} series "
                     f"{mean[who]:.4f}, the best statistical forecaster's ({best}) "
                     f"{mean[best]:.4f} (target: at or below: "
                     f"{'met' if mean[who] <= mean[best] else 'missed'})")
    for pct in (80, 95):
        cov = [r[f"{who}_quantiles"][f"coverage_{pct}"] for r in have]
        far = [r["series"] for r, c in zip(have, cov) if abs(c - pct / 100) > 0.10]
        lines.append(f"- {who}'s {pct} % coverage averaged over the series "
                     f"{100 * fmean(cov):.1f} (target: within 4 points: "
                     f"{'met' if abs(fmean(cov) - pct / 100) <= 0.04 else 'missed'}); "
                     f"{len(have) - len(far)} of {len(have)} series within 10 points"
                     + (f" (not: {', '.join(far)})" if far else ""))
    lines.append("- per series, coverage 80 / 95: " + ", ".join(
        f"{r['series']} {100 * r[f'{who}_quantiles']['coverage_80']:.0f} / "
        f"{100 * r[f'{who}_quantiles']['coverage_95']:.0f}" for r in have))
    return lines


def real_quantiles(root: Path) -> str:
    """bench/real.py's committed rows (bench/results/real.json): each series at its auto
    horizon, the blend's and each statistical forecaster's MASE, WQL and 80 % / 95 %
    coverage (means over the backtest's folds), then the issue's verdicts."""
    got = _read(root, "bench/results/real.json")
    rows, stats = got["rows"], got["stats"]
    shown = ["blend"] + [f for f in stats if any(r.get(f"{f}_quantiles") for r in rows)]
    lines = ["| series | h | " + " | ".join(shown) + " |", "|---|---:|" + "---:|" * len(shown)]
    for r in rows:
        cells = []
        for f in shown:
            q = r.get(f"{f}_quantiles")
            cells.append("n/a" if not q else
                         f"{q['mase']:.3f} / {q['wql']:.4f} / {100 * q['coverage_80']:.0f} / "
                         f"{100 * q['coverage_95']:.0f}")
        lines.append(f"| {r['series']} | {r.get('horizon', '-')} | " + " | ".join(cells) + " |")
    return ("Each cell: MASE / WQL / 80 % coverage / 95 % coverage, means over the folds.\n\n"
            + "\n".join(lines) + "\n\n" + "\n".join(quantile_verdicts(rows, "blend", stats))
            + f"\n\n`{got['command']}` ({got['date']}, {got['commit']})\n")


def _bold(n: str) -> str:
    return f"**{n}**" if n in BOLD else n


# each block is named for the function that makes it, its underscores as hyphens
BLOCKS: dict[str, Callable[[Path], str]] = {
    f.__name__.replace("_", "-"): f
    for f in (m3_points, m3_intervals, m3_targets, m3_sign, ensembles, global_m3, seed_spread,
              field_scale, field_scale_targets, engines_agree, m3_quantiles, real_quantiles,
              long_lag, architectures_m3, m3_peers, serve_load, real_edges, dvc_cost)}


def refreshed(text: str, root: Path) -> str:
    """``text`` with every generated block made anew from the committed files under
    ``root``; an unknown block name is an error (a typo would leave a block stale)."""
    def fill(m: re.Match) -> str:
        name = m.group(2)
        if name not in BLOCKS:
            raise KeyError(f"no generated block named {name!r}; known: {', '.join(BLOCKS)}")
        return m.group(1) + BLOCKS[name](root) + m.group(4)
    return BLOCK.sub(fill, text)


PAGES = ("README.md", "docs/many-series.md", "docs/evaluation.md", "bench/README.md",
         "docs/why-attention.md", "docs/serve.md")
