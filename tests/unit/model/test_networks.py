"""Unit tests for attn_forecast.model's networks and checkpoint: the source model's size and
seeded initial weights, shapes, variants, the quantile head, ensembles, what the model reads
of its side inputs, the checkpoint's plain-data round trip and its errors (explain's attention
weights and lag tables: test_explain.py)."""
from __future__ import annotations

import math

import pytest
import torch
from torch import nn

from attn_forecast.model import checkpoint
from attn_forecast.errors import UserInputError
from attn_forecast.model.networks import (NETWORKS, AttentionForecaster, Ensemble, build_model,
                                          n_parameters, non_crossing, sinusoidal_positions)
from attn_forecast.model.kinds import KINDS
from attn_forecast.model.settings import ModelSettings

pytestmark = pytest.mark.usefixtures("one_torch_thread")

PREPARE = {"window": 10, "horizon": 1, "transform": "none", "scaler": "zscore",
           "series": {"ids": ["sine"], "kind": "zscore", "center": [0.5], "scale": [2.0]}}


# ---------------------------------------------------------------- size, shapes, variants
def test_default_model_has_source_parameter_count():
    # Linear(1,32) 64 + 3 x Linear(32,32,no bias) 3072 + Linear(32,64) 2112 + Linear(64,1) 65
    m = build_model(ModelSettings())
    assert isinstance(m, AttentionForecaster)
    assert n_parameters(m) == 64 + 3 * 32 * 32 + (32 * 64 + 64) + (64 + 1) == 5313


@pytest.mark.parametrize("horizon", [1, 5])
@pytest.mark.parametrize("n_heads,n_layers", [(1, 1), (4, 2)])
def test_output_and_weight_shapes(horizon, n_heads, n_layers):
    torch.manual_seed(0)
    s = ModelSettings(window=12, horizon=horizon, n_heads=n_heads, n_layers=n_layers)
    m = build_model(s).eval()
    x = torch.randn(6, 12)
    with torch.no_grad():
        y, w = m(x, need_weights=True)
        y_fast, none = m(x)
    assert y.shape == (6, horizon)
    assert none is None
    assert torch.allclose(y, y_fast, atol=1e-5)   # explicit weights and the fused kernel agree
    assert isinstance(w, list) and len(w) == n_layers
    for layer in w:
        assert layer.shape == (6, n_heads, 12, 12)
        assert (layer >= 0).all()
        assert torch.allclose(layer.sum(-1), torch.ones(6, n_heads, 12), atol=1e-5)


VARIANTS = [
    dict(residual=True, n_layers=2),
    dict(positional="learned"),
    dict(positional="none"),
    dict(pooling="mean"),
    dict(residual=True, pooling="mean", positional="learned", n_heads=2, dropout=0.1),
    dict(highway=True, instance_norm="revin"),
    dict(kind="lstm"),
    dict(kind="lstm", n_layers=2, pooling="mean", dropout=0.2, highway=True),
    dict(pooling="flatten", patch_len=4, patch_stride=2, residual=True),
    dict(kind="lstm", pooling="flatten"),
    dict(kind="mlp"),
    dict(kind="mlp", n_layers=3, pooling="flatten", dropout=0.1, highway=True,
         instance_norm="revin"),
]


@pytest.mark.parametrize("kw", VARIANTS)
def test_variants_build_run_and_backprop(kw):
    torch.manual_seed(0)
    s = ModelSettings(window=8, horizon=3, d_model=16, ffn_dim=24, **kw)
    m = build_model(s)
    assert isinstance(m, NETWORKS[kw.get("kind", "attention")])
    x = torch.randn(4, 8)
    m.train()
    y, _ = m(x)
    assert y.shape == (4, 3)
    y.pow(2).mean().backward()
    grads = [p.grad for p in m.parameters() if p.requires_grad]
    assert all(g is not None and torch.isfinite(g).all() for g in grads)
    m.eval()
    with torch.no_grad():
        out, w = m(x, need_weights=True)
    assert torch.isfinite(out).all()
    if kw.get("kind") in ("lstm", "mlp"):
        assert w is None
    else:
        assert len(w) == s.n_layers


def test_positional_variants_differ():
    s = ModelSettings(window=6, d_model=8)
    assert torch.equal(build_model(ModelSettings(window=6, d_model=8, positional="none")).pos,
                       torch.zeros(6, 8))
    pe = build_model(s).pos
    # PE[p, 0] = sin(p), PE[p, 1] = cos(p), PE[p, 2] = sin(p / 10000^(2/8))
    for p in range(6):
        assert pe[p, 0].item() == pytest.approx(math.sin(p), abs=1e-6)
        assert pe[p, 1].item() == pytest.approx(math.cos(p), abs=1e-6)
        assert pe[p, 2].item() == pytest.approx(math.sin(p / 10000 ** (2 / 8)), abs=1e-6)
        assert pe[p, 7].item() == pytest.approx(math.cos(p / 10000 ** (6 / 8)), abs=1e-6)
    assert sinusoidal_positions(6, 8).shape == (6, 8)
    learned = build_model(ModelSettings(window=6, d_model=8, positional="learned"))
    assert isinstance(learned.pos, nn.Parameter)


def test_seeded_init_matches_source_creation_order():
    torch.manual_seed(42)
    emb = nn.Linear(1, 32)
    wq = nn.Linear(32, 32, bias=False)
    wk = nn.Linear(32, 32, bias=False)
    wv = nn.Linear(32, 32, bias=False)
    fc1 = nn.Linear(32, 64)
    fc2 = nn.Linear(64, 1)
    torch.manual_seed(42)
    m = build_model(ModelSettings())
    attn = m.blocks[0].attn
    pairs = [(m.embedding.weight, emb.weight), (m.embedding.bias, emb.bias),
             (attn.W_Q.weight, wq.weight), (attn.W_K.weight, wk.weight),
             (attn.W_V.weight, wv.weight), (m.head[0].weight, fc1.weight),
             (m.head[0].bias, fc1.bias), (m.head[2].weight, fc2.weight),
             (m.head[2].bias, fc2.bias)]
    for ours, src in pairs:
        assert torch.equal(ours, src)


# ---------------------------------------------------------------- quantile head, ensembles
def test_non_crossing_keeps_the_median_and_orders_the_levels():
    g = torch.Generator().manual_seed(0)
    raw = torch.randn(50, 4, 5, generator=g) * 5        # any raw head outputs, 5 levels
    q = non_crossing(raw, 2)
    assert torch.equal(q[..., 2], raw[..., 2])
    assert (q[..., 1:] >= q[..., :-1]).all()          # never crossing (a step can round to 0)
    # each step away from the median is softplus of that level's raw output
    sp = nn.functional.softplus(raw)
    assert torch.allclose(q[..., 3] - q[..., 2], sp[..., 3], atol=1e-5)
    assert torch.allclose(q[..., 4] - q[..., 3], sp[..., 4], atol=1e-5)
    assert torch.allclose(q[..., 2] - q[..., 1], sp[..., 1], atol=1e-5)
    assert torch.allclose(q[..., 1] - q[..., 0], sp[..., 0], atol=1e-5)


@pytest.mark.parametrize("kind", KINDS)
def test_a_quantile_model_forecasts_its_median(kind):
    torch.manual_seed(0)
    s = ModelSettings(kind=kind, window=8, horizon=3, d_model=8, ffn_dim=8,
                      quantiles=(0.1, 0.5, 0.9), instance_norm="revin")
    m = build_model(s).eval()
    x = torch.randn(6, 8) * 3 + 10
    with torch.no_grad():
        q = m(x, quantiles=True)[0]
        point = m(x)[0]
    assert q.shape == (6, 3, 3) and point.shape == (6, 3)
    assert torch.equal(point, q[..., 1])
    assert (q[..., 0] < q[..., 1]).all() and (q[..., 1] < q[..., 2]).all()
    # a point model asked for quantiles gives its one forecast as Q = 1
    p = build_model(ModelSettings(kind=kind, window=8, horizon=3, d_model=8, ffn_dim=8)).eval()
    with torch.no_grad():
        assert torch.equal(p(x, quantiles=True)[0][..., 0], p(x)[0])


def test_an_ensemble_forecasts_its_members_mean_and_reports_the_first_ones_weights():
    torch.manual_seed(0)
    s = ModelSettings(window=8, horizon=2, d_model=8, ffn_dim=8)
    ens = build_model(s, members=3).eval()
    assert isinstance(ens, Ensemble) and len(ens.members) == 3 and ens.settings == s
    assert ens.blocks is ens.members[0].blocks
    x = torch.randn(5, 8)
    with torch.no_grad():
        y, w = ens(x, need_weights=True)
        outs = [m(x, need_weights=True) for m in ens.members]
    assert torch.allclose(y, torch.stack([o[0] for o in outs]).mean(dim=0), atol=1e-6)
    assert torch.equal(w[0], outs[0][1][0])
    assert not torch.equal(outs[0][0], outs[1][0])       # the members differ
    assert build_model(ModelSettings(kind="lstm", window=8), members=2).blocks is None


# ---------------------------------------------------------------- side inputs
@pytest.mark.parametrize("kind", KINDS)
def test_the_model_reads_input_features_and_never_a_target_times(kind):
    torch.manual_seed(0)
    s = ModelSettings(kind=kind, window=12, horizon=3, n_time_features=2, n_features=4)
    model = build_model(s).eval()
    x = torch.randn(5, 12)
    cal = (torch.randn(5, 12, 6), torch.randn(5, 3, 6))   # calendar (2), then features (4)
    with torch.no_grad():
        y = model(x, cal=cal)[0]
        future = (cal[0], cal[1].clone())
        future[1][..., 2:] = 1e6                          # the features of the target times
        assert torch.equal(model(x, cal=future)[0], y)
        past = (cal[0].clone(), cal[1])
        past[0][:, -1, 2:] += 1.0                         # the newest input step's features
        assert not torch.allclose(model(x, cal=past)[0], y)
        calendar = (cal[0], cal[1].clone())
        calendar[1][..., :2] += 1.0                       # the target times' calendar is read
        assert not torch.allclose(model(x, cal=calendar)[0], y)


# ---------------------------------------------------------------- the checkpoint
@pytest.mark.parametrize("kw", [dict(), dict(positional="learned", residual=True, n_heads=2,
                                              horizon=3),
                                dict(kind="lstm", n_layers=2), dict(kind="mlp", n_layers=2),
                                dict(quantiles=(0.1, 0.5, 0.9), instance_norm="revin")])
def test_checkpoint_round_trip(tmp_path, kw):
    torch.manual_seed(3)
    s = ModelSettings(window=10, **kw)
    m = build_model(s).eval()
    extra = {"prepare": PREPARE, "best_epoch": 4, "history": [{"epoch": 1, "val_loss": None}]}
    path = tmp_path / "sub" / "model.pt"
    checkpoint.save(path, m, extra)
    assert path.is_file()
    # plain data only: loads with weights_only=True
    payload = torch.load(path, weights_only=True)
    assert payload["settings"] == s.to_dict() and payload["members"] == 1
    loaded, payload2 = checkpoint.load(path)
    assert loaded.settings == s                    # quantiles back as a tuple
    assert payload2["prepare"] == PREPARE and payload2["history"] == extra["history"]
    assert not loaded.training
    x = torch.randn(7, 10)
    with torch.no_grad():
        assert torch.equal(m(x)[0], loaded(x)[0])


def test_an_ensemble_checkpoint_loads_as_the_ensemble(tmp_path):
    torch.manual_seed(1)
    ens = build_model(ModelSettings(window=6, d_model=8, ffn_dim=8), members=3).eval()
    checkpoint.save(tmp_path / "e.pt", ens, {"prepare": PREPARE})
    loaded, payload = checkpoint.load(tmp_path / "e.pt")
    assert payload["members"] == 3 and isinstance(loaded, Ensemble)
    x = torch.randn(4, 6)
    with torch.no_grad():
        assert torch.equal(loaded(x)[0], ens(x)[0])


def test_checkpoint_bytes_are_deterministic(tmp_path):
    torch.manual_seed(5)
    m = build_model(ModelSettings(window=6, d_model=8, ffn_dim=8))
    extra = {"prepare": {"window": 6}}
    a, b = tmp_path / "a.pt", tmp_path / "dir" / "b.pt"
    checkpoint.save(a, m, extra)
    checkpoint.save(b, m, extra)
    assert a.read_bytes() == b.read_bytes()
    # and they differ when the weights differ
    with torch.no_grad():
        m.head[2].bias.add_(1.0)
    checkpoint.save(b, m, extra)
    assert a.read_bytes() != b.read_bytes()
    # written atomically: no temporary file left behind
    assert sorted(p.name for p in tmp_path.rglob("*") if p.is_file()) == ["a.pt", "b.pt"]


class Foreign:
    """A pickled object: what ``weights_only=True`` refuses to load."""


def test_a_file_that_is_not_this_projects_checkpoint_is_one_line_naming_the_flag(tmp_path):
    with pytest.raises(UserInputError, match=r"^--model: file not found: "):
        checkpoint.read(tmp_path / "none.pt")
    text = tmp_path / "text.pt"
    text.write_text("id,t,value\n")
    with pytest.raises(UserInputError, match=r"text\.pt is not a PyTorch checkpoint"):
        checkpoint.read(text)
    obj = tmp_path / "obj.pt"
    torch.save({"settings": Foreign(), "state_dict": {}, "prepare": {}}, obj)
    with pytest.raises(UserInputError, match=r"is not a PyTorch checkpoint \(Unpickling"):
        checkpoint.read(obj)
    other = tmp_path / "other.pt"
    torch.save({"state_dict": {}}, other)
    with pytest.raises(UserInputError, match="no settings, state_dict and prepare entries"):
        checkpoint.read(other, what="--checkpoint")
    with pytest.raises(UserInputError, match="^--checkpoint: "):
        checkpoint.read(tmp_path / "none.pt", what="--checkpoint")


def test_a_folder_given_as_the_checkpoint_is_one_line(tmp_path):
    """A user's ``--model models`` (the folder, not models/model.pt) is bad input like any
    other file that is not a checkpoint: one line naming the flag, not a traceback."""
    (tmp_path / "models").mkdir()
    with pytest.raises(UserInputError, match=r"^--model: .*models"):
        checkpoint.read(tmp_path / "models")
