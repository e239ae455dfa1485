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
    ({"peers": {**committed()["peers"], "nf_tft": {"max_steps": 10, "seed": 1}}},
     ["unknown peer 'nf_tft'", "nf_nhits"]),
    ({"peers": {**committed()["peers"], "nf_nhits": {"max_steps": 10}}},
     ["peers.nf_nhits must give exactly",
                                                  "max_steps, seed"]),
    ({"peers": {**committed()["peers"], "nf_lstm": {"max_steps": 0, "seed": 1}}},
     ["peers.nf_lstm.max_steps", ">= 1"]),
    ({"peers": {**committed()["peers"], "nf_lstm": {"max_steps": 5, "seed": 1.5}}},
     ["peers.nf_lstm.seed", "1.5"]),
    ({"peers": ["nf_nhits"]}, ["peers must map peer names", "['nf_nhits']"]),
    ({"peers": {**committed()["peers"], "input_size": {"yearli": 12}}},
     ["peers.input_size must map every subset", "'yearli'"]),
    ({"peers": {**committed()["peers"], "input_size": {**committed()["peers"]["input_size"],
                                                       "yearly": 0}}},
     ["peers.input_size", "whole number >= 1"]),
    ({"peers": {k: v for k, v in committed()["peers"].items() if k != "nf_lstm"}},
     ["peers must give every peer's", "missing: nf_lstm"]),
])
def test_a_wrong_value_names_this_file_and_its_key(change, expect):
    with pytest.raises(ParamsError) as err:
        check_competition_file(FILE, {**committed(), **change})
    line = str(err.value)
    assert line.startswith(f"{FILE}: ") and "\n" not in line, line
    assert not line.startswith("params.yaml"), line
    for text in expect:
        assert text in line, line


@pytest.mark.parametrize("where", ["elsewhere/m3.yaml", "competitions/params.yaml"])
def test_a_stage_takes_its_settings_from_the_file_it_is_given(tmp_path, where):
    """`--params FILE` of a competition stage: FILE's settings, wherever FILE lies (not those
    of the project's competitions/params.yaml beside or above it)."""
    from attn_forecast.pipeline.competition import subset_params
    c = committed()
    c["all"]["train"]["seed"] = 1000
    c["other"]["prepare"]["window"] = 64
    path = tmp_path / where
    path.parent.mkdir(parents=True)
    path.write_text(yaml.safe_dump(c))
    p, prof = subset_params(path, "other")
    assert (p.train.seed, p.prepare.window, p.model.d_model) == (1000, 64, 32)
    assert prof["values"]["prepare.window"] == 64


def test_a_bad_file_given_elsewhere_is_named(tmp_path):
    from attn_forecast.pipeline.competition import subset_params
    c = committed()
    c["other"]["train"] = {"lr": -1}
    path = tmp_path / "mine.yaml"
    path.write_text(yaml.safe_dump(c))
    with pytest.raises(ParamsError, match="mine.yaml"):
        subset_params(path, "other")


def test_no_entry_restates_what_its_key_would_be_without_it():
    """competitions/params.yaml names only what differs: an entry of ``all`` from the
    competition profile (else the schema's default), a subset's from ``all`` and that."""
    from attn_forecast.config.profiles import COMPETITION_PARAMS, flat, profiles
    from attn_forecast.config.schema import default
    raw = yaml.safe_load((ROOT / COMPETITION_PARAMS).read_text())
    base = dict(profiles()["competition"])
    restated = [f"all.{k}" for k, v in flat(raw["all"]).items()
                if v == base.get(k, default(k))]
    under = {**base, **flat(raw["all"])}
    restated += [f"{s}.{k}" for s in ("yearly", "quarterly", "monthly", "other")
                 for k, v in flat(raw[s]).items() if v == under.get(k, default(k))]
    assert restated == []


@pytest.mark.parametrize("bad", [{"max_steps": 0, "seed": 1}, {"max_steps": 5, "seed": 1.5},
                                 {"max_steps": True, "seed": 1}])
def test_the_peers_are_one_schema_in_params_yaml_and_the_competition_file(bad):
    """A peer's settings read the same in both files (schema.py: PeerParams): the same value
    refused with the same words, each line naming its own file."""
    from attn_forecast.config.load import valid
    with pytest.raises(ParamsError) as here:
        valid("peers", {"nf_lstm": bad})
    with pytest.raises(ParamsError) as there:
        check_competition_file(FILE, {**committed(), "peers": {**committed()["peers"],
                                                               "nf_lstm": bad}})
    assert str(here.value).startswith("params.yaml: peers.nf_lstm.")
    assert str(there.value) == str(here.value).replace("params.yaml: ", f"{FILE}: ", 1)


def test_the_competition_files_peers_read_as_params_yaml_reads_its_own():
    from attn_forecast.config.load import competition_peers, parse_params
    peers = competition_peers(committed()["peers"])
    nets = {n: s for n, s in peers.items() if n not in ("input_size", "unfit")}
    own = parse_params({"peers": {n: s.model_dump() for n, s in nets.items()}}).peers
    assert {n: getattr(own, n) for n in nets} == nets
    assert peers["input_size"] == committed()["peers"]["input_size"]
    assert peers["unfit"] == committed()["peers"].get("unfit", {})


def test_a_peer_marked_unfit_needs_a_reason_and_has_no_row(tmp_path):
    from attn_forecast.pipeline.competition_leaderboard import peers_of
    c = committed()
    for bad in ({"nf_lstm": ""}, {"lstm": "why"}, ["nf_lstm"]):
        c["peers"]["unfit"] = bad
        with pytest.raises(ParamsError, match=r"peers.unfit must map peers"):
            check_competition_file(FILE, c)
    c["peers"]["unfit"] = {"nf_patchtst": "measured: its intervals fail the audit"}
    check_competition_file(FILE, c)
    path = tmp_path / "params.yaml"
    path.write_text(yaml.safe_dump(c))
    assert "nf_patchtst" not in peers_of(path) and "nf_nhits" in peers_of(path)
