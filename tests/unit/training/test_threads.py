"""Unit tests for attn_forecast.training.threads: threads by step size, the memory warning."""
from __future__ import annotations

import pytest

from attn_forecast.training.threads import (MAX_AUTO_THREADS, PARALLEL_FLOPS, activation_bytes,
                                            choose_threads, full_batch_warning, step_flops)
from attn_forecast.model.settings import ModelSettings

pytestmark = pytest.mark.usefixtures("one_torch_thread")


# ---------------------------------------------------------------- runtime: threads, memory
def test_threads_by_the_size_of_a_step():
    small = step_flops(ModelSettings(), 256)          # the default model
    assert small < PARALLEL_FLOPS
    assert choose_threads("auto", small, n_cores=16) == 1
    big = step_flops(ModelSettings(window=336, d_model=128, n_layers=4), 1024)
    assert big >= PARALLEL_FLOPS
    assert choose_threads("auto", big, n_cores=16) == MAX_AUTO_THREADS
    assert choose_threads("auto", big, n_cores=2) == 2
    assert choose_threads(3, small, n_cores=16) == 3
    assert step_flops(ModelSettings(), 512) == pytest.approx(2 * small)


def test_full_batch_warning_only_for_a_full_batch_too_big():
    s = ModelSettings(window=96, d_model=64)
    need = activation_bytes(s, 100_000)
    assert need == pytest.approx(1000 * activation_bytes(s, 100))   # linear in batch
    msg = full_batch_warning(s, 100_000, 100_000, limit=need / 2)
    assert msg.startswith("warning: a full batch of 100,000 windows needs about")
    assert "set train.batch_size" in msg
    assert full_batch_warning(s, 100_000, 256, limit=need / 2) is None  # mini-batches
    assert full_batch_warning(s, 100_000, 100_000, limit=need * 2) is None
