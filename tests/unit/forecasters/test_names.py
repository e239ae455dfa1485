"""Unit tests for attn_forecast.forecasters.names: the forecasters' names and the one to use."""
from __future__ import annotations

import ast
import inspect

import numpy as np
import pytest
from pydantic import ValidationError

from attn_forecast.config.schema import Params
from attn_forecast.forecasters import names
from attn_forecast.forecasters.future import future
from attn_forecast.forecasters.names import (BLEND, COMBINATIONS, FUTURE_MEMBERS, NAMES, PEERS,
                                             STAT_FORECASTERS, TO_USE, to_use)
from attn_forecast.forecasters.registry import baselines


@pytest.mark.parametrize("present,want", [
    (["model", "naive", "blend"], "blend"),     # the blend wherever it stands
    (["blend"], "blend"),
    (["naive", "model", "ets"], "model"),
    (["naive", "ets"], "model"),                # the model even where it is not listed
    ([], "model"),
    ({"blend": {}, "model": {}}, "blend"),      # a metrics mapping: its keys
    ({"model", "theta"}, "model"),
    (("model+comb", "comb"), "model"),          # only the names blend and model count
])
def test_to_use_prefers_the_blend_then_the_model(present, want):
    assert to_use(present) == want


def test_the_forecasts_to_use_are_the_blend_then_the_model():
    assert BLEND == "blend" and TO_USE == ("blend", "model")


def test_every_baseline_name_once_in_the_order_they_are_fitted():
    assert len(set(NAMES)) == len(NAMES)
    assert NAMES[:5] == ("naive", "seasonal_naive", "naive2", "mean", "ridge")
    assert NAMES[5:5 + len(STAT_FORECASTERS)] == STAT_FORECASTERS
    assert NAMES[-3 - len(PEERS):] == ("comb", "m4_comb", "zeroshot", *PEERS)
    assert BLEND not in NAMES and "model" not in NAMES


def test_each_combinations_members_are_statistical_forecasters():
    assert COMBINATIONS == {"comb": ("arima", "ets", "ces", "dot"),
                            "m4_comb": ("m4_ses", "m4_holt", "m4_damped")}
    for members in COMBINATIONS.values():
        assert set(members) <= set(STAT_FORECASTERS)


def test_future_members_are_the_baselines_refittable_on_a_whole_series():
    assert set(FUTURE_MEMBERS) <= set(NAMES)
    left_out = set(NAMES) - set(FUTURE_MEMBERS)
    assert left_out == {"ridge", "zeroshot", *COMBINATIONS, *PEERS}
    assert set(STAT_FORECASTERS) <= set(FUTURE_MEMBERS)


@pytest.mark.parametrize("name", [n for n in FUTURE_MEMBERS if n not in STAT_FORECASTERS])
def test_every_simple_future_member_has_a_future_forecast(name):
    y = 5 + np.sin(np.arange(40) / 2.0)
    point, quantiles = future(name, 4, y, 3, (0.1, 0.5, 0.9))
    assert point.shape == (3,) and np.isfinite(point).all()
    assert quantiles.shape == (3, 3) and (np.diff(quantiles, axis=1) >= 0).all()


def test_a_name_outside_the_future_members_is_refused_naming_them():
    with pytest.raises(ValueError) as info:
        future("ridge", 4, np.arange(10.0), 2)
    assert str(info.value) == ("no future forecast for 'ridge': one of "
                               + ", ".join(FUTURE_MEMBERS))


def test_the_registry_builds_a_forecaster_for_every_name_but_the_given_ones():
    """The prior and the NeuralForecast peers are given by whoever runs them."""
    built, unavailable = baselines(list(NAMES), season=4, ridge_alpha=1.0, features=False)
    assert [f.name for f in built] == [n for n in NAMES if n not in ("zeroshot", *PEERS)]
    assert unavailable == {}


def test_the_params_schema_takes_its_names_from_here():
    p = Params.model_validate({"evaluate": {"baselines": list(NAMES),
                                            "blend": ["model", *FUTURE_MEMBERS]}})
    assert tuple(p.evaluate.baselines) == NAMES
    for field, bad in (("baselines", "blend"), ("baselines", "model"), ("blend", "ridge"),
                       ("blend", "comb")):
        with pytest.raises(ValidationError):
            Params.model_validate({"evaluate": {field: [bad]}})


def test_the_module_imports_nothing():
    """Plain data: the params schema reads it without pulling the forecasters in."""
    tree = ast.parse(inspect.getsource(names))
    assert not [n for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom))]
