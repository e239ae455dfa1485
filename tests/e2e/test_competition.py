"""End-to-end: the M3 competition through the real `dvc exp run`: one global model over a
subset's series, each forecast over its whole horizon from the end of its train part, scored
with sMAPE, MASE and OWA beside the statistical field, the model averaged with Comb; every
forecaster's intervals calibrated on the calibration cut as the competition pipeline's stages
and leaderboard calibrate them (one path, the same margins)."""
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
    _intervals_are_the_competition_pipelines(proj, detail)


def _intervals_are_the_competition_pipelines(proj, detail):
    """No series on the fallback, and each forecaster's calibrated margins those the
    competition pipeline's steps give the same forecasts: each stage's set calibrated on its
    own forecasts of the cut (calibrated_set), model+comb across stages as the leaderboard
    makes it (evaluation/subset.py)."""
    import numpy as np
    from attn_forecast.config.load import load_params
    from attn_forecast.data.store_io import load, profile
    from attn_forecast.evaluation.calibration import calibrated_set
    from attn_forecast.evaluation.subset import combinations
    from attn_forecast.forecasters import saved
    from attn_forecast.pipeline.prepare import cut_of
    from attn_forecast.setup.forecasting import check_data
    for name in ("model", "model+comb", "theta", "comb"):
        assert detail[name]["n_interval_fallback"] == 0, (name, detail[name])
        assert detail[name]["intervals"] == "calibrated", (name, detail[name])
    prepared = proj.path / "data/prepared"
    p = load_params(proj.path / "params.yaml", profile(prepared))
    store = load(prepared)
    season = check_data(p, store)
    cut_store = cut_of(p, store)
    (model, model_cut), (field, field_cut) = (
        saved.split_part(saved.load(proj.path / f), saved.CUT)
        for f in ("data/forecasts.npz", "data/baselines.npz"))
    sets = {"model": calibrated_set(store, model, cut_store, model_cut, season, ["model"],
                                    {"model"}),
            "field": calibrated_set(store, field, cut_store, field_cut, season,
                                    ["naive", "naive2", "theta", "comb"], {"comb"})}
    combos = combinations(["model+comb"], store, sets, cut_store, season)
    want = {n: r for x in (*sets.values(), combos)
            for n, r in x.record["intervals"]["forecasters"].items()}
    ours = proj.read_json("models/intervals.json")
    assert ours["calibrated_on"].startswith("the calibration cut of 174 series"), ours
    got = ours["forecasters"]
    for name in ("model", "naive2", "theta", "comb", "model+comb"):
        assert got[name]["how"] == want[name]["how"], name
        np.testing.assert_allclose(got[name]["margins"], want[name]["margins"], atol=1e-7,
                                   err_msg=name)
