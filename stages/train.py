"""Stage train: fit the forecaster on every series' training windows (CUDA when present, else
CPU), then forecast the windows that evaluate scores, and record what the model looks at.

out: the checkpoint (state_dict + model settings + the prepared data's record + the
full-precision history; loads with ``weights_only=True``), its ONNX export and the JSON that
describes it (model/export.py; the export stage serves them), the per-epoch history CSV
``epoch, train_loss, val_loss, lr`` (of the first member of an ensemble), the model's
forecasts of the test (and calibration) windows, its attention weights and the weight by lag.
So evaluate and render never import torch. With ``train.live: true`` every epoch also goes to
DVCLive's ``dvclive/``. With ``train.nproc`` > 1 the stage relaunches itself under
``torch.distributed.run`` (DistributedDataParallel; rank 0 writes the outputs).
"""
from __future__ import annotations

import argparse
import sys

from attn_forecast import stage  # first: it pins the CPU before numpy loads
from attn_forecast.pipeline.train import step


@stage.main
def main(argv: list[str] | None = None):
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--params", default="params.yaml")
    for name in ("prepared", "model", "onnx", "onnx-meta", "history", "forecasts", "attention",
                 "lags"):
        ap.add_argument(f"--{name}", required=True)
    ap.add_argument("--pretrained", help="the prior (train.init pretrained)")
    return step(**vars(ap.parse_args(argv)),
                relaunch=(__file__, sys.argv[1:] if argv is None else argv))


if __name__ == "__main__":
    stage.run(main)
