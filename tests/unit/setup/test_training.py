"""Unit tests for attn_forecast.setup.training: model settings and device from params."""
from __future__ import annotations

import shutil

import pytest
import torch

from attn_forecast.setup.training import device
from attn_forecast.setup.training import model_settings
from attn_forecast.model.networks import build_model
from attn_forecast.config.load import parse_params
from attn_forecast.errors import ParamsError
from unit.training.helpers import _with_calendar_and_features

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def test_model_settings_from_params_and_the_prepared_data():
    store = _with_calendar_and_features()
    p = parse_params({"model": {"d_model": 16, "n_heads": 2, "quantiles": [0.1, 0.5, 0.9],
                                "pooling": "last"}})
    s = model_settings(p, store, season=7)
    assert (s.window, s.horizon, s.n_time_features, s.n_features) == (14, 3, 4, 3)
    assert (s.d_model, s.n_heads, s.pooling, s.quantiles) == (16, 2, "last", (0.1, 0.5, 0.9))
    assert s.season == 0                                 # only a seasonal norm reads it
    seasonal = parse_params({"model": {"instance_norm": "seasonal"}})
    got = model_settings(seasonal, store, season=7)
    assert (got.instance_norm, got.season) == ("seasonal", 7)
    none = model_settings(seasonal, store, season=0)
    assert (none.instance_norm, none.season) == ("last", 0)   # no season: the last value
    build_model(got)(torch.zeros(2, 14), cal=(torch.zeros(2, 14, 7), torch.zeros(2, 3, 7)))


def test_training_device_and_the_settings_it_cannot_run(monkeypatch):
    assert device(parse_params({"train": {"device": "cpu"}}).train).type == "cpu"
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert device(parse_params({}).train) == torch.device("cpu")
    with pytest.raises(ParamsError, match="train.device is cuda but no CUDA device"):
        device(parse_params({"train": {"device": "cuda"}}).train)
    monkeypatch.setattr(shutil, "which", lambda name: None)
    with pytest.raises(ParamsError, match="train.compile on CPU needs a C/C.. compiler"):
        device(parse_params({"train": {"compile": True}}).train)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    assert device(parse_params({}).train) == torch.device("cuda")
    with pytest.raises(ParamsError, match="train.nproc is 2 but only 1 CUDA device"):
        device(parse_params({"train": {"nproc": 2}}).train)
