"""Unit tests for attn_forecast.commands.outlook: the files the forecast command reads beside
the checkpoint."""
from __future__ import annotations

import json

import pytest

from attn_forecast.errors import UserInputError
from attn_forecast.commands.outlook import read_beside, read_blend


def test_the_blend_file_is_read_beside_the_model_and_off_with_an_empty_flag(tmp_path):
    blend = {"members": ["model", "naive"], "season": 0, "mean": {}, "series": {}}
    (tmp_path / "blend.json").write_text(json.dumps(blend))
    model = str(tmp_path / "model.pt")
    assert read_blend(None, model)["members"] == ["model", "naive"]
    assert read_blend("", model) is None
    (tmp_path / "blend.json").write_text(json.dumps({**blend, "members": []}))  # blend []
    assert read_blend(None, model) is None
    with pytest.raises(UserInputError, match="--blend: file not found"):
        read_blend(str(tmp_path / "nope.json"), model)


def test_a_file_of_the_other_kind_is_named_not_dropped(tmp_path):
    """--intervals given the blend's file (or --blend the intervals') is one line naming both,
    never a forecast silently without its quantiles or its blend."""
    (tmp_path / "blend.json").write_text(json.dumps(
        {"members": ["model"], "season": 0, "mean": {}, "series": {}}))
    (tmp_path / "intervals.json").write_text(json.dumps(
        {"levels": [0.1, 0.5, 0.9], "calibrated_on": "cal", "forecasters": {}}))
    model = str(tmp_path / "model.pt")
    with pytest.raises(UserInputError, match="--blend: .*intervals.json is the evaluate "
                       "stage's intervals.json, not its blend.json"):
        read_blend(str(tmp_path / "intervals.json"), model)
    with pytest.raises(UserInputError, match="--intervals: .*blend.json is the evaluate "
                       "stage's blend.json, not its intervals.json"):
        read_beside(str(tmp_path / "blend.json"), model, "intervals.json", "--intervals")
    (tmp_path / "other.json").write_text('{"rmse": 1.0}')
    with pytest.raises(UserInputError, match="a JSON file without levels"):
        read_beside(str(tmp_path / "other.json"), model, "intervals.json", "--intervals")
