"""Ridge regression on the scaled windows the model sees: one global fit over every series'
training windows, with its residual quantiles as intervals."""
from __future__ import annotations

import numpy as np

from ..data.store import Store
from ..data.windows import flat_inputs, gather, spread
from .protocol import Forecast

RIDGE_WINDOWS = 200_000  # training windows the global ridge is fitted on, at most


def ridge(x: np.ndarray, y: np.ndarray, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """Ridge regression with an intercept, as scikit-learn's ``Ridge(alpha)`` fits it (the
    inputs and targets centred, the penalty on the coefficients only), in closed form:
    the coefficients (F, H) and the intercept (H,). (scikit-learn's import alone took 3 s of
    a stage's time; tests check the two agree.)"""
    x, y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    xm, ym = x.mean(axis=0), y.mean(axis=0)
    xc = x - xm
    gram = xc.T @ xc
    gram[np.diag_indices_from(gram)] += alpha
    coef = np.linalg.solve(gram, xc.T @ (y - ym))
    return coef, ym - xm @ coef


class Ridge:
    """Ridge regression (scikit-learn's, in closed form) on the scaled windows (the model's
    inputs), one global fit over every series' training windows (at most
    :data:`RIDGE_WINDOWS`, spread over them). Its quantiles are the per-step quantiles of its
    residuals on windows it was not fitted on: the last fifth of the training windows, from a
    fit on the rest (the calibration part is calibration's alone)."""

    def __init__(self, alpha: float, features: bool = False) -> None:
        self.alpha, self.features = alpha, features
        self.name = "ridge_features" if features else "ridge"

    def _x(self, store: Store, ends: np.ndarray) -> np.ndarray:
        side = store.side if self.features else None
        return flat_inputs(np.asarray(store.z), side, ends, store.window, store.horizon,
                           store.n_time_features)

    def _fit(self, store: Store, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        _, y = gather(np.asarray(store.z), ends, store.window, store.horizon)
        return ridge(self._x(store, ends), y, self.alpha)

    def _predict(self, fit, store: Store, ends: np.ndarray) -> np.ndarray:
        coef, intercept = fit
        out = [(self._x(store, ends[i:i + 100_000]) @ coef + intercept).reshape(
            -1, store.horizon) for i in range(0, len(ends), 100_000)]
        return np.concatenate(out) if out else np.zeros((0, store.horizon))

    def fit(self, store):
        train = spread(store.ends("train"), RIDGE_WINDOWS)
        self.model = self._fit(store, train)
        self.resid = None
        return []

    def _residuals(self, store: Store) -> np.ndarray:
        """(N, H) scaled residuals of a fit on the first four fifths of the training windows,
        on the last fifth: windows that fit never saw, inside the training part, so the
        calibration part calibrates ridge's intervals once (evaluation/calibration.py), never
        twice."""
        train = spread(store.ends("train"), RIDGE_WINDOWS)
        head = max(1, len(train) * 4 // 5)
        fit, held = self._fit(store, train[:head]), train[head:]
        _, y = gather(np.asarray(store.z), held, store.window, store.horizon)
        return y - self._predict(fit, store, held)

    def forecast(self, store, ends, levels=()):
        z = self._predict(self.model, store, ends)
        point = store.to_y(z, ends)
        if not levels:
            return Forecast(point)
        if self.resid is None:
            self.resid = self._residuals(store)
        shift = np.quantile(self.resid, levels, axis=0).T if len(self.resid) else \
            np.zeros((store.horizon, len(levels)))                 # (H, Q)
        return Forecast(point, store.to_y(z[..., None] + shift[None], ends))
