"""Stage leaderboard's step (the competition pipeline's): every subset's committed forecasts
(the model, the field, the zero-shot prior, the peers) checked against the subset's windows,
scored with their combinations across stages (evaluation/subset.py: each stage's intervals as
it calibrated them on the subset's calibration cut, a combination's calibrated there from its
members' forecasts of the cut), then pooled the field's way (evaluation/leaderboard.py: each
subset's column, "all" over every forecast beside the mean over series, the fev aggregate,
the sign test against Theta); the published figures beside (competitions/published/), never
mixed in. Its rows: the model's, then every forecaster of the registry (forecasters/names.py)
scored."""
from __future__ import annotations

import sys
from pathlib import Path

from ..config.load import read_yaml
from ..evaluation.leaderboard import horizons_of, leaderboard
from ..evaluation.scoring import Evaluation
from ..evaluation.subset import check_coverage, check_medians, combinations, evaluated
from ..forecasters import saved
from ..forecasters.names import PEERS, ROWS, raw_row
from ..io import rounded, write_json, write_text
from ..report.leaderboard import markdown, test_runs
from ..report.leaderboard import published as published_of
from .competition import SUBSETS, field_store, subset_params
from ..setup.forecasting import check_data


def rows(evaluations: dict[str, Evaluation], combinations) -> list[str]:
    """The leaderboard's rows: the model, its ``combinations`` across stages, then every
    forecaster of the registry (forecasters/names.py: ROWS, NAMES in its order with each peer's
    raw row after it) scored anywhere."""
    scored = {n for ev in evaluations.values() for n, m in ev.metrics.items()
              if isinstance(m, dict) and m}
    return [n for n in ("model", *combinations, *ROWS) if n in scored]


def peers_of(params: str | Path) -> list[str]:
    """The NeuralForecast peers the competition file's ``peers`` section names (its
    ``input_size`` is no peer), each a stage's forecasts the leaderboard scores, but those it
    marks ``unfit``."""
    peers = read_yaml(params).get("peers") or {}
    return [n for n in peers if n in PEERS and n not in (peers.get("unfit") or {})]


def step(params: str, forecasts: str, metrics: str, table: str, published: str,
         test_runs_file: str) -> dict:
    """leaderboard: each subset's ``forecasts`` (<subset>/model.npz, field.npz, zeroshot.npz,
    and <peer>.npz for each NeuralForecast peer the params file's ``peers`` names) scored ->
    ``metrics`` (json), ``table`` (Markdown, with the ``published`` figures and the runs that
    scored the test parts beside) and <subset>/combinations.npz."""
    folder = Path(forecasts)
    subsets = [s for s in SUBSETS["m3"] if (folder / s / "model.npz").is_file()]
    peers = peers_of(params)      # the NeuralForecast peers' stages
    evaluations, holdout, combos_named, measured = {}, "test", (), {}
    for s in subsets:
        p, prof = subset_params(params, s)
        holdout, combos_named = p.data.holdout, tuple(p.evaluate.combinations)
        cp, cprof = subset_params(params, s, holdout="calibration")
        sets = {k: saved.load(folder / s / f"{k}.npz")
                for k in ("model", "field", "zeroshot", *peers)}
        store = field_store(p, prof)
        for k, fs in sets.items():     # every input the subset's windows, before scoring
            saved.check_against(fs, store.ends("test"), store.horizon, str(folder / s / k)
                                + ".npz")
            check_medians(fs, str(folder / s / k) + ".npz")
        measured.update({m: sets[n].record["peer"]["library"] for n in peers
                         for m in (n, raw_row(n))})
        cut_store = field_store(cp, cprof)
        season = check_data(p, store)
        combos = combinations(combos_named, store, sets, cut_store, season)
        check_medians(combos, f"{s}'s combinations across stages")
        ev = evaluated(store, sets, cut_store, season, combos=combos)
        for line in ev.warnings:
            print(f"{s}: {line}", file=sys.stderr)
        check_coverage(ev, f"{s} ({folder / s})")
        evaluations[s] = ev
        # every scored forecast is committed: the combinations across stages, scored as stored
        saved.save(folder / s / "combinations.npz", combos, compact=True)
    names = rows(evaluations, combos_named)
    board = leaderboard(evaluations, horizons_of(evaluations), names)
    if measured:    # whose run each peer's row is: the library and version that trained it
        board["measured_with"] = measured
    unfit = (read_yaml(params).get("peers") or {}).get("unfit") or {}
    if unfit:       # a peer with no row says why
        board["unfit"] = {n: " ".join(str(why).split()) for n, why in unfit.items()}
    write_json(metrics, rounded(board))
    command = "cd competitions && dvc repro" + (
        " (with params.yaml holdout: validation)" if holdout != "test" else "")
    write_text(table, markdown(rounded(board), subsets, names, command, holdout,
                               published_of(published), test_runs(test_runs_file)))
    a = board.get("all", {})
    print("leaderboard: " + ", ".join(f"{n} {a[n]['smape']:.2f} / {a[n].get('wql') or 0:.3f}"
                                      for n in ("model", "model+comb", "theta", "comb")
                                      if n in a)
          + f" (sMAPE / WQL, over all forecasts) -> {metrics}")
    return board
