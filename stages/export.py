"""Stage export: the forecast service's manifest (pipeline/export.py): the train stage's ONNX
export and its JSON, the blend and the intervals the evaluate stage learned, in one file that
``attn-forecast serve`` reads. No torch here.
"""
from __future__ import annotations

import argparse

from attn_forecast import stage  # first: it pins the CPU before numpy loads
from attn_forecast.pipeline.export import step


@stage.main
def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--params", default="params.yaml")   # read by no step: every stage takes it
    for name in ("onnx", "onnx-meta", "blend", "intervals"):
        ap.add_argument(f"--{name}", required=True)
    ap.add_argument("--out", required=True, help="the manifest (JSON) to write")
    args = vars(ap.parse_args(argv))
    args.pop("params")
    return step(**args)


if __name__ == "__main__":
    stage.run(main)
