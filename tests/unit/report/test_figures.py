"""Unit tests for attn_forecast.report.figures: which figures a run draws, and with what."""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from attn_forecast.data import splits
from attn_forecast.report import figures, plots
from attn_forecast.report.figures import Inputs, as_time, bands, model_bands, spans
from unit.training.helpers import _store

PNG_SIG = b"\x89PNG\r\n\x1a\n"
LEVELS = (2.5, 10, 90, 97.5)   # the predictions' quantile columns: 95 % and 80 % intervals
T = 6                          # attention tokens
SHOWN = {"best": "s0", "median": "s1", "worst": "s2"}


def _panel(n_series: int = 3):
    rs = np.random.default_rng(0)
    return _store([np.sin(np.arange(n) / 3.0) + k + rs.normal(0, 0.1, n)
                   for n, k in ((40, 0), (50, 5), (60, 10))[:n_series]], test=0.25)


def _inputs(store, *, attention: bool = True, blend: bool = False, naive: bool = True,
            steps: int = 1, folds: pd.DataFrame | None = None) -> Inputs:
    """What render reads, made up for ``store``: each test target's forecasts (the model off
    by a little, with intervals; naive; a blend), one row per series, the attention."""
    rs = np.random.default_rng(1)
    preds, rows = [], []
    for i, sid in enumerate(store.ids):
        a, ts, te = int(store.offsets[i]), int(store.cuts.test_start[i]), \
            int(store.cuts.test_end[i])
        actual = store.y[a + ts:a + te]
        d = {"id": sid, "t": store.t[a + ts:a + te], "actual": actual,
             "predicted": actual + rs.normal(0.1, 0.05, len(actual))}
        if naive:
            d["naive"] = store.y[a + ts - 1:a + te - 1]
        if blend:
            d["blend"] = actual + 0.01
        for q in LEVELS:
            d[f"predicted_q{q:g}"] = d["predicted"] + (q - 50) / 100
            if blend:
                d[f"blend_q{q:g}"] = d["blend"] + (q - 50) / 200
        preds.append(pd.DataFrame(d))
        rows.append({"id": sid, "model_mase": 0.5 + i, "model_rmse": 0.1 * (i + 1),
                     "naive_rmse": 0.3 + i})
    w = np.random.default_rng(2).random((2, 3, T, T))
    metrics = {"model": {"rmse": 0.1}, "naive": {"rmse": 0.3}, "ridge": None,
               "n_series": store.n_series, **({"blend": {"rmse": 0.05}} if blend else {})}
    return Inputs(
        store=store, history=pd.DataFrame({"epoch": [1, 2, 3], "train_loss": [1.0, 0.5, 0.3],
                                           "val_loss": [np.nan] * 3}),
        predictions=pd.concat(preds, ignore_index=True), by_series=pd.DataFrame(rows),
        metrics=metrics,
        attention={"mean": w, "example": w[::-1]} if attention else
        {"mean": np.zeros(0), "example": np.zeros(0)},
        lags=pd.DataFrame({"lag": np.arange(T)[::-1], "lag_oldest": np.arange(T)[::-1],
                           "weight": np.full(T, 1 / T)}),
        horizon=pd.DataFrame({"step": np.arange(1, steps + 1),
                              "model": np.linspace(0.1, 0.2, steps)}),
        calibration=pd.DataFrame({"nominal": [0.95, 0.8], "model": [0.9, 0.75],
                                  "naive": [np.nan, np.nan]}),
        fan=pd.DataFrame({"forecaster": [], "origin": [], "step": [], "t": [], "actual": [],
                          "forecast": []}),
        folds=folds, kind="attention", dpi=50)


def _jobs(d: Inputs, shown=SHOWN, fig_dir: Path = Path("figures")) -> dict:
    """The jobs by file name: (plots function, keywords)."""
    return {path.name: (name, kw) for name, path, kw in figures._jobs(fig_dir, d, shown)}


# ------------------------------------------------------------------ pure helpers
def test_as_time_keeps_numbers_and_dates_and_parses_iso_text():
    steps = np.array([3, 4, 5])
    assert as_time(steps).dtype == steps.dtype
    np.testing.assert_array_equal(as_time(steps), steps)
    stamps = np.array(["2024-01-01", "2024-02-01"], dtype="datetime64[s]")
    np.testing.assert_array_equal(as_time(stamps), stamps)
    got = as_time(np.array(["2024-01-01", "2024-01-02T03:00:00"], dtype=object))
    assert got.dtype.kind == "M"
    np.testing.assert_array_equal(got, np.array(["2024-01-01T00:00", "2024-01-02T03:00"],
                                                dtype="datetime64[m]"))
    with pytest.raises(ValueError):
        as_time(np.array(["01/02/2024"]))


def test_bands_pair_symmetric_levels_into_the_drawn_intervals_widest_first():
    pred = pd.DataFrame({"predicted": [1.0], **{f"predicted_q{q}": [float(i)] for i, q in
                                                enumerate(("2.5", "10", "25", "50", "75",
                                                           "90", "97.5"))},
                         "ets_q10": [7.0], "ets_q90": [8.0], "predicted_q5": [9.0]})
    got = [(lo.tolist(), hi.tolist(), pct) for lo, hi, pct in bands(pred)]
    assert got == [([0.0], [6.0], 95), ([1.0], [5.0], 80)]   # 50 % and q5 alone: not drawn
    assert [b[2] for b in bands(pred, pcts=(50,))] == [50]
    assert [(lo.tolist(), hi.tolist(), pct) for lo, hi, pct in bands(pred, "ets")] == \
        [([7.0], [8.0], 80)]
    assert bands(pred, "theta") == []
    assert [b[2] for b in model_bands(pred)] == [95, 80]


def test_spans_shade_each_non_empty_part_from_the_step_before_it():
    store = _panel(1)
    t = np.arange(40) * 10.0
    cuts = splits.Cuts(*(np.array([v]) for v in (0, 20, 26, 30, 40)),
                       blend_start=np.array([23]))
    got = spans(replace(store, cuts=cuts), 0, t)
    assert got == {"train": (0.0, 190.0), "val": (190.0, 220.0), "blend": (220.0, 250.0),
                   "cal": (250.0, 290.0), "test": (290.0, 390.0)}
    plain = spans(store, 0, t)             # no validation, blend nor calibration part
    assert plain == {"train": (0.0, 290.0), "test": (290.0, 390.0)}


# ------------------------------------------------------------------ which figures
def test_many_series_draw_the_median_best_and_worst_and_every_extra(tmp_path):
    folds = pd.DataFrame({"fold": [1, 2], "origin": [30, 35], "model": [0.1, 0.2],
                          "naive": [0.3, 0.3], "ridge": [np.nan, np.nan]})
    d = _inputs(_panel(), steps=3, folds=folds)
    jobs = figures._jobs(tmp_path, d, SHOWN)
    assert [(name, path.name) for name, path, _ in jobs] == [
        ("forecast", "forecast_best.png"), ("forecast", "forecast.png"), ("fan", "fan.png"),
        ("overview", "overview.png"), ("forecast", "forecast_worst.png"),
        ("attention_maps", "attention.png"), ("attention_by_lag", "attention_by_lag.png"),
        ("horizon_errors", "horizon.png"), ("calibration", "calibration.png"),
        ("backtest_errors", "backtest.png")]
    assert all(path.parent == tmp_path for _, path, _ in jobs)
    kw = {path.name: kw for _, path, kw in jobs}
    # the worst series whole, its test forecasts and naive's, titled with its MASE
    worst, one = kw["forecast_worst.png"], d.predictions[d.predictions["id"] == "s2"]
    np.testing.assert_array_equal(worst["values"], d.store.y[d.store.rows(2)])
    np.testing.assert_array_equal(worst["model"], one["predicted"])
    np.testing.assert_array_equal(worst["naive"], one["naive"])
    assert worst["title"] == "The worst series by the model's MASE: s2 (MASE 2.5)"
    assert worst["spans"] == spans(d.store, 2, d.store.t[d.store.rows(2)])
    assert [b[2] for b in worst["bands"]] == [95, 80]
    # the overview of the median series: its baselines' RMSE, the last layer's mean map
    ov = kw["overview.png"]
    assert ov["baselines"] == {"naive": 1.3} and ov["model_rmse"] == pytest.approx(0.2)
    np.testing.assert_allclose(ov["weights"], d.attention["example"][-1].mean(axis=0))
    assert ov["test_title"] == "Test set: actual vs predicted (median series s1)"
    assert ov["labels"] == plots.token_labels(d.lags["lag"].to_numpy(),
                                              d.lags["lag_oldest"].to_numpy())
    # the extras: all-NaN columns and the fold's origin left out
    assert list(kw["horizon.png"]["errors"]) == ["model"]
    assert list(kw["calibration.png"]["coverage"]) == ["model"]
    assert list(kw["backtest.png"]["errors"]) == ["model", "naive"]
    np.testing.assert_array_equal(kw["backtest.png"]["folds"], [1, 2])


def test_a_best_or_worst_series_that_is_the_median_is_drawn_once():
    d = _inputs(_panel(2))
    got = _jobs(d, {"best": "s1", "median": "s1", "worst": "s0"})
    assert "forecast_best.png" not in got and "forecast_worst.png" in got
    assert got["forecast.png"][1]["title"].startswith("The median series by the model's MASE: s1")


def test_one_series_is_titled_as_the_series_and_its_fan_shows_three_test_spans_back():
    d = _inputs(_panel(1))
    got = _jobs(d, {"best": "s0", "median": "s0", "worst": "s0"})
    assert sorted(got) == ["attention.png", "attention_by_lag.png", "calibration.png",
                           "fan.png", "forecast.png", "overview.png"]
    assert got["forecast.png"][1]["title"] == "Series and one-step-ahead test forecasts"
    assert got["overview.png"][1]["test_title"] == "Test set: actual vs predicted"
    fan = got["fan.png"][1]
    assert fan["name"] == "model"
    assert fan["title"] == "The model's forecasts of the test part, with its intervals"
    [(_, forecast, _)] = fan["paths"]
    np.testing.assert_array_equal(forecast, d.predictions["predicted"])
    # 10 test targets: the 30 values before the test part (0 .. 29 of 40)
    np.testing.assert_array_equal(fan["history"], d.store.y[0:30])
    np.testing.assert_array_equal(fan["t_hist"], d.store.t[0:30])


def test_the_fan_shows_the_blend_where_there_is_one():
    d = _inputs(_panel(), blend=True)
    fan = _jobs(d)["fan.png"][1]
    one = d.predictions[d.predictions["id"] == "s1"]
    assert fan["name"] == "blend" and fan["title"].endswith("(median series s1)")
    [(_, forecast, drawn)] = fan["paths"]
    np.testing.assert_array_equal(forecast, one["blend"])
    np.testing.assert_array_equal(drawn[0][0], one["blend_q2.5"])
    # the blend's history window is capped at the series' start: 13 targets x 3 > 37
    assert len(fan["history"]) == int(d.store.cuts.test_start[1])
    # a blend with no forecasts in the metrics (not fitted) is not the one to use
    d.metrics["blend"] = None
    assert _jobs(d)["fan.png"][1]["name"] == "model"


def test_several_steps_fan_the_whole_horizon_from_the_last_origins_beside_the_truth():
    """A horizon of 3: the fan draws each of the evaluate stage's paths (the forecast to use
    from the last origins, a horizon apart) in its intervals, the history before the first."""
    store = _store([np.sin(np.arange(60) / 3.0) + 5], test=0.25, horizon=3)
    d = _inputs(store, steps=3)
    t = store.t[51:60]
    rows = []
    for k in range(3):
        for j in range(3):
            r = 51 + 3 * k + j
            rows.append({"forecaster": "blend", "origin": k + 1, "step": j + 1, "t": t[3 * k + j],
                         "actual": store.y[r], "forecast": store.y[r] + 0.1,
                         "q2.5": store.y[r] - 1, "q10": store.y[r] - 0.5,
                         "q90": store.y[r] + 0.5, "q97.5": store.y[r] + 1})
    d = replace(d, fan=pd.DataFrame(rows))
    fan = _jobs(d, {"best": "s0", "median": "s0", "worst": "s0"})["fan.png"][1]
    assert fan["name"] == "blend" and "3 steps from the test part's last origins" in \
        fan["title"]
    assert len(fan["paths"]) == 3
    for k, (tk, forecast, drawn) in enumerate(fan["paths"]):
        np.testing.assert_array_equal(tk, t[3 * k:3 * k + 3])
        np.testing.assert_allclose(forecast, store.y[51 + 3 * k:54 + 3 * k] + 0.1)
        assert [b[2] for b in drawn] == [95, 80]
    np.testing.assert_array_equal(fan["actual"], store.y[51:60])
    np.testing.assert_array_equal(fan["history"], store.y[24:51])   # 3 x 9 values back


def test_without_naive_forecasts_the_forecast_figure_draws_nan():
    d = _inputs(_panel(1), naive=False)
    naive = _jobs(d, {"best": "s0", "median": "s0", "worst": "s0"})["forecast.png"][1]["naive"]
    assert len(naive) == 10 and np.isnan(naive).all()


def test_a_model_without_attention_gets_figures_that_say_why():
    d = replace(_inputs(_panel(1), attention=False), kind="lstm")
    got = _jobs(d, {"best": "s0", "median": "s0", "worst": "s0"})
    for name, title in (("attention.png", "Attention weights"),
                        ("attention_by_lag.png", "Attention weight by lag")):
        assert got[name] == ("no_attention", {
            "title": title, "reason": "model.kind is lstm: it has no attention weights to show",
            "dpi": 50})
    assert got["overview.png"][1]["weights"] is None and got["overview.png"][1]["labels"] is None


@pytest.mark.parametrize("folds", [None, pd.DataFrame({"fold": [], "origin": [],
                                                       "model": []})])
def test_no_folds_no_one_step_and_no_coverage_leave_the_extras_out(folds):
    d = _inputs(_panel(1), folds=folds)
    d.calibration = d.calibration[["nominal", "naive"]]     # naive's coverage all NaN
    got = _jobs(d, {"best": "s0", "median": "s0", "worst": "s0"})
    assert not {"horizon.png", "calibration.png", "backtest.png"} & set(got)


# ------------------------------------------------------------------ drawing
def test_draw_all_writes_every_figure_of_its_jobs(tmp_path):
    d = replace(_inputs(_panel(1), attention=False), kind="lstm")
    d.calibration = d.calibration[["nominal"]]
    shown = {"best": "s0", "median": "s0", "worst": "s0"}
    figures.draw_all(tmp_path, d, shown)
    want = sorted(path.name for _, path, _ in figures._jobs(tmp_path, d, shown))
    assert want == ["attention.png", "attention_by_lag.png", "fan.png", "forecast.png",
                    "overview.png"]
    assert sorted(p.name for p in tmp_path.iterdir()) == want   # no temporary files left
    for name in want:
        data = (tmp_path / name).read_bytes()
        assert data[:8] == PNG_SIG and len(data) > 1000, name


def test_the_backtest_figure_of_many_series_names_the_score_it_shows(tmp_path, monkeypatch):
    folds = pd.DataFrame({"fold": [1, 2], "origin": [30, 35], "model": [0.8, 0.9],
                          "naive": [1.0, 1.1]})
    name, kw = _jobs(_inputs(_panel(), folds=folds), SHOWN, tmp_path)["backtest.png"]
    labels = []
    real_save = plots._save

    def keep(fig, path, dpi):
        labels.append(fig.axes[0].get_ylabel())
        real_save(fig, path, dpi)
    monkeypatch.setattr(plots, "_save", keep)
    getattr(plots, name)(tmp_path / "backtest.png", **kw)
    assert "MASE" in labels[0]
