"""Unit tests for training.members.train_model one member at a time: seeds, the watch hook."""
from __future__ import annotations

from dataclasses import replace

import pytest
import torch

from attn_forecast.model.networks import Ensemble
from attn_forecast.model.settings import ModelSettings
from attn_forecast.training.batches import TrainData
from attn_forecast.training.members import QUIET, Job, train_model
from attn_forecast.data.windows import gather
from unit.training.helpers import NO_VAL, W, _data, _p, _sine, _store

pytestmark = pytest.mark.usefixtures("one_torch_thread")


# ---------------------------------------------------------------- seed ensembles
def test_ensemble_members_seeds_mean_and_determinism():
    z, tr, _, te = _data(_store([_sine()]))
    data = TrainData(z, tr, NO_VAL)
    s = ModelSettings(window=W, d_model=8, ffn_dim=16)
    p = _p(epochs=5, lr=0.01, seed=7)
    single, res1 = train_model(s, data, p, QUIET)
    assert len(res1) == 1 and not isinstance(single, Ensemble)
    seen = []
    # one member after another (stack=False): each with its own seed's batches
    ens, results = train_model(s, data, replace(p, ensemble=3),
                               Job(progress=False, on_epoch=seen.append), stack=False)
    assert isinstance(ens, Ensemble) and len(ens.members) == 3 and len(results) == 3
    assert seen == results[0].history                  # the first member's epochs only
    # member 0 is exactly the single model; the others start from seeds 8 and 9
    for a, b in zip(single.state_dict().values(), ens.members[0].state_dict().values()):
        assert torch.equal(a, b)
    other, _ = train_model(s, data, replace(p, seed=8), QUIET)
    for a, b in zip(other.state_dict().values(), ens.members[1].state_dict().values()):
        assert torch.equal(a, b)
    x, _ = gather(z, te, W, 1)
    with torch.no_grad():
        mean = torch.stack([m(x)[0] for m in ens.members]).mean(dim=0)
        assert torch.allclose(ens(x)[0], mean)
    again, _ = train_model(s, data, replace(p, ensemble=3), QUIET, stack=False)
    for a, b in zip(ens.state_dict().values(), again.state_dict().values()):
        assert torch.equal(a, b)                                    # deterministic


def test_watch_sees_the_first_member_after_each_epoch_and_may_end_the_run():
    """A search's hook: called with the epoch's row and the member itself (so it can score
    it); raising from it ends training there (a pruned trial)."""
    z, tr, _, _ = _data(_store([_sine()]))
    data = TrainData(z, tr, NO_VAL)
    s = ModelSettings(window=W, d_model=8, ffn_dim=16)
    p = _p(epochs=4, lr=0.01, seed=7)
    seen, rows = [], []

    def watch(row, member):
        seen.append((row["epoch"], member))

    model, res = train_model(s, data, p, Job(progress=False, on_epoch=rows.append,
                                                watch=watch))
    assert [e for e, _ in seen] == [1, 2, 3, 4] and all(m is model for _, m in seen)
    assert rows == res[0].history                     # on_epoch still sees every row

    class Stop(Exception):
        pass

    def prune(row, member):
        if row["epoch"] == 2:
            raise Stop

    with pytest.raises(Stop):
        train_model(s, data, replace(p, ensemble=2), Job(progress=False, watch=prune))
