"""The model's settings out of a params section's dump."""
from __future__ import annotations

from attn_forecast.config.schema import ModelParams
from attn_forecast.model.settings import ModelSettings


def test_of_keeps_the_architecture_and_leaves_the_ensemble_keys_out():
    dump = ModelParams(d_model=16, lookbacks=[4, 8], combine="median",
                       quantiles=[0.1, 0.9]).model_dump()
    got = ModelSettings.of(dump, window=8, horizon=3)
    assert got == ModelSettings(d_model=16, window=8, horizon=3, quantiles=(0.1, 0.9))
    assert isinstance(got.quantiles, tuple) and hash(got)


def test_over_wins_over_the_mapping():
    assert ModelSettings.of({"window": 5, "pooling": "last"}, window=9).window == 9


def test_the_schema_defaults_are_the_model_defaults():
    assert ModelSettings.of(ModelParams().model_dump()) == ModelSettings()
