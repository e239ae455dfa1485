"""search/peers.py: NeuralForecast's Auto search of a peer as a stage: its default space
(less the input size), a study in a journal file that a rerun resumes (never rerunning a
finished trial), every trial logged and the best one's settings as the competition file takes
them. Two trials on M3 other (174 series) at a few optimizer steps: the space is cut to that
budget here, the study, training and scoring are the stage's own."""
from __future__ import annotations

import csv

import pytest
import yaml

from attn_forecast.config.schema import PeerParams
from attn_forecast.errors import ParamsError, UserInputError
from attn_forecast.forecasters.names import PEER_NETWORK
from conftest import ROOT

pytest.importorskip("neuralforecast")


def _params(tmp_path, trials: int, seed: int = 0):
    c = yaml.safe_load((ROOT / "competitions" / "params.yaml").read_text())
    c["peer_search"] = {"trials": trials, "seed": seed}
    path = tmp_path / "params.yaml"
    path.write_text(yaml.safe_dump(c))
    return str(path)


def test_the_default_space_is_neuralforecasts_less_the_input_size():
    import optuna
    from attn_forecast.search.peers import settings_of, space
    for peer in ("nf_nhits", "nf_nbeats"):
        config = space(peer, 18)(optuna.create_study().ask())
        assert "input_size" not in config and {"max_steps", "random_seed"} <= set(config)
        s = settings_of(config)
        assert set(s["network"]) <= set(PEER_NETWORK) and "learning_rate" in s["network"]
        PeerParams.model_validate(s)             # as the competition file's peers.<peer>


@pytest.fixture
def tiny(monkeypatch):
    """NHITS's space at 2 to 3 optimizer steps (the test's budget)."""
    from attn_forecast.search import peers

    def small(peer, h):
        def sample(trial):
            return {"max_steps": trial.suggest_int("max_steps", 2, 3),
                    "random_seed": trial.suggest_int("random_seed", 1, 20),
                    "learning_rate": trial.suggest_float("learning_rate", 1e-4, 1e-1, log=True),
                    "scaler_type": trial.suggest_categorical("scaler_type",
                                                             [None, "robust"])}
        return sample
    monkeypatch.setattr(peers, "space", small)
    return peers


def test_a_search_resumes_its_journal_and_writes_its_choice(tmp_path, tiny, capsys):
    out = {k: str(tmp_path / f"s.{k}") for k in ("journal", "log", "best")}
    first = tiny.step(_params(tmp_path, 1), "other", "nf_nhits", **out)
    assert capsys.readouterr().out.count(": trial ") == 1
    best = tiny.step(_params(tmp_path, 2), "other", "nf_nhits", **out)  # one more, not two
    assert capsys.readouterr().out.count(": trial ") == 1
    rows = list(csv.DictReader(open(out["log"])))
    assert [r["number"] for r in rows] == ["0", "1"] and {r["state"] for r in rows} == {
        "COMPLETE"}
    assert best["smape_validation"] == pytest.approx(min(float(r["smape"]) for r in rows),
                                                     abs=1e-6)
    assert best["smape_validation"] <= first["smape_validation"]
    chosen = yaml.safe_load(open(out["best"]))
    assert chosen["settings"]["network"]["scaler_type"] in ("identity", "robust")
    PeerParams.model_validate(chosen["settings"])
    again = tiny.step(_params(tmp_path, 2), "other", "nf_nhits", **out)   # done: no trial
    assert ": trial " not in capsys.readouterr().out and again == best
    with pytest.raises(UserInputError, match=r"was run on another setup \(seed differ\)"):
        tiny.step(_params(tmp_path, 3, seed=1), "other", "nf_nhits", **out)


def test_a_wrong_search_setting_is_one_line_naming_the_file(tmp_path):
    from attn_forecast.search.peers import step
    out = {k: str(tmp_path / f"s.{k}") for k in ("journal", "log", "best")}
    path = _params(tmp_path, 2)
    c = yaml.safe_load(open(path))
    c["peer_search"] = {"trials": 0, "seed": 0}
    open(path, "w").write(yaml.safe_dump(c))
    with pytest.raises(ParamsError, match="params.yaml: peer_search must give trials"):
        step(path, "other", "nf_nhits", **out)
    with pytest.raises(UserInputError, match="'nf_lstm' has no Auto search here"):
        step(_params(tmp_path, 2), "other", "nf_lstm", **out)
    assert not any((tmp_path / f"s.{k}").exists() for k in ("journal", "log", "best"))


def test_ctrl_c_keeps_the_finished_trials_for_a_rerun_and_writes_nothing_else(tmp_path, tiny,
                                                                               monkeypatch):
    from attn_forecast.errors import Interrupted
    out = {k: str(tmp_path / f"s.{k}") for k in ("journal", "log", "best")}
    tiny.step(_params(tmp_path, 1), "other", "nf_nhits", **out)
    (tmp_path / "s.log").unlink()
    (tmp_path / "s.best").unlink()

    def stop(self, store):
        raise KeyboardInterrupt
    fit = tiny.Peer.fit
    monkeypatch.setattr(tiny.Peer, "fit", stop)
    with pytest.raises(Interrupted, match=r"interrupted at trial 1 \(the study's 1 finished "
                                          r"trials are in .*s\.journal, where a rerun resumes"):
        tiny.step(_params(tmp_path, 2), "other", "nf_nhits", **out)
    assert not (tmp_path / "s.log").exists() and not (tmp_path / "s.best").exists()
    monkeypatch.setattr(tiny.Peer, "fit", fit)
    tiny.step(_params(tmp_path, 2), "other", "nf_nhits", **out)   # resumes: trial 2 runs
    rows = list(csv.DictReader(open(out["log"])))
    assert [r["state"] for r in rows] == ["COMPLETE", "FAIL", "COMPLETE"]
