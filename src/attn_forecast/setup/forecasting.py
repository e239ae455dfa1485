"""What the forecasting and scoring stages share: the season, the parts and quantile levels
every forecaster forecasts, and the checks of params against the prepared data."""
from __future__ import annotations

from ..config.schema import Params
from ..cpu import cores
from ..engine import Engine
from ..errors import ParamsError
from ..forecasters.names import PEERS


def season(p: Params, auto: dict) -> int:
    """``evaluate.season``, with ``auto`` read from what prepare found in the training parts."""
    if p.evaluate.season == "auto":
        return int(auto.get("season", {}).get("season", 0))
    return int(p.evaluate.season)


def check_data(p: Params, store) -> int:
    """The season (``evaluate.season``, or what prepare found), checked against the prepared
    data before any work: it must not reach before the start of a series."""
    s = season(p, store.auto)
    first = int(store.cuts.test_start.min())  # the earliest test target, in its series
    if s > first:
        raise ParamsError(f"evaluate.season ({s}) reaches before the start of a series; it "
                          f"must be <= {first} here")
    return s


def check_norm(norm: str, season: int, window: int) -> None:
    """A seasonal instance norm reads the last season of each window: the season must fit."""
    if norm == "seasonal" and season > window:
        raise ParamsError(
            f"model.instance_norm seasonal needs a season of at most prepare.window "
            f"({window}), got evaluate.season {season}")


def levels_of(p: Params) -> tuple:
    """The quantile levels every forecaster forecasts and intervals are scored at."""
    return tuple(p.evaluate.quantiles)


def peer_settings(p: Params, name: str) -> dict:
    """A NeuralForecast peer's settings (forecasters/peers.py): the model's window as its
    input size, its own peers.<name> (optimizer steps and seed), the run's levels."""
    return {"input_size": p.prepare.window, **getattr(p.peers, name).model_dump(),
            "levels": levels_of(p)}


def engine_of(p: Params, jobs: int | None = None) -> Engine:
    """Where the statistical field runs (evaluate.engine, evaluate.engine_address): ``jobs``
    local processes (default: one per core), or a Dask cluster (embedded: a worker per
    core)."""
    return Engine(p.evaluate.engine, cores() if jobs is None else jobs,
                  p.evaluate.engine_address)


def parts(p: Params, store) -> tuple:
    """The parts whose windows every forecaster forecasts: the test part, the calibration
    part when intervals are calibrated on it, and the blend's part (the validation part's
    second half) when the blend learns its weights there (and ``store`` has one)."""
    return ("test",) + (("cal",) if p.evaluate.conformal == "split" else ()) \
        + (("blend",) if p.evaluate.blend and store.counts("blend").sum() > 0 else ())


def baselines_record(p: Params, store, season: int) -> dict:
    """What the baselines are fitted with; the evaluate stage checks its own against it (with
    a NeuralForecast peer named: its steps and seed too)."""
    e = p.evaluate
    named = [n for n in PEERS if n in e.baselines]
    peers = {"peers": {n: getattr(p.peers, n).model_dump() for n in named}} if named else {}
    return {"baselines": list(e.baselines), "taus": list(levels_of(p)),
            "ridge_alpha": e.ridge_alpha, "season": season, "parts": list(parts(p, store)),
            "data": store.key(), **peers}
