"""Stage generate: write the raw series (built-in synthetic data or the user's CSV).

out: ``t, value, signal`` CSV (signal empty for data without a noise-free value); for a panel
(``data.kind: panel``, or a CSV with ``data.csv_id_column``) ``id, t, value, signal``, grouped
by id and sorted by time inside each, written in blocks (a large panel is never held whole).
"""
from __future__ import annotations

import attn_forecast  # noqa: F401, I001  (first: pins CPU code paths before numpy and torch load)
import argparse

from attn_forecast.data import check_inside, csv_dialect, load_series
from attn_forecast.errors import run_cli
from attn_forecast.io import write_csv
from attn_forecast.panel import read_panel_csv, synthetic_chunks, write_panel_csv
from attn_forecast.params import load_params


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--params", default="params.yaml")
    ap.add_argument("--inputs", required=True, help="tracked folder holding users' CSV files")
    ap.add_argument("--out", required=True, help="series CSV to write")
    args = ap.parse_args(argv)
    p = load_params(args.params).data
    if p.kind == "csv":
        check_inside(p.csv_path, args.inputs)
    if p.is_panel:
        if p.kind == "panel":
            chunks = synthetic_chunks(p.n_series, p.n_points, p.panel_min_points, p.seed,
                                      p.noise_std, p.trend)
        else:
            chunks = [read_panel_csv(p.csv_path, p.csv_id_column, p.csv_column,
                                     p.csv_time_column, p.missing,
                                     features=p.csv_feature_columns, **csv_dialect(p))]
        rows, series = write_panel_csv(args.out, chunks)
        print(f"generate: a panel of {series} series, {rows} points of {p.kind} data -> "
              f"{args.out}")
        return
    frame = load_series(p)
    write_csv(args.out, frame)
    print(f"generate: {len(frame)} points of {p.kind} data -> {args.out}")


if __name__ == "__main__":
    run_cli(main)
