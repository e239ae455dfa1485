"""Unit tests for attn_forecast.model.checkpoint.read on damaged and foreign files: a real
checkpoint cut short, a CSV, random bytes, an empty file, a zip that is no torch save, a
torch file without the project's entries; each one line (the project's UserInputError)
naming the file and the case."""
from __future__ import annotations

import zipfile

import numpy as np
import pytest
import torch

from attn_forecast.errors import UserInputError
from attn_forecast.model import checkpoint
from attn_forecast.model.networks import build_model
from attn_forecast.model.settings import ModelSettings

pytestmark = pytest.mark.usefixtures("one_torch_thread")

PREPARE = {"window": 6, "horizon": 1, "transform": "none", "scaler": "zscore"}


@pytest.fixture
def saved(tmp_path):
    """The bytes of a real tiny checkpoint, written by the module's own save."""
    torch.manual_seed(0)
    model = build_model(ModelSettings(window=6, d_model=8, ffn_dim=8))
    checkpoint.save(tmp_path / "model.pt", model, {"prepare": PREPARE})
    checkpoint.read(tmp_path / "model.pt")                     # the whole file reads
    return (tmp_path / "model.pt").read_bytes()


def _refused(path, what: str = "--model") -> str:
    with pytest.raises(UserInputError) as info:
        checkpoint.read(path, what=what)
    message = str(info.value)
    assert message.startswith(f"{what}: {path} ") and "\n" not in message
    return message


@pytest.mark.parametrize("keep", [0.5, 10, -1])
def test_a_checkpoint_cut_short_is_named_truncated_with_its_size(tmp_path, saved, keep):
    """Half the file, its first 10 bytes (the zip's magic and a little more) and all but its
    last byte: each is said to be truncated, with the size it has and what to do."""
    n = int(len(saved) * keep) if isinstance(keep, float) else keep % len(saved)
    cut = tmp_path / "cut.pt"
    cut.write_bytes(saved[:n])
    # torch itself names none of these as truncated ("Invalid argument", "not a ZIP archive")
    with pytest.raises((OSError, RuntimeError)):
        torch.load(cut, weights_only=True)
    message = _refused(cut)
    assert f"is truncated ({n:,} bytes" in message
    assert "copy it again" in message and "dvc checkout" in message


def test_a_csv_random_bytes_and_an_empty_file_are_not_checkpoints(tmp_path):
    csv = tmp_path / "series.csv"
    csv.write_text("id,t,value\na,2024-01-01,1.5\n")
    assert "is not a PyTorch checkpoint" in _refused(csv)
    assert "this is text, 28 bytes" in _refused(csv)
    noise = tmp_path / "noise.bin"
    noise.write_bytes(np.random.default_rng(0).integers(0, 256, 3000, np.uint8).tobytes())
    assert "is not a PyTorch checkpoint" in _refused(noise, what="--checkpoint")
    assert "binary data, 3,000 bytes" in _refused(noise)
    empty = tmp_path / "empty.pt"
    empty.write_bytes(b"")
    assert "is empty (0 bytes), not a PyTorch checkpoint" in _refused(empty)


def test_a_zip_that_is_not_a_torch_save_is_named(tmp_path):
    other = tmp_path / "other.zip"
    with zipfile.ZipFile(other, "w") as z:
        z.writestr("readme.txt", "hello")
    assert "is a zip archive but not a PyTorch checkpoint" in _refused(other)


def test_a_whole_checkpoint_damaged_inside_is_named_damaged(tmp_path, saved):
    """Its whole length there, one record's header or the zip directory overwritten:
    damaged, not truncated."""
    path = tmp_path / "bad.pt"
    path.write_bytes(saved)
    with zipfile.ZipFile(path) as z:
        record = z.getinfo(next(n for n in z.namelist() if n.endswith("/data/0")))
        directory = z.start_dir
    for start in (record.header_offset, directory):
        bad = bytearray(saved)
        bad[start:start + 30] = bytes(30)
        path.write_bytes(bytes(bad))
        message = _refused(path)
        assert "is damaged (" in message and "truncated" not in message
        assert "copy it again" in message


@pytest.mark.parametrize("payload,holds", [({"state_dict": {}}, "a dict with keys state_dict"),
                                           ([1, 2], "a list"), (torch.zeros(3), "a Tensor")])
def test_a_torch_file_without_the_projects_entries_says_what_it_holds(tmp_path, payload, holds):
    path = tmp_path / "foreign.pt"
    torch.save(payload, path)
    torch.load(path, weights_only=True)                          # a sound torch file
    message = _refused(path)
    assert "not a checkpoint of this project's train stage" in message
    assert message.endswith(f"it holds {holds})")
