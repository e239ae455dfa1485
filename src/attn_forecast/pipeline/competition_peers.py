"""Stage peers@<subset>-<peer>'s step: one NeuralForecast network (forecasters/peers.py; the
competition file's ``peers`` section: its steps and seed, and the subset's input size, chosen
on the validation cuts by bench/peers_input.py) trained once, one global model over every
series' training part, forecasting every series' holdout; its own MQLoss quantiles stand, not
calibrated (a calibration cut would train it twice: the leaderboard's row says so); saved
compact."""
from __future__ import annotations

import time

from ..config.load import competition_peers, read_yaml
from ..errors import ParamsError
from ..forecasters.peers import Peer
from ..forecasters.run import run
from ..forecasters.saved import save
from .competition import field_store, subset_params
from ..setup.forecasting import check_data, levels_of

OWN = "its own quantiles (NeuralForecast's MQLoss), not calibrated"


def step(params: str, subset: str, peer: str, out: str) -> None:
    """peers@``subset``-``peer`` -> ``out`` (its forecasts as the leaderboard scores them)."""
    t0 = time.perf_counter()
    p, prof = subset_params(params, subset)
    raw = read_yaml(params).get("peers") or {}   # checked by subset_params (config.load)
    if peer not in raw:
        raise ParamsError(f"{params}: peers has no {peer!r}; give its max_steps and seed")
    peers = competition_peers(raw)
    store = field_store(p, prof)
    season = check_data(p, store)
    f = Peer(peer, peers["input_size"][subset], **peers[peer].model_dump(), levels=levels_of(p))
    record = {"peer": f.settings(), "data": store.key(),
              "intervals": {"forecasters": {peer: {"how": OWN}}}, "interval_fallback": {}}
    fs = run(store, [f], ("test",), levels_of(p), record, season=season)
    save(out, fs, compact=True)
    print(f"peers@{subset}-{peer}: {f.settings()['network']} ({f.settings()['library']}), "
          f"input {f.input_size}, {f.max_steps} steps, seed {f.seed}, on {store.n_series} "
          f"series ({p.data.holdout}): trained in {f.seconds:.0f} s, "
          f"{time.perf_counter() - t0:.0f} s in all -> {out}")
