"""The M3 search's figures: the study's trials as a table, then chosen settings rerun on other
seeds, on the validation cuts (where they are chosen) and, asked for explicitly, on the test
parts (where they are reported).

    python bench/m3_search.py                               # the study's every trial
    python bench/m3_search.py --seeds 43,44 --trials 3,7    # trials 3 and 7 (and the
                                                            # competition's own settings) on
                                                            # seeds 43 and 44, validation cut
    python bench/m3_search.py --test --seeds 43,44          # the competition pipeline's
                                                            # model@monthly as committed, on
                                                            # test, one experiment per seed
    python bench/m3_search.py --test --member --seeds 43,44 # its ensemble's members alone

Every run is a DVC experiment (`dvc exp run --temp`), named after what it is (``seeds-t3-s43``,
``test-s43``), so `dvc exp show` lists it beside the study's. Prints the command, each run's
sMAPE, and per setting the mean and range over seeds (seed 42 from the study where it ran
there). Nothing here chooses: the choice, and why, is in bench/README.md#the-m3-search.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import numpy as np

ROOT = Path.cwd()                      # the project whose study and experiments these are
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
from attn_forecast.search.experiments import experiment_metric, head, overrides  # noqa: E402
from attn_forecast.search.study import make_study  # noqa: E402
from attn_forecast.search.space import read_space  # noqa: E402


def exp_run(root: Path, name: str, target: str, sets: list[str]) -> None:
    """One experiment: only the stages whose inputs the settings change run (never -f: on
    the competition pipeline that would refit the whole field); an earlier one of the same
    name is replaced."""
    subprocess.run([sys.executable, "-m", "dvc", "exp", "remove", name], cwd=root,
                   capture_output=True)
    cmd = [sys.executable, "-m", "dvc", "exp", "run", "--temp", "-n", name, target]
    cmd += [a for kv in sets for a in ("-S", kv)]
    res = subprocess.run(cmd, cwd=root, capture_output=True, text=True)
    if res.returncode:
        raise SystemExit(f"{name}: dvc exp run exited {res.returncode}\n{res.stdout[-2000:]}"
                         f"\n{res.stderr[-2000:]}")


def spread(values: list[float]) -> str:
    v = np.asarray(values, float)
    return f"mean {v.mean():.3f}, range {v.min():.3f}-{v.max():.3f} (n {len(v)})"


def trial_table(study) -> None:
    print("\n| trial | state | sMAPE (validation) | seconds | settings |\n|---|---|---|---|---|")
    for t in study.trials:
        secs = (t.datetime_complete - t.datetime_start).total_seconds() \
            if t.datetime_complete and t.datetime_start else None
        value = f"{t.value:.3f}" if t.value is not None else \
            (f"{list(t.intermediate_values.values())[-1]:.3f} (last epoch)"
             if t.intermediate_values else "")
        settings = ", ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}"
                             for k, v in t.params.items())
        took = f"{secs:.0f}" if secs is not None else ""
        print(f"| {t.number} | {t.state.name.lower()} | {value} | {took} | {settings} |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--space", default="competitions/tune/space.yaml")
    ap.add_argument("--seeds", default="", help="seeds to rerun on (comma-separated)")
    ap.add_argument("--trials", default="", help="the study's trials to rerun (numbers)")
    ap.add_argument("--test", action="store_true", help="the competition pipeline as "
                    "committed, on its test parts, one experiment per seed")
    ap.add_argument("--subset", default="monthly", help="the subset whose seed --test sets")
    ap.add_argument("--member", action="store_true", help="with --test: one model "
                    "(train.ensemble 1), an ensemble's member scored alone")
    args = ap.parse_args()
    print("command: python bench/m3_search.py " + " ".join(sys.argv[1:]), flush=True)
    seeds = [int(s) for s in args.seeds.split(",") if s]
    if args.test:
        rows, base = {}, head(ROOT)          # this commit's experiments, not older ones
        for seed in seeds:
            name = f"test-{args.subset}-{'member-' if args.member else ''}s{seed}"
            exp_run(ROOT / "competitions", name, "dvc.yaml",     # its own DVC project
                    [f"params.yaml:++{args.subset}.train.seed={seed}"]
                    + ([f"params.yaml:++{args.subset}.train.ensemble=1"]
                       if args.member else []))
            ref = f"refs/exps/{base[:2]}/{base[2:]}/{name}"
            board = json.loads(subprocess.run(
                ["git", "show", f"{ref}:competitions/m3/leaderboard.json"], cwd=ROOT,
                capture_output=True, text=True, check=True).stdout)
            rows[seed] = board
            print(f"{name}: {args.subset} model {board[args.subset]['model']['smape']:.3f}, "
                  f"all model {board['all']['model']['smape']:.3f}, model+comb "
                  f"{board['all']['model+comb']['smape']:.3f}", flush=True)
        for key in ("model", "model+comb"):
            print(f"test, {args.subset} {key}: "
                  + spread([b[args.subset][key]["smape"] for b in rows.values()])
                  + f"; all {key}: " + spread([b["all"][key]["smape"] for b in rows.values()]))
        return
    space = read_space(ROOT / args.space)
    study = make_study(space, space.storage_url(ROOT))
    trial_table(study)
    if not seeds:
        return
    picked = {"own": {}} | {f"t{n}": study.trials[int(n)].params
                            for n in args.trials.split(",") if n}
    for label, params in picked.items():
        values = []
        if label != "own":
            values.append(study.trials[int(label[1:])].value)   # seed 42: the study's run
        else:                                                   # seed 42: the committed run
            values.append(json.loads((ROOT / space.metric_file).read_text())[space.metric])
        for seed in seeds:
            name = f"seeds-{label}-s{seed}"
            exp_run(ROOT, name, space.pipeline,
                    overrides(space, {**params, "train.seed": seed}))
            v = experiment_metric(ROOT, name, space, head(ROOT))[space.metric]
            values.append(v)
            print(f"{name}: {v:.3f}", flush=True)
        print(f"{label} ({'the competition settings' if label == 'own' else params}): "
              f"validation {spread(values)}", flush=True)


if __name__ == "__main__":
    main()
