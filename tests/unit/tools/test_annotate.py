"""params.yaml's "auto: ..." comments are generated from where the values live."""
from __future__ import annotations

from pathlib import Path

import yaml

from tools import annotate
from tools.annotate import WIDTH, annotated, meaning

ROOT = Path(__file__).resolve().parents[3]
TEXT = (ROOT / "params.yaml").read_text()


def test_params_yaml_is_as_generated():
    """`make docs` (docs/refresh.py) writes them; this fails when a profile, the competition
    params or a default moved and the comments were not refreshed."""
    assert annotated(TEXT, ROOT) == TEXT


def test_only_comments_change_and_no_line_is_too_long():
    got = annotated(TEXT.replace("; auto: ", "; auto: stale "), ROOT)
    assert got == TEXT
    assert yaml.safe_load(got) == yaml.safe_load(TEXT)
    assert max(len(line) for line in got.split("\n")) <= WIDTH


def test_a_stale_tail_is_replaced_and_the_description_kept():
    text = "train:\n  lr: auto              # the step size; auto: 1 | 2\n"
    got = annotated(text, ROOT)
    assert got.startswith("train:\n  lr: auto              # the step size; auto: 0.005 | ")
    assert "1 | 2" not in got


def test_each_profile_and_the_competition_subsets(tmp_path, monkeypatch):
    (tmp_path / "competitions").mkdir()
    (tmp_path / "competitions" / "params.yaml").write_text(yaml.safe_dump(
        {"all": {"train": {"lr": 0.25}}, "yearly": {"model": {"n_heads": 2}},
         "quarterly": {}, "monthly": {}, "other": {}}))
    monkeypatch.setattr(annotate, "profiles", lambda: {
        "synthetic": {}, "real": {"train.lr": 0.5}, "competition": {"train.lr": 0.5}})
    assert meaning("train.lr", tmp_path) == "auto: 0.005 | 0.5 | 0.25"
    assert meaning("model.n_heads", tmp_path) == "auto: 1 | 1 | the subset's"
    assert meaning("train.epochs", tmp_path) == "auto: 300"
    assert meaning("prepare.window", tmp_path) == "auto: 60"  # the schema's default


def test_an_auto_chosen_later_says_what_chooses_it(tmp_path):
    assert meaning("train.device", tmp_path) == "auto: cuda when present, else cpu"


def test_keys_not_auto_and_nested_sections_are_left_as_written():
    text = ("model:\n  kind: attention       # hand-written\n"
            "pretrain:\n  train:\n    device: auto        # auto | cpu | cuda\n")
    assert annotated(text, ROOT) == text
