"""Unit tests for the competition leaderboard's Markdown (attn_forecast.report.leaderboard)
and its fev aggregate (attn_forecast.evaluation.leaderboard.fev_aggregate), on a small
board built by hand: the published fev figures (competitions/published/fev_m3.csv, read here
with pandas) are shown labelled "(published, fev)" with their own numbers, never mixed into this
project's rows; the targets say met or missed; the fev aggregate is the geometric mean of the
ratios to seasonal naive (naive on yearly) computed here."""
from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest

from attn_forecast.evaluation.leaderboard import fev_aggregate
from attn_forecast.report.leaderboard import published
from attn_forecast.report.leaderboard import markdown, targets

ROOT = Path(__file__).resolve().parents[3]
FOLDER = ROOT / "competitions" / "published"
SUBSETS = ["yearly", "monthly"]
NAMES = ["model", "model+comb", "naive", "seasonal_naive"]


def _row(smape, mase, wql, msis, c80, c95) -> dict:
    return {"smape": smape, "mase": mase, "wql": wql, "msis": msis, "coverage_80": c80,
            "coverage_95": c95, "n_failed": 0}


def _board(cov: dict | None = None) -> dict:
    """Yearly has no seasonal naive (no season); monthly has every forecaster. ``cov``:
    (subset, name) -> (coverage_80, coverage_95) overrides."""
    board = {"yearly": {"model": _row(15.11, 2.801, 0.131, 25.5, 0.79, 0.94),
                        "model+comb": _row(14.92, 2.702, 0.124, 24.1, 0.81, 0.955),
                        "naive": _row(17.5, 3.172, 0.160, 40.2, 0.70, 0.88)},
             "monthly": {"model": _row(13.6, 0.901, 0.095, 8.1, 0.78, 0.93),
                         "model+comb": _row(13.2, 0.851, 0.088, 7.5, 0.805, 0.948),
                         "naive": _row(16.9, 1.2, 0.13, 12.0, 0.6, 0.85),
                         "seasonal_naive": _row(15.0, 1.146, 0.120, 10.5, 0.72, 0.9)}}
    for (s, n), (c80, c95) in (cov or {}).items():
        board[s][n].update(coverage_80=c80, coverage_95=c95)
    board["all"] = {"model": {**_row(14.2, 1.61, 0.104, 13.3, 0.785, 0.935),
                              "smape_series": 14.4, "mase_series": 1.75, "msis_series": 13.9},
                    "model+comb": {**_row(13.9, 1.57, 0.097, 12.6, 0.807, 0.95),
                                   "smape_series": 14.1, "mase_series": 1.69,
                                   "msis_series": 13.1}}
    board["sign_test_vs_theta"] = {s: {} for s in SUBSETS}
    board["fev_aggregate"] = fev_aggregate(board, SUBSETS, NAMES)
    return board


def _fev() -> pd.DataFrame:
    f = pd.read_csv(FOLDER / "fev_m3.csv", comment="#")
    f["task"] = f["task"].str.removeprefix("m3_")
    return f


def _section(text: str, title: str) -> list[str]:
    """The table lines following the line that starts with ``title``."""
    lines = text.splitlines()
    i = next(k for k, ln in enumerate(lines) if ln.startswith(title))
    out = []
    for ln in lines[i + 1:]:
        if ln.startswith("|"):
            out.append(ln)
        elif out:
            break
    return out


@pytest.fixture(scope="module")
def text() -> str:
    return markdown(_board(), SUBSETS, NAMES, "dvc repro competitions", "test",
                    published(FOLDER))


# ---------------------------------------------------------------- published beside, not mixed
def test_published_fev_rows_show_the_csvs_numbers_labelled(text):
    fev = _fev()
    mase = _section(text, "MASE:")
    wql = _section(text, "WQL (")
    models = list(dict.fromkeys(fev["model"]))
    assert len(models) == 8 and "TiRex" in models and "SeasonalNaive" in models
    for m in models:
        by = fev[fev["model"] == m].set_index("task")
        # MASE: the subsets' columns, the two "all" columns left empty
        want = (f"| {m} (published, fev) | {by.loc['yearly', 'mase']:.3f} | "
                f"{by.loc['monthly', 'mase']:.3f} | | |")
        assert want in mase, want
        if by["wql"].notna().all():
            want = (f"| {m} (published, fev) | {by.loc['yearly', 'wql']:.3f} | "
                    f"{by.loc['monthly', 'wql']:.3f} | |")
            assert want in wql, want
        else:       # fev publishes no seasonal naive WQL: no row
            assert not any(ln.startswith(f"| {m} ") for ln in wql)
    # written out: TiRex's published figures
    assert "| TiRex (published, fev) | 2.710 | 0.831 | | |" in mase
    assert "| TiRex (published, fev) | 0.126 | 0.090 | |" in wql
    assert "| AutoETS (published, fev) | 0.129 | 0.093 | |" in wql
    # no published row in the tables fev publishes nothing for
    for title in ("MSIS (", "Coverage of", "OWA:"):
        rows = _section(text, title)
        assert rows and not any("published" in ln for ln in rows), title


def test_this_projects_rows_hold_only_its_own_numbers(text):
    fev = _fev()
    mase = _section(text, "MASE:")
    assert "| **model** (this project) | 2.801 | 0.901 | 1.610 | 1.750 |" in mase
    assert "| **model+comb** (this project) | 2.702 | 0.851 | 1.570 | 1.690 |" in mase
    assert "| naive (this project) | 3.172 | 1.200 |  |  |" in mase
    assert "| seasonal_naive (this project) |  | 1.146 |  |  |" in mase
    wql = _section(text, "WQL (")
    assert "| **model** (this project) | 0.131 | 0.095 | 0.104 |" in wql
    assert "| naive (this project) | 0.160 | 0.130 |  |" in wql
    msis = _section(text, "MSIS (")
    assert "| **model** (this project) | 25.50 | 8.10 | 13.30 | 13.90 |" in msis
    cov = _section(text, "Coverage of")
    assert "| **model+comb** (this project) | 81.0 | 95.5 | 80.5 | 94.8 | 80.7 | 95.0 |" in cov
    smape = _section(text, "sMAPE:")
    assert "| **model** (this project) | 15.11 | 13.60 | 14.20 | 14.40 |" in smape
    assert "| Theta (published) | 16.90 | 13.85 | 13.01 | 12.73 |" in smape
    # never mixed: no line both published and this project's; no published model's name
    # on a row of this project's
    published_models = set(fev["model"])
    for ln in text.splitlines():
        if "(this project)" in ln:
            assert "published" not in ln, ln
            label = ln.split("|")[1]
            assert not any(m in label for m in published_models), ln
        if "(published" in ln and ln.startswith("|"):
            assert "this project" not in ln, ln


def test_the_published_aggregate_is_from_the_published_figures_alone(text):
    """TiRex's published MASE relative: the geometric mean of 2.710 / 3.172 (yearly) and
    0.831 / 1.146 (monthly), the published seasonal naive's; this project's rows beside."""
    agg = _section(text, "The fev aggregate")
    tirex = math.sqrt((2.710 / 3.172) * (0.831 / 1.146))
    assert f"| TiRex (published, fev) | {tirex:.3f} | |" in agg
    fev = _fev().set_index(["model", "task"])["mase"]
    for m in ("AutoETS", "AutoTheta", "Chronos-Bolt-Base"):
        r = math.sqrt(fev[(m, "yearly")] / fev[("SeasonalNaive", "yearly")]
                      * fev[(m, "monthly")] / fev[("SeasonalNaive", "monthly")])
        assert f"| {m} (published, fev) | {r:.3f} | |" in agg
    assert not any(ln.startswith("| SeasonalNaive ") for ln in agg)
    model = _board()["fev_aggregate"]["model"]
    assert f"| **model** (this project) | {model['mase_relative']:.3f} | " \
           f"{model['wql_relative']:.3f} |" in agg


def test_no_published_figures_on_the_validation_cuts():
    text = markdown(_board(), SUBSETS, NAMES, "x", "val", published(FOLDER))
    assert "published" not in text.replace("fev publishes no", "")
    assert "Targets:" not in text


def test_published_reads_the_csv_as_numbers():
    got = published(FOLDER)["fev_m3"]
    fev = _fev()
    assert len(got) == len(fev)
    for r, (_, w) in zip(got, fev.iterrows()):
        assert r["model"] == w["model"] and r["task"] == "m3_" + w["task"]
        assert r["mase"] == pytest.approx(w["mase"])
        assert (r["wql"] is None) == pd.isna(w["wql"])
        if r["wql"] is not None:
            assert r["wql"] == pytest.approx(w["wql"])


# ---------------------------------------------------------------- the fev aggregate
def test_fev_aggregate_is_the_geometric_mean_of_ratios_to_seasonal_naive_by_hand():
    """Yearly has no seasonal naive: naive's score is the reference there (fev's seasonal
    naive of period 1); monthly's is seasonal naive's (1.146, not naive's 1.2)."""
    agg = _board()["fev_aggregate"]
    m = agg["model"]
    assert m["tasks"] == ["yearly", "monthly"]
    assert m["mase_relative"] == pytest.approx(
        math.exp((math.log(2.801 / 3.172) + math.log(0.901 / 1.146)) / 2), rel=1e-12)
    assert m["wql_relative"] == pytest.approx(
        math.exp((math.log(0.131 / 0.160) + math.log(0.095 / 0.120)) / 2), rel=1e-12)
    # the same numbers written out: sqrt(0.88304 x 0.78621) = 0.83322
    assert m["mase_relative"] == pytest.approx(0.833221, abs=1e-6)
    mc = agg["model+comb"]
    assert mc["mase_relative"] == pytest.approx(math.sqrt(2.702 / 3.172 * 0.851 / 1.146),
                                                rel=1e-12)
    assert mc["wql_relative"] == pytest.approx(math.sqrt(0.124 / 0.160 * 0.088 / 0.120),
                                               rel=1e-12)
    # naive: 1 on yearly (its own reference), 1.2 / 1.146 on monthly
    assert agg["naive"]["mase_relative"] == pytest.approx(math.sqrt(1.2 / 1.146), rel=1e-12)
    # seasonal naive has no yearly score: no aggregate rather than a mean over fewer tasks
    assert "seasonal_naive" not in agg


def test_fev_aggregate_leaves_out_a_subset_that_is_not_an_fev_task():
    board = _board()
    board["other"] = {"model": _row(5.0, 100.0, 9.0, 1.0, 0.8, 0.95),
                      "naive": _row(6.0, 1.0, 1.0, 1.0, 0.8, 0.95)}
    agg = fev_aggregate(board, SUBSETS + ["other"], NAMES)
    assert agg["model"]["tasks"] == ["yearly", "monthly"]
    assert agg["model"]["mase_relative"] == pytest.approx(
        math.sqrt(2.801 / 3.172 * 0.901 / 1.146), rel=1e-12)


# ---------------------------------------------------------------- targets
def _coverage_line(lines: list[str], name: str) -> str:
    hits = [ln for ln in lines if ln.startswith(f"- {name}'s 80 % and 95 % intervals")]
    assert len(hits) == 1, lines
    return hits[0]


def test_targets_say_met_when_every_coverage_is_within_3_points():
    lines = targets(_board(), SUBSETS, published(FOLDER))
    # model: 79, 94, 78, 93 (1 to 2 points off); model+comb: 81, 95.5, 80.5, 94.8
    for name in ("model", "model+comb"):
        assert ": **met** (" in _coverage_line(lines, name)
    assert "yearly 80 79.0, yearly 95 94.0, monthly 80 78.0, monthly 95 93.0" in \
        _coverage_line(lines, "model")


@pytest.mark.parametrize("c80, c95", [(0.765, 0.95), (0.80, 0.915), (0.835, 0.95),
                                      (0.80, 0.99)])
def test_targets_say_missed_when_one_coverage_is_more_than_3_points_off(c80, c95):
    """One of four cells 3.5 or 4 points from nominal (below or above): missed; the other
    forecaster, all within, still met."""
    lines = targets(_board({("monthly", "model"): (c80, c95)}), SUBSETS, published(FOLDER))
    line = _coverage_line(lines, "model")
    assert ": missed (" in line and "**met**" not in line
    assert ": **met** (" in _coverage_line(lines, "model+comb")


def test_targets_compare_wql_and_mase_with_the_published_fev_figures():
    lines = targets(_board(), SUBSETS, published(FOLDER))
    # model+comb's WQL 0.124, 0.088 below TiRex's 0.126, 0.090: met
    wql_mc = [ln for ln in lines if ln.startswith("- model+comb's WQL below TiRex's")]
    assert len(wql_mc) == 1 and "**met**" in wql_mc[0]
    assert "yearly 0.124 vs 0.126, monthly 0.088 vs 0.090" in wql_mc[0]
    # the model's WQL 0.131 above AutoETS's 0.129 on yearly: missed
    wql_m = [ln for ln in lines if ln.startswith("- model's WQL below AutoETS's")]
    assert len(wql_m) == 1 and ": missed (" in wql_m[0]
    assert "yearly 0.131 vs 0.129, monthly 0.095 vs 0.093" in wql_m[0]
    # model+comb's MASE 0.851 above TiRex's 0.831 on monthly: missed
    mase = [ln for ln in lines if ln.startswith("- model+comb's MASE below TiRex's")]
    assert len(mase) == 1 and ": missed (" in mase[0]


# ---------------------------------------------------------------- WQL and coverage over "all"
def test_pooled_intervals_pool_wql_and_coverage_over_every_forecast():
    """Two subsets on very different scales: "all"'s WQL is each level's pinball loss summed
    over both over both's summed |y| (one task), not the mean of the two subsets' WQLs;
    coverage the share of all targets inside."""
    import numpy as np
    from scipy.stats import norm

    from attn_forecast.evaluation.scoring import Evaluation
    from attn_forecast.evaluation.leaderboard import pooled_intervals
    levels = (0.025, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.975)
    rng = np.random.default_rng(9)
    evs, ys, qs = {}, [], []
    for s, (n, h, level, sd) in {"yearly": (30, 6, 1000.0, 300.0),
                                 "monthly": (50, 18, 10.0, 1.0)}.items():
        y = level + sd * rng.normal(size=(n, h))
        q = level + 0.8 * sd * norm.ppf(levels) + np.zeros((n, h, 1))   # a bit too narrow
        evs[s] = Evaluation({}, pd.DataFrame(), np.arange(n), y, {}, {"m": q}, levels)
        ys.append(y.ravel())
        qs.append(q.reshape(-1, len(levels)))
    y, q = np.concatenate(ys), np.concatenate(qs)
    per_level = []
    for k, tau in enumerate(levels):
        if tau in (0.025, 0.975):
            continue
        d = y - q[:, k]
        per_level.append(2 * np.maximum(tau * d, (tau - 1) * d).sum() / np.abs(y).sum())
    got = pooled_intervals(evs, ["m", "absent"])
    assert set(got) == {"m"}
    assert got["m"]["wql"] == pytest.approx(np.mean(per_level), rel=1e-12)
    assert got["m"]["coverage_80"] == pytest.approx(np.mean((y >= q[:, 1]) & (y <= q[:, 9])))
    assert got["m"]["coverage_95"] == pytest.approx(np.mean((y >= q[:, 0]) & (y <= q[:, 10])))
    # pooling matters here: the mean of the two subsets' own WQLs is far from it
    from attn_forecast.evaluation.intervals import wql
    each = np.mean([wql(e.actual, e.quantiles["m"], levels) for e in evs.values()])
    assert abs(each - got["m"]["wql"]) > 0.1 * got["m"]["wql"]


def test_wql_over_all_is_headed_a_pooled_ratio_and_the_means_keep_theirs(text):
    """WQL's "all" is each level's summed pinball loss over the summed |y| of every forecast
    (the test above): a ratio of sums, headed so; sMAPE's and MASE's are means."""
    assert _section(text, "WQL (")[0] == \
        "| | yearly | monthly | all (pooled ratio over all forecasts) |"
    for title in ("sMAPE:", "MASE:"):
        assert _section(text, title)[0] == ("| | yearly | monthly | all (mean over all "
                                            "forecasts) | all (mean over series) |"), title
    assert "mean over all forecasts" not in "\n".join(_section(text, "WQL ("))


def test_the_leaderboard_says_how_often_the_test_parts_were_scored(tmp_path):
    from attn_forecast.report.leaderboard import test_runs
    from conftest import ROOT
    record = ROOT / "competitions" / "test_runs.csv"
    n = test_runs(record)
    rows = [ln for ln in record.read_text().splitlines() if ln and not ln.startswith("#")]
    assert n == len(rows) - 1 >= 1                      # the header is not a run
    text = markdown(_board(), SUBSETS, NAMES, "x", "test", published(FOLDER), test_runs=n)
    assert f"The test parts were scored {n} times while the settings were developed" in text
    # on the validation cuts (holdout validation) no test part was scored: no such line
    assert "test parts were scored" not in markdown(_board(), SUBSETS, NAMES, "x", "val",
                                                    published(FOLDER), test_runs=n)


def test_a_peer_librarys_rows_name_the_library_and_say_which_quantiles_are_its_own():
    board = _board()
    for s in SUBSETS:
        board[s]["nf_nhits"] = _row(16.0, 1.0, 0.11, 9.0, 0.8, 0.95)
        board[s]["nf_nhits_raw"] = _row(16.0, 1.0, 0.12, 9.5, 0.7, 0.9)
    board["measured_with"] = {n: "NeuralForecast 3.0.0" for n in ("nf_nhits", "nf_nhits_raw")}
    text = markdown(board, SUBSETS, NAMES + ["nf_nhits", "nf_nhits_raw"], "x", "test",
                    published(FOLDER))
    for name in ("nf_nhits", "nf_nhits_raw"):
        rows = [line for line in text.splitlines() if line.startswith(f"| {name} ")]
        assert rows and all(r.startswith(f"| {name} (measured here with NeuralForecast 3.0.0) |")
                            for r in rows), rows
    assert "nf_nhits (this project)" not in text
    assert "nf_nhits: trained twice" in text
    assert "nf_nhits_raw: the same networks' own quantiles" in text
    assert "covers 65-95 % of the targets" in text
