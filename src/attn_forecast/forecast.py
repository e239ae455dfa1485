"""Forecast the next values of a series with a trained model.

    python -m attn_forecast.forecast --model models/model.pt --csv prices.csv --column close \
        --steps 20 --out forecast.csv

Reads the series (sorted by ``--time-column`` when given), applies the model's own transform
and scaler (saved in the checkpoint), and forecasts ``--steps`` values, feeding predictions back
in when ``--steps`` exceeds the model's horizon. Writes ``step, forecast`` CSV.
"""
from __future__ import annotations

import argparse
import pickle

import numpy as np
import pandas as pd
import torch

from .data import read_csv_series
from .errors import UserInputError, run_cli
from .io import write_csv
from .model import model_from_payload
from .windows import Scaler, to_levels, to_model_series, transform_offset


def forecast_levels(model: torch.nn.Module, meta: dict, levels: np.ndarray,
                    steps: int) -> np.ndarray:
    """The next ``steps`` levels after ``levels``, recursively in chunks of the horizon."""
    window, horizon, kind = meta["window"], meta["horizon"], meta["transform"]
    scaler = Scaler(**meta["scaler"])
    need = window + transform_offset(kind)
    if len(levels) < need:
        raise UserInputError(f"the series has {len(levels)} values; this model needs at "
                             f"least {need} (window {window}"
                             + (f" + 1 for the {kind} transform)" if need > window else ")"))
    hist = levels.astype(np.float64).copy()
    out: list[float] = []
    model.eval()
    with torch.no_grad():
        while len(out) < steps:
            z = scaler.transform(to_model_series(hist[-need:], kind))[-window:]
            x = torch.tensor(z, dtype=torch.float32)[None, :]
            z_pred = scaler.inverse(model(x)[0].double().numpy())
            new = to_levels(z_pred, hist[-1:], kind)[0]
            out.extend(new.tolist())
            hist = np.concatenate([hist, new])
    return np.asarray(out[:steps])


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", required=True, help="checkpoint written by the train stage")
    ap.add_argument("--csv", required=True, help="CSV file holding the series")
    ap.add_argument("--column", default="value", help="value column (default: value)")
    ap.add_argument("--time-column", default="", help="optional time column to sort by")
    ap.add_argument("--missing", default="error", choices=["error", "interpolate", "drop"])
    ap.add_argument("--steps", type=int, default=1, help="values to forecast (>= 1)")
    ap.add_argument("--out", default="forecast.csv", help="CSV to write (default forecast.csv)")
    args = ap.parse_args(argv)
    if args.steps < 1:
        raise UserInputError(f"--steps must be an integer >= 1, got {args.steps}")
    try:
        payload = torch.load(args.model, map_location="cpu", weights_only=True)
    except FileNotFoundError:
        raise UserInputError(f"--model: file not found: {args.model}") from None
    except (RuntimeError, ValueError, KeyError, TypeError, EOFError,
            pickle.UnpicklingError) as err:  # what torch.load raises on a foreign file
        raise UserInputError(f"--model: {args.model} is not a PyTorch checkpoint "
                             f"({type(err).__name__})") from None
    if not (isinstance(payload, dict) and {"settings", "state_dict", "prepare"} <= set(payload)):
        raise UserInputError(f"--model: {args.model} is not a checkpoint of this project's "
                             "train stage (no settings, state_dict and prepare entries)")
    model = model_from_payload(payload)
    series = read_csv_series(args.csv, args.column, args.time_column, args.missing,
                             keys=("--csv", "--column", "--time-column"))
    values = forecast_levels(model, payload["prepare"], series["value"].to_numpy(), args.steps)
    write_csv(args.out, pd.DataFrame({"step": np.arange(1, args.steps + 1),
                                      "forecast": values}))
    print(f"forecast: {args.steps} steps after {len(series)} values -> {args.out}")


def cli() -> None:
    run_cli(main)


if __name__ == "__main__":
    cli()
