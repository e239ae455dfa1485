"""A series' season and a window to match, from the training part's autocorrelation.

``evaluate.season: auto`` and ``prepare.window: auto`` use these, on the training parts only
(the prepare stage records what was chosen, and why, in store.json and prints it). Many
series: the most common season among the training parts of up to 500 series spread over the
data, and a window for the median training length; one series is the case of one.

The season is read off the autocorrelation of the one-step changes (differencing removes a
trend, which would otherwise hold the autocorrelation high at every lag): the highest local
maximum above the noise band, at a lag no longer than a third of the training part (so at
least three seasons were seen). The band is the usual 95 % one (about 2 / sqrt(n)) widened for
the number of lags tried (Bonferroni: z = Phi^-1(1 - 0.025 / lags) / sqrt(n)), since a random
walk's changes cross 2 / sqrt(n) somewhere by chance. None: no season (0). A long series is
read on its most recent :data:`MAX_VALUES` training changes, up to lag :data:`MAX_LAG` (a
window spans at most 512 steps, so a longer season could not be used).
"""
from __future__ import annotations

import numpy as np

MIN_WINDOW, MAX_WINDOW = 16, 512
MAX_VALUES, MAX_LAG = 1_000_000, 10_000


def autocorrelation(x: np.ndarray, max_lag: int) -> np.ndarray:
    """Sample autocorrelation at lags 0 .. max_lag (by FFT, zero-padded to a power of two at
    least 2n - 1 long: the linear autocovariance, and fast for every n)."""
    x = np.asarray(x, dtype=np.float64) - np.mean(x)
    n = len(x)
    size = 1 << max(1, int(2 * n - 1).bit_length())
    spec = np.fft.rfft(x, n=size)
    acov = np.fft.irfft(spec * np.conj(spec), n=size)[:max_lag + 1] / n
    return acov / acov[0] if acov[0] > 0 else np.zeros(max_lag + 1)


def detect_season(train_values: np.ndarray) -> dict:
    """``{"season": lag or 0, "acf": value at it, "band": noise band, "reason": text}``."""
    d = np.diff(np.asarray(train_values[-MAX_VALUES - 1:], dtype=np.float64))
    n = len(d)
    max_lag = min(n // 3, MAX_LAG)
    band = None
    if max_lag < 2:
        return {"season": 0, "acf": None, "band": band,
                "reason": f"{n + 1} training values: too few to see a season"}
    from scipy.special import ndtri  # the standard normal's quantile function
    band = float(-ndtri(0.025 / max_lag) / np.sqrt(n))
    acf = autocorrelation(d, max_lag)
    k = np.arange(2, max_lag)
    peaks = k[(acf[k] >= acf[k - 1]) & (acf[k] >= acf[k + 1]) & (acf[k] > band)].tolist()
    if not peaks:
        return {"season": 0, "acf": None, "band": band,
                "reason": "no autocorrelation peak of the one-step changes above the noise band "
                          f"({band:.3f}) up to lag {max_lag}"}
    best = max(peaks, key=lambda k: acf[k])
    return {"season": int(best), "acf": float(acf[best]), "band": band,
            "reason": f"highest autocorrelation peak of the one-step changes: lag {best} "
                      f"({acf[best]:.3f}, noise band {band:.3f})"}


def window_for(season: int, n_train: int, patch_len: int = 0, patch_stride: int = 0) -> dict:
    """Two seasons of context, at least 16 steps and one whole season, at most 512 steps and
    half the training part (so that there are windows to learn from); 24 steps without a
    season. With patches, rounded up so that they tile it."""
    want = 2 * season if season else 24
    low = max(MIN_WINDOW, season)
    window = int(max(min(want, MAX_WINDOW, n_train // 2), low))
    if patch_len:
        stride = patch_stride or patch_len
        window = max(window, patch_len)
        window += -(window - patch_len) % stride
    why = (f"two seasons of {season} steps" if season else "no season found: 24 steps") + \
        (f", capped to {window}" if window < want else f", raised to {window}"
         if window > want else "") + (" (patches tile it)" if patch_len else "")
    return {"window": window, "reason": why}


def choose(y: np.ndarray, offsets: np.ndarray, n_train: np.ndarray, window: int | str,
           patch_len: int = 0, patch_stride: int = 0, sample: int = 500,
           periods: np.ndarray | None = None) -> dict:
    """The season of the training parts (``n_train`` (S,) leading values of each series),
    always recorded; with ``window`` auto, the window to match. Each with its reason. Data that
    knows its series' seasonal ``periods`` (a competition's) gives the most common of them."""
    from .windows import spread
    if periods is not None:
        vals, counts = np.unique(periods, return_counts=True)
        season = int(vals[np.argmax(counts)])
        season = season if season > 1 else 0
        out = {"season": {"season": season, "reason": (
            f"the data's own seasonal period, the most common of {len(periods)} series': "
            + (f"{season}" if season else "1, no season"))}}
        if window == "auto":
            out["window"] = window_for(season, int(np.median(n_train)), patch_len, patch_stride)
        return out
    picked = spread(np.arange(len(n_train)), sample)
    found = [detect_season(y[offsets[i]:offsets[i] + n_train[i]]) for i in picked]
    vals, counts = np.unique([f["season"] for f in found], return_counts=True)
    season = int(vals[np.argmax(counts)])
    if len(picked) == 1:
        out = {"season": found[0]}
    else:
        out = {"season": {"season": season, "reason": (
            f"the most common season of {len(picked)} series' training parts: "
            + (f"lag {season} ({int(counts.max())} series)" if season else
               f"none ({int(counts.max())} series show no season)"))}}
    if window == "auto":
        out["window"] = window_for(season, int(np.median(n_train)), patch_len, patch_stride)
    return out
