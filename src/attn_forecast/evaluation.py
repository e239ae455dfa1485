"""Score a trained model and the baselines on the test windows, in the series' own units.

Model-space outputs are unscaled and, for ``diff`` / ``log_return``, rebuilt into levels from
the last actual value, so every forecaster is compared on the same targets. The same function
scores the single split and every backtest fold (a Prepared with the fold's split and scaler).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import torch
from torch import nn

from . import metrics as M
from . import quantiles as Q
from . import significance
from .baselines import Baselines, baseline_taus, fit_baselines
from .baselines import model_levels as _levels
from .model import Ensemble, ModelSettings
from .train import predict
from .windows import Prepared, gather_calendar, gather_windows


@dataclass
class Evaluation:
    metrics: dict
    t: np.ndarray                  # (N,) time of each window's first target
    actual: np.ndarray             # (N, H) levels
    forecasts: dict[str, np.ndarray | None]  # name -> (N, H) levels, "model" first; None:
    #                                          a baseline that could not be fitted
    mean_weights: np.ndarray | None   # (L, heads, W, W) over the test windows
    example_weights: np.ndarray | None  # (L, heads, W, W) of the first test window
    warnings: list[str] = field(default_factory=list)  # baselines that could not be fitted
    quantiles: dict[str, np.ndarray] = field(default_factory=dict)  # name -> (N, H, Q) levels
    taus: tuple = ()                                   # their quantile levels


@torch.no_grad()
def attention_weights(model: nn.Module, z: torch.Tensor, ends: torch.Tensor, window: int,
                      horizon: int, batch: int = 2048, cal: torch.Tensor | None = None):
    """Mean weights over the windows and the first window's, both (L, heads, T, T): T tokens
    (one per step, or one per patch)."""
    model.eval()
    total, first = None, None
    for i in range(0, len(ends), batch):
        x, _ = gather_windows(z, ends[i:i + batch], window, horizon)
        _, weights = model(x, need_weights=True,
                           cal=gather_calendar(cal, ends[i:i + batch], window, horizon))
        w = torch.stack(weights, dim=1)  # (B, L, heads, W, W)
        if first is None:
            first = w[0].double().cpu().numpy()
        s = w.double().sum(dim=0)
        total = s if total is None else total + s
    return (total / len(ends)).cpu().numpy(), first


def calibration_ends(prep: Prepared) -> np.ndarray:
    """The windows conformal calibration uses: the validation part, or else the last fifth of
    the training windows (never a test window)."""
    val = prep.split.ends("val")
    if len(val):
        return val
    train = prep.split.ends("train")
    return train[-max(1, len(train) // 5):]


def _quantile_levels(prep: Prepared, zq: np.ndarray, last: np.ndarray) -> np.ndarray:
    """Model-space quantiles (N, H, Q) in levels, level by level (for diff and log_return the
    steps' quantiles are summed: exact for the first step, wider than exact after it)."""
    return np.stack([_levels(prep, zq[..., k], last) for k in range(zq.shape[-1])], axis=-1)


def model_intervals(prep: Prepared, model: nn.Module, point: np.ndarray, taus, *,
                    conformal: str, z: torch.Tensor, cal: torch.Tensor | None
                    ) -> np.ndarray | None:
    """The model's quantile forecasts (N, H, Q) in levels on the test windows: its quantile
    head, or its point forecast ``point`` widened by calibrated residuals; split-conformal on
    the calibration windows when asked. None: a point model without conformal."""
    s, W, H = prep.split, prep.split.window, prep.split.horizon
    test, calib = s.ends("test"), calibration_ends(prep)
    last = prep.levels[prep.first_target_level(test) - 1]
    f_cal = prep.first_target_level(calib)
    y_cal = prep.levels[f_cal[:, None] + np.arange(H)[None, :]]
    last_cal = prep.levels[f_cal - 1]
    ends_test = torch.from_numpy(test).to(z.device)
    ends_cal = torch.from_numpy(calib).to(z.device)
    if model.settings.quantiles:
        q = _quantile_levels(prep, predict(model, z, ends_test, W, H, cal=cal, quantiles=True)
                             .cpu().numpy(), last)
        if conformal == "split":
            q_cal = _quantile_levels(prep, predict(model, z, ends_cal, W, H, cal=cal,
                                                   quantiles=True).cpu().numpy(), last_cal)
            q = Q.calibrate(q_cal, y_cal, q, taus)
        return q
    if conformal == "split":
        point_cal = _levels(prep, predict(model, z, ends_cal, W, H, cal=cal).cpu().numpy(),
                            last_cal)
        return Q.from_residuals(point, point_cal, y_cal, taus)
    return None


def _member_predictions(model: nn.Module, z: torch.Tensor, ends: torch.Tensor, W: int, H: int,
                        cal: torch.Tensor | None) -> list[np.ndarray]:
    members = model.members if isinstance(model, Ensemble) else [model]
    return [predict(m, z, ends, W, H, cal=cal).cpu().numpy() for m in members]


def evaluate(prep: Prepared, model: nn.Module, *, baselines: list[str] | Baselines,
             ridge_alpha: float, season: int, noise_std: float | None,
             device: torch.device | str = "cpu", weights: bool = True,
             conformal: str = "none") -> Evaluation:
    """Score the model and the baselines (names, fitted here, or a :class:`Baselines` fitted
    before on the same split) on the split's test windows; also the
    Diebold-Mariano test of the model against each baseline, with an ensemble the spread of
    its members' RMSE, and with quantiles (a quantile head, or ``conformal`` split) the
    interval scores of every forecaster that has intervals. ``weights``: also average the
    attention weights (for figures)."""
    W, H = prep.split.window, prep.split.horizon
    test = prep.split.ends("test")
    first = prep.first_target_level(test)                 # (N,) level index
    idx = first[:, None] + np.arange(H)[None, :]          # (N, H)
    actual = prep.levels[idx]
    last = prep.levels[first - 1]
    lo, hi = prep.split.bounds("train")
    train_levels = prep.levels[lo:hi + prep.offset]

    z_dev = torch.from_numpy(prep.z).to(device)
    cal = torch.from_numpy(prep.cal).to(device) if prep.cal is not None else None
    ends_dev = torch.from_numpy(test).to(device)
    z_model = predict(model, z_dev, ends_dev, W, H, cal=cal).cpu().numpy()
    taus = baseline_taus(model.settings.quantiles, conformal)
    if not isinstance(baselines, Baselines):
        baselines = fit_baselines(prep, baselines, ridge_alpha=ridge_alpha, season=season,
                                  taus=taus)
    forecasts = {"model": _levels(prep, z_model, last), **baselines.forecasts}
    warnings = list(baselines.warnings)

    has_signal = bool(np.isfinite(prep.signal).all())
    signal = prep.signal[idx] if has_signal else None
    noise_var = noise_std ** 2 if (has_signal and noise_std) else None
    naive_rmse = M.rmse(actual, M.naive_forecast(last, H))

    def score(p: np.ndarray) -> dict:
        return M.score(actual, p, last, train_levels=train_levels, signal=signal,
                       noise_var=noise_var, naive_rmse=naive_rmse)
    metrics: dict = {name: (score(p) if p is not None else None)
                     for name, p in forecasts.items()}
    metrics["n_test"] = int(len(test))
    metrics["significance"] = significance.compare(actual, forecasts, H)
    if isinstance(model, Ensemble):
        rmses = [M.rmse(actual, _levels(prep, zm, last))
                 for zm in _member_predictions(model, z_dev, ends_dev, W, H, cal)]
        metrics["model_seeds"] = {"rmse_mean": float(np.mean(rmses)),
                                  "rmse_std": float(np.std(rmses)), "rmse": rmses}

    quant = {}
    if taus:
        from scipy.special import ndtri  # the standard normal's quantile function
        q_model = model_intervals(prep, model, forecasts["model"], taus, conformal=conformal,
                                  z=z_dev, cal=cal)
        quant = {**({"model": q_model} if q_model is not None else {}), **baselines.quantiles}
        for name, q in quant.items():
            metrics[name].update(Q.interval_scores(actual, q, taus))
            if signal is not None and noise_std:  # the truth's quantiles are known
                q_true = signal[..., None] + noise_std * ndtri(np.asarray(taus))
                metrics[name]["quantile_rmse"] = float(np.sqrt(np.mean((q - q_true) ** 2)))
        if signal is not None and noise_std:  # what a perfect interval would cover here
            for _, _, pct in Q.intervals(taus):
                half = noise_std * ndtri(0.5 + pct / 200)
                metrics[f"ideal_coverage_{pct}"] = float(np.mean(np.abs(actual - signal)
                                                                 <= half))

    mean_w = example_w = None
    if weights and getattr(model, "blocks", None) is not None:
        mean_w, example_w = attention_weights(model, z_dev, ends_dev, W, H, cal=cal)
    return Evaluation(metrics, prep.t[first], actual, forecasts, mean_w, example_w, warnings,
                      quant, taus)


def lag_profile(mean_weights: np.ndarray, pooling: str) -> np.ndarray:
    """Mean weight each lag gets in the last layer, averaged over heads; index 0 = lag 0 (the
    newest input). With ``last`` pooling only the last query feeds the head, so that row is
    taken; with ``mean`` pooling every query does, so the rows are averaged."""
    rows = mean_weights[-1, :, -1, :] if pooling == "last" else mean_weights[-1].mean(axis=1)
    return rows.mean(axis=0)[::-1]


def token_lags(settings: ModelSettings) -> tuple[np.ndarray, np.ndarray]:
    """The lags (0 = the newest input) each token covers, newest token first: (newest lag,
    oldest lag) per token; equal for one token per step."""
    W = settings.window
    steps = settings.token_steps()[::-1]
    return (np.array([W - 1 - last for _, last in steps]),
            np.array([W - 1 - first for first, _ in steps]))


PLOT_ROWS = 1000  # test windows in the committed predictions sample (the most recent ones)


def plot_sample(pred: pd.DataFrame, rows: int = PLOT_ROWS) -> pd.DataFrame:
    """The committed, plotted predictions: the last ``rows`` test windows, so what git holds
    stays small whatever the series' length (the whole table is a DVC-cached output)."""
    return pred.iloc[-rows:].reset_index(drop=True) if len(pred) > rows else pred


def lags_table(mean_weights: np.ndarray | None, settings: ModelSettings) -> pd.DataFrame:
    """Weight by lag: ``lag`` .. ``lag_oldest`` (the lags a token covers) and ``weight``;
    empty for a model without attention."""
    if mean_weights is None:
        return pd.DataFrame({"lag": [], "lag_oldest": [], "weight": []})
    newest, oldest = token_lags(settings)
    return pd.DataFrame({"lag": newest, "lag_oldest": oldest,
                         "weight": lag_profile(mean_weights, settings.pooling)})


def single_row(metrics: dict, names: list[str]) -> pd.DataFrame:
    """The metrics-by-series table of a single series: one row, a panel's columns."""
    row = {"id": ["series"], "n_test": [metrics["n_test"]]}
    for name in names:
        m = metrics.get(name)
        if m:
            for k in ("rmse", "mae", "mase", "smape", "signal_rmse"):
                row[f"{name}_{k}"] = [m.get(k)]
    return pd.DataFrame(row)


def tables(ev: Evaluation, settings: ModelSettings) -> dict[str, pd.DataFrame]:
    """The evaluate stage's CSVs: first-step predictions, RMSE by steps ahead, weight by lag
    (``lag`` .. ``lag_oldest``: the lags a token covers; one lag per token without patches)."""
    pred = pd.DataFrame({"t": ev.t, "actual": ev.actual[:, 0]})
    fitted = {name: f for name, f in ev.forecasts.items() if f is not None}
    for name, f in fitted.items():
        pred["predicted" if name == "model" else name] = f[:, 0]
    for name, q in ev.quantiles.items():  # first step, each level but the median
        for k, tau in enumerate(ev.taus):
            if tau != 0.5:
                pred[f"{'predicted' if name == 'model' else name}_q{round(100 * tau):02d}"] = \
                    q[:, 0, k]
    H = ev.actual.shape[1]
    horizon = pd.DataFrame({"step": np.arange(1, H + 1), **{
        name: [M.rmse(ev.actual[:, k], f[:, k]) for k in range(H)]
        for name, f in fitted.items()}})
    lags = lags_table(ev.mean_weights, settings)
    nominal = [pct for _, _, pct in Q.intervals(ev.taus)]
    # the columns dvc.yaml plots are always there (empty without intervals)
    cols = dict.fromkeys(["model", "naive", "ridge", *ev.quantiles])
    calibration = pd.DataFrame({"nominal": [p / 100 for p in nominal], **{
        name: [ev.metrics[name][f"coverage_{p}"] if name in ev.quantiles else None
               for p in nominal] for name in cols}})
    return {"predictions": pred, "horizon": horizon, "lags": lags, "calibration": calibration}


# ---------------------------------------------------------------- panels
WEIGHT_WINDOWS = 10_000  # test windows a panel's mean attention weights average over, at most


@dataclass
class PanelEvaluation:
    metrics: dict
    by_series: pd.DataFrame        # one row per series (reports/metrics_by_series.csv)
    ends: np.ndarray               # (N,) test window ends (rows of the flat arrays)
    actual: np.ndarray             # (N, H) levels
    forecasts: dict[str, np.ndarray | None]
    mean_weights: np.ndarray | None
    example_weights: np.ndarray | None
    warnings: list[str] = field(default_factory=list)


def evaluate_panel(panel, model: nn.Module, *, baselines: Baselines, noise_std: float | None,
                   device: torch.device | str = "cpu", weights: bool = True
                   ) -> PanelEvaluation:
    """Score the global model and the baselines on every series' test windows: per series
    (RMSE, MAE, MASE against the series' own in-sample naive error, sMAPE) and aggregated over
    series (mean and median; mean MASE is the headline). The attention weights are averaged
    over at most :data:`WEIGHT_WINDOWS` test windows spread over the panel."""
    from . import panel as P
    W, H = panel.window, panel.horizon
    test = panel.split.ends("test")
    z_dev = torch.from_numpy(panel.z).to(device)
    cal = torch.from_numpy(panel.cal).to(device) if panel.cal is not None else None
    ends_dev = torch.from_numpy(test).to(device)
    z_model = predict(model, z_dev, ends_dev, W, H, cal=cal).cpu().numpy()
    actual = panel.targets(test)
    forecasts = {"model": panel.to_levels(z_model, test), **baselines.forecasts}
    table = P.by_series(panel, test, actual, forecasts)
    names = list(forecasts)
    metrics: dict = {"headline": "mase_mean", "n_series": int(panel.n_series),
                     "n_test": int(len(test)),
                     "n_dropped": int(panel.dropped.get("count", 0)),
                     **P.aggregate(table, names)}
    mean_w = example_w = None
    if weights and getattr(model, "blocks", None) is not None:
        sample = torch.from_numpy(P.spread(test, WEIGHT_WINDOWS)).to(device)
        mean_w, example_w = attention_weights(model, z_dev, sample, W, H, cal=cal)
    return PanelEvaluation(metrics, table, test, actual, forecasts, mean_w, example_w,
                           list(baselines.warnings))


def panel_tables(ev: PanelEvaluation, panel, settings: ModelSettings) -> dict[str, pd.DataFrame]:
    """A panel's CSVs: first-step predictions of every test window with the series id, the
    metrics by series, the mean over series of each step's RMSE, and the weight by lag; the
    plotted sample is the median series' (by the model's MASE) last test windows."""
    from . import panel as P
    fitted = {name: f for name, f in ev.forecasts.items() if f is not None}
    sid = panel.series_of(ev.ends)
    t = np.asarray(panel.t[ev.ends])
    pred = pd.DataFrame({"id": panel.ids[sid], "t": t, "actual": ev.actual[:, 0]})
    for name, f in fitted.items():
        pred["predicted" if name == "model" else name] = f[:, 0]
    count = np.bincount(sid, minlength=panel.n_series)
    horizon = {"step": np.arange(1, panel.horizon + 1)}
    for name, f in fitted.items():
        sq = np.stack([np.bincount(sid, (f[:, k] - ev.actual[:, k]) ** 2,
                                   minlength=panel.n_series) for k in range(panel.horizon)])
        horizon[name] = np.sqrt(sq / count).mean(axis=1)
    lags = lags_table(ev.mean_weights, settings)
    median = P.ranked(ev.by_series)["median"]
    sample = plot_sample(pred[sid == median].reset_index(drop=True))
    calibration = pd.DataFrame({c: [] for c in ("nominal", "model", "naive", "ridge")})
    return {"predictions": pred, "predictions_plot": sample, "horizon": pd.DataFrame(horizon),
            "lags": lags, "calibration": calibration, "by_series": ev.by_series}
