"""Figures, one function each, taking arrays (never a model) and writing one PNG.

Agg backend, explicit ``fig, ax`` API, one shared style, closed after saving.
"""
from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.dates as mdates  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib.colors import PowerNorm  # noqa: E402
from matplotlib.ticker import MaxNLocator  # noqa: E402

from ..forecasters.names import BLEND, NAMES  # noqa: E402
from ..io import atomic_path  # noqa: E402

STYLE = {
    "figure.facecolor": "white", "axes.grid": True, "grid.alpha": 0.3, "axes.titlesize": 11,
    "axes.labelsize": 10, "legend.fontsize": 8, "xtick.labelsize": 8, "ytick.labelsize": 8,
    "axes.spines.top": False, "axes.spines.right": False,
}
# the series' and the parts' colours; every forecaster's from its place in the registry
# (forecasters/names.py: the model, the blend, an ensemble, then NAMES in order), so a new
# forecaster has its own colour in every figure and every run
PARTS = {"actual": "#333333", "train": "#1f77b4", "val": "#ff7f0e", "cal": "#9467bd",
         "test": "#2ca02c"}
PALETTE = ["#d62728", "#e6550d", "#ff7f0e", "#1f77b4", "#9467bd", "#7f7f7f", "#8c564b",
           "#2ca02c", "#aec7e8", "#e377c2", "#17becf", "#98df8a", "#c5b0d5", "#bcbd22",
           "#ffbb78", "#ff9896", "#c49c94", "#f7b6d2", "#dbdb8d", "#9edae5",
           "#5254a3", "#8ca252", "#bd9e39", "#ad494a"]
COLORS = {**PARTS, **{n: PALETTE[i % len(PALETTE)]
                      for i, n in enumerate(("model", BLEND, "ensemble", *NAMES))}}
SPARE = ["#393b79", "#637939", "#8c6d31", "#843c39", "#7b4173"]


def color(name: str, i: int = 0) -> str:
    """A fixed colour per forecaster, so every figure and every run agree."""
    return COLORS.get(name, SPARE[i % len(SPARE)])


def _time_axis(ax, t) -> None:
    """Dates: a locator that thins the ticks and the concise formatter (no overlapping
    labels); numbers: left as they are."""
    if np.asarray(t).dtype.kind == "M":
        locator = mdates.AutoDateLocator()
        ax.xaxis.set_major_locator(locator)
        ax.xaxis.set_major_formatter(mdates.ConciseDateFormatter(locator))


def _clip_outliers(ax, curves: dict[str, np.ndarray], keep: tuple[str, ...] = ("model",)
                   ) -> list[str]:
    """Keep the y range on the curves that matter: a curve whose peak is more than four times
    the median peak (a far-off baseline such as the training mean) is left off the scale and
    named. Returns the names left off."""
    peaks = {k: float(np.nanmax(np.abs(v))) for k, v in curves.items() if np.size(v)}
    if len(peaks) < 3:
        return []
    ref = float(np.median(list(peaks.values())))
    off = [k for k, v in peaks.items() if k not in keep and ref > 0 and v > 4 * ref]
    if off:
        inside = [np.asarray(v) for k, v in curves.items() if k not in off and np.size(v)]
        lo = min(float(np.nanmin(v)) for v in inside)
        hi = max(float(np.nanmax(v)) for v in inside)
        pad = 0.08 * (hi - lo or 1.0)
        ax.set_ylim(lo - pad, hi + pad)
        ax.text(0.99, 0.02, "off the scale: " + ", ".join(off), transform=ax.transAxes,
                ha="right", va="bottom", fontsize=8, color="#555555")
    return off


def _save(fig, path: str | Path, dpi: int) -> None:
    # PNG metadata carries no timestamp, so the bytes depend on the data only
    with atomic_path(path) as tmp:
        fig.savefig(tmp, dpi=dpi, format="png", metadata={"Software": None})
    plt.close(fig)


def token_labels(newest: np.ndarray, oldest: np.ndarray) -> list[str]:
    """Axis labels of the tokens, oldest first: the input step (t-3), or for a patch the steps
    it covers (t-23..t-12); t is the newest input."""
    lag = lambda k: "t" if k == 0 else f"t-{k}"  # noqa: E731
    return [lag(a) if a == b else f"{lag(b)}..{lag(a)}"
            for a, b in zip(newest[::-1], oldest[::-1])]


def _heatmap(ax, weights: np.ndarray, title: str, fig, labels: list[str] | None = None) -> None:
    T = weights.shape[-1]
    im = ax.imshow(weights, cmap="viridis", vmin=0, aspect="auto")
    ticks = np.arange(T)
    labels = labels or [f"t-{T - 1 - i}" if i < T - 1 else "t" for i in ticks]
    step = max(1, T // 10)
    ax.set_xticks(ticks[::step], labels[::step], rotation=90)
    ax.set_yticks(ticks[::step], labels[::step])
    patches = any(".." in label for label in labels)
    ax.set_xlabel("key position (" + ("patch of input steps" if patches else "input step") + ")")
    ax.set_ylabel("query position")
    ax.set_title(title)
    ax.grid(False)
    fig.colorbar(im, ax=ax, fraction=0.046, pad=0.04, label="weight")


def overview(path, *, epochs, train_loss, val_loss, t, actual, predicted, weights,
             baselines: dict[str, float], model_rmse: float, units: str = "value",
             dpi: int, labels: list[str] | None = None, bands=None,
             test_title: str = "Test set: actual vs predicted") -> None:
    """The source's 2x2 sheet: loss curve, test truth vs prediction, attention heatmap,
    residual histogram. ``weights`` (T, T) or None (a model without attention)."""
    with plt.rc_context(STYLE):
        fig, axes = plt.subplots(2, 2, figsize=(11, 8))
        ax = axes[0, 0]
        ax.plot(epochs, train_loss, color=COLORS["train"], label="train")
        if val_loss is not None and np.isfinite(val_loss).any():
            ax.plot(epochs, val_loss, color=COLORS["val"], label="validation")
        ax.set_yscale("log")
        ax.set(title="Training loss", xlabel="epoch", ylabel="loss (scaled units, log)")
        ax.legend()

        ax = axes[0, 1]
        _bands(ax, t, bands, COLORS["model"])
        ax.plot(t, actual, color=COLORS["actual"], lw=1.2, label="actual")
        ax.plot(t, predicted, color=COLORS["model"], lw=1.2, ls="--",
                label=f"model (RMSE {model_rmse:.3g})")
        ax.set(title=test_title, xlabel="t", ylabel=units)
        ax.legend(loc="best", fontsize=8)   # where it hides the fewest points
        scores = [f"{k} {v:.3g}" for k, v in baselines.items() if v is not None]
        if scores:  # under the axes, three a line: never cut, never over a point
            lines = [", ".join(scores[i:i + 3]) for i in range(0, len(scores), 3)]
            ax.text(0.0, -0.16, "baseline RMSE: " + "\n".join(lines), transform=ax.transAxes,
                    ha="left", va="top", fontsize=8, color="#333333")
        _time_axis(ax, t)

        ax = axes[1, 0]
        if weights is not None:
            _heatmap(ax, weights, "Attention weights (first test window, last layer)", fig,
                     labels)
        else:
            ax.text(0.5, 0.5, "no attention in this model", ha="center", va="center")
            ax.set_axis_off()

        ax = axes[1, 1]
        resid = np.asarray(predicted) - np.asarray(actual)
        ax.hist(resid, bins=min(30, max(5, len(resid) // 3)), color=COLORS["model"],
                alpha=0.75, edgecolor="white")
        ax.axvline(0, color="black", lw=0.8)
        ax.set(title="Test residuals (predicted - actual)", xlabel=f"residual ({units})",
               ylabel="count")
        fig.tight_layout()
        _save(fig, path, dpi)


def attention_maps(path, *, mean_weights: np.ndarray, example_weights: np.ndarray,
                   dpi: int, labels: list[str] | None = None) -> None:
    """The weights of every layer (rows) and head (columns): the mean over the test windows
    (left block) beside the first test window (right block), one colour scale per block
    (square-root, so a head's faint structure shows beside another's sharp peak).
    Both arrays (L, H, T, T). A fixed grid of small panels (no per-panel colour bar, no
    layout search), so a deep model's figure stays readable and quick to draw."""
    L, H, T = mean_weights.shape[:3]
    labels = labels or [f"t-{T - 1 - i}" if i < T - 1 else "t" for i in range(T)]
    step = max(1, T // 6)
    ticks = np.arange(T)[::-1][::step][::-1]         # always ending at the newest input
    patches = any(".." in label for label in labels)
    side, gap, left, top, bottom = 2.1, 0.25, 0.9, 0.75, 0.9     # inches
    grid = H * side + (H - 1) * gap
    block = grid + 0.3 + 1.8            # the grid, its colour bar, the bar's labels, a margin
    width, height = left + 2 * block - 1.0, top + bottom + L * side + (L - 1) * gap
    blocks = (("Mean over test windows", mean_weights), ("First test window", example_weights))
    with plt.rc_context(STYLE):
        fig = plt.figure(figsize=(width, height))
        for b, (what, weights) in enumerate(blocks):
            x0 = left + b * block
            vmax = float(np.nanmax(weights)) if np.isfinite(weights).any() else 1.0
            for layer in range(L):
                for head in range(H):
                    ax = fig.add_axes((
                        (x0 + head * (side + gap)) / width,
                        (bottom + (L - 1 - layer) * (side + gap)) / height,
                        side / width, side / height))
                    im = ax.imshow(weights[layer, head], cmap="viridis", aspect="auto",
                                   norm=PowerNorm(0.5, vmin=0, vmax=vmax))
                    ax.grid(False)
                    ax.set_xticks(ticks, [labels[i] for i in ticks] if layer == L - 1
                                  else [], rotation=90, fontsize=7)
                    ax.set_yticks(ticks, [labels[i] for i in ticks] if head == 0 else [],
                                  fontsize=7)
                    if layer == 0:
                        ax.set_title(f"head {head + 1}", fontsize=9)
                    if head == 0:
                        ax.set_ylabel(f"layer {layer + 1}\nquery position", fontsize=8)
            cax = fig.add_axes(((x0 + grid + 0.15) / width,
                                bottom / height, 0.15 / width,
                                (L * side + (L - 1) * gap) / height))
            fig.colorbar(im, cax=cax, label="weight")
            fig.text((x0 + grid / 2) / width, 1 - 0.25 / height, what,
                     ha="center", va="top", fontsize=11)
        fig.text(0.5, 0.05 / height, "key position (" + (
            "patch of input steps" if patches else "input step") + ")",
            ha="center", va="bottom", fontsize=9)
        _save(fig, path, dpi)


def no_attention(path, *, title: str, reason: str, dpi: int) -> None:
    """A placeholder figure that says why there is nothing to show (e.g. an LSTM model), so a
    figure from an earlier run is never left standing in for this one."""
    with plt.rc_context(STYLE):
        fig, ax = plt.subplots(figsize=(7, 2.2))
        ax.text(0.5, 0.6, "no attention", ha="center", va="center", fontsize=16)
        ax.text(0.5, 0.25, reason, ha="center", va="center", fontsize=9, color="#555555")
        ax.set_title(title)
        ax.set_axis_off()
        _save(fig, path, dpi)


def attention_by_lag(path, *, lags: np.ndarray, weight: np.ndarray,
                     lag_oldest: np.ndarray | None = None, dpi: int) -> None:
    """Mean attention weight each lag gets from the queries that feed the head (the last query
    with last pooling, all of them with mean pooling); lag 0 = the newest input. With patches
    (``lag_oldest`` != ``lags``) one bar per patch, labelled by the lags it covers."""
    patches = lag_oldest is not None and np.any(np.asarray(lag_oldest) != np.asarray(lags))
    with plt.rc_context(STYLE):
        fig, ax = plt.subplots(figsize=(7, 4))
        if patches:
            x = np.arange(len(lags))
            ax.bar(x, weight, color=COLORS["model"], alpha=0.8)
            step = max(1, len(x) // 12)
            ax.set_xticks(x[::step], [f"{a}-{b}" for a, b in zip(lags, lag_oldest)][::step],
                          rotation=45)
        else:
            ax.bar(lags, weight, color=COLORS["model"], alpha=0.8)
        ax.axhline(1 / len(lags), color="black", lw=0.8, ls=":", label="uniform attention")
        what = "patch (the lags it covers)" if patches else "lag"
        ax.set(title=f"What the model looks at: attention weight by {what.split(' ')[0]}",
               xlabel=f"{what}; steps before the forecast origin, 0 = newest input",
               ylabel="mean attention weight")
        ax.legend()
        fig.tight_layout()
        _save(fig, path, dpi)


def forecast(path, *, t_all, values, spans: dict[str, tuple], t_test, model, naive,
             units: str = "value", dpi: int, bands=None,
             title: str = "Series and one-step-ahead test forecasts") -> None:
    """Whole series with the train / validation / test spans shaded, the model and the naive
    baseline over the test span. ``spans`` maps part name to (t_start, t_end)."""
    with plt.rc_context(STYLE):
        fig, ax = plt.subplots(figsize=(11, 4.2))
        for name, (lo, hi) in spans.items():
            ax.axvspan(lo, hi, color=COLORS[name], alpha=0.08, label=f"{name} span")
        _bands(ax, t_test, bands, COLORS["model"])
        ax.plot(t_all, values, color=COLORS["actual"], lw=0.9, label="series")
        ax.plot(t_test, naive, color=COLORS["naive"], lw=1, ls=":", label="naive")
        ax.plot(t_test, model, color=COLORS["model"], lw=1.2, ls="--", label="model")
        ax.set(title=title, xlabel="t", ylabel=units)
        ax.legend(ncol=3)
        _time_axis(ax, t_all)
        fig.tight_layout()
        _save(fig, path, dpi)


def fan(path, *, t_hist, history, t_test, actual, paths, name: str = "model",
        units: str = "value", dpi: int, title: str = "") -> None:
    """A fan chart: the recent history, the truth of the test part, and each forecast path
    (t, forecast, bands: one from each origin, or the one-step forecasts of the test part)
    in its 80 % and 95 % intervals."""
    with plt.rc_context(STYLE):
        fig, ax = plt.subplots(figsize=(11, 4.2))
        c = color(name)
        for k, (t, forecast, bands) in enumerate(paths):
            for lo, hi, pct in sorted(bands or [], key=lambda b: -b[2]):
                ax.fill_between(t, lo, hi, color=c, alpha=0.15 + 0.15 * (pct < 90), lw=0,
                                label=f"{pct} % interval" if k == 0 else None)
            ax.plot(t, forecast, color=c, lw=1.3, label=f"{name} forecast" if k == 0 else None)
            if len(paths) > 1:
                ax.axvline(t[0], color="grey", lw=0.6, ls=":")
        ax.plot(t_hist, history, color=COLORS["actual"], lw=0.9, label="history")
        ax.plot(t_test, actual, color=COLORS["actual"], lw=0, marker=".", ms=3,
                label="truth (test part)")
        ax.set(title=title or f"The {name}'s forecasts and intervals", xlabel="t",
               ylabel=units)
        ax.legend(ncol=3)
        _time_axis(ax, np.concatenate([np.asarray(t_hist), np.asarray(t_test)]))
        fig.tight_layout()
        _save(fig, path, dpi)


def horizon_errors(path, *, steps: np.ndarray, errors: dict[str, np.ndarray],
                   units: str = "value", dpi: int) -> None:
    """RMSE by steps ahead for the model and each baseline."""
    with plt.rc_context(STYLE):
        fig, ax = plt.subplots(figsize=(7, 4))
        for i, (name, err) in enumerate(errors.items()):
            ax.plot(steps, err, marker="o", ms=3, label=name, color=color(name, i),
                    lw=2 if name == "model" else 1.2)
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        _clip_outliers(ax, errors)
        ax.set(title="Error by steps ahead", xlabel="steps ahead", ylabel=f"RMSE ({units})")
        ax.legend()
        fig.tight_layout()
        _save(fig, path, dpi)


def backtest_errors(path, *, folds: np.ndarray, errors: dict[str, np.ndarray],
                    score: str = "RMSE (value)", dpi: int) -> None:
    """Each fold's score of the rolling-origin backtest (``score``: what the folds file holds,
    RMSE for one series, the mean MASE for many), the model beside every baseline (a far-off
    baseline is left off the scale and named)."""
    with plt.rc_context(STYLE):
        fig, ax = plt.subplots(figsize=(8, 4))
        for i, (name, err) in enumerate(errors.items()):
            ax.plot(folds, err, marker="o", ms=4, label=name, color=color(name, i),
                    lw=2.2 if name == "model" else 1.1)
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        _clip_outliers(ax, {k: v[np.isfinite(v)] for k, v in errors.items()})
        ax.set(title="Rolling-origin backtest: error per fold", xlabel="fold (origin moves on)",
               ylabel=score)
        ax.legend(ncol=2)
        fig.tight_layout()
        _save(fig, path, dpi)


def _bands(ax, t, bands, color: str) -> None:
    """Shaded central intervals, widest palest: ``bands`` = [(lower, upper, percent), ...]."""
    for lo, hi, pct in sorted(bands or [], key=lambda b: -b[2]):
        ax.fill_between(t, lo, hi, color=color, alpha=0.12 + 0.1 * (pct < 80), lw=0,
                        label=f"model {pct} % interval")


def calibration(path, *, nominal: np.ndarray, coverage: dict[str, np.ndarray],
                dpi: int) -> None:
    """Nominal against empirical coverage of each forecaster's central intervals on the test
    windows: on the diagonal is calibrated, below it too narrow, above it too wide."""
    with plt.rc_context(STYLE):
        fig, ax = plt.subplots(figsize=(5.5, 5))
        ax.plot([0, 1], [0, 1], color="black", lw=0.8, ls=":", label="calibrated")
        for i, (name, cov) in enumerate(coverage.items()):
            ax.plot(nominal, cov, marker="o", label=name, color=color(name, i),
                    lw=2 if name == "model" else 1.1)
        ax.set(xlim=(0, 1), ylim=(0, 1), title="Interval calibration (test windows)",
               xlabel="nominal coverage", ylabel="empirical coverage")
        ax.legend()
        fig.tight_layout()
        _save(fig, path, dpi)
