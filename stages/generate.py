"""Stage generate: write the raw data (built-in synthetic series or the user's CSV) as one long
table ``id, t, value, signal`` (past covariates as ``feature:<name>``), each id's rows together
in time order; a single series is a table of one id. A large panel is written in blocks."""
from __future__ import annotations

import argparse

from attn_forecast import stage  # first: it pins the CPU before numpy loads
from attn_forecast.pipeline.generate import step


@stage.main
def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--params", default="params.yaml")
    ap.add_argument("--inputs", required=True, help="tracked folder holding users' CSV files")
    ap.add_argument("--out", required=True, help="long-format CSV to write")
    step(**vars(ap.parse_args(argv)))


if __name__ == "__main__":
    stage.run(main)
