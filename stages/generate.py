"""Stage generate: write the raw data (built-in synthetic series or the user's CSV) as one long
table ``id, t, value, signal`` (past covariates as ``feature:<name>``), each id's rows together
in time order; a single series is a table of one id. A large panel is written in blocks."""
from __future__ import annotations

import attn_forecast.cpu as _cpu  # noqa: I001
_cpu.pin()  # before numpy and torch load: the same kernels on every x86-64 CPU with AVX2
import argparse  # noqa: E402

from attn_forecast import sources  # noqa: E402
from attn_forecast.errors import run_cli  # noqa: E402
from attn_forecast.params import load_params  # noqa: E402
from attn_forecast.table import check_frame_regular, read_table, write_long  # noqa: E402
from attn_forecast.wiring import CSV_KEYS, check_inside, csv_options  # noqa: E402


def chunks(d, inputs: str):
    """The data ``data.kind`` names, as DataFrames of the long table."""
    if d.kind == "csv":
        check_inside(d.csv_path, inputs)
        frame = read_table(d.csv_path, **csv_options(d), keys=CSV_KEYS)
        if d.csv_time_column and d.time_gaps == "error":
            check_frame_regular(frame, d.csv_path, CSV_KEYS)
        return [frame]
    if d.kind == "competition":
        return [sources.competition(d.competition, d.subset, d.holdout)]
    if d.kind == "panel":
        return sources.panel(d.n_series, d.n_points, d.panel_min_points, d.seed, d.noise_std,
                             d.trend)
    if d.kind == "seasonal":
        return [sources.seasonal(d.n_points, d.noise_std, d.seed, trend=d.trend,
                                 period1=d.period1, amplitude1=d.amplitude1,
                                 period2=d.period2, amplitude2=d.amplitude2)]
    if d.kind == "random_walk":
        return [sources.random_walk(d.n_points, d.seed, start_price=d.start_price,
                                    drift=d.drift, volatility=d.volatility)]
    return [sources.sine(d.n_points, d.noise_std, d.seed)]


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
