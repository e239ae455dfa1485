"""Unit tests for attn_forecast.training.batches: augmentation and the tensors training reads."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch

from attn_forecast.training.settings import TrainSettings
from attn_forecast.training.batches import augment, move_unit, to_device
from attn_forecast.data.windows import gather_side
from unit.training.helpers import W, _sine, _store, _with_calendar_and_features

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def test_augment_scale_shift_apply_to_inputs_and_targets_alike():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(50, 6, generator=g)
    y = torch.randn(50, 2, generator=g)
    p = TrainSettings(augment_scale=0.2, augment_shift=0.5, augment_noise=0.0)
    xa, ya = augment(x, y, p, torch.Generator().manual_seed(1))
    # per window: xa = x * s + b and ya = y * s + b with one (s, b)
    for i in range(50):
        s = (xa[i, 1] - xa[i, 0]) / (x[i, 1] - x[i, 0])
        b = xa[i, 0] - x[i, 0] * s
        assert 0.8 - 1e-4 <= s <= 1.2 + 1e-4 and -0.5 - 1e-4 <= b <= 0.5 + 1e-4
        assert torch.allclose(xa[i], x[i] * s + b, atol=1e-4)
        assert torch.allclose(ya[i], y[i] * s + b, atol=1e-4)
    noisy = TrainSettings(augment_noise=0.1)
    xn, yn = augment(x, y, noisy, torch.Generator().manual_seed(1))
    assert torch.equal(yn, y) and not torch.equal(xn, x)
    assert 0.07 < float((xn - x).std()) < 0.13
    # unit: the shift and the noise in other units (train.augment_units moves)
    xu, _ = augment(x, y, noisy, torch.Generator().manual_seed(1), unit=3.0)
    assert torch.allclose(xu - x, (xn - x) * 3.0, atol=1e-5)
    xs, ys = augment(x, y, TrainSettings(augment_shift=0.5, augment_noise=0.0),
                     torch.Generator().manual_seed(1), unit=0.01)
    assert float((xs - x).abs().max()) <= 0.005 + 1e-6 and torch.allclose(
        ys - y, (xs - x)[:, :2], atol=1e-6)
    none_x, none_y = augment(x, y, TrainSettings(augment_noise=0.0), torch.Generator())
    assert torch.equal(none_x, x) and torch.equal(none_y, y)


def test_move_unit_on_a_panel_sees_only_changes_inside_training_windows():
    """train.augment_units moves: the std of the one-step changes inside the training
    windows; on a panel never a change across two series, nor one after a series' training
    part (a single series: its training windows' whole span)."""
    rs = np.random.default_rng(7)
    series = [np.cumsum(rs.normal(0, s, n)) for s, n in ((1.0, 50), (5.0, 64), (0.2, 40))]
    H = 2
    store = _store(series, horizon=H, val=0.1)
    z = torch.from_numpy(np.asarray(store.z))
    ends = store.ends("train")
    rows = sorted({r for e in ends for r in range(e - W + 1, e + H)})
    zz = np.asarray(store.z, dtype=np.float64)
    want = np.std(zz[rows] - zz[np.array(rows) - 1], ddof=1)
    got = move_unit(z, torch.from_numpy(ends), W, H)
    assert got == pytest.approx(want, rel=1e-12)
    changed = [s.copy() for s in series]
    changed[1][int(store.cuts.val_start[1]):] *= 3        # after series 1's training part
    other = _store(changed, horizon=H, val=0.1)
    assert move_unit(torch.from_numpy(np.asarray(other.z)), torch.from_numpy(ends), W, H) \
        == got
    one = torch.from_numpy(np.asarray(store.z[store.rows(2)]))
    e1 = torch.arange(W, 30)
    assert move_unit(one, e1, W, H) == pytest.approx(
        float(np.std(np.diff(one[:29 + H].double().numpy()), ddof=1)), rel=1e-12)


def test_to_device_holds_what_training_reads():
    t = pd.date_range("2024-01-01", periods=200, freq="D").to_numpy("datetime64[s]")
    store = _store([_sine(90), _sine(110, seed=1)], val=0.1, time_features=("dayofweek",),
                   t=t)
    got = to_device(store, torch.device("cpu"))
    assert got.z.dtype == torch.float32 and np.array_equal(got.z.numpy(), store.z)
    assert np.array_equal(got.side.numpy(), store.side) and got.side.shape[1] == 2
    for part in ("train", "val"):
        assert np.array_equal(getattr(got, part).numpy(), store.ends(part))
    assert to_device(_store([_sine()]), torch.device("cpu")).side is None


def test_the_side_inputs_training_reads_are_the_stores_rows():
    store = _with_calendar_and_features()
    data = to_device(store, torch.device("cpu"))
    e = data.train[:4]
    cin, cout = gather_side(data.side, e, 14, 3)
    for k, end in enumerate(e.tolist()):
        assert np.array_equal(cin[k].numpy(), store.side[end - 14:end])
        assert np.array_equal(cout[k].numpy(), store.side[end:end + 3])
