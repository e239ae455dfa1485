"""The pretraining corpus: synthetic series drawn on the fly from a seed, by an equal mixture
of generators (and, optionally, the train parts of a competition's series).

- ``kernel``: Gaussian-process samples from a random composition of kernels (periodic,
  linear, RBF, rational quadratic, white noise, combined by + and x), as Chronos' KernelSynth.
- ``ets``: simulated exponential smoothing: a level, a (damped) trend and an additive or
  multiplicative season, each updated by random smoothing weights from its errors.
- ``arima``: simulated (seasonal) ARIMA: a stationary ARMA(p <= 2, q <= 2), integrated zero to
  two times, with a seasonal AR term or a seasonal difference; random walks among them.
- ``trend_season``: a linear, exponential or piecewise-linear trend times (or plus) a sum of
  harmonics of one or two periods, with Gaussian or heavy-tailed noise (ForecastPFN, TimesFM).

Any series may get level shifts and spikes (``shift_prob``, ``spike_prob``). Periods are
drawn from the calendar's (4, 7, 12, 24, 52 and others), so a model trained on the corpus
meets the seasons of quarterly, weekly, monthly, daily and hourly data. Every series is
standardized by its own mean and std (the losses of different series are comparable), in
float32. Nothing here reads a file unless ``real`` names a competition.
"""
from __future__ import annotations

import numpy as np

GENERATORS = ("kernel", "ets", "arima", "trend_season")
PERIODS = np.array([4, 7, 12, 24, 52, 5, 6, 10, 14, 30, 48])
PERIOD_P = np.array([4, 4, 4, 3, 2, 1, 1, 1, 1, 1, 1], dtype=float)


def _period(rng: np.random.Generator) -> int:
    """A seasonal period: mostly the calendar's, sometimes any from 2 to 64."""
    if rng.random() < 0.2:
        return int(rng.integers(2, 65))
    return int(rng.choice(PERIODS, p=PERIOD_P / PERIOD_P.sum()))


def _kernel(rng: np.random.Generator, t: np.ndarray) -> np.ndarray:
    """One kernel matrix of the bank on times ``t`` in [0, 1] (KernelSynth's)."""
    d = t[:, None] - t[None, :]
    kind = rng.choice(["periodic", "periodic", "linear", "rbf", "rq", "white", "constant"])
    if kind == "periodic":
        p = _period(rng) / len(t)
        return np.exp(-2 * np.sin(np.pi * np.abs(d) / p) ** 2 / rng.choice([0.5, 1.0, 2.0]) ** 2)
    if kind == "linear":
        c = rng.uniform(-0.5, 1.0)
        return (t[:, None] - c) * (t[None, :] - c) * rng.uniform(0.5, 2.0)
    if kind == "rbf":
        return np.exp(-d ** 2 / (2 * rng.choice([0.02, 0.05, 0.1, 0.3, 1.0]) ** 2))
    if kind == "rq":
        a, ell = rng.choice([0.1, 1.0, 10.0]), rng.choice([0.05, 0.1, 0.3, 1.0])
        return (1 + d ** 2 / (2 * a * ell ** 2)) ** -a
    if kind == "white":
        return np.eye(len(t)) * rng.choice([0.01, 0.05, 0.1])
    return np.full((len(t), len(t)), rng.uniform(0.1, 1.0))


def kernel(rng: np.random.Generator, n: int) -> np.ndarray:
    t = np.linspace(0, 1, n)
    k = _kernel(rng, t)
    for _ in range(int(rng.integers(0, 3))):
        k = k + _kernel(rng, t) if rng.random() < 0.5 else k * _kernel(rng, t)
    k = k + 1e-4 * np.eye(n) * max(float(np.trace(k)) / n, 1e-6)
    try:
        chol = np.linalg.cholesky(k)
    except np.linalg.LinAlgError:   # not positive definite to working precision
        w, v = np.linalg.eigh(k)
        chol = v * np.sqrt(np.clip(w, 0, None))
    return chol @ rng.standard_normal(n)


def ets(rng: np.random.Generator, n: int) -> np.ndarray:
    m = _period(rng) if rng.random() < 0.7 else 0
    alpha, beta = rng.uniform(0.05, 0.6), rng.uniform(0, 0.15) if rng.random() < 0.6 else 0.0
    gamma, phi = rng.uniform(0, 0.3), rng.uniform(0.85, 1.0)
    mult = rng.random() < 0.4
    level, trend = 10.0, rng.normal(0, 0.05)
    season = rng.normal(0, rng.uniform(0.5, 3), m) if m else np.zeros(1)
    season -= season.mean()
    sigma = rng.uniform(0.05, 1.0)
    out = np.empty(n)
    for i in range(n):
        s = season[i % m] if m else 0.0
        e = rng.normal(0, sigma)
        out[i] = level * (1 + s / 10) + e if mult else level + trend + s + e
        level, trend = level + phi * trend + alpha * e, phi * trend + beta * alpha * e
        if m:
            season[i % m] = s + gamma * e
    return out


def arima(rng: np.random.Generator, n: int) -> np.ndarray:
    burn = 50
    p, q = int(rng.integers(0, 3)), int(rng.integers(0, 3))
    roots = rng.uniform(1.2, 4.0, p) * rng.choice([-1, 1], p)   # outside the unit circle
    ar = -np.poly(1 / roots)[1:] if p else np.zeros(0)
    ma = rng.uniform(-0.8, 0.8, q)
    m = _period(rng) if rng.random() < 0.5 else 0
    sar = rng.uniform(0.3, 0.9) if m and rng.random() < 0.5 else 0.0
    e = rng.standard_normal(n + burn + (m or 0))
    x = np.zeros_like(e)
    for i in range(len(e)):
        v = e[i] + sum(ma[j] * e[i - 1 - j] for j in range(q) if i > j)
        v += sum(ar[j] * x[i - 1 - j] for j in range(p) if i > j)
        if sar and i >= m:
            v += sar * x[i - m]
        x[i] = v
    x = x[burn:]
    if m and not sar and rng.random() < 0.5:     # a seasonal difference undone: x_t += x_t-m
        for i in range(m, len(x)):
            x[i] += x[i - m]
    for _ in range(int(rng.choice([0, 1, 1, 2], p=[0.4, 0.25, 0.25, 0.1]))):
        x = np.cumsum(x)
    return x[-n:]


def trend_season(rng: np.random.Generator, n: int) -> np.ndarray:
    t = np.arange(n, dtype=float)
    kind = rng.choice(["linear", "exp", "piecewise"])
    if kind == "linear":
        trend = 1 + rng.normal(0, 0.5) * t / n
    elif kind == "exp":
        trend = np.exp(rng.normal(0, 0.7) * t / n)
    else:
        knots = np.sort(rng.choice(np.arange(1, n - 1), int(rng.integers(1, 4)), replace=False))
        slopes = rng.normal(0, 1.0, len(knots) + 1) / n
        trend = 1 + np.cumsum(slopes[np.searchsorted(knots, t)])
    season = np.zeros(n)
    for _ in range(int(rng.choice([0, 1, 1, 2]))):
        m = _period(rng)
        for k in range(1, int(rng.integers(1, 4)) + 1):
            a = rng.normal(0, 0.3 / k)
            season += a * np.sin(2 * np.pi * k * t / m + rng.uniform(0, 2 * np.pi))
    sd = rng.uniform(0.01, 0.2)
    noise = rng.standard_t(3, n) * sd / np.sqrt(3) if rng.random() < 0.3 else \
        rng.normal(0, sd, n)
    if rng.random() < 0.5:
        return trend * (1 + season) * (1 + noise)
    return trend + season + noise


def shifts_and_spikes(rng: np.random.Generator, x: np.ndarray, shift_prob: float,
                      spike_prob: float) -> np.ndarray:
    sd = float(np.std(np.diff(x))) or 1.0
    if rng.random() < shift_prob:
        at = int(rng.integers(1, len(x)))
        x = x.copy()
        x[at:] += rng.choice([-1, 1]) * rng.uniform(3, 10) * sd
    if rng.random() < spike_prob:
        x = x.copy()
        at = rng.integers(0, len(x), int(rng.integers(1, 4)))
        x[at] += rng.choice([-1, 1], len(at)) * rng.uniform(5, 15, len(at)) * sd
    return x


DRAW = {"kernel": kernel, "ets": ets, "arima": arima, "trend_season": trend_season}


def standardize(x: np.ndarray) -> np.ndarray:
    sd = float(np.std(x))
    return ((x - np.mean(x)) / (sd if sd > 1e-8 else 1.0)).astype(np.float32)


def draw(n_series: int, lengths: tuple[int, int], seed: int, generators=GENERATORS,
         shift_prob: float = 0.1, spike_prob: float = 0.1) -> list[np.ndarray]:
    """``n_series`` standardized series of lengths in ``lengths`` (inclusive), each from a
    generator of ``generators`` in turn (an equal mixture), the same for the same seed."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n_series):
        n = int(rng.integers(lengths[0], lengths[1] + 1))
        x = DRAW[generators[i % len(generators)]](rng, n)
        x = shifts_and_spikes(rng, x, shift_prob, spike_prob)
        out.append(standardize(x) if np.isfinite(x).all() else np.zeros(n, np.float32))
    return out


def competition_train_parts(name: str, subset: str, min_length: int) -> list[np.ndarray]:
    """The train parts of a competition's series before their calibration and validation cuts
    (never the test parts, nor the last two horizons: settings are chosen on the validation
    cut and intervals calibrated on the calibration cut, so a prior must not have seen them),
    standardized: real series for the corpus. Only M3 is allowed (M1 and Tourism are kept for
    independent checks)."""
    from ..data.sources import competition
    frame = competition(name, subset, "calibration")   # the train parts but the last horizon
    out = []
    for _, g in frame.groupby("id", sort=False):
        y = g["value"].to_numpy(dtype=np.float64)
        y = y[:len(y) - int(g["horizon"].iloc[0])]       # and the calibration cut
        if len(y) >= min_length:
            out.append(standardize(y))
    return out
