"""Blocks of the docs made from the committed record of a benchmark that chose a default (the
criteria written before its runs) or measured a goal (tools/docs.py)."""
from __future__ import annotations

import json
from pathlib import Path


def real_edges(root: Path) -> str:
    """The few-windows rule and the blend's shrinkage (issue 58): the candidates on
    bench/real.py's validation parts, then the chosen against the rule before on its test
    folds (bench/results/real_edges.json)."""
    r = json.loads((root / "bench/results/real_edges.json").read_text())
    lines = ["Chosen on the validation parts (the first 80 % of each series), by the criteria "
             "written before the runs:", "", "```", r["criteria"].strip(), "```", "",
             "| validation run | blend (shrink 10) | shrink 0 | shrink 5 | shrink 20 | "
             "blend 80 / 95 % coverage | coverage deviation | model MASE |",
             "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for name, v in r["validation"].items():
        b = v["blends"]
        lines.append(f"| {name} | " + " | ".join(
            f"{b[k]['mean_mase']:.4f}" for k in ("blend", "blend_shrink0", "blend_shrink5",
                                                 "blend_shrink20"))
            + f" | {v['blend_coverage_mean'][0]:.1f} / {v['blend_coverage_mean'][1]:.1f} | "
            f"{v['blend_coverage_deviation']:.2f} | {v['model_mean_mase']:.4f} |")
    lines += ["", "Chosen: " + ", ".join(f"{k} {v}" for k, v in r["chosen"].items()) + ".", "",
              "On the test folds, one run each (the same forecasts; the blend's weights "
              "before shrinkage are `blend_shrink0`):", "",
              "| test run | blend MASE | worst / best member | shrink 0 MASE | worst / best "
              "member | 80 / 95 % coverage | deviation | WQL |",
              "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for name, t in r["test"].items():
        b, b0 = t["blends"]["blend"], t["blends"]["blend_shrink0"]
        lines.append(f"| {name} | {b['mean_mase']:.4f} | {b['worst_ratio_to_best_member']:.3f} "
                     f"| {b0['mean_mase']:.4f} | {b0['worst_ratio_to_best_member']:.3f} | "
                     f"{t['blend_coverage_mean'][0]:.1f} / {t['blend_coverage_mean'][1]:.1f} "
                     f"| {t['blend_coverage_deviation']:.2f} | {t['blend_mean_wql']:.4f} |")
    # the rule before on the same run (its blend shrunk as now: the shrinkage's own before is
    # the shrink 0 column)
    after = r["test"]["after: gaussian, shrink 5"]
    before = r["test"]["before: evaluate.few_windows largest"]
    lines += ["", "Per series, the blend's 80 / 95 % coverage, before -> after: " + ", ".join(
        f"{s} {before['blend_coverage'][s][0]:g} / {before['blend_coverage'][s][1]:g} -> "
        f"{a[0]:g} / {a[1]:g}" for s, a in after["blend_coverage"].items()) + ".",
        "", f"`{after['command']}` at {after['commit']} ({after['date']}), and the same with "
        "`-S evaluate.few_windows=largest`."]
    if "toward" in r:
        lines += ["", *toward_lines(r["toward"])]
    return "\n".join(lines) + "\n"


def toward_lines(t: dict) -> list[str]:
    """The blend's shrinkage target, a later choice of the same kind: its criteria, the
    candidates on the validation parts and the chosen against the one before on the test
    folds, each from one run's forecasts."""
    lines = ["What the weights shrink toward, chosen the same way:", "", "```",
             t["criteria"].strip(), "```", "",
             "| run | toward equal over every member (before): mean MASE | worst / best member "
             "| toward equal over the kept members (after): mean MASE | worst / best member |",
             "|---|---:|---:|---:|---:|"]
    for name in ("validation", "test"):
        v = t[name]["blends"]
        e, k = v["blend_equal5"], v["blend_kept5"]
        lines.append(f"| {name} | {e['mean_mase']:.4f} | {e['worst_ratio_to_best_member']:.3f} "
                     f"({e['worst_series']}) | {k['mean_mase']:.4f} | "
                     f"{k['worst_ratio_to_best_member']:.3f} ({k['worst_series']}) |")
    test = t["test"]
    lines += ["", f"Chosen: {t['chosen']}. On the test folds, the blend's MASE over its series' "
              "best member, per series: " + ", ".join(
                  f"{s} {a:.2f} (before {b:.2f})" for s, (b, a) in test["ratios"].items())
              + ".", "", "`" + "`, `".join(t[n]["command"] for n in ("validation", "test"))
              + f"` at {test['commit']} ({test['date']})."]
    return lines


def dvc_cost(root: Path) -> str:
    """What an experiment costs beyond its work, before and after (bench/dvc_cost.py;
    bench/results/dvc_cost.json): each figure, its ratio to its floor and the goal."""
    r = json.loads((root / "bench/results/dvc_cost.json").read_text())
    f, g = r["floors"], r["goals"]
    rows = [("a no-op `dvc exp run`", "noop_exp_s", "noop_exp_over_floor",
             f"the one-stage project's {f['noop_exp_s']:.2f} s"),
            ("a no-op `dvc repro`", "noop_repro_s", "noop_repro_s", "1.0 s"),
            ("the worked example's experiment", "worked_s", "worked_over_script",
             f"the plain script's {f['script_s']:.2f} s"),
            ("the first run, 8,000 daily points", "first_8000_s", "first_8000_over_script",
             "the plain script"),
            ("the first run, 150 monthly points", "first_150_s", "first_150_over_script",
             "the plain script")]
    lines = [f"`{r['command']}` at {r['commit']} ({r['date']}, {r['machine']}; medians of 3, "
             "the first runs once):", "",
             f"| figure | before ({r['revs']['before']['rev']}) | after | against | "
             "goal | met |", "|---|---:|---:|---|---:|---|"]
    for what, secs, ratio, against in rows:
        b, a = r["ratios"]["before"][ratio], r["ratios"]["after"][ratio]
        unit = "" if ratio == secs else "x"
        lines.append(f"| {what} | {r['revs']['before'][secs]:.2f} s ({b:.2f}{unit}) | "
                     f"{r['revs']['after'][secs]:.2f} s ({a:.2f}{unit}) | {against} | "
                     f"{g[ratio]:g}{unit} | {'yes' if a <= g[ratio] else 'no'} |")
    return "\n".join(lines) + "\n"
