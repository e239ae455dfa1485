"""Stage zeroshot@<subset>'s step: the prior (never trained on the competition) forecasting
every series of one subset zero-shot, over its holdout and its calibration cut, calibrated on
the cut, saved compact."""
from __future__ import annotations

from ..forecasters.run import run
from ..forecasters.saved import save
from ..forecasters.zeroshot import ZeroShot
from .competition import field_store, on_both_cuts
from ..setup.forecasting import parts, levels_of


def step(params: str, subset: str, out: str, pretrained: str) -> None:
    """zeroshot@``subset``: the prior at ``pretrained`` -> ``out``."""
    def forecast(p, store, season):
        named = "zeroshot" in p.evaluate.baselines
        return run(store, [ZeroShot(pretrained)] if named else [], parts(p, store), levels_of(p),
                   season=season)
    fs, p, store = on_both_cuts(params, subset, field_store, forecast, lambda p, fs: fs.names())
    save(out, fs, compact=True)
    print(f"zeroshot@{subset}: "
          f"{'the prior on' if fs.names() else 'not asked for:'} {store.n_series} series "
          f"({p.data.holdout}, calibrated on its calibration cut) -> {out}")
