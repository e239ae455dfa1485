"""Unit tests for attn_forecast.training.distributed: a single process trains the bare model."""
from __future__ import annotations

import pytest
import torch

from attn_forecast.training.distributed import Distributed

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def test_a_single_process_without_compile_trains_the_bare_model():
    one = Distributed(0, 1, torch.device("cpu"))
    assert one.wrapper(False) is None
    one.close()                                          # nothing to tear down
