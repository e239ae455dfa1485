"""The model as a forecaster: a trained model's (or the prior's) forecasts of a store's
windows, in levels, with an ensemble's members and a quantile head's quantiles."""
from __future__ import annotations

import numpy as np
import torch

from ..model.networks import Ensemble
from ..training.batches import rows_of
from ..training.loop import predict
from .protocol import Forecast, at_levels


class ModelForecaster:
    """A trained model's forecasts of a store's windows, in levels (the ensemble's mean, and
    each member; a quantile head's quantiles, at the levels asked for: interpolated between
    its own levels, extended past them; a point model has none of its own)."""
    name = "model"

    def __init__(self, model: torch.nn.Module, device: torch.device | str = "cpu") -> None:
        self.model, self.device = model, torch.device(device)

    def fit(self, store) -> list[str]:
        return []   # trained by the train stage

    def forecast(self, store, ends, levels=()) -> Forecast:
        z = torch.from_numpy(np.asarray(store.z)).to(self.device)
        side = torch.from_numpy(np.asarray(store.side)).to(self.device) \
            if store.side is not None else None
        e = torch.from_numpy(np.asarray(ends)).to(self.device)
        rows = rows_of(store, self.device)

        def run(m: torch.nn.Module, quantiles: bool = False) -> np.ndarray:
            out = predict(m, z, e, m.settings.window, store.horizon, cal=side,
                          quantiles=quantiles, rows=rows).cpu().numpy()
            return store.to_y(out, ends)
        y = list(self.model.settings.quantiles)
        quant = run(self.model, True) if y else None
        if quant is not None and levels:    # the levels asked for, from the head's
            quant = at_levels(quant, y, levels)
        members = np.stack([run(m) for m in self.model.members]) \
            if isinstance(self.model, Ensemble) else None
        return Forecast(run(self.model), quant, members)
