"""A network kind is its facts (model/kinds.py) and its network (model/networks.py), each
registered once: the registries agree, every fact the pipeline reads comes from the kind, and a
toy kind added in this file alone trains, forecasts, checkpoints and exports."""
from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn

from attn_forecast.forecasters.neural import ModelForecaster
from attn_forecast.model import checkpoint, kinds, networks
from attn_forecast.model.export import export
from attn_forecast.model.kinds import KINDS
from attn_forecast.model.settings import ModelSettings
from attn_forecast.training.batches import to_device
from attn_forecast.training.members import QUIET, train_model
from attn_forecast.training.threads import activation_bytes, step_flops
from unit.training.helpers import _p, _sine, _store

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def test_every_kind_has_one_network_and_the_schema_offers_each():
    assert KINDS == tuple(kinds.REGISTRY) and "kind" in ModelSettings.__dataclass_fields__
    assert set(networks.NETWORKS) == set(kinds.REGISTRY)
    for name, net in networks.NETWORKS.items():
        assert net.kind is kinds.REGISTRY[name] and issubclass(net, networks.Network)


@pytest.mark.parametrize("name", KINDS)
def test_the_heads_width_is_the_kinds_states(name):
    s = ModelSettings(kind=name, window=12, horizon=2, d_model=8, ffn_dim=8, pooling="flatten")
    model = networks.build_model(s)
    assert model.head[0].in_features == 8 * kinds.REGISTRY[name].states(s)
    out, _ = model(torch.randn(3, 12))
    assert out.shape == (3, 2)


class Toy(kinds.Kind):
    """One linear layer over the window: one state."""
    name = "toy"

    @staticmethod
    def flops(s):
        return s.window * s.d_model + s.d_model * s.ffn_dim

    @staticmethod
    def activations(s):
        return s.window + s.d_model


class ToyForecaster(networks.Network):
    kind = Toy

    def __init__(self, s: ModelSettings) -> None:
        super().__init__(s)
        self.body = nn.Linear(s.window, s.d_model)
        self.shared_parts()

    def forward(self, x, need_weights=False, cal=None, quantiles=False, seen=None):
        x, stats = self.normalized(x, seen)
        h = torch.relu(self.body(x)).unsqueeze(1)        # (B, 1, d): one state
        return self.finish(h, None, x, cal, stats, quantiles), None


@pytest.fixture
def toy(monkeypatch):
    """The toy kind registered where a new kind is: its facts' registry and the networks'."""
    monkeypatch.setitem(kinds.REGISTRY, "toy", Toy)
    monkeypatch.setitem(networks.NETWORKS, "toy", ToyForecaster)
    return ModelSettings(kind="toy", window=8, horizon=2, d_model=8, ffn_dim=8,
                         instance_norm="revin", quantiles=(0.1, 0.5, 0.9))


def test_a_toy_kind_trains_forecasts_checkpoints_and_exports(toy, tmp_path):
    ort = pytest.importorskip("onnxruntime")
    assert step_flops(toy, 4) == 3 * 2 * 4 * Toy.flops(toy)
    assert activation_bytes(toy, 4) == 4.0 * 4 * Toy.activations(toy)
    store = _store([_sine(160, seed=0), _sine(140, seed=1) * 3], horizon=2)
    data = to_device(store, torch.device("cpu"))
    model, results = train_model(toy, data, _p(epochs=3, loss="pinball", seed=1), QUIET)
    assert isinstance(model, ToyForecaster) and len(results[0].history) == 3
    ends = store.ends("test")
    forecast = ModelForecaster(model).forecast(store, ends, (0.1, 0.5, 0.9))
    assert forecast.point.shape == (len(ends), 2) and np.isfinite(forecast.point).all()
    assert (np.diff(forecast.quantiles, axis=-1) >= 0).all()
    path = tmp_path / "toy.pt"
    checkpoint.save(path, model, {"prepare": store.meta()})
    again, _ = checkpoint.load(path)
    assert isinstance(again, ToyForecaster)
    for a, b in zip(model.state_dict().values(), again.state_dict().values()):
        assert torch.equal(a, b)
    model.eval()
    export(model, store.meta(), tmp_path / "toy.onnx", "onnx")
    x = np.random.default_rng(0).normal(size=(5, 8)).astype(np.float32)
    got = ort.InferenceSession(str(tmp_path / "toy.onnx")).run(["forecast"], {"window": x})[0]
    with torch.no_grad():
        want = model(torch.from_numpy(x))[0].numpy()
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
