"""The prior zero-shot: the pretrain stage's model forecasting a store's windows as it was
pretrained, for the store's horizon (the first steps of its head; past its own horizon, rolled
forward a block at a time), each window read with the prior's own context (padded before a
series' start)."""
from __future__ import annotations

from ..model.checkpoint import model_from, read
from ..model.networks import Rollout, with_horizon
from .neural import ModelForecaster


def load_prior(path: str, horizon: int | None = None):
    """The prior as a model, for ``horizon`` steps (None: its own); past its own horizon it
    rolls forward (networks.Rollout: the median fed back, a block at a time)."""
    model = model_from(read(path, "the prior (models/pretrained.pt)"))
    if horizon is None:
        return model
    if horizon > model.settings.horizon:
        return Rollout(model, horizon)
    return with_horizon(model, horizon)


class ZeroShot:
    name = "zeroshot"
    past_only = True     # fitted to nothing here: each forecast reads only the window before it

    def __init__(self, path: str) -> None:
        self.path = path

    def fit(self, store):
        return []

    def forecast(self, store, ends, levels=()):
        return ModelForecaster(load_prior(self.path, store.horizon)).forecast(store, ends, levels)
