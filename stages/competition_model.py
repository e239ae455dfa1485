"""Stage model@<subset> of the competition pipeline (competitions/dvc.yaml): the attention model
trained on one subset's series (one global model: the subset's settings, the competition
profile of ``auto``), and its forecast of every series' test part (or validation cut); and the
same model trained on every series up to its calibration cut (the horizon before the
validation cut), forecasting that cut, where its quantiles are calibrated.

out: the model's forecasts as the leaderboard scores them, and before calibration (a compact
ForecastSet npz, committed). Its first half is the run of `dvc exp run -S
data.kind=competition -S data.subset=<subset>` on the main pipeline.
"""
from __future__ import annotations

import argparse
import time

from attn_forecast import stage  # first: it pins the CPU before numpy loads
from attn_forecast.forecasters.neural import ModelForecaster
from attn_forecast.forecasters.run import run
from attn_forecast.forecasters.saved import save
from attn_forecast.pipeline import model as pm
from attn_forecast.pipeline.competition import model_store, on_both_cuts
from attn_forecast.pipeline.forecasting import parts, taus
from attn_forecast.training.distributed import Distributed


@stage.main
def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--params", required=True, help="the competition pipeline's params")
    ap.add_argument("--subset", required=True)
    ap.add_argument("--out", required=True, help="the model's forecasts (npz)")
    ap.add_argument("--pretrained", required=True, help="the prior (train.init pretrained)")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    lines = []

    def forecast(p, store, season):
        dist = Distributed(0, 1, pm.device(p.train))
        settings = pm.model_settings(p, store, season, args.pretrained)
        threads, _ = pm.threads_for(p, settings, int(store.counts("train").sum()), 1)
        model, results = pm.train(p, settings, store, dist, args.pretrained)
        lines.append(f"{p.data.holdout}: "
                     + pm.summary(settings, model, results, store, dist, threads))
        return run(store, [ModelForecaster(model, dist.device)], parts(p, store), taus(p),
                   record={"data": store.key()}, season=season)
    fs, _, _ = on_both_cuts(args.params, args.subset, model_store, forecast,
                            lambda p, fs: fs.names())
    save(args.out, fs, compact=True)
    print(f"model@{args.subset}: {'; '.join(lines)}; {time.perf_counter() - t0:.0f} s in all "
          f"-> {args.out}")


if __name__ == "__main__":
    stage.run(main)
