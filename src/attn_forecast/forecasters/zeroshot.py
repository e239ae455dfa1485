"""The prior zero-shot: the pretrain stage's model forecasting a store's windows as it was
pretrained, for the store's horizon (the first steps of its head), each window read with the
prior's own context (padded before a series' start)."""
from __future__ import annotations

from ..errors import SettingError
from ..model.checkpoint import model_from, read
from ..model.networks import with_horizon
from .neural import ModelForecaster


def load_prior(path: str, horizon: int | None = None):
    """The prior as a model, for ``horizon`` steps (None: its own); a horizon it cannot
    forecast is a one-line error."""
    model = model_from(read(path, "the prior (models/pretrained.pt)"))
    if horizon is None:
        return model
    if horizon > model.settings.horizon:
        raise SettingError(f"<horizon> ({horizon}) is longer than the prior's horizon "
                           f"({model.settings.horizon}): the prior forecasts at most "
                           f"{model.settings.horizon} steps")
    return with_horizon(model, horizon)


class ZeroShot:
    name = "zeroshot"

    def __init__(self, path: str) -> None:
        self.path = path

    def fit(self, store):
        return []

    def forecast(self, store, ends, taus=()):
        return ModelForecaster(load_prior(self.path, store.horizon)).forecast(store, ends, taus)
