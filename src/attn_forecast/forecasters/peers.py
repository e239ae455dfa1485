"""NeuralForecast's networks as forecasters of the field: NHITS, NBEATS, LSTM and PatchTST
(names.PEERS), each one global model over every series' training part, as NeuralForecast's
documentation trains them for a competition: its defaults, except what is stated here.

Stated: the input size (the model's window: the same windows), the step budget (optimizer
steps), the seed, the network's own settings a search chose (peers.<peer>.network), else
window-level robust scaling (``scaler_type="robust"``, the LSTM's default;
NHITS, NBEATS and PatchTST default to none, and M3's levels run from tens to tens of
thousands), short series padded at the start (``start_padding_enabled``: as the model pads a
window), and the loss, NeuralForecast's multi-quantile loss (``MQLoss``) at the run's levels, so
each forecasts its own quantiles beside its median (the point forecast).

Each window is forecast from the values before its origin: every origin is one short series of
its own (the last ``input_size`` values: all these networks read), forecast in one call.
NeuralForecast (and the Ray and Lightning it imports) is the ``peers`` extra, imported only
when a peer is asked for."""
from __future__ import annotations

import contextlib
import logging
import signal
import threading
import time
import warnings

import numpy as np

from ..errors import Interrupted, UserInputError
from .names import PEERS
from .protocol import Forecast, at_levels, nested

EXTRA = "pip install -c constraints.txt -e '.[peers]'"


def library():
    """NeuralForecast's package, or a one-line error naming the extra that installs it."""
    try:
        import neuralforecast
    except ImportError:
        raise UserInputError(f"the NeuralForecast peers ({', '.join(PEERS)}) need NeuralForecast,"
                             f" which is not installed: {EXTRA}") from None
    return neuralforecast


def version() -> str:
    """The library's name and version, as a leaderboard row names it."""
    return f"NeuralForecast {library().__version__}"


@contextlib.contextmanager
def _quiet():
    """Lightning's and NeuralForecast's start-up lines and warnings kept off the stage's output
    (tips, "Seed set to", the trainer's settings): a stage prints its own one line."""
    names = ("lightning", "lightning.pytorch", "lightning_fabric", "pytorch_lightning",
             "neuralforecast")
    before = {n: logging.getLogger(n).level for n in names}
    for n in names:
        logging.getLogger(n).setLevel(logging.ERROR)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        for n, level in before.items():
            logging.getLogger(n).setLevel(level)


def _level(column: str, prefix: str) -> float:
    """An MQLoss output column's quantile level: NHITS-median 0.5, NHITS-lo-80.0 0.1."""
    tail = column[len(prefix) + 1:]
    if tail == "median":
        return 0.5
    side, pct = tail.split("-", 1)
    half = (1 - float(pct) / 100) / 2
    return round(half if side == "lo" else 1 - half, 6)


class Peer:
    """One NeuralForecast network (``names.PEERS[name]``) as a forecaster: fitted once, a global
    model over every series' training part; its median the point forecast, its quantiles its
    own (MQLoss), at the levels asked for (interpolated between its levels)."""
    past_only = False

    def __init__(self, name: str, input_size: int, max_steps: int, seed: int,
                 levels: tuple = (), network: dict | None = None) -> None:
        self.name, self.input_size, self.max_steps, self.seed = name, input_size, max_steps, seed
        self.levels = tuple(sorted({0.5, *(float(t) for t in levels)}))
        # the network's own settings (names.PEER_NETWORK: a search's choice) over the stated
        self.network = {"scaler_type": "robust", **(network or {})}
        self.nf, self.seconds = None, 0.0

    def settings(self) -> dict:
        """What it was built with, as a record keeps it."""
        return {"network": PEERS[self.name], "input_size": self.input_size,
                "max_steps": self.max_steps, "seed": self.seed, **self.network,
                "start_padding_enabled": True, "loss": f"MQLoss({list(self.levels)})",
                "library": version()}

    def _network(self, h: int):
        from neuralforecast import models
        from neuralforecast.losses.pytorch import MQLoss
        return getattr(models, PEERS[self.name])(
            h=h, input_size=self.input_size, max_steps=self.max_steps, random_seed=self.seed,
            start_padding_enabled=True, loss=MQLoss(quantiles=list(self.levels)),
            enable_progress_bar=False, enable_model_summary=False, logger=False,
            enable_checkpointing=False, **self.network)

    def fit(self, store) -> list[str]:
        import pandas as pd
        library()
        from neuralforecast import NeuralForecast
        frames = [pd.DataFrame({"unique_id": i, "ds": np.arange(len(y)), "y": y})
                  for i in range(store.n_series) if len(y := store.train_y(i))]
        t0 = time.perf_counter()
        with _quiet():
            self.nf = NeuralForecast(models=[self._network(store.horizon)], freq=1)
            try:
                self.nf.fit(pd.concat(frames, ignore_index=True))
            except SystemExit:   # Lightning's answer to Ctrl-C: its shutdown, then exit(1)
                if threading.current_thread() is threading.main_thread():
                    signal.signal(signal.SIGINT, signal.default_int_handler)  # it ignored it
                raise Interrupted(f"interrupted while training {PEERS[self.name]}") from None
        self.seconds = time.perf_counter() - t0
        return []

    def forecast(self, store, ends, levels=()) -> Forecast:
        import pandas as pd
        ends = np.asarray(ends, dtype=np.int64)
        h = store.horizon
        if not len(ends):
            return Forecast(np.zeros((0, h)),
                            np.zeros((0, h, len(levels))) if levels else None)
        sid = store.series_of(ends)
        first = store.offsets[sid] + store.cuts.train_start[sid]
        start = np.maximum(first, ends - self.input_size)
        rows = np.concatenate([np.arange(a, e) for a, e in zip(start, ends)])
        copies = pd.DataFrame({"unique_id": np.repeat(np.arange(len(ends)), ends - start),
                               "ds": np.concatenate([np.arange(e - a) for a, e in
                                                     zip(start, ends)]),
                               "y": store.y[rows]})
        with _quiet():
            out = self.nf.predict(df=copies).sort_values(["unique_id", "ds"], kind="stable")
        prefix = PEERS[self.name]
        cols = sorted((c for c in out.columns if c.startswith(prefix + "-")),
                      key=lambda c: _level(c, prefix))
        have = [_level(c, prefix) for c in cols]
        q = out[cols].to_numpy(np.float64).reshape(len(ends), h, len(cols))
        q = nested(q, have)
        point = q[..., have.index(0.5)]
        quant = at_levels(q, have, levels) if levels else None
        return Forecast(point, quant)
