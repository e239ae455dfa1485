"""Stage trial's step (a search pipeline: competitions/tune/dvc.yaml and its copies): the
attention model of one competition subset, its settings those of the competition pipeline
with the trial's params on top, trained on every series' training part (the setup of
setup/training.py) and scored on its validation cut; and, under ``attn-forecast tune``,
the hook its training reports to after every epoch, at its optimizer step, so that a trial
going nowhere is pruned against the others."""
from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from typing import Any

from ..errors import UserInputError
from ..evaluation.metrics import smape
from ..forecasters.neural import ModelForecaster
from ..forecasters.run import run
from ..io import write_json
from ..pipeline.competition import model_store, subset_params
from ..setup.forecasting import check_data
from ..setup.training import device, fit
from ..training.batches import resolve_batch
from ..training.distributed import Distributed
from .space import trial_params
from .storage import BUDGET, TRIAL_ENV, make_pruner, open_storage, quiet


def step_plan(n_windows: int, batch: int, epochs: int, max_steps: int) -> tuple[int, int]:
    """The training loop's optimizer steps over ``n_windows`` windows in batches of ``batch``
    (resolved): per epoch, and in all (``epochs`` of them, at most ``max_steps``; 0: no cap)."""
    per_epoch = -(-n_windows // max(batch, 1))
    return per_epoch, min(epochs * per_epoch, max_steps) if max_steps else epochs * per_epoch


class Pruned(Exception):
    """A trial the pruner stopped: its last reported value, at that epoch and step."""

    def __init__(self, value: float, epoch: int, step: int = 0) -> None:
        super().__init__(f"pruned at step {step}, epoch {epoch} ({value:.4g})")
        self.value, self.epoch, self.step = value, epoch, step


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:     # alive, another user's
        pass
    return True


def trial_watch(score: Callable[[Any], float], per_epoch: int, budget: int
                ) -> Callable[[dict, Any], None] | None:
    """In a trial's stage (the search sets ``ATTN_FORECAST_TRIAL``): a training ``watch``
    that reports ``score(model)`` after every epoch at its optimizer step (``per_epoch`` an
    epoch, ``budget`` in all: :func:`step_plan`) and raises :class:`Pruned` when the pruner says
    so, never at the last step (a trial that trained to the end is scored); a one-line error
    once the worker that runs the trial is gone. None outside a search."""
    spec = os.environ.get(TRIAL_ENV)
    if not spec:
        return None
    import optuna
    d = json.loads(spec)
    storage = open_storage(d["storage"])
    with quiet():
        study = optuna.load_study(study_name=d["study"], storage=storage,
                                  pruner=make_pruner(d.get("pruner") or {}))
    trial_id = storage.get_trial_id_from_study_id_trial_number(
        storage.get_study_id_from_name(d["study"]), int(d["trial"]))
    trial = optuna.trial.Trial(study, trial_id)
    trial.set_user_attr(BUDGET, int(budget))

    def watch(row: dict, model) -> None:
        epoch = int(row["epoch"])
        if d.get("worker") and not _alive(worker := int(d["worker"])):
            raise UserInputError(f"the search's worker (process {worker}) has ended; trial "
                                 f"{d['trial']} stops at epoch {epoch}")
        step, value = min(epoch * per_epoch, budget), float(score(model))
        trial.report(value, step)
        if step < budget and trial.should_prune():
            raise Pruned(value, epoch, step)
    return watch


def cut_smape(store, model, device, season: int) -> float:
    """The model's sMAPE over every forecast of the store's test part (here the validation
    cut)."""
    fs = run(store, [ModelForecaster(model, device)], ("test",), (), season=season)
    return smape(store.targets(fs.ends["test"]), fs.forecasts["model"]["test"].point)


def step(params: str, trial: str, metrics: str, pretrained: str) -> dict:
    """trial: the subset and settings of ``trial`` (the search's params file) on top of the
    competition's ``params``, trained and scored on the validation cut -> ``metrics``."""
    t0 = time.perf_counter()
    subset, over = trial_params(trial)
    p, prof = subset_params(params, subset, over, holdout="validation")
    store = model_store(p, prof)
    season = check_data(p, store)
    n = len(store.ends("train"))       # the training loop's windows, batches and steps
    plan = step_plan(n, resolve_batch(p.train.batch_size, n), p.train.epochs, p.train.max_steps)
    dist = Distributed(0, 1, device(p.train))
    watch = trial_watch(lambda m: cut_smape(store, m, dist.device, season), *plan)
    try:
        fitted = fit(p, store, season, pretrained, dist, watch)
        out = {"smape": cut_smape(store, fitted.model, dist.device, season),
               "pruned": False, "epochs": max(len(r.history) for r in fitted.results)}
    except Pruned as stop:
        out = {"smape": stop.value, "pruned": True, "epochs": stop.epoch}
    out.update(seconds=round(time.perf_counter() - t0, 1), series=int(store.n_series),
               subset=subset)
    write_json(metrics, out)
    print(f"trial ({subset}, validation cut): sMAPE {out['smape']:.3f}"
          + (f", pruned at epoch {out['epochs']}" if out["pruned"] else "")
          + f"; {out['seconds']:.0f} s -> {metrics}")
    return out
