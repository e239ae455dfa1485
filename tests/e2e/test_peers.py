"""End-to-end: NeuralForecast's networks as baselines of a run, through the real `dvc exp run`
(the peers extra, which CI installs): trained for a few optimizer steps on M3's other subset,
scored on the same series and windows as every other forecaster, with intervals."""
from __future__ import annotations

import pandas as pd
import pytest

from conftest import exp_sets

pytest.importorskip("neuralforecast")

RUN = {"data.kind": "competition", "data.subset": "other", "prepare.horizon": 8,
       "prepare.window": 16, "prepare.min_context": 2, "prepare.scaler": "none",
       "model.instance_norm": "mean", "model.lookbacks": [16, 8], "train.epochs": 1,
       "evaluate.season": "auto",
       "evaluate.baselines": ["naive", "naive2", "nf_nhits", "nf_lstm"],
       "evaluate.combinations": [], "peers.nf_nhits.max_steps": 3,
       "peers.nf_lstm.max_steps": 3}


def test_a_peer_is_a_baseline_scored_on_the_same_targets(project_factory):
    proj = project_factory("peers", {"train.epochs": 1})
    res = proj.run(["dvc", "exp", "run", *exp_sets(RUN)], timeout=600)
    out = res.stdout + res.stderr
    assert res.returncode == 0, out
    assert "nf_nhits" in out and "Seed set to" not in out, out   # its own line only
    headline = proj.read_json("reports/metrics.json")
    for name in ("nf_nhits", "nf_lstm"):
        assert set(headline[name]) == set(headline["naive2"]), name
        assert headline[name]["wql"] > 0
    by = pd.read_csv(proj.path / "reports/metrics_by_series.csv", dtype={"id": str})
    assert len(by) == 174
    assert by["nf_nhits_smape"].notna().all() and by["naive2_smape"].notna().all()
