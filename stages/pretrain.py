"""Stage pretrain: the prior, one global attention model trained on a synthetic corpus drawn
on the fly (and, with ``pretrain.real``, the train parts of M3 subsets), for the train
stage's ``train.init: pretrained`` and the ``zeroshot`` forecaster.

out: the checkpoint (``models/pretrained.pt``, committed: a fresh clone never pretrains), the
per-round history CSV and a metrics file (the final validation loss, windows/s, seconds and
the peak memory). With ``pretrain.nproc`` > 1 the stage relaunches itself under
``torch.distributed.run``, as training does.
"""
from __future__ import annotations

import argparse
import sys

from attn_forecast import stage  # first: it pins the CPU before numpy loads
from attn_forecast.pipeline.pretrain import step


@stage.main
def main(argv: list[str] | None = None):
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--params", default="params.yaml")
    for name in ("model", "history", "metrics"):
        ap.add_argument(f"--{name}", required=True)
    return step(**vars(ap.parse_args(argv)),
                relaunch=(__file__, sys.argv[1:] if argv is None else argv))


if __name__ == "__main__":
    stage.run(main)
