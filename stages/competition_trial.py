"""Stage trial of a search pipeline (competitions/tune/dvc.yaml, competitions/tune/quick/dvc.yaml
or a copy): the attention model of one competition subset, its settings those of the
competition pipeline with the trial's params (the search's params.yaml, --trial) on top,
trained on every series' training part and scored on its validation cut (the last horizon of
the training part; never the test part).

out: the trial's metrics (json): sMAPE over every forecast of the validation cut (the field's
rule), the epochs run, whether the search pruned it. Under ``attn-forecast tune`` the score
after every epoch goes to the study at the optimizer steps taken so far, whose pruner may stop
the run (still written, marked) before its last step.
"""
from __future__ import annotations

import argparse
import time

from attn_forecast import stage  # first: it pins the CPU before numpy loads
from attn_forecast.evaluation.metrics import smape
from attn_forecast.forecasters.neural import ModelForecaster
from attn_forecast.forecasters.run import run
from attn_forecast.io import write_json
from attn_forecast.pipeline import model as pm
from attn_forecast.pipeline.competition import model_store, subset_params
from attn_forecast.pipeline.forecasting import check_data
from attn_forecast.pipeline.tuning import (Pruned, step_plan, trial_params,
                                            trial_watch)
from attn_forecast.training.batches import resolve_batch
from attn_forecast.training.distributed import Distributed


def cut_smape(store, model, device, season: int) -> float:
    """The model's sMAPE over every forecast of the store's test part (here the validation
    cut)."""
    fs = run(store, [ModelForecaster(model, device)], ("test",), (), season=season)
    return smape(store.targets(fs.ends["test"]), fs.forecasts["model"]["test"].point)


@stage.main
def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--params", required=True, help="the competition pipeline's params")
    ap.add_argument("--trial", required=True, help="the trial's params (subset, sections)")
    ap.add_argument("--metrics", required=True, help="the trial's metrics (json)")
    ap.add_argument("--pretrained", required=True, help="the prior (train.init pretrained)")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    subset, over = trial_params(args.trial)
    p, prof = subset_params(args.params, subset, over, holdout="validation")
    store = model_store(p, prof)
    season = check_data(p, store)
    dist = Distributed(0, 1, pm.device(p.train))
    settings = pm.model_settings(p, store, season, args.pretrained)
    pm.threads_for(p, settings, int(store.counts("train").sum()), 1)
    n = len(store.ends("train"))       # the training loop's windows, batches and steps
    plan = step_plan(n, resolve_batch(p.train.batch_size, n), p.train.epochs, p.train.max_steps)
    watch = trial_watch(lambda m: cut_smape(store, m, dist.device, season), *plan)
    try:
        model, results = pm.train(p, settings, store, dist, args.pretrained, watch=watch)
        out = {"smape": cut_smape(store, model, dist.device, season), "pruned": False,
               "epochs": max(len(r.history) for r in results)}
    except Pruned as stop:
        out = {"smape": stop.value, "pruned": True, "epochs": stop.epoch}
    out.update(seconds=round(time.perf_counter() - t0, 1), series=int(store.n_series),
               subset=subset)
    write_json(args.metrics, out)
    print(f"trial ({subset}, validation cut): sMAPE {out['smape']:.3f}"
          + (f", pruned at epoch {out['epochs']}" if out["pruned"] else "")
          + f"; {out['seconds']:.0f} s -> {args.metrics}")
    return out


if __name__ == "__main__":
    stage.run(main)
