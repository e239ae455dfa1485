"""The competition pipeline's params file: every wrong value one line naming that file."""
from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from attn_forecast.config.load import check_competition_file
from attn_forecast.errors import ParamsError

ROOT = Path(__file__).resolve().parents[3]
FILE = Path("competitions/params.yaml")


def committed() -> dict:
    return yaml.safe_load((ROOT / FILE).read_text())


def test_the_committed_file_passes():
    check_competition_file(FILE, committed())


@pytest.mark.parametrize("change, expect", [
    ({"monthy": {"train": {"lr": 0.001}}}, ["unknown key 'monthy'", "monthly"]),
    ({"holdout": "calibration"}, ["holdout must be test or validation", "'calibration'"]),
    ({"competition": "m5"}, ["competition must be one of", "'m5'"]),
    ({"all": {"trian": {"lr": 0.001}}}, ["all must map sections", "'trian'"]),
    ({"quarterly": {"train": {"losses": ["smape", "rmse"]}}},
     ["quarterly.train.losses", "'rmse'"]),
    ({"other": {"model": {"combine": "mode"}}}, ["other.model.combine", "'mode'"]),
])
def test_a_wrong_value_names_this_file_and_its_key(change, expect):
    with pytest.raises(ParamsError) as err:
        check_competition_file(FILE, {**committed(), **change})
    line = str(err.value)
    assert line.startswith(f"{FILE}: ") and "\n" not in line, line
    assert not line.startswith("params.yaml"), line
    for text in expect:
        assert text in line, line
