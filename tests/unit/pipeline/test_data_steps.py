"""The data steps' messages that must tell the truth: a CSV an experiment run in a temporary
copy cannot see (it is not in git) says so and what to do, and what ``auto`` chooses never
contradicts what the user set (prepare adjusts it or refuses, before minutes of work)."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from attn_forecast.config.load import parse_params
from attn_forecast.data.long_table import raw_of
from attn_forecast.errors import UserInputError, naming
from attn_forecast.pipeline.generate import chunks
from attn_forecast.pipeline.prepare import prepare
from attn_forecast.setup.keys import PARAMS_KEYS


def test_a_csv_a_temp_experiment_cannot_see_says_why(tmp_path, monkeypatch):
    """`dvc exp run --temp` runs in a copy of what git holds: a new, uncommitted CSV in the
    user's data/external/ is not there."""
    workspace, copy = tmp_path / "workspace", tmp_path / "copy"
    (workspace / "data" / "external").mkdir(parents=True)
    (copy / "data" / "external").mkdir(parents=True)
    (workspace / "data" / "external" / "my_sales.csv").write_text("t,v\n1,2\n2,3\n")
    monkeypatch.chdir(copy)
    monkeypatch.setenv("DVC_ROOT", str(workspace))          # what DVC sets for a temp run
    monkeypatch.setenv("DVC_EXP_BASELINE_REV", "0" * 40)
    p = parse_params({"data": {"kind": "csv", "csv_path": "data/external/my_sales.csv",
                               "csv_column": "v"}})
    with pytest.raises(UserInputError) as info, naming(PARAMS_KEYS):
        list(chunks(p.data, "data/external"))
    msg = str(info.value)
    assert "data.csv_path: data/external/my_sales.csv is in your workspace but not in git" \
        in msg
    assert "--temp" in msg and "git add data/external/my_sales.csv" in msg
    # outside an experiment, the plain message
    monkeypatch.delenv("DVC_EXP_BASELINE_REV")
    monkeypatch.delenv("DVC_ROOT")
    with pytest.raises(UserInputError, match="data.csv_path: file not found"), \
            naming(PARAMS_KEYS):
        list(chunks(p.data, "data/external"))


def _business_days(n: int, seed: int = 0) -> pd.DataFrame:
    days = pd.bdate_range("2020-01-01", periods=n)
    y = 100 + np.cumsum(np.random.default_rng(seed).normal(0, 1, n)) \
        + 3 * np.sin(np.arange(n) * 2 * np.pi / 92)
    return pd.DataFrame({"id": "s", "t": days.to_numpy(), "value": y, "signal": np.nan})


def test_auto_never_picks_a_norm_the_window_the_user_set_cannot_hold(capsys):
    """The real profile's seasonal instance norm reads a whole season; with a window the user
    set shorter than the season prepare found, auto takes the last value's norm instead and
    says why; the user's own seasonal norm is refused at prepare, not at train."""
    raw = raw_of(_business_days(400))
    p = parse_params({"data": {"kind": "csv", "csv_path": "x.csv"},
                      "prepare": {"window": 20}, "evaluate": {"season": 92},
                      "train": {"init": "scratch"}})
    profile = {"name": "real", "resolved": {"profile": "real", "values": {
        "model.instance_norm": "seasonal"}}}
    store = prepare(p, raw, profile, auto_keys={"model.instance_norm"})
    norm = store.auto["profile"]["resolved"]["values"]["model.instance_norm"]
    assert norm == "last"
    assert "season 92 > window 20" in store.auto["adjusted"]["model.instance_norm"]
    set_by_user = parse_params({"data": {"kind": "csv", "csv_path": "x.csv"},
                                "prepare": {"window": 20}, "evaluate": {"season": 92},
                                "model": {"instance_norm": "seasonal"},
                                "train": {"init": "scratch"}})
    with pytest.raises(UserInputError, match=r"model.instance_norm seasonal needs a season "
                                             r"of at most prepare.window \(20\)"):
        prepare(set_by_user, raw, profile, auto_keys=set())


def test_a_baseline_without_a_season_says_what_auto_found():
    from attn_forecast.pipeline.baselines import field_of
    p = parse_params({"data": {"kind": "csv", "csv_path": "x.csv"}})
    assert p.evaluate.season == "auto"
    _, unavailable = field_of(p, 0, False, None)
    assert unavailable["seasonal_naive"] == \
        "no season (evaluate.season is auto: none found in the training parts)"
    _, unavailable = field_of(parse_params({"evaluate": {"season": 0}}), 0, False, None)
    assert unavailable["seasonal_naive"] == "no season (evaluate.season is 0; set a period or auto)"


def test_the_train_line_names_the_pinball_loss_only_for_a_quantile_head():
    import torch
    from types import SimpleNamespace
    from attn_forecast.model.settings import ModelSettings
    from attn_forecast.setup.training import summary
    res = SimpleNamespace(window=12, loss="mse", history=[{"train_loss": 0.5}], best_epoch=1,
                          seconds=1.0, windows_per_s=10.0)
    store, dist = SimpleNamespace(n_series=1), SimpleNamespace(world=1, device="cpu")
    model = torch.nn.Linear(2, 1)
    point = summary(ModelSettings(window=12), model, [res], store, dist, 1, "pretrained")
    assert "pinball" not in point and "final loss 0.50000, best epoch 1" in point
    head = summary(ModelSettings(window=12, quantiles=(0.1, 0.5, 0.9)), model, [res], store,
                   dist, 1)
    assert "(the pinball loss of model.quantiles" in head
