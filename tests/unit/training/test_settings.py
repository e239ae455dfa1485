"""The training's settings: the library's own type, its defaults the schema's."""
from __future__ import annotations

from dataclasses import fields

import pytest

from attn_forecast.config.load import parse_params
from attn_forecast.config.schema import PRIOR_TRAIN, TrainParams
from attn_forecast.setup.training import train_settings
from attn_forecast.training.settings import TrainSettings


def test_the_schema_takes_each_training_default_from_the_library_type():
    schema = TrainParams()
    for f in fields(TrainSettings):
        assert getattr(schema, f.name) == getattr(TrainSettings(), f.name), f.name


def test_of_keeps_the_training_keys_and_leaves_the_execution_ones_out():
    got = TrainSettings.of(TrainParams(lr=0.01, device="cpu", threads=2, live=True,
                                       losses=["mae"]).model_dump())
    assert got == TrainSettings(lr=0.01)
    assert set(got.to_dict()) == {f.name for f in fields(TrainSettings)}


def test_the_pipeline_builds_them_from_params_with_auto_as_given():
    p = parse_params({"train": {"seed": 7, "lr": 0.02, "batch_size": "auto", "ensemble": 1}})
    assert train_settings(p) == TrainSettings(seed=7, lr=0.02, batch_size="auto", ensemble=1)


def test_the_prior_training_is_the_same_type():
    p = parse_params({})
    t = TrainSettings.of(p.pretrain.train.model_dump())
    assert {k: getattr(t, k) for k in PRIOR_TRAIN} == PRIOR_TRAIN


def test_they_are_frozen():
    with pytest.raises(AttributeError):
        TrainSettings().lr = 1.0  # type: ignore[misc]
