"""One data path: a single series is a panel of one. The same series read as a plain CSV and as
a long CSV with one id gives the same scores, to 1e-6, for the model and every baseline, with
the backtest, a quantile head and conformal intervals on; and the stages' code never asks
whether it has one series or many."""
from __future__ import annotations

import contextlib
import io
import json
import re

import numpy as np
import pandas as pd
import pytest
import yaml

from conftest import ROOT, pipeline_stages, with_overrides

from tools.stages import run_stages

# every stage but render's (figures: nothing here compares them)
STAGES = tuple(s for s in pipeline_stages() if s != "render")
SETTINGS = ["data.kind=csv", "data.csv_column=sales", "data.csv_time_column=day",
            "train.init=scratch", "prepare.window=14", "prepare.horizon=2", "prepare.val_frac=0.1",
            "prepare.cal_frac=0.1", "model.quantiles=[0.1,0.5,0.9]",
            "evaluate.conformal=split", "evaluate.season=7", "backtest.folds=2",
            "backtest.jobs=1", "train.epochs=3", "train.ensemble=2", "train.patience=2",
            "evaluate.baselines=[naive,seasonal_naive,mean,ridge,ets,theta]"]


def _series() -> pd.DataFrame:
    days = pd.date_range("2024-01-01", periods=160, freq="D")
    rs = np.random.default_rng(5)
    y = 40 + 6 * np.sin(2 * np.pi * np.arange(160) / 7) + 0.05 * np.arange(160) \
        + rs.standard_normal(160)
    return pd.DataFrame({"day": days.strftime("%Y-%m-%d"), "sales": np.round(y, 3)})


def _run(tmp_path, name: str, frame: pd.DataFrame, extra: list[str]) -> dict:
    inputs = tmp_path / f"in_{name}"
    inputs.mkdir()
    frame.to_csv(inputs / "s.csv", index=False)
    base = yaml.safe_load((ROOT / "params.yaml").read_text())
    params = with_overrides(base, SETTINGS + extra + [f"data.csv_path={inputs / 's.csv'}"])
    work = tmp_path / name
    work.mkdir()
    (work / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        run_stages(work / "params.yaml", work, ROOT, STAGES, inputs)
    return {f: json.loads((work / f).read_text()) for f in
            ("detail.json", "metrics.json", "backtest.json")}


def _flat(obj, prefix=""):
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from _flat(v, f"{prefix}{k}.")
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from _flat(v, f"{prefix}{i}.")
    else:
        yield prefix[:-1], obj


def test_a_panel_of_one_scores_as_the_series_alone(tmp_path):
    frame = _series()
    one = _run(tmp_path, "plain", frame, [])
    panel = _run(tmp_path, "panel", frame.assign(store="north"), ["data.csv_id_column=store"])
    for name in one:
        a, b = dict(_flat(one[name])), dict(_flat(panel[name]))
        assert set(a) == set(b), name
        for key, v in a.items():
            if isinstance(v, float):
                assert b[key] == pytest.approx(v, rel=1e-6, abs=1e-9), (name, key)
            else:
                assert b[key] == v, (name, key)
    detail = one["detail.json"]
    for name in ("model", "naive", "seasonal_naive", "mean", "ridge", "ets", "theta"):
        assert detail[name]["rmse"] > 0, name
    assert "coverage_80" in detail["model"] and one["backtest.json"]["n_folds"] == 2


def test_no_code_asks_whether_it_has_one_series_or_many():
    """No ``is_panel`` and no branch of the data path on the number of series."""
    hits = []
    for path in [*(ROOT / "src").rglob("*.py"), *(ROOT / "stages").glob("*.py")]:
        for i, line in enumerate(path.read_text().splitlines(), 1):
            if re.search(r"is_panel|\bPanel\b|\bPrepared\b", line):
                hits.append(f"{path.relative_to(ROOT)}:{i}: {line.strip()}")
    assert not hits, "\n".join(hits)
