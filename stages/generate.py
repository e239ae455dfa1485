"""Stage generate: write the raw data (built-in synthetic series or the user's CSV) as one long
table ``id, t, value, signal`` (past covariates as ``feature:<name>``), each id's rows together
in time order; a single series is a table of one id. A large panel is written in blocks."""
from __future__ import annotations

import attn_forecast.cpu as _cpu  # noqa: I001
_cpu.pin()  # before numpy and torch load: the same kernels on every x86-64 CPU with AVX2
import argparse  # noqa: E402
from attn_forecast.config.load import load_params  # noqa: E402
from attn_forecast.data.long_table import write_long  # noqa: E402
from attn_forecast.errors import naming, run_cli  # noqa: E402
from attn_forecast.pipeline.data import chunks  # noqa: E402
from attn_forecast.pipeline.keys import PARAMS_KEYS  # noqa: E402


@naming(PARAMS_KEYS)
def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--params", default="params.yaml")
    ap.add_argument("--inputs", required=True, help="tracked folder holding users' CSV files")
    ap.add_argument("--out", required=True, help="long-format CSV to write")
    args = ap.parse_args(argv)
    d = load_params(args.params).data
    rows, ids = write_long(args.out, chunks(d, args.inputs))
    print(f"generate: {rows} points of {d.kind} data in {ids} series -> {args.out}")


if __name__ == "__main__":
    run_cli(main)
