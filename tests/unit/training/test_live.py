"""Unit tests for attn_forecast.training.live: DVCLive's per-epoch files, in tmp_path."""
from __future__ import annotations

import json

import pytest
import yaml

from attn_forecast.training.live import DVC_YAML, LiveLog, epoch_logger


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path, monkeypatch):
    """DVCLive looks for a git or DVC project around the working directory: none here."""
    monkeypatch.chdir(tmp_path)


def _tsv(path) -> list[list[str]]:
    return [line.split("\t") for line in path.read_text().splitlines()]


def test_off_is_no_logger_and_no_files(tmp_path):
    assert epoch_logger(False, str(tmp_path / "live")) is None
    assert list(tmp_path.iterdir()) == []


def test_each_epoch_is_a_step_of_the_metrics_and_plots(tmp_path):
    d = tmp_path / "live"
    log = epoch_logger(True, str(d))
    assert isinstance(log, LiveLog)
    log({"epoch": 1, "train_loss": 1.0, "val_loss": None, "lr": 0.01})
    log({"epoch": 2, "train_loss": 0.5, "val_loss": 0.75, "lr": 0.005})
    log.close()
    # the latest epoch, the step being the epoch
    assert json.loads((d / "metrics.json").read_text()) == {
        "train_loss": 0.5, "val_loss": 0.75, "lr": 0.005, "step": 2}
    plots = d / "plots" / "metrics"
    assert _tsv(plots / "train_loss.tsv") == [["step", "train_loss"], ["1", "1.0"], ["2", "0.5"]]
    assert _tsv(plots / "lr.tsv") == [["step", "lr"], ["1", "0.01"], ["2", "0.005"]]
    # no value, no row (the first epoch had no validation); no timestamp column
    assert _tsv(plots / "val_loss.tsv") == [["step", "val_loss"], ["2", "0.75"]]
    # only these files: no report, no system metrics, nothing outside its folder
    assert sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*") if p.is_file()) == [
        "live/dvc.yaml", "live/metrics.json", "live/plots/metrics/lr.tsv",
        "live/plots/metrics/train_loss.tsv", "live/plots/metrics/val_loss.tsv"]


def test_its_dvc_yaml_declares_the_files_it_writes(tmp_path):
    d = tmp_path / "nested" / "live"        # a folder that does not exist yet
    log = LiveLog(str(d))
    assert (d / "dvc.yaml").read_text() == DVC_YAML
    log({"epoch": 1, "train_loss": 2.0})
    log.close()
    spec = yaml.safe_load(DVC_YAML)
    assert spec == {"metrics": ["metrics.json"], "plots": [{"plots/metrics": {"x": "step"}}]}
    for rel in spec["metrics"] + [next(iter(p)) for p in spec["plots"]]:
        assert (d / rel).exists(), rel
    # the x axis it names is a column of every plot file
    assert all(_tsv(f)[0][0] == "step" for f in (d / "plots" / "metrics").iterdir())


def test_the_epoch_sets_the_step_and_values_are_written_as_floats(tmp_path):
    d = tmp_path / "live"
    log = LiveLog(str(d))
    log({"epoch": 7.0, "train_loss": 3, "lr": None})  # an epoch from a resumed count
    log.close()
    assert json.loads((d / "metrics.json").read_text()) == {"train_loss": 3.0, "step": 7}
    assert _tsv(d / "plots" / "metrics" / "train_loss.tsv")[1] == ["7", "3.0"]
    assert not (d / "plots" / "metrics" / "lr.tsv").exists()


def test_a_new_run_starts_afresh_in_the_same_folder(tmp_path):
    d = tmp_path / "live"
    first = LiveLog(str(d))
    for epoch in (1, 2, 3):
        first({"epoch": epoch, "train_loss": 1.0 / epoch, "val_loss": 2.0, "lr": 0.1})
    first.close()
    second = LiveLog(str(d))
    second({"epoch": 1, "train_loss": 0.25})
    second.close()
    plots = d / "plots" / "metrics"
    assert sorted(p.name for p in plots.iterdir()) == ["train_loss.tsv"]
    assert _tsv(plots / "train_loss.tsv") == [["step", "train_loss"], ["1", "0.25"]]
    assert json.loads((d / "metrics.json").read_text()) == {"train_loss": 0.25, "step": 1}
    assert (d / "dvc.yaml").read_text() == DVC_YAML
