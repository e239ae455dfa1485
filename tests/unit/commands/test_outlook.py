"""Unit tests for attn_forecast.commands.outlook: the files the forecast command reads beside
the checkpoint."""
from __future__ import annotations

import pytest

from attn_forecast.errors import UserInputError
from attn_forecast.commands.outlook import read_blend


def test_the_blend_file_is_read_beside_the_model_and_off_with_an_empty_flag(tmp_path):
    (tmp_path / "blend.json").write_text('{"members": ["model", "naive"]}')
    model = str(tmp_path / "model.pt")
    assert read_blend(None, model)["members"] == ["model", "naive"]
    assert read_blend("", model) is None
    (tmp_path / "blend.json").write_text('{"members": []}')         # evaluate.blend []
    assert read_blend(None, model) is None
    with pytest.raises(UserInputError, match="--blend: file not found"):
        read_blend(str(tmp_path / "nope.json"), model)
