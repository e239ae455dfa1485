"""End-to-end: the M3 competition through the real `dvc exp run`: one global model over a
subset's series, each forecast over its whole horizon from the end of its train part, scored
with sMAPE, MASE and OWA beside the statistical field, the model averaged with Comb."""
from __future__ import annotations

import pandas as pd

from conftest import exp_sets

RUN = {"data.kind": "competition", "data.subset": "other", "prepare.horizon": 8,
       "prepare.window": 16, "prepare.min_context": 2, "prepare.scaler": "none",
       "model.instance_norm": "mean", "model.lookbacks": [16, 8], "train.loss": "smape",
       "train.epochs": 2, "evaluate.season": "auto",
       "evaluate.baselines": ["naive", "naive2", "theta", "comb"],
       "evaluate.combinations": ["model+comb"]}


def test_an_m3_subset_runs_as_an_experiment(project_factory):
    proj = project_factory("m3", {"train.epochs": 2})
    res = proj.run(["dvc", "exp", "run", *exp_sets(RUN)], timeout=600)
    out = res.stdout + res.stderr
    assert res.returncode == 0, out
    assert "prepare: 174 series" in out, out
    headline = proj.read_json("reports/metrics.json")
    for name in ("model", "naive2", "theta", "comb", "model+comb", "arima", "ets"):
        assert set(headline[name]) == {"mase_mean", "smape_mean", "owa", "wql"}, \
            name
    assert headline["naive2"]["owa"] == 1.0
    detail = proj.read_json("reports/metrics_detail.json")
    assert detail["n_series"] == 174 and detail["n_test"] == 174   # one window a series
    wins = detail["sign_test"]["theta"]
    assert wins["n"] > 100 and 0 <= wins["p_value"] <= 1
    by = pd.read_csv(proj.path / "reports/metrics_by_series.csv", dtype={"id": str})
    assert len(by) == 174 and by["id"].str.match(r"N\d{4}").all()
    show = proj.run(["dvc", "exp", "show", "--no-pager", "--md"], timeout=120).stdout
    assert "model.smape_mean" in show and "theta.owa" in show, show
