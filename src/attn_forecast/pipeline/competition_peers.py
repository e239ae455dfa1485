"""Stage peers@<subset>-<peer>'s step: one NeuralForecast network (forecasters/peers.py; the
competition file's ``peers`` section: its steps and seed, and the subset's input size, chosen
on the validation cuts by bench/peers_input.py), one global model over every series' training
part, trained twice as every competition stage forecasts (competition.on_both_cuts): on the
holdout's training parts, and on the calibration cut's (the series up to one horizon before the
validation cut), so its quantiles are calibrated on the cut as every other row's are. Its own
MQLoss quantiles of the holdout stay beside, as a second row (``<peer>_raw``,
names.raw_row). Saved compact."""
from __future__ import annotations

import time

from ..config.load import competition_peers, read_yaml
from ..errors import ParamsError
from ..forecasters.names import raw_row
from ..forecasters.peers import Peer
from ..forecasters.run import run
from ..forecasters.saved import save
from .competition import field_store, on_both_cuts
from ..setup.forecasting import levels_of

OWN = "its own quantiles (NeuralForecast's MQLoss), not calibrated"


def step(params: str, subset: str, peer: str, out: str) -> None:
    """peers@``subset``-``peer`` -> ``out`` (its forecasts as the leaderboard scores them: the
    calibrated row and the raw one)."""
    t0 = time.perf_counter()
    raw = read_yaml(params).get("peers") or {}   # checked by subset_params (config.load)
    if peer not in raw:
        raise ParamsError(f"{params}: peers has no {peer!r}; give its max_steps and seed")
    peers = competition_peers(raw)
    trained, made = [], []           # the holdout's, then the calibration cut's

    def forecast(p, store, season):
        f = Peer(peer, peers["input_size"][subset], **peers[peer].model_dump(),
                 levels=levels_of(p))
        record = {"peer": f.settings(), "data": store.key()}
        made.append(run(store, [f], ("test",), levels_of(p), record, season=season))
        trained.append(f)
        return made[-1]

    fs, p, store = on_both_cuts(params, subset, field_store, forecast,
                                lambda p, fs: fs.names())
    fs.forecasts[raw_row(peer)] = {"test": made[0].forecasts[peer]["test"]}
    fs.record["intervals"]["forecasters"][raw_row(peer)] = {"how": OWN}
    save(out, fs, compact=True)
    f, cut = trained
    print(f"peers@{subset}-{peer}: {f.settings()['network']} ({f.settings()['library']}), "
          f"input {f.input_size}, {f.max_steps} steps, seed {f.seed}, on {store.n_series} "
          f"series ({p.data.holdout}; calibrated on its calibration cut, its own quantiles "
          f"beside as {raw_row(peer)}): trained in {f.seconds:.0f} s and "
          f"{cut.seconds:.0f} s, {time.perf_counter() - t0:.0f} s in all -> {out}")
