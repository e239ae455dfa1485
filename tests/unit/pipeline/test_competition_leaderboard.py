"""The competition's leaderboard: each subset's column, "all" as the mean over all forecasts
(the published figures' rule) beside the mean over series, the sign test against Theta, and
its Markdown; and one subset's params as the competition pipeline resolves them."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from attn_forecast.evaluation.scoring import Evaluation
from attn_forecast.pipeline.competition import field_store, model_store, subset_params
from attn_forecast.setup.forecasting import check_data
from attn_forecast.evaluation.leaderboard import leaderboard
from attn_forecast.pipeline.competition_leaderboard import rows
from attn_forecast.report.leaderboard import published
from attn_forecast.report.leaderboard import markdown
from conftest import ROOT

PUBLISHED = published(ROOT / "competitions" / "published")


def _evaluation(n: int, h: int, model: float, theta: float, seed: int) -> Evaluation:
    rs = np.random.default_rng(seed)
    m = model + rs.normal(0, 1, n)
    t = theta + rs.normal(0, 1, n)
    table = pd.DataFrame({"id": [f"s{i}" for i in range(n)], "n_test": 1,
                          "model_smape": m, "theta_smape": t, "naive2_smape": t + 3,
                          "model_mase": m / 10, "theta_mase": t / 10,
                          "naive2_mase": (t + 3) / 10})
    metrics = {name: {"smape_mean": float(table[f"{name}_smape"].mean()),
                      "mase_mean": float(table[f"{name}_mase"].mean()), "n_failed": 0}
               for name in ("model", "theta", "naive2")}
    metrics["n_series"] = n
    return Evaluation(metrics, table, np.arange(n), np.zeros((n, h)), {})


def test_all_is_the_mean_over_every_forecast_beside_the_mean_over_series():
    evs = {"yearly": _evaluation(60, 6, 16.0, 17.0, 0),
           "monthly": _evaluation(140, 18, 14.0, 13.5, 1)}
    board = leaderboard(evs, {"yearly": 6, "monthly": 18}, ["model", "theta", "naive2"])
    y, m = (evs[s].by_series["model_smape"] for s in ("yearly", "monthly"))
    want = (y.sum() * 6 + m.sum() * 18) / (60 * 6 + 140 * 18)
    assert board["all"]["model"]["smape"] == pytest.approx(want, rel=1e-12)
    assert board["all"]["model"]["smape_series"] == pytest.approx(
        np.r_[y, m].mean(), rel=1e-12)
    assert board["all"]["model"]["n_forecasts"] == 60 * 6 + 140 * 18
    assert board["yearly"]["model"]["smape"] == pytest.approx(y.mean())
    st = board["sign_test_vs_theta"]["monthly"]["model"]
    assert st["n"] == 140 and st["wins"] == int((m.to_numpy() <
                                                evs["monthly"].by_series["theta_smape"]
                                                .to_numpy()).sum())
    text = markdown(board, ["yearly", "monthly"], ["model", "theta", "naive2"], "dvc repro x",
                    "test", PUBLISHED)
    assert "| all (mean over all forecasts) | all (mean over series) |" in text
    assert f"| **model** (this project) | {y.mean():.2f} | {m.mean():.2f} | {want:.2f} |" in text
    assert "Reproduce: `dvc repro x`" in text


def test_a_subsets_params_are_the_competition_profiles():
    p, prof = subset_params(ROOT / "competitions" / "params.yaml", "quarterly")
    assert (p.data.kind, p.data.subset, prof["profile"]) == ("competition", "quarterly",
                                                             "competition")
    assert (p.model.instance_norm, p.model.pooling, p.prepare.window) == ("seasonal",
                                                                          "flatten", 56)
    assert p.prepare.horizon == "auto" and "comb" in p.evaluate.baselines


@pytest.mark.parametrize("subset", ["yearly", "quarterly", "monthly", "other"])
def test_every_subsets_field_and_model_data_prepare(subset):
    """The field's store (window 1: whole histories) is not refused for the model's seasonal
    norm (quarterly, monthly), and the model's store holds every series."""
    p, prof = subset_params(ROOT / "competitions" / "params.yaml", subset)
    field, model = field_store(p, prof), model_store(p, prof)
    assert field.window == 1 and field.n_series == model.n_series > 0
    assert check_data(p, field) == check_data(p, model)


def test_the_targets_say_met_only_where_every_figure_is_below():
    from attn_forecast.report.leaderboard import targets
    subsets = ["yearly", "quarterly", "monthly", "other"]

    def board(model, theta, mc):
        out = {s: {"model": {"smape": model[i]}, "theta": {"smape": theta[i]}}
               for i, s in enumerate(subsets + ["all"])}
        out["all"]["model+comb"] = {"smape": mc}
        return out
    ahead = targets(board([15.0, 8.0, 13.0, 4.0, 12.3], [16.0, 9.0, 14.0, 5.0, 13.0], 12.2),
                    subsets, PUBLISHED)
    assert all("**met**" in line for line in ahead), ahead
    # one subset behind Theta (published 8.96 for quarterly) is enough to miss
    behind = targets(board([15.0, 9.0, 13.0, 4.0, 12.3], [16.0, 9.5, 14.0, 5.0, 13.0], 12.3),
                     subsets, PUBLISHED)
    assert "missed" in behind[0] and "quarterly 9.00 vs 8.96" in behind[0]
    assert "**met**" in behind[1]                     # below this project's Theta everywhere
    assert "N-BEATS (12.37) over all (sMAPE): **met** (12.30)" in behind[2]
    assert "deep ensemble (12.27) over all (sMAPE): missed (12.30)" in behind[3]


def test_the_rows_are_the_model_then_every_scored_forecaster_of_the_registry(monkeypatch):
    """The leaderboard's rows come from the registry: the model and its combinations across
    stages first, then each scored forecaster in forecasters/names.py's order, a peer's raw row
    after it (a forecaster added there gets its row with no edit of the leaderboard)."""
    from attn_forecast.pipeline import competition_leaderboard
    ev = _evaluation(6, 3, 10.0, 11.0, seed=1)
    ev.metrics["model+comb"] = ev.metrics["zeroshot"] = {"smape_mean": 1.0}
    ev.metrics["comb"] = {}                                # not scored: no row
    assert rows({"yearly": ev}, ["model+comb"]) == ["model", "model+comb", "naive2", "theta",
                                                    "zeroshot"]
    ev.metrics["nf_nhits"] = ev.metrics["nf_nhits_raw"] = {"smape_mean": 3.0}
    assert rows({"yearly": ev}, ["model+comb"])[-2:] == ["nf_nhits", "nf_nhits_raw"]
    monkeypatch.setattr(competition_leaderboard, "ROWS",
                        (*competition_leaderboard.ROWS, "holt"))
    ev.metrics["holt"] = {"smape_mean": 2.0}
    assert rows({"yearly": ev}, ["model+comb"])[-1] == "holt"
