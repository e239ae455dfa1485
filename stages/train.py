"""Stage train: fit the forecaster on the train windows (CUDA when present, else CPU).

out: checkpoint (state_dict + model settings + prepare metadata; loads with
``weights_only=True``) and the per-epoch history CSV ``epoch, train_loss, val_loss, lr``.
"""
from __future__ import annotations

import argparse

import numpy as np
import pandas as pd
import torch

from attn_forecast.errors import run_cli
from attn_forecast.io import write_csv
from attn_forecast.model import ModelSettings, build_model, n_parameters, save_checkpoint
from attn_forecast.params import load_params
from attn_forecast.train import fit, select_device
from attn_forecast.windows import load_prepared


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--params", default="params.yaml")
    ap.add_argument("--prepared", required=True, help="folder written by prepare")
    ap.add_argument("--model", required=True, help="checkpoint to write")
    ap.add_argument("--history", required=True, help="per-epoch history CSV to write")
    args = ap.parse_args(argv)
    params = load_params(args.params)
    p = params.train
    prep = load_prepared(args.prepared)
    device = select_device(p.device)

    torch.manual_seed(p.seed)
    np.random.seed(p.seed)
    settings = ModelSettings(window=prep.split.window, horizon=prep.split.horizon,
                             **params.model.model_dump())
    model = build_model(settings).to(device)
    z = torch.from_numpy(prep.z).to(device)
    to_dev = lambda part: torch.from_numpy(prep.split.ends(part)).to(device)  # noqa: E731
    step_model = torch.compile(model) if p.compile else model
    res = fit(model, z, to_dev("train"), to_dev("val"), prep.split.window, prep.split.horizon,
              p, step_model=step_model)

    save_checkpoint(args.model, model, {"prepare": prep.meta(), "best_epoch": res.best_epoch})
    hist = pd.DataFrame(res.history, columns=["epoch", "train_loss", "val_loss", "lr"])
    write_csv(args.history, hist)
    last = res.history[-1]
    print(f"train: {settings.kind} model, {n_parameters(model)} parameters, "
          f"{len(res.history)} epochs on {device} in {res.seconds:.2f} s "
          f"({res.windows_per_s:,.0f} windows/s), final loss {last['train_loss']:.5f}, "
          f"best epoch {res.best_epoch} -> {args.model}")


if __name__ == "__main__":
    run_cli(main)
