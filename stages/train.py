"""Stage train: fit the forecaster on every series' training windows (CUDA when present, else
CPU), then forecast the windows that evaluate scores, and record what the model looks at.

out: the checkpoint (state_dict + model settings + the prepared data's record + the
full-precision history; loads with ``weights_only=True``), the per-epoch history CSV
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
from attn_forecast.config.load import load_params
from attn_forecast.data.store_io import load, profile
from attn_forecast.forecasters.neural import ModelForecaster
from attn_forecast.forecasters.run import run
from attn_forecast.forecasters.saved import save
from attn_forecast.io import CSV_DIGITS, write_columns, write_npz
from attn_forecast.model import checkpoint, explain
from attn_forecast.pipeline import model as pm
from attn_forecast.pipeline.forecasting import check_data, parts, taus
from attn_forecast.training.distributed import distributed


@stage.main
def main(argv: list[str] | None = None):
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--params", default="params.yaml")
    for name in ("prepared", "model", "history", "forecasts", "attention", "lags"):
        ap.add_argument(f"--{name}", required=True)
    ap.add_argument("--pretrained", help="the prior (train.init pretrained)")
    args = ap.parse_args(argv)
    params = load_params(args.params, profile(args.prepared))
    p = params.train
    if p.compile:  # before torch's first operation
        stage.unpin_torch()
    store = load(args.prepared)
    season = check_data(params, store)
    dist = distributed(p.nproc, pm.device(p), __file__, sys.argv[1:] if argv is None else argv)
    settings = pm.model_settings(params, store, season, args.pretrained)
    threads, warning = pm.threads_for(params, settings, int(store.counts("train").sum()),
                                      dist.world)
    if warning and dist.rank == 0:
        print(warning, file=sys.stderr)
    model, results = pm.train(params, settings, store, dist, args.pretrained)
    if dist.rank != 0:
        return results[0]
    res = results[0]
    checkpoint.save(args.model, model, {"prepare": store.meta(), "init": p.init,
                                        "best_epoch": res.best_epoch,
                                        "history": res.history,
                                        "member_histories": [r.history for r in results]})
    write_columns(args.history, {k: [row[k] for row in res.history]
                                 for k in ("epoch", "train_loss", "val_loss", "lr")}, CSV_DIGITS)
    ran = pm.run_record(settings, model, results, params, int(store.counts("train").sum()),
                        p.init)
    fs = run(store, [ModelForecaster(model, dist.device)], parts(params, store), taus(params),
             record={"data": store.key(), "model": ran}, season=season)
    save(args.forecasts, fs)
    weights = explain.explain(model, store, fs.ends["test"], fs.forecasts["model"]["test"].point,
                              dist.device)
    write_npz(args.attention, **weights)
    write_columns(args.lags, explain.lags_table(weights["mean"] if weights["mean"].size
                                                else None, model.settings), CSV_DIGITS)
    print(f"train: {pm.summary(settings, model, results, store, dist, threads, p.init)}"
          f" -> {args.model}")
    return res


if __name__ == "__main__":
    stage.run(main)
