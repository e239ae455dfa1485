"""Unit tests for attn_forecast.plots (PNG files) and attn_forecast.report (Markdown)."""
from __future__ import annotations

import struct

import numpy as np
import pytest

from attn_forecast.report import plots
from attn_forecast.config.load import parse_params
from attn_forecast.config.schema import Params
from attn_forecast.pipeline.render import settings_rows
from attn_forecast.report.summary import summary_markdown

PNG_SIG = b"\x89PNG\r\n\x1a\n"


def _png(path, min_bytes=5000):
    data = path.read_bytes()
    assert data[:8] == PNG_SIG
    assert len(data) > min_bytes
    # IHDR: width and height of the image
    assert data[12:16] == b"IHDR"
    w, h = struct.unpack(">II", data[16:24])
    assert w > 100 and h > 100
    return data, (w, h)


@pytest.fixture
def drawn(monkeypatch):
    """What each figure shows, read off the figure before it is saved: per axes its title,
    labels, legend entries, lines' (label, x, y) and bars' heights, and its texts."""
    seen = []
    real_save = plots._save

    def keep(fig, path, dpi):
        axes = []
        for ax in fig.axes:
            legend = ax.get_legend()
            axes.append({
                "title": ax.get_title(), "xlabel": ax.get_xlabel(), "ylabel": ax.get_ylabel(),
                "legend": [t.get_text() for t in legend.get_texts()] if legend else [],
                "lines": {ln.get_label(): (np.asarray(ln.get_xdata(), dtype=float),
                                           np.asarray(ln.get_ydata(), dtype=float))
                          for ln in ax.get_lines()},
                "bars": [r.get_height() for r in ax.patches if hasattr(r, "get_height")],
                "texts": [t.get_text() for t in ax.texts]})
        seen.append(axes)
        real_save(fig, path, dpi)
    monkeypatch.setattr(plots, "_save", keep)
    return seen


@pytest.fixture
def arrays():
    rng = np.random.default_rng(0)
    t = np.arange(40)
    actual = np.sin(t / 4)
    pred = actual + rng.normal(0, 0.1, 40)
    w = rng.random((6, 6))
    w /= w.sum(-1, keepdims=True)
    return t, actual, pred, w


def test_overview(tmp_path, arrays):
    t, actual, pred, w = arrays
    ep = np.arange(1, 21)
    f = tmp_path / "fig" / "overview.png"
    plots.overview(f, epochs=ep, train_loss=1 / ep, val_loss=1.5 / ep, t=t, actual=actual,
                   predicted=pred, weights=w, baselines={"naive": 0.2, "ridge": None},
                   model_rmse=0.1, dpi=60)
    _, (width, height) = _png(f)
    assert (width, height) == (11 * 60, 8 * 60)
    # a model without attention and without validation
    g = tmp_path / "overview_lstm.png"
    plots.overview(g, epochs=ep, train_loss=1 / ep, val_loss=None, t=t, actual=actual,
                   predicted=pred, weights=None, baselines={}, model_rmse=0.1, dpi=60)
    _png(g)
    # no temporary files left behind
    assert sorted(p.name for p in tmp_path.rglob("*") if p.is_file()) == [
        "overview.png", "overview_lstm.png"]


def test_attention_maps(tmp_path, monkeypatch):
    """Layers in rows, heads in columns: the mean block, then the example's, each panel the
    weights of its own layer and head, one colour scale per block."""
    rng = np.random.default_rng(1)
    mean_w = rng.random((3, 2, 5, 5))
    ex_w = 2 * rng.random((3, 2, 5, 5))
    shown = []
    real_save = plots._save

    def keep(fig, path, dpi):
        for ax in fig.axes:
            for im in ax.get_images():
                shown.append((ax.get_title(), ax.get_ylabel(), np.asarray(im.get_array()),
                              im.norm.vmax))
        real_save(fig, path, dpi)
    monkeypatch.setattr(plots, "_save", keep)
    f = tmp_path / "maps.png"
    plots.attention_maps(f, mean_weights=mean_w, example_weights=ex_w, dpi=50)
    _, (width, height) = _png(f)
    assert width > height                      # 3 layers by 2 heads, twice: a wide grid
    assert len(shown) == 2 * 3 * 2
    for k, (title, ylabel, array, vmax) in enumerate(shown):
        block, layer, head = divmod(k, 6)[0], divmod(k, 6)[1] // 2, k % 2
        want = (mean_w, ex_w)[block][layer, head]
        np.testing.assert_array_equal(array, want)
        assert vmax == pytest.approx((mean_w, ex_w)[block].max())
        assert title == (f"head {head + 1}" if layer == 0 else "")
        assert ylabel.startswith(f"layer {layer + 1}") if head == 0 else ylabel == ""


def test_attention_by_lag(tmp_path, drawn):
    f = tmp_path / "lag.png"
    weight = np.linspace(0.2, 0.0, 10)
    plots.attention_by_lag(f, lags=np.arange(10), weight=weight, dpi=60)
    _png(f)
    (ax,) = drawn[0]
    np.testing.assert_allclose(ax["bars"], weight)              # one bar per lag, its weight
    _, uniform = ax["lines"]["uniform attention"]
    np.testing.assert_allclose(uniform, 0.1)                    # 1 / 10 lags
    assert ax["ylabel"] == "mean attention weight" and "0 = newest input" in ax["xlabel"]


def test_forecast_figure(tmp_path, arrays, drawn):
    t, actual, pred, _ = arrays
    f = tmp_path / "forecast.png"
    plots.forecast(f, t_all=t, values=actual, spans={"train": (0, 25), "val": (25, 30),
                                                     "test": (30, 39)},
                   t_test=t[30:], model=pred[30:], naive=actual[29:39], dpi=60)
    _png(f)
    (ax,) = drawn[0]
    assert ax["legend"] == ["train span", "val span", "test span", "series", "naive", "model"]
    x, y = ax["lines"]["model"]
    np.testing.assert_array_equal(x, t[30:])
    np.testing.assert_array_equal(y, pred[30:])
    np.testing.assert_array_equal(ax["lines"]["series"][1], actual)


def test_horizon_errors(tmp_path, drawn):
    f = tmp_path / "h.png"
    steps = np.arange(1, 6)
    plots.horizon_errors(f, steps=steps, errors={"model": steps * 0.1, "naive": steps * 0.15,
                                                 "seasonal_naive": steps * 0.2}, dpi=60)
    _png(f)
    (ax,) = drawn[0]
    assert ax["legend"] == ["model", "naive", "seasonal_naive"]
    np.testing.assert_allclose(ax["lines"]["naive"][1], steps * 0.15)
    assert ax["xlabel"] == "steps ahead" and ax["ylabel"].startswith("RMSE")


def test_same_data_same_bytes(tmp_path):
    a, b = tmp_path / "a.png", tmp_path / "b.png"
    for f in (a, b):
        plots.attention_by_lag(f, lags=np.arange(8), weight=np.full(8, 1 / 8), dpi=60)
    assert a.read_bytes() == b.read_bytes()


# ---------------------------------------------------------------- report
def _row(**kw):
    base = {"rmse": 0.123456, "mae": 0.1, "mase": None, "r2": 0.9,
            "directional_accuracy": 0.75, "skill_vs_naive": 0.25, "signal_rmse": None}
    base.update(kw)
    return base


def test_summary_markdown_has_a_row_per_forecaster():
    metrics = {"model": _row(), "naive": _row(rmse=0.2), "mean": _row(rmse=0.9),
               "ridge": _row(rmse=0.15), "n_test": 58}
    md = summary_markdown(metrics, settings_rows(Params(), metrics))
    lines = md.splitlines()
    assert "58 windows" in md
    table = [ln for ln in lines if ln.startswith("| ")]
    header = table[0]
    for col in ("forecaster", "rmse", "mae", "mase", "r2", "directional_accuracy"):
        assert col in header
    rows = {ln.split("|")[1].strip(): ln for ln in table[1:]
            if ln.split("|")[1].strip() in ("**model**", "naive", "mean", "ridge")}
    assert set(rows) == {"**model**", "naive", "mean", "ridge"}
    n_cols = header.count("|")
    for ln in rows.values():
        assert ln.count("|") == n_cols
    assert "0.1235" in rows["**model**"] and "n/a" in rows["**model**"]
    assert "| 0.9 |" in rows["mean"]
    # the separator row right under the header
    assert lines[lines.index(header) + 1].startswith("|---|")
    # key settings listed
    assert "window 60" in md and "lr 0.005" in md


def test_a_baseline_that_cannot_run_here_is_shown_with_its_reason():
    metrics = {"model": _row(), "naive": _row(rmse=0.2), "seasonal_naive": None, "n_test": 9,
               "unavailable": {"seasonal_naive": "no season (evaluate.season is 0)"}}
    md = summary_markdown(metrics, settings_rows(Params(), metrics))
    assert "| seasonal_naive | n/a |" in md
    assert "seasonal_naive is n/a: no season (evaluate.season is 0)." in md
    assert "Not fitted" not in md


def test_many_series_are_summarised_over_series():
    row = {"mase_mean": 0.8, "mase_median": 0.7, "rmse_mean": 12.0, "rmse_median": 10.0,
           "smape_mean": 9.5, "beats_naive": 0.6, "n_series": 40}
    metrics = {"model": row, "naive": {**row, "mase_mean": 1.0}, "n_test": 400,
               "n_series": 40, "n_dropped": 2}
    md = summary_markdown(metrics, settings_rows(Params(), metrics),
                          shown={"best": "a", "median": "b", "worst": "c"})
    assert md.startswith("### Test metrics over 40 series (400 windows; mean MASE is the "
                         "headline)")
    header = next(ln for ln in md.splitlines() if ln.startswith("| forecaster"))
    assert header.split("|")[2].strip() == "mase_mean"
    assert "2 series too short" in md and "median series b" in md
    assert "scaler zscore per series" in md


def test_summary_markdown_lstm_and_csv_settings():
    p = parse_params({"model": {"kind": "lstm"}, "data": {"kind": "csv", "csv_path": "x.csv",
                                                          "csv_column": "close"}})
    md = summary_markdown({"model": _row(), "n_test": 3}, settings_rows(p, {}), p.model.kind)
    assert "lstm" in md and "x.csv:close" in md
    assert "heads" not in md


# ---------------------------------------------------------------- readable axes and colours
def test_every_forecaster_has_its_own_colour():
    """Every name of the registry (forecasters/names.py) has a colour of its own, so a new
    forecaster needs no edit here; the default figures' colours stay as they were."""
    from attn_forecast.forecasters.names import BLEND, NAMES
    names = ["model", BLEND, *NAMES]
    colours = [plots.color(n) for n in names]
    assert len(set(colours)) == len(names)
    assert (plots.color("model"), plots.color("naive"), plots.color("ets")) == \
        ("#d62728", "#1f77b4", "#e377c2")
    assert plots.color("something_new", 0) != plots.color("something_new", 1)


def test_dates_get_a_concise_formatter_and_few_ticks():
    import matplotlib.dates as mdates
    import matplotlib.pyplot as plt
    t = np.arange("2021-01-04", "2022-08-01", dtype="datetime64[D]")
    fig, ax = plt.subplots(figsize=(11, 4))
    ax.plot(t, np.arange(len(t)))
    plots._time_axis(ax, t)
    assert isinstance(ax.xaxis.get_major_formatter(), mdates.ConciseDateFormatter)
    fig.canvas.draw()
    assert len(ax.get_xticks()) <= 12
    plt.close(fig)
    fig, ax = plt.subplots()
    plots._time_axis(ax, np.arange(10))  # numbers: untouched
    assert not isinstance(ax.xaxis.get_major_formatter(), mdates.ConciseDateFormatter)
    plt.close(fig)


def test_a_far_off_baseline_leaves_the_scale_and_is_named():
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots()
    curves = {"model": np.array([0.10, 0.12]), "naive": np.array([0.15, 0.2]),
              "ridge": np.array([0.11, 0.13]), "mean": np.array([0.9, 0.95])}
    for name, v in curves.items():
        ax.plot([1, 2], v)
    assert plots._clip_outliers(ax, curves) == ["mean"]
    assert ax.get_ylim()[1] < 0.5
    assert any("mean" in t.get_text() for t in ax.texts)
    plt.close(fig)
    fig, ax = plt.subplots()
    assert plots._clip_outliers(ax, {k: v for k, v in curves.items() if k != "mean"}) == []
    plt.close(fig)


def test_horizon_ticks_are_whole_steps(tmp_path, monkeypatch):
    import matplotlib.pyplot as plt
    seen = {}
    real_save = plots._save

    def keep(fig, path, dpi):
        seen["ticks"] = fig.axes[0].get_xticks()
        real_save(fig, path, dpi)
    monkeypatch.setattr(plots, "_save", keep)
    plots.horizon_errors(tmp_path / "h.png", steps=np.arange(1, 4),
                         errors={"model": np.array([.1, .2, .3]), "naive": np.array([.2, .3, .4]),
                                 "ridge": np.array([.1, .3, .5])}, dpi=50)
    assert all(float(t).is_integer() for t in seen["ticks"])
    plt.close("all")


def test_no_attention_figure(tmp_path, drawn):
    f = tmp_path / "none.png"
    plots.no_attention(f, title="Attention weights", reason="model.kind is lstm", dpi=60)
    _png(f, min_bytes=1000)
    (ax,) = drawn[0]
    assert ax["title"] == "Attention weights" and any("model.kind is lstm" in t
                                                      for t in ax["texts"])


def test_backtest_figure(tmp_path, drawn):
    f = tmp_path / "bt.png"
    plots.backtest_errors(f, folds=np.arange(1, 6), errors={
        "model": np.array([.15, .2, .15, .16, .11]), "naive": np.array([.2, .26, .28, .28, .13]),
        "mean": np.array([.9, 1.1, 1.0, .7, .3]), "ets": np.array([.15, np.nan, .2, .17, .12])},
        dpi=60)
    _png(f)
    (ax,) = drawn[0]
    assert ax["legend"] == ["model", "naive", "mean", "ets"]
    np.testing.assert_array_equal(ax["lines"]["ets"][1],
                                  [.15, np.nan, .2, .17, .12])    # a fold without a score
    assert any("off the scale: mean" in t for t in ax["texts"])  # far above the others


def test_summary_sentences_backtest_seeds_and_failed_baselines():
    sig = {"naive": {"statistic": -4.0, "p_value": 0.0001, "n": 60},
           "ridge": {"statistic": -1.2, "p_value": 0.23, "n": 60},
           "ets": {"statistic": None, "p_value": None, "n": 60}}
    metrics = {"model": _row(), "naive": _row(rmse=0.2), "ridge": _row(rmse=0.15),
               "ets": _row(rmse=0.16), "theta": None, "n_test": 60, "significance": sig,
               "model_seeds": {"score": "rmse", "mean": 0.17, "std": 0.01,
                               "values": [.16, .17, .18]}}
    bt = {"n_folds": 5, "model": {"rmse_mean": 0.16, "rmse_std": 0.03, "mae_mean": 0.13,
                                  "mase_mean": 0.74}, "theta": None,
          "significance": {"naive": {"statistic": -3.0, "p_value": 0.002, "n": 60}}}
    md = summary_markdown(metrics, settings_rows(Params(), metrics), backtest=bt)
    assert "- better than naive, p = 0.0001" in md
    assert "- no significant difference from ridge, p = 0.23" in md
    assert "ets: not testable" in md
    assert "| theta | n/a |" in md and "Not fitted (too short or constant): theta." in md
    assert "mean of 3 seeds" in md and "0.17 +- 0.01" in md
    assert "### Rolling-origin backtest (5 folds)" in md and "- better than naive, p = 0.002" in md
    # the metric keys that are not forecasters get no row
    assert "| significance |" not in md and "| model_seeds |" not in md


# ---------------------------------------------------------------- messages that tell the truth
def test_the_summary_describes_the_model_that_ran_not_model_params():
    """A fine-tuned prior: its own architecture and size, the epochs it took, the window
    auto chose; not model.* of params.yaml nor `window auto`."""
    p = parse_params({"data": {"kind": "csv", "csv_path": "x.csv", "csv_column": "v"}})
    prior = {**Params().model.model_dump(), "d_model": 64, "n_layers": 3, "n_heads": 4,
             "ffn_dim": 128, "instance_norm": "revin", "patch_len": 8, "patch_stride": 4}
    metrics = {"model": _row(), "n_test": 30, "model_run": {
        "kind": "attention", "settings": prior, "parameters": 110025, "seeds": 1,
        "windows": [24], "init": "pretrained", "epochs": 28, "best_epoch": 18, "batch": 256}}
    md = summary_markdown(metrics, settings_rows(p, metrics, window=24, horizon=1))
    model = next(ln for ln in md.splitlines() if ln.startswith("| model |"))
    training = next(ln for ln in md.splitlines() if ln.startswith("| training |"))
    assert "d_model 64" in model and "layers 3" in model and "heads 4" in model
    assert "110,025 parameters" in model and "the prior fine-tuned" in model
    assert f"28 of {p.train.epochs} epochs (best 18)" in training
    assert "window 24, horizon 1" in md and "window auto" not in md


def test_overview_baseline_scores_sit_under_the_axes_not_in_a_legend_title(tmp_path, arrays,
                                                                           drawn):
    t, actual, pred, w = arrays
    ep = np.arange(1, 6)
    names = {"naive": 0.2, "seasonal_naive": 0.3, "mean": 0.9, "ridge": 0.15, "ets": 0.16,
             "theta": 0.17, "zeroshot": 0.25}
    plots.overview(tmp_path / "o.png", epochs=ep, train_loss=1 / ep, val_loss=None, t=t,
                   actual=actual, predicted=pred, weights=w, baselines=names, model_rmse=0.1,
                   dpi=60)
    texts = [x for ax in drawn[0] for x in ax["texts"] if x.startswith("baseline RMSE")]
    assert len(texts) == 1
    lines = texts[0].splitlines()
    assert len(lines) == 3 and all(ln.count(",") <= 2 for ln in lines)   # 3 a line at most
    assert "zeroshot 0.25" in texts[0]                                    # never cut


def test_the_scores_per_step_are_no_forecaster_row_of_the_summary():
    metrics = {"model": _row(), "naive": _row(rmse=0.2), "n_test": 12,
               "by_step": {"model": {"mase": [0.5, 0.7]}, "naive": {"mase": [0.9, 1.1]}}}
    md = summary_markdown(metrics, settings_rows(Params(), metrics))
    names = [ln.split("|")[1].strip() for ln in md.splitlines() if ln.startswith("| ")]
    assert "by_step" not in names and "**model**" in names and "naive" in names
