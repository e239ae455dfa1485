"""``attn-forecast export``: a checkpoint in, the ONNX graph and its JSON out, run by
onnxruntime alone; the command's checks."""
from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from attn_forecast.commands.export import main
from attn_forecast.data.windows import gather
from attn_forecast.errors import UserInputError
from attn_forecast.model import checkpoint
from attn_forecast.model.networks import build_model
from attn_forecast.model.settings import ModelSettings
from unit.model.helpers import H, W, _f32, hourly_store

ort = pytest.importorskip("onnxruntime")
pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.fixture(scope="module")
def hourly():
    return hourly_store()


def test_the_command_exports_a_checkpoint_and_checks_the_file_name(hourly, tmp_path, capsys):
    torch.manual_seed(5)
    model = build_model(ModelSettings(kind="lstm", window=W, horizon=H, d_model=8)).eval()
    path = tmp_path / "model.pt"
    checkpoint.save(path, model, {"prepare": hourly.meta()})
    with pytest.raises(UserInputError, match="--out must end in .onnx for --format onnx"):
        main(["--model", str(path), "--out", str(tmp_path / "m.bin")])
    with pytest.raises(UserInputError, match="^--model: file not found"):
        main(["--model", str(tmp_path / "none.pt"), "--out", str(tmp_path / "m.onnx")])
    main(["--model", str(path), "--out", str(tmp_path / "m.onnx")])
    assert "export: lstm model -> " in capsys.readouterr().out
    x = _f32(gather(np.asarray(hourly.z), hourly.ends("test"), W, H)[0])
    got = ort.InferenceSession(str(tmp_path / "m.onnx")).run(["forecast"], {"window": x})[0]
    with torch.no_grad():
        np.testing.assert_allclose(got, model(torch.from_numpy(x))[0].numpy(), atol=1e-5)
    desc = json.loads((tmp_path / "m.json").read_text())
    assert desc["format"] == "onnx" and desc["series_scalers"] == hourly.meta()["series"]
