"""Stage prepare: cut every series into its parts, transform it and fit its scaler on its
training part; choose ``auto`` window and season from the training parts.

out: the store folder (store.json, index.npz and one memory-mappable .npy per flat array: see
src/attn_forecast/data/store_io.py). Windows are gathered on the fly later.
"""
from __future__ import annotations

import argparse

from attn_forecast import stage  # first: it pins the CPU before numpy loads
from attn_forecast.pipeline.prepare import step


@stage.main
def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--params", default="params.yaml")
    ap.add_argument("--series", required=True, help="long-format CSV from generate")
    ap.add_argument("--out", required=True, help="folder for the prepared store")
    step(**vars(ap.parse_args(argv)))


if __name__ == "__main__":
    stage.run(main)
