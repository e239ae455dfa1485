"""Stage model@<subset>'s step: the attention model trained on one subset's series (one
global model: the subset's settings, the competition profile of ``auto``; the setup of
setup/training.py) forecasting every series' holdout; and trained again up to each series'
calibration cut, forecasting that cut, where its quantiles are calibrated; saved compact."""
from __future__ import annotations

import time

from ..forecasters.neural import ModelForecaster
from ..forecasters.run import run
from ..forecasters.saved import save
from .competition import model_store, on_both_cuts
from ..setup.forecasting import parts, levels_of
from ..setup.training import fit


def step(params: str, subset: str, out: str, pretrained: str) -> None:
    """model@``subset`` (fine-tuning the prior at ``pretrained`` where train.init says) ->
    ``out``."""
    t0 = time.perf_counter()
    lines = []

    def forecast(p, store, season):
        fitted = fit(p, store, season, pretrained)
        lines.append(f"{p.data.holdout}: {fitted.line(store)}")
        return run(store, [ModelForecaster(fitted.model, fitted.dist.device)], parts(p, store),
                   levels_of(p), record={"data": store.key()}, season=season)
    fs, _, _ = on_both_cuts(params, subset, model_store, forecast, lambda p, fs: fs.names())
    save(out, fs, compact=True)
    print(f"model@{subset}: {'; '.join(lines)}; {time.perf_counter() - t0:.0f} s in all "
          f"-> {out}")
