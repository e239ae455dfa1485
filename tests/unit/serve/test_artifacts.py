"""Unit tests for attn_forecast.serve.artifacts: the served files are read only where their
bytes match their dvc.lock entries (a lock written here by hand, the MD5 DVC records), and the
identity names them, the revision and the params of every stage upstream."""
from __future__ import annotations

import hashlib
import json

import pytest
import yaml

from attn_forecast.errors import UserInputError
from attn_forecast.serve.artifacts import ancestors_params, load, manifest_path

ONNX = b"\x08\x07 not a real graph, only bytes to hash"


def _manifest(md5: str) -> dict:
    return {"format": 1, "onnx": {"path": "models/model.onnx", "md5": md5},
            "model": {"window": 12, "context": 12, "horizon": 3, "transform": "none",
                      "series_scalers": {"ids": ["a"], "center": [0.0], "scale": [1.0]}},
            "blend": None, "intervals": {"levels": [0.1, 0.5, 0.9], "calibrated_on": "cal",
                                         "forecasters": {"model": {"how": "calibrated"}}},
            "forecasters": ["model"], "default": "model"}


def _repo(tmp_path, manifest: dict | None = None, onnx: bytes = ONNX) -> dict:
    """models/model.onnx and models/serve.json, and a lock naming their MD5s."""
    (tmp_path / "models").mkdir(exist_ok=True)
    (tmp_path / "models" / "model.onnx").write_bytes(onnx)
    md5 = hashlib.md5(onnx).hexdigest()
    text = json.dumps(manifest or _manifest(md5)).encode()
    (tmp_path / "models" / "serve.json").write_bytes(text)
    lock = {"schema": "2.0", "stages": {
        "prepare": {"cmd": "p", "params": {"params.yaml": {"prepare": {"window": 12}}},
                    "outs": [{"path": "data/prepared", "md5": "d.dir"}]},
        "train": {"cmd": "t", "deps": [{"path": "data/prepared", "md5": "d.dir"}],
                  "params": {"params.yaml": {"train.lr": 0.01}},
                  "outs": [{"path": "models/model.onnx", "md5": md5},
                           {"path": "models/model.pt", "md5": "ckpt"}]},
        "other": {"cmd": "o", "params": {"params.yaml": {"render": {"dpi": 9}}}},
        "export": {"cmd": "e", "deps": [{"path": "models/model.onnx", "md5": md5}],
                   "outs": [{"path": "models/serve.json",
                             "md5": hashlib.md5(text).hexdigest()}]}}}
    (tmp_path / "dvc.lock").write_text(yaml.safe_dump(lock))
    return lock


def test_the_bundle_and_its_identity(tmp_path):
    _repo(tmp_path)
    b = load("models/model.pt", repo=tmp_path)
    assert b.onnx == ONNX and b.manifest["default"] == "model"
    i = b.identity
    assert i["rev"] == "workspace" and i["horizon"] == 3 and i["levels"] == [0.1, 0.5, 0.9]
    assert i["artifacts"]["models/model.onnx"] == hashlib.md5(ONNX).hexdigest()
    assert i["checkpoint"] == {"models/model.pt": "ckpt"}
    # the export stage's upstream: train and prepare, not the unrelated stage
    assert i["params"] == {"prepare.window": 12, "train.lr": 0.01}


@pytest.mark.parametrize("what", ["serve.json", "model.onnx"])
def test_a_file_that_differs_from_its_lock_entry_is_refused(tmp_path, what):
    _repo(tmp_path)
    path = tmp_path / "models" / what
    path.write_bytes(path.read_bytes() + b" ")
    with pytest.raises(UserInputError, match=f"models/{what} does not match its dvc.lock"):
        load("models/model.pt", repo=tmp_path)


def test_a_file_without_a_lock_entry_is_refused(tmp_path):
    lock = _repo(tmp_path)
    del lock["stages"]["export"]
    (tmp_path / "dvc.lock").write_text(yaml.safe_dump(lock))
    with pytest.raises(UserInputError, match="models/serve.json has no entry in the workspace"):
        load("models/model.pt", repo=tmp_path)


def test_a_manifest_of_another_model_is_refused(tmp_path):
    _repo(tmp_path, manifest=_manifest("0" * 32))
    with pytest.raises(UserInputError, match="is not the model models/serve.json was made"):
        load("models/model.pt", repo=tmp_path)


def test_no_lock_or_no_manifest_is_one_line(tmp_path):
    with pytest.raises(UserInputError, match="no dvc.lock in the workspace"):
        load("models/model.pt", repo=tmp_path)
    _repo(tmp_path)
    with pytest.raises(UserInputError, match="no other/serve.json in the workspace"):
        load("other/model.pt", repo=tmp_path)


def test_the_manifest_lies_beside_the_checkpoint_or_is_named():
    assert manifest_path("models/model.pt") == "models/serve.json"
    assert manifest_path("runs/x/serve.json") == "runs/x/serve.json"


def test_params_of_a_folder_dependency_reach_the_stage_writing_inside_it():
    lock = {"stages": {"a": {"params": {"params.yaml": {"x": 1}},
                             "outs": [{"path": "data/one/file.csv"}]},
                       "b": {"deps": [{"path": "data/one"}], "params": {"extra.yaml": {"y": 2}}},
                       "c": {"params": {"params.yaml": {"z": 3}}}}}
    assert ancestors_params(lock, "b") == {"extra.yaml:y": 2, "x": 1}
