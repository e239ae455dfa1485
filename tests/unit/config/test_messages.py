"""Unit tests for attn_forecast.config.messages: one line per refused params.yaml value."""
from __future__ import annotations

import pytest
from pydantic import ValidationError

from attn_forecast.config.messages import one_line
from attn_forecast.config.schema import RENAMED, Params, TrainParams
from attn_forecast.forecasters.names import NAMES


def _line(raw) -> str:
    """one_line of the error the schema raises for ``raw`` (which it must refuse)."""
    with pytest.raises(ValidationError) as info:
        Params.model_validate(raw)
    return one_line(info.value)


# one case per branch of one_line, with the exact line it writes
@pytest.mark.parametrize("raw,want", [
    # described (auto or an integer)
    ({"prepare": {"window": 0}},
     "params.yaml: prepare.window must be auto or an integer >= 1, got 0"),
    ({"train": {"batch_size": -1}},
     "params.yaml: train.batch_size must be auto or an integer >= 0, got -1"),
    ({"evaluate": {"season": "weekly"}},
     "params.yaml: evaluate.season must be auto or an integer >= 0, got 'weekly'"),
    # bounds: the field's kind, both its bounds where it has two, the value
    ({"render": {"dpi": 10}},
     "params.yaml: render.dpi must be an integer >= 50 and <= 600, got 10"),
    ({"render": {"dpi": 601}},
     "params.yaml: render.dpi must be an integer >= 50 and <= 600, got 601"),
    ({"train": {"gamma": 0}}, "params.yaml: train.gamma must be a number > 0 and <= 1, got 0"),
    ({"model": {"dropout": 1}}, "params.yaml: model.dropout must be a number >= 0 and < 1, got 1"),
    ({"pretrain": {"train": {"seed": -1}}},
     "params.yaml: pretrain.train.seed must be an integer >= 0, got -1"),
    # literals: every allowed value, and the hint for the removed one
    ({"data": {"missing": "zero"}},
     "params.yaml: data.missing must be one of 'error' | 'ffill' | 'drop', got 'zero'"),
    ({"data": {"missing": "interpolate"}},
     "params.yaml: data.missing must be one of 'error' | 'ffill' | 'drop', got 'interpolate'; "
     "interpolate was removed: it filled a gap from the next value, which can be the target"),
    ({"prepare": {"time_features": ["hour", "week"]}},
     "params.yaml: prepare.time_features may hold only 'minute' | 'hour' | 'dayofweek' | "
     "'dayofmonth' | 'dayofyear' | 'month', got 'week' (item 2)"),
    # strings and lists
    ({"data": {"csv_time_format": ""}},
     "params.yaml: data.csv_time_format must be a non-empty string, got ''"),
    ({"data": {"csv_decimal": ",,"}},
     "params.yaml: data.csv_decimal must be at most 1 character, got ',,'"),
    ({"pretrain": {"generators": []}},
     "params.yaml: pretrain.generators must not be empty, got []"),
    ({"evaluate": {"combinations": ["model"]}},
     "params.yaml: evaluate.combinations.0 must be names of forecasters joined by + "
     "(e.g. model+comb), got 'model'"),
    # types
    ({"train": {"epochs": 2.0}}, "params.yaml: train.epochs must be an integer, got 2.0"),
    ({"train": {"epochs": "3"}}, "params.yaml: train.epochs must be an integer, got '3'"),
    ({"model": {"residual": "yes"}},
     "params.yaml: model.residual must be true or false, got 'yes'"),
    ({"train": {"lr": True}}, "params.yaml: train.lr must be a number, got True"),
    ({"data": {"trend": "x"}}, "params.yaml: data.trend must be a number, got 'x'"),
    ({"data": {"trend": float("inf")}},
     "params.yaml: data.trend must be a finite number, got inf"),
    ({"data": {"csv_path": 3}}, "params.yaml: data.csv_path must be a string, got 3"),
    ({"model": {"lookbacks": 3}}, "params.yaml: model.lookbacks must be a list, got 3"),
    ({"train": None}, "params.yaml: train must be a mapping of keys, got None"),
    ({"pretrain": {"model": 3}}, "params.yaml: pretrain.model must be a mapping of keys, got 3"),
])
def test_each_kind_of_refusal_is_one_exact_line(raw, want):
    assert _line(raw) == want


def test_an_unknown_key_lists_the_keys_of_its_own_section():
    assert _line({"trian": {}}) == (
        "params.yaml: unknown key trian (known keys here: data, prepare, model, train, "
        "evaluate, peers, backtest, render, pretrain)")
    got = _line({"prepare": {"wndow": 5}})
    assert got.startswith("params.yaml: unknown key prepare.wndow (known keys here: window, "
                          "horizon, test_frac,")
    # a section inside a section: the keys of pretrain.train (TrainParams), not of pretrain
    got = _line({"pretrain": {"train": {"rounds": 3}}})
    known = got.split("(known keys here: ")[1].rstrip(")").split(", ")
    assert got.startswith("params.yaml: unknown key pretrain.train.rounds ")
    assert known == list(TrainParams.model_fields)


@pytest.mark.parametrize("old", sorted(RENAMED))
def test_a_renamed_key_names_its_new_name_and_why(old):
    section, key = old.split(".")
    got = _line({section: {key: 1}})
    new, why = RENAMED[old]
    assert got == f"params.yaml: {old} was renamed {new} ({why})"
    assert ("pretrain.model and pretrain.train" in got if section == "pretrain" else
            "peers.<nf_nhits | nf_nbeats | nf_lstm | nf_patchtst>.max_steps" in got)


def test_a_list_item_outside_the_names_counts_items_from_one_and_lists_every_name():
    got = _line({"evaluate": {"baselines": ["naive", "ets", "bogus"]}})
    assert got.endswith(", got 'bogus' (item 3)")
    allowed = got.split("may hold only ")[1].split(", got")[0].split(" | ")
    assert allowed == [repr(n) for n in NAMES]


def test_the_blend_may_hold_the_model_but_not_ridge():
    got = _line({"evaluate": {"blend": ["model", "ridge"]}})
    assert got.startswith("params.yaml: evaluate.blend may hold only 'model' | 'naive' |")
    assert got.endswith("got 'ridge' (item 2)") and "'ridge' |" not in got


def test_several_errors_give_the_first_only_on_one_line():
    with pytest.raises(ValidationError) as info:
        Params.model_validate({"prepare": {"window": 0, "horizon": 0}, "train": {"lr": "x"}})
    assert len(info.value.errors()) == 3
    got = one_line(info.value)
    assert got == "params.yaml: prepare.window must be auto or an integer >= 1, got 0"
    assert "\n" not in got


def test_an_error_of_an_unlisted_type_falls_back_to_pydantics_message():
    err = ValidationError.from_exception_data("Params", [
        {"type": "multiple_of", "loc": ("train", "epochs"), "input": 3,
         "ctx": {"multiple_of": 2}}])
    got = one_line(err)
    assert got.startswith("params.yaml: train.epochs must be ")
    assert "multiple of 2" in got and got.endswith("got 3") and "\n" not in got


def test_a_bound_on_an_integer_list_item_says_integers_and_names_the_item():
    assert _line({"model": {"lookbacks": [4, 0]}}) == \
        "params.yaml: model.lookbacks may hold only integers >= 1, got 0 (item 2)"


def test_a_bound_on_a_number_list_item_says_numbers():
    assert _line({"evaluate": {"quantiles": [0.5, 1.5]}}) == \
        "params.yaml: evaluate.quantiles may hold only numbers > 0 and < 1, got 1.5 (item 2)"
