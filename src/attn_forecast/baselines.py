"""The baselines every forecast is scored against, on a split's test windows, in levels.

They do not depend on the model, so the pipeline fits them once (stage ``baselines``) and a
model-only experiment (``dvc exp run -S train.lr=...``) reuses them; no torch here.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from . import metrics as M
from . import quantiles as Q
from . import statbaselines as S
from .errors import UserInputError
from .io import read_npz, write_npz
from .windows import Prepared, gather_calendar, gather_windows, to_levels


def model_levels(prep: Prepared, z_pred: np.ndarray, last: np.ndarray) -> np.ndarray:
    """Model-space forecasts (scaled, transformed) back in levels, from the last known level."""
    return to_levels(prep.scaler.inverse(z_pred.astype(np.float64)), last, prep.transform)


@dataclass
class Baselines:
    """The baselines' forecasts on a split's test windows, fitted on its training part: they do
    not depend on the model, so the pipeline computes them once (stage ``baselines``) and a
    model-only experiment reuses them."""
    forecasts: dict[str, np.ndarray | None]   # name -> (N, H) levels; None: could not be fitted
    quantiles: dict[str, np.ndarray] = field(default_factory=dict)  # name -> (N, H, Q) levels
    taus: tuple = ()
    warnings: list[str] = field(default_factory=list)
    asked: list[str] = field(default_factory=list)   # evaluate.baselines they were fitted for
    # what else they were fitted with: ridge_alpha, season and the prepared data's key
    fitted_for: dict = field(default_factory=dict)


def data_key(prep: Prepared) -> str:
    """A short hash of the prepared data (its model series and its metadata)."""
    import hashlib
    h = hashlib.sha256(np.ascontiguousarray(prep.z).tobytes())
    h.update(json.dumps(prep.meta(), sort_keys=True, default=str).encode())
    return h.hexdigest()[:16]


def fitted_settings(prep: Prepared, ridge_alpha: float, season: int) -> dict:
    return {"ridge_alpha": float(ridge_alpha), "season": int(season), "prepared": data_key(prep)}


def baseline_taus(quantiles, conformal: str) -> tuple:
    """The quantile levels intervals are scored at: the model's, or the conformal default."""
    return tuple(quantiles) or (Q.DEFAULT_LEVELS if conformal == "split" else ())


def _feature_windows(prep: Prepared, ends: np.ndarray) -> np.ndarray:
    """(N, W * F) the past covariates of each window's input steps, flattened."""
    x, _ = gather_calendar(prep.cal, ends, prep.split.window, prep.split.horizon)
    return x[..., prep.n_time_features:].reshape(len(ends), -1)


def fit_baselines(prep: Prepared, names: list[str], *, ridge_alpha: float, season: int,
                  taus=()) -> Baselines:
    """Every baseline in ``names`` on the split's test windows, fitted on its training part,
    in levels; ``seasonal_naive`` runs only with a season (``evaluate.season`` > 0). A baseline
    that cannot be fitted is None, with a one-line warning. With ``taus``, also the quantile
    forecasts of those that have intervals: naive (a Gaussian random walk of the training
    part's one-step changes), ridge (its residual quantiles on the training windows), and ETS,
    Theta and ARIMA (StatsForecast's own intervals, from the same fit as their forecasts).
    With past covariates (``data.csv_feature_columns``), ``ridge`` also gives
    ``ridge_features``: the ridge on the value windows beside the features' windows."""
    s, W, H, off = prep.split, prep.split.window, prep.split.horizon, prep.offset
    test, train = s.ends("test"), s.ends("train")
    first = prep.first_target_level(test)                 # (N,) level index
    last = prep.levels[first - 1]
    lo, hi = s.bounds("train")
    train_levels = prep.levels[lo:hi + off]
    steps = np.arange(H)
    pairs = Q.intervals(taus)
    out: dict[str, np.ndarray | None] = {}
    quant: dict[str, np.ndarray] = {}
    warnings = []
    for name in names:
        if name == "naive":
            out[name] = M.naive_forecast(last, H)
            if taus:
                from scipy.special import ndtri  # the standard normal's quantile function
                sigma = float(np.std(np.diff(train_levels), ddof=1))
                spread = sigma * np.sqrt(steps + 1)            # random walk: sqrt(h) growth
                quant[name] = out[name][..., None] + \
                    spread[None, :, None] * ndtri(np.asarray(taus))
        elif name == "seasonal_naive":
            if season:
                assert first.min() - season >= 0, "checked by preflight.check"
                out[name] = M.seasonal_naive_forecast(prep.levels, first, H, season)
        elif name == "mean":
            out[name] = M.mean_forecast(train_levels, len(test), H)
        elif name == "ridge":
            x_tr, y_tr = gather_windows(prep.z, train, W, H)
            x_te, _ = gather_windows(prep.z, test, W, H)
            fit = M.ridge_model(x_tr, y_tr, ridge_alpha)
            out[name] = model_levels(prep, M.ridge_predict(fit, x_te), last)
            if taus:  # residual quantiles of the same fit on its training windows, per step
                f_tr = prep.first_target_level(train)
                y_lv = prep.levels[f_tr[:, None] + steps[None, :]]
                fit_tr = model_levels(prep, M.ridge_predict(fit, x_tr), prep.levels[f_tr - 1])
                resid = np.quantile(y_lv - fit_tr, taus, axis=0)   # (Q, H)
                quant[name] = out[name][..., None] + resid.T[None, :, :]
            if prep.n_features:  # the same ridge seeing the past covariates' windows too
                fx_tr, fx_te = (np.concatenate([x, _feature_windows(prep, e)], axis=1)
                                for x, e in ((x_tr, train), (x_te, test)))
                fit_f = M.ridge_model(fx_tr, y_tr, ridge_alpha)
                out["ridge_features"] = model_levels(prep, M.ridge_predict(fit_f, fx_te), last)
        else:  # ets, theta, arima: on the levels, parameters from the training part
            try:
                if taus:
                    mean, bands = S.forecast(name, prep.levels, hi + off, first, H, season,
                                             [pct for _, _, pct in pairs])
                    q = np.repeat(mean[..., None], len(taus), axis=-1)
                    for lo_i, hi_i, pct in pairs:
                        q[..., lo_i], q[..., hi_i] = bands[pct]
                    out[name], quant[name] = mean, q
                else:
                    out[name] = S.forecast(name, prep.levels, hi + off, first, H, season)
            except S.BaselineFailed as err:
                out[name] = None
                warnings.append(f"warning: baseline {name} could not be fitted ({err}); "
                                "it is reported as null")
    return Baselines(out, quant, tuple(taus), warnings, list(names),
                     fitted_settings(prep, ridge_alpha, season))


def save_baselines(path: str | Path, b: Baselines) -> None:
    """One npz without pickles: ``forecast:NAME`` and ``quantiles:NAME`` arrays, the names in
    order (failed ones included), the names asked for, the quantile levels and the warnings."""
    arrays = {f"forecast:{n}": f for n, f in b.forecasts.items() if f is not None}
    arrays.update({f"quantiles:{n}": q for n, q in b.quantiles.items()})
    write_npz(path, names=np.array(list(b.forecasts), dtype=str),
              asked=np.array(b.asked, dtype=str),
              taus=np.asarray(b.taus, dtype=np.float64),
              warnings=np.array(b.warnings, dtype=str),
              fitted_for=np.array(json.dumps(b.fitted_for, sort_keys=True)), **arrays)


def load_baselines(path: str | Path) -> Baselines:
    z = read_npz(path)
    names = [str(n) for n in z["names"]]
    return Baselines({n: z.get(f"forecast:{n}") for n in names},
                     {n: z[f"quantiles:{n}"] for n in names if f"quantiles:{n}" in z},
                     tuple(float(t) for t in z["taus"]), [str(w) for w in z["warnings"]],
                     [str(n) for n in z["asked"]],
                     json.loads(str(z["fitted_for"])) if "fitted_for" in z else {})


def check_matches(b: Baselines, names: list[str], taus, prep: Prepared, ridge_alpha: float,
                  season: int) -> None:
    """The saved baselines were fitted for these names, quantile levels, ridge strength,
    season and prepared data (a stage run by hand, or ``dvc repro -s evaluate``, could
    otherwise score stale ones)."""
    if b.asked != list(names) or tuple(b.taus) != tuple(taus):
        raise UserInputError(
            f"the baselines file was fitted for {b.asked} at quantile levels {list(b.taus)}, "
            f"but evaluate.baselines is {list(names)} and the model's levels {list(taus)}: "
            "run `dvc repro` so the baselines stage refits them")
    now = fitted_settings(prep, ridge_alpha, season)
    if b.fitted_for != now:
        diff = ", ".join(f"{k} {b.fitted_for.get(k)!r} (now {v!r})" for k, v in now.items()
                         if b.fitted_for.get(k) != v)
        raise UserInputError(f"the baselines file was fitted with other settings: {diff}; "
                             "run `dvc repro` so the baselines stage refits them")
