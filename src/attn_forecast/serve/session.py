"""The model session: the served bundle in memory (the ONNX network in onnxruntime, the
blend, the intervals) and a request's forecast, made by evaluation/outlook.py as the forecast
command makes it, so both give the same numbers for the same history.

    decode -> validate (Job, or BadRequest naming the field) -> the network, batched over the
    request's series -> the forecaster asked for (the model: batched; the blend or a member:
    refitted per series) -> every step's quantiles -> the answer (plain data)

Nothing is kept between requests: a request that fails changes nothing a later one gets.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from ..data import transforms
from ..data.frequency import next_times
from ..errors import UserInputError
from ..forecasters.names import BLEND
from ..evaluation.outlook import (far_from, grown, lag_of, network_future, outlook,
                                   scaler_of, series_quantiles)
from ..forecasters.future import future
from ..forecasters.protocol import at_levels
from ..forecasters.statistical import FitFailed
from .schemas import BadRequest, ForecastRequest

MAX_H = 1_000   # steps a request may ask for (a recursive forecast of more takes seconds)


@dataclass
class Job:
    """A validated request: each series' id, history (float64), time stamps (numbers, or
    datetime64 with their output format) and the future's stamps; what to forecast."""
    ids: list[str]
    histories: list[np.ndarray]
    times: list[np.ndarray] | None      # only for a model with calendar inputs
    future: list[list]                  # each series' h future time stamps
    h: int
    levels: tuple[float, ...]           # the quantile levels to return
    forecaster: str


class Session:
    """One served bundle (serve/artifacts.py), ready to answer requests; thread-safe."""

    def __init__(self, manifest: dict, onnx: bytes, identity: dict, threads: int = 1,
                 max_h: int = MAX_H) -> None:
        import onnxruntime as ort
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = threads
        opts.inter_op_num_threads = 1
        opts.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        self.ort = ort.InferenceSession(onnx, opts, providers=["CPUExecutionProvider"])
        d = manifest["model"]
        if d.get("features"):
            raise UserInputError(f"this model reads past covariates ({', '.join(d['features'])})"
                                 ": the service forecasts from values alone; use `attn-forecast "
                                 "forecast`, or train without data.csv_feature_columns")
        # the prepared data's record as evaluation/outlook.py reads it
        self.meta = {**d, "series": d["series_scalers"], "features": d.get("features", [])}
        self.window, self.H = int(d["window"]), int(d["horizon"])
        self.head_levels = tuple(d["quantiles"])
        self.outputs = ["quantiles"] if self.head_levels else ["forecast"]
        self.inputs = {i.name for i in self.ort.get_inputs()}
        self.blend = manifest.get("blend")
        self.iv = _with_arrays(manifest.get("intervals"))
        self.levels = tuple(self.iv["levels"]) if self.iv and self.iv.get("levels") else \
            self.head_levels
        self.forecasters = tuple(manifest["forecasters"])
        self.default = manifest["default"]
        self.identity = identity
        self.brief = {k: identity.get(k) for k in ("rev", "commit")} | \
            {"onnx_md5": manifest["onnx"]["md5"]}
        self.need = int(d["context"]) + transforms.offset(d["transform"])
        self.max_h = max_h
        self.season = int((self.blend or self.iv or {}).get("season", 0) or 0)

    def warm(self) -> None:
        """Do once what a first request would otherwise wait for: onnxruntime's first run and
        the compilation (numba) of every member the blend refits."""
        shapes = {i.name: [d if isinstance(d, int) else 1 for d in i.shape]
                  for i in self.ort.get_inputs()}
        self.ort.run(self.outputs, {n: np.ones(s, dtype=bool) if n == "seen" else
                                    np.zeros(s, dtype=np.float32) for n, s in shapes.items()})
        period = max(self.season, 1)
        t = np.arange(max(6 * period, 60), dtype=np.float64)
        y = 10 + np.sin(2 * np.pi * t / period if period > 1 else t / 7) + 0.01 * (t % 3)
        for m in self.forecasters:
            if m not in (BLEND, "model"):
                try:
                    future(m, self.season, y, self.H, self.levels)
                except FitFailed:
                    pass

    # ------------------------------------------------------------ the network
    def run(self, z: np.ndarray, seen: np.ndarray | None, side: tuple | None) -> np.ndarray:
        """evaluation/outlook.py's runner: onnxruntime on the batch."""
        feed = {"window": z}
        if side is not None:
            feed["calendar_inputs"], feed["calendar_targets"] = side
        if seen is not None:
            feed["seen"] = seen
        out = self.ort.run(self.outputs, feed)[0]
        return (out if self.head_levels else out[..., None]).astype(np.float64)

    # ------------------------------------------------------------ a request
    def validate(self, req: ForecastRequest) -> Job:
        """The request checked field by field: a BadRequest names the first bad one."""
        if not req.series:
            raise BadRequest("series: empty; send at least one series")
        h = self.H if req.h is None else req.h
        if not 1 <= h <= self.max_h:
            raise BadRequest(f"h: must be from 1 to {self.max_h:,} (the model's horizon is "
                             f"{self.H}), got {h}")
        levels = self._levels(req.quantiles)
        name = req.forecaster or self.default
        if name not in self.forecasters:
            raise BadRequest(f"forecaster: {name!r} is not served; one of "
                             f"{', '.join(self.forecasters)}")
        calendar = bool(self.meta["time_features"])
        ids, hist, times, future, seen_ids = [], [], [], [], set()
        for i, s in enumerate(req.series):
            at = f"series[{i}]"
            if not s.id:
                raise BadRequest(f"{at}.id: empty; give each series a name")
            if s.id in seen_ids:
                raise BadRequest(f"{at}.id: {s.id!r} appears twice; ids must be unique in a "
                                 "request")
            seen_ids.add(s.id)
            y = np.asarray(s.values, dtype=np.float64)
            if len(y) < self.need:
                raise BadRequest(f"{at}.values: {len(y)} values; this model needs at least "
                                 f"{self.need} (its context of {self.need} steps)"
                                 if len(y) else f"{at}.values: empty; this model needs at "
                                 f"least {self.need} values")
            bad = ~np.isfinite(y)
            if bad.any():
                k = int(np.flatnonzero(bad)[0])
                raise BadRequest(f"{at}.values[{k}]: {y[k]} is not a finite number")
            if self.meta["transform"] == "log_return" and (y <= 0).any():
                k = int(np.flatnonzero(y <= 0)[0])
                raise BadRequest(f"{at}.values[{k}]: {y[k]}; this model (transform "
                                 "log_return) needs positive values")
            t, fut = _stamps(s, len(y), h, at, calendar)
            ids.append(s.id)
            hist.append(y)
            times.append(t)
            future.append(fut)
        return Job(ids, hist, times if calendar else None, future, h, levels, name)

    def _levels(self, asked: list[float] | None) -> tuple[float, ...]:
        if asked is None:
            return self.levels
        if not self.levels and asked:
            raise BadRequest("quantiles: this model has no quantile levels (no intervals, no "
                             "quantile head); leave quantiles out")
        have = {round(t, 6): t for t in self.levels}
        for k, tau in enumerate(asked):
            if round(tau, 6) not in have:
                raise BadRequest(f"quantiles[{k}]: {tau:g} is not a calibrated level; a subset "
                                 f"of {', '.join(f'{t:g}' for t in self.levels)}")
        return tuple(sorted({have[round(t, 6)] for t in asked}))

    def network(self, job: Job) -> tuple[np.ndarray, np.ndarray | None]:
        """The network's values (B, h) and quantile head (B, h, Q) (None: a point model)."""
        scalers = [scaler_of(self.meta, sid, y) for sid, y in zip(job.ids, job.histories)]
        try:
            return network_future(self.run, self.meta, self.window, self.head_levels,
                                  job.histories, job.times, job.h, scalers)
        except UserInputError as err:     # a check the validation already made, worded there
            raise BadRequest(str(err)) from None

    def answer(self, job: Job) -> dict:
        """The whole answer (plain data and arrays): the model's batched, any other
        forecaster's refitted series by series (seconds: run it off the event loop)."""
        values, head = self.network(job)
        if job.forecaster == "model":
            quant, how = self._model_quantiles(job, values, head)
            lines = [""] * len(job.ids)
        else:
            quant, lines, hows = [], [], set()
            for i, (sid, y) in enumerate(zip(job.ids, job.histories)):
                v, q, h, used = outlook(job.forecaster, self.head_levels, self.H, values[i],
                                        head[i] if head is not None else None, self.blend,
                                        self.iv, sid, y, job.h, lag_of(self.iv, sid))
                values[i] = v
                quant.append(q)
                lines.append(used)
                hows.add(h)
            quant = None if any(q is None for q in quant) else np.stack(quant)
            how = "; ".join(sorted(hows))
        return self._encode(job, values, quant, how, lines)

    def _model_quantiles(self, job: Job, values: np.ndarray, head: np.ndarray | None):
        """The model's quantiles of every series at once, as evaluation.outlook.outlook makes
        one series' (the same arithmetic, element by element)."""
        levels = tuple(self.iv["levels"]) if self.iv and self.iv.get("levels") else ()
        head = grown(values, head, self.H) if head is not None else None
        if not levels:
            return head, ("the model's, the quantile head's own" if head is not None else "")
        raw = at_levels(head, self.head_levels, levels) if head is not None else None
        quant, how = series_quantiles("model", values, raw, self.iv, job.histories,
                                      self.season, [lag_of(self.iv, s) for s in job.ids])
        return quant, f"the model's, {how}"

    def _encode(self, job: Job, values: np.ndarray, quant: np.ndarray | None, how: str,
                lines: list[str]) -> dict:
        have = list(self.levels if self.iv and self.iv.get("levels") else self.head_levels)
        cols = [(f"{t:g}", have.index(t)) for t in job.levels] if quant is not None else []
        calibrated = np.arange(1, job.h + 1) <= self.H if "calibrated" in how else \
            np.zeros(job.h, dtype=bool)
        series = []
        qt = np.ascontiguousarray(quant.transpose(0, 2, 1)) if cols else None   # (B, Q, h)
        for i, sid in enumerate(job.ids):
            one = {"id": sid, "timestamps": job.future[i], "forecast": values[i],
                   "quantiles": {k: qt[i, j] for k, j in cols},
                   "calibrated": calibrated}
            if lines[i]:
                one["blend"] = lines[i]
            warn = far_from(job.histories[i], self.meta, scaler_of(self.meta, sid,
                                                                   job.histories[i]), sid) \
                if sid in self.meta["series"]["ids"] else []
            if warn:
                one["warnings"] = warn
            series.append(one)
        return {"model": self.brief, "forecaster": job.forecaster, "h": job.h,
                "quantiles": list(job.levels) if quant is not None else [], "how": how,
                "series": series}


def _with_arrays(iv: dict | None) -> dict | None:
    """The intervals record with each forecaster's margins as an array (parsed once)."""
    if not iv:
        return iv
    return {**iv, "forecasters": {n: {**e, **({"margins": np.asarray(e["margins"], dtype=float)}
                                              if e.get("margins") is not None else {})}
                                  for n, e in (iv.get("forecasters") or {}).items()}}


# ---------------------------------------------------------------- time stamps
def _stamps(s, n: int, h: int, at: str, calendar: bool) -> tuple[np.ndarray | None, list]:
    """A series' time stamps (for calendar inputs; else None) and its future's h stamps, as the
    forecast command writes them: numbers by their step, dates as ISO 8601."""
    if s.timestamps is not None:
        if s.start is not None or s.freq is not None:
            raise BadRequest(f"{at}: give timestamps, or start and freq, not both")
        if len(s.timestamps) != n:
            raise BadRequest(f"{at}.timestamps: {len(s.timestamps)} stamps for {n} values; "
                             "one per value")
        t = _parse(s.timestamps, f"{at}.timestamps")
        later = t[1:] > t[:-1]
        if not later.all():
            k = int(np.flatnonzero(~later)[0]) + 1
            show = [x if isinstance(x, str) else f"{x:g}" for x in s.timestamps[k - 1:k + 1]]
            raise BadRequest(f"{at}.timestamps[{k}]: {show[1]} is not after {show[0]}; time "
                             "stamps must increase")
        if calendar and t.dtype.kind != "M":
            raise BadRequest(f"{at}.timestamps: this model reads calendar features; give dates")
        return (t if calendar else None), next_times(t, h).tolist()
    if s.start is None or s.freq is None:
        raise BadRequest(f"{at}: give timestamps (one per value), or start (the first value's) "
                         "and freq")
    if isinstance(s.start, str) != isinstance(s.freq, str):
        raise BadRequest(f"{at}.freq: a date start takes a pandas frequency (D, h, W-SUN, MS, "
                         "QS, YS...), a number start a number step")
    if not isinstance(s.start, str):
        if not (math.isfinite(s.start) and math.isfinite(s.freq) and s.freq > 0):
            raise BadRequest(f"{at}.freq: the step between numeric stamps must be a finite "
                             f"number > 0, got {s.freq}")
        if calendar:
            raise BadRequest(f"{at}.start: this model reads calendar features; give a date")
        future = (s.start + s.freq * np.arange(n, n + h)).tolist()
        return None, future
    stamps = _dates(s.start, s.freq, n + h, at)
    return (np.asarray(stamps[0][:n]) if calendar else None), list(stamps[1][n:])


def _parse(stamps: list, at: str) -> np.ndarray:
    """Time stamps as numbers (float64) or datetime64[s]; a BadRequest for a mix or a stamp
    that is no ISO 8601 date."""
    kinds = {isinstance(x, str) for x in stamps}
    if kinds == {False}:
        t = np.asarray(stamps, dtype=np.float64)
        if not np.isfinite(t).all():
            raise BadRequest(f"{at}: every numeric stamp must be finite")
        return t
    if kinds != {True}:
        raise BadRequest(f"{at}: all dates (ISO 8601 strings) or all numbers, not a mix")
    try:
        return np.asarray(stamps, dtype="datetime64[s]")
    except ValueError:
        import pandas as pd
        try:
            return pd.to_datetime(pd.Series(stamps), format="ISO8601").to_numpy(
                "datetime64[s]")
        except (ValueError, TypeError) as err:
            raise BadRequest(f"{at}: not ISO 8601 dates such as 2024-01-31 or "
                             f"2024-01-31T13:00:00 ({str(err).splitlines()[0]})") from None


def _dates(start: str, freq: str, periods: int, at: str) -> tuple[tuple, tuple]:
    """``periods`` dates from ``start`` every ``freq``: datetime64, and ISO strings in the
    forecast command's format."""
    try:
        return _dates_of(start, freq, periods)
    except ValueError as err:
        raise BadRequest(f"{at}.{err}") from None


@lru_cache(maxsize=4096)
def _dates_of(start: str, freq: str, periods: int) -> tuple[tuple, tuple]:
    """:func:`_dates`, cached (a dashboard asks for the same ones again); a ValueError names
    the field."""
    import pandas as pd
    try:
        offset = pd.tseries.frequencies.to_offset(freq)
    except ValueError:
        raise ValueError(f"freq: {freq!r} is not a pandas frequency such as D, h, 15min, "
                         "W-SUN, B, MS, ME, QS, YS") from None
    try:
        first = pd.Timestamp(start)
    except ValueError:
        raise ValueError(f"start: {start!r} is not an ISO 8601 date such as 2024-01-31") \
            from None
    if first.tzinfo is not None:
        first = first.tz_convert(None)
    if not offset.is_on_offset(first):
        raise ValueError(f"start: {start} is not a date of freq {freq} (the next one is "
                         f"{offset.rollforward(first).isoformat()})")
    times = pd.date_range(first, periods=periods, freq=offset)
    fmt = "%Y-%m-%d" if (times == times.normalize()).all() else "%Y-%m-%dT%H:%M:%S"
    return tuple(times.to_numpy("datetime64[s]")), tuple(times.strftime(fmt))
