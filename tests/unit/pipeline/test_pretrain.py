"""Unit tests for attn_forecast.pipeline.pretrain: keeping the prior, and pretraining a tiny one."""
from __future__ import annotations

import copy

import pytest
import torch

from attn_forecast.config.load import parse_params
from attn_forecast.config.schema import TrainParams
from attn_forecast.model import checkpoint
from attn_forecast.model.networks import build_model
from attn_forecast.pipeline.pretrain import EXECUTION, from_params, kept, learned
from attn_forecast.training.corpus import competition_train_parts
from attn_forecast.training.distributed import Distributed
from attn_forecast.pipeline.pretrain import settings

pytestmark = pytest.mark.usefixtures("one_torch_thread")

# a prior of a few hundred weights, two rounds of two steps
TINY = {"series_per_round": 8, "steps_per_round": 2, "val_series": 4, "min_length": 24,
        "max_length": 40, "window": 16, "horizon": 4, "min_context": 4,
        "model": {"d_model": 8, "n_heads": 1, "n_layers": 1, "ffn_dim": 8, "patch_len": 4,
                  "patch_stride": 4},
        "train": {"epochs": 2, "batch_size": 8}}


def _params(**over):
    """Params with the tiny prior; ``over``: pretrain keys, ``model``/``train`` merged."""
    raw = copy.deepcopy(TINY)
    for key, value in over.items():
        raw[key] = {**raw[key], **value} if isinstance(value, dict) else value
    return parse_params({"pretrain": raw})


def _files(tmp_path, record: dict) -> list[str]:
    """The stage's three outputs: a checkpoint with ``record``, a history and a metrics file."""
    p = _params()
    model = build_model(settings(p.pretrain)[0])
    paths = [str(tmp_path / n) for n in ("pretrained.pt", "history.csv", "metrics.json")]
    checkpoint.save(paths[0], model, record)
    for path in paths[1:]:
        open(path, "w").write("x\n")
    return paths


class Closing(Distributed):
    """One process on the CPU that counts how often the run closed it."""
    closed = 0

    def close(self) -> None:
        self.closed += 1


def test_learned_leaves_out_how_a_run_executes_only():
    settings = _params().pretrain.model_dump()
    got = learned(settings)
    assert set(got["train"]) == set(settings["train"]) - set(EXECUTION)
    assert {k: v for k, v in got.items() if k != "train"} == \
        {k: v for k, v in settings.items() if k != "train"}
    assert got["train"]["lr"] == 0.001 and got["train"]["epochs"] == 2
    assert "device" in settings["train"]          # its input left as it was
    assert learned({"window": 8}) == {"window": 8, "train": {}}


def test_the_execution_settings_are_training_settings():
    assert set(EXECUTION) <= set(TrainParams.model_fields)
    assert {"seed", "epochs", "lr", "precision"}.isdisjoint(EXECUTION)


def test_a_prior_made_with_these_settings_is_kept(tmp_path):
    paths = _files(tmp_path, {"prepare": {}, "pretrain": _params().pretrain.model_dump()})
    assert kept(_params(), paths)
    # how it runs changes nothing learned
    assert kept(_params(train={"device": "cpu", "threads": 2, "live": True, "nproc": 2,
                               "compile": True}), paths)


@pytest.mark.parametrize("over", [
    {"train": {"lr": 0.01}}, {"train": {"seed": 1}}, {"train": {"precision": "bf16"}},
    {"model": {"d_model": 16}}, {"series_per_round": 9}, {"generators": ["kernel"]},
])
def test_a_prior_made_with_other_learned_settings_is_not_kept(tmp_path, over):
    paths = _files(tmp_path, {"prepare": {}, "pretrain": _params().pretrain.model_dump()})
    assert not kept(_params(**over), paths)


def test_a_missing_or_unreadable_output_is_pretrained_again(tmp_path):
    paths = _files(tmp_path, {"prepare": {}, "pretrain": _params().pretrain.model_dump()})
    p = _params()
    for i in range(3):                                   # any of the three outputs missing
        assert not kept(p, paths[:i] + [str(tmp_path / "gone")] + paths[i + 1:])
    garbage = tmp_path / "garbage.pt"
    garbage.write_text("not a checkpoint")
    assert not kept(p, [str(garbage), *paths[1:]])
    assert not kept(p, [str(tmp_path), *paths[1:]])      # a folder is not a file


def test_a_checkpoint_without_pretrain_settings_is_not_kept(tmp_path):
    """A train stage's checkpoint in the prior's place: pretrain it again."""
    paths = _files(tmp_path, {"prepare": {"window": 16}})
    assert not kept(_params(), paths)


def test_from_params_pretrains_the_prior_and_its_record(tmp_path):
    p = _params()
    dist = Closing(0, 1, torch.device("cpu"))
    model, history, record = from_params(p, dist)
    assert dist.closed == 1
    assert (model.settings.window, model.settings.horizon) == (16, 4)
    assert model.settings.quantiles == tuple(p.pretrain.model.quantiles)
    assert [row["round"] for row in history] == [1, 2]
    assert record["history"] is history
    assert (record["kind"], record["prepare"], record["real_series"]) == ("pretrained", {}, 0)
    assert record["pretrain"] == p.pretrain.model_dump()
    s = record["summary"]
    assert (s["rounds"], s["windows"], s["processes"], s["device"]) == (2, 2 * 2 * 8, 1, "cpu")
    assert s["val_loss"] == min(row["val_loss"] for row in history)
    # saved as the stage saves it, the prior is kept for these settings, and only for these
    paths = [str(tmp_path / n) for n in ("pretrained.pt", "history.csv", "metrics.json")]
    checkpoint.save(paths[0], model, record)
    for path in paths[1:]:
        open(path, "w").write("x\n")
    assert kept(p, paths)
    assert not kept(_params(train={"epochs": 3}), paths)
    reloaded, _ = checkpoint.load(paths[0])
    x = torch.randn(3, 16)
    with torch.no_grad():
        torch.testing.assert_close(reloaded(x), model(x))


def test_from_params_joins_m3_train_parts_long_enough_for_a_window(tmp_path):
    p = _params(real=["yearly"], real_share=0.5, min_context=4, horizon=6,
                train={"epochs": 1})
    _, history, record = from_params(p, Closing(0, 1, torch.device("cpu")))
    shortest = p.pretrain.min_context + p.pretrain.horizon
    want = len(competition_train_parts("m3", "yearly", shortest))
    assert record["real_series"] == want > 0
    # the shortest context alone would admit more: the horizon counts
    assert want < len(competition_train_parts("m3", "yearly", p.pretrain.min_context))
    assert len(history) == 1
