"""End-to-end: the rolling-origin backtest, statistical baselines, significance and seed
ensembles through the real ``dvc``, in one tiny project; the tests build on each other in file
order: a backtest run -> what it wrote -> an evaluate-only change retrains no fold -> more
folds of a fixed size train only the new ones -> an ensemble reports its seeds' spread."""
from __future__ import annotations

import json
from types import SimpleNamespace

import pandas as pd
import pytest

CONFIG = {"data.n_points": 120, "prepare.window": 20, "train.epochs": 3,
          "backtest.folds": 0}


@pytest.fixture(scope="module")
def bt(project_factory):
    proj = project_factory("backtest", overrides=CONFIG)
    res = proj.run(["dvc", "repro"], timeout=300)
    assert res.returncode == 0, res.stdout + res.stderr
    proj.git_commit("single split only")
    run = proj.run(["dvc", "exp", "run", "-S", "backtest.folds=3"], timeout=300)
    return SimpleNamespace(proj=proj, run=run)


def _out(res) -> str:
    return res.stdout + res.stderr


def test_folds_run_as_an_experiment(bt):
    assert bt.run.returncode == 0, _out(bt.run)
    out = _out(bt.run)
    assert "Running stage 'backtest_train'" in out and "3 folds, 3 trained" in out
    assert "Running stage 'train'" not in out  # the single split's model is unchanged


def test_backtest_metrics_figure_and_significance(bt):
    p = bt.proj.path
    m = json.loads((p / "reports/backtest.json").read_text())
    assert m["n_folds"] == 3
    assert m["seasonal_naive"] is None  # no season: n/a
    for name in ("model", "naive", "mean", "ridge", "ets", "theta"):
        row = m[name]
        assert {"rmse_mean", "rmse_std", "mae_mean", "mase_mean"} <= set(row), name
        assert len(row["rmse"]) == 3 and row["rmse_mean"] == pytest.approx(
            sum(row["rmse"]) / 3, rel=1e-3)
    assert set(m["significance"]) == {"naive", "mean", "ridge", "ets", "theta"}
    assert 0 <= m["significance"]["naive"]["p_value"] <= 1
    folds = pd.read_csv(p / "reports/backtest_folds.csv")
    assert folds["fold"].tolist() == [1, 2, 3] and {"model", "ridge"} <= set(folds.columns)
    assert (p / "reports/figures/backtest.png").is_file()
    summary = (p / "reports/summary.md").read_text()
    assert "Rolling-origin backtest (3 folds)" in summary
    assert summary.count(" naive, p = ") == 2  # single split and pooled over the folds
    single = json.loads((p / "reports/metrics_detail.json").read_text())
    assert {"ets", "theta"} <= set(single) and "ridge" in single["significance"]


def test_exp_show_lists_the_backtest_means(bt):
    rows = json.loads(bt.proj.run(["dvc", "exp", "show", "--json"], check=True).stdout)
    found = [rev["data"]["metrics"]["reports/backtest.json"]["data"]
             for base in rows for group in base.get("experiments") or []
             for rev in group["revs"]]
    assert any(d.get("n_folds") == 3 and "rmse_mean" in d["model"] for d in found), found


def test_an_evaluate_change_retrains_no_fold(bt):
    res = bt.proj.run(["dvc", "exp", "run", "-S", "backtest.folds=3",
                       "-S", "evaluate.ridge_alpha=2.0"], timeout=300)
    out = _out(res)
    assert res.returncode == 0, out
    assert "Running stage 'backtest_evaluate'" in out
    assert "Running stage 'backtest_train'" not in out


def test_more_folds_of_a_fixed_size_train_only_the_new_ones(bt):
    proj = bt.proj
    proj.update_params({"backtest.folds": 2, "backtest.fold_size": 4})
    first = proj.run(["dvc", "repro"], timeout=300)
    assert first.returncode == 0 and "2 folds, 2 trained" in _out(first), _out(first)
    proj.update_params({"backtest.folds": 3})
    more = proj.run(["dvc", "repro"], timeout=300)
    assert more.returncode == 0, _out(more)
    assert "3 folds, 1 trained (2 unchanged)" in _out(more)


def test_an_edit_of_the_code_the_folds_train_with_retrains_every_fold(bt):
    """DVC reruns the stage for an edit of the code it depends on; the folds' keys see it too
    (else the folder would keep the models of the code before). The edit: the fold's training
    step (pipeline/backtest_train.py), which no other stage depends on."""
    proj = bt.proj
    loop = proj.path / "src/attn_forecast/pipeline/backtest_train.py"
    text = loop.read_text()
    loop.write_text(text + "# an edit\n")
    try:
        res = proj.run(["dvc", "repro"], timeout=300)
        assert res.returncode == 0, _out(res)
        assert "3 folds, 3 trained (0 unchanged)" in _out(res), _out(res)
    finally:
        loop.write_text(text)


def test_folds_off_leaves_only_the_index_whatever_the_folder_held(bt):
    # the folder is a persistent output that DVC hashes whole: a checkpoint left from an
    # earlier run (or an older file name) would make dvc.lock differ from a fresh clone's
    proj = bt.proj
    folder = proj.path / "models/backtest"
    assert len(list(folder.glob("origin_*.pt"))) == 3
    (folder / "fold_1.pt").write_bytes(b"an older run's checkpoint")
    proj.update_params({"backtest.folds": 0})
    res = proj.run(["dvc", "repro"], timeout=300)
    assert res.returncode == 0, _out(res)
    assert sorted(f.name for f in folder.iterdir()) == ["folds.json"]
    assert json.loads((folder / "folds.json").read_text()) == {"folds": []}


def test_seed_ensemble_reports_the_spread(bt):
    proj = bt.proj
    proj.update_params({"train.ensemble": 3})
    res = proj.run(["dvc", "repro", "evaluate"], timeout=300)
    assert res.returncode == 0, _out(res)
    seeds = json.loads((proj.path / "reports/metrics_detail.json").read_text())["model_seeds"]
    assert seeds["score"] == "rmse" and len(seeds["values"]) == 3 and seeds["std"] >= 0
    assert min(seeds["values"]) <= seeds["mean"] <= max(seeds["values"])
