"""Stage peer_search@<subset>-<peer>'s step (the competition pipeline's): a NeuralForecast
peer tuned as NeuralForecast's Auto model tunes it (AutoNHITS, AutoNBEATS: its default search
space, through its Optuna backend, so no Ray cluster), on the subset's validation cuts as the
attention model's own search was (competitions/tune): each trial the network trained as the
peers stage trains it (one global model over every series' training part, MQLoss at the run's
levels) and scored as that search scores (sMAPE over every forecast of the validation cut).
Never the test part.

The space is NeuralForecast's default but the input size, each subset's for every peer
(peers.input_size, chosen on the validation cuts by bench/peers_input.py), so every peer reads
the same windows. The study lives in a journal file (an output of the stage, committed):
a rerun after an interruption or a change of the stage's code finishes the missing trials and
never reruns a finished one. Writes every trial (CSV) and the best trial's settings, as the
competition file's ``peers.<peer>`` takes them (YAML)."""
from __future__ import annotations

import csv
import time
from pathlib import Path

import numpy as np
import yaml

from ..config.load import check_peer_search, competition_peers, read_yaml
from ..errors import Interrupted, UserInputError
from ..evaluation.metrics import smape
from ..forecasters.names import PEER_NETWORK, PEERS
from ..forecasters.peers import Peer, library
from ..forecasters.run import run
from ..io import atomic_path
from ..pipeline.competition import field_store, subset_params
from ..setup.forecasting import check_data, levels_of
from .storage import open_storage, quiet

SEARCHED = ("nf_nhits", "nf_nbeats")   # the peers with an Auto model of NeuralForecast's
SETUP = "setup"                        # the study's user attr: what its trials were run on
FIXED = ("h", "loss", "valid_loss", "input_size", "input_size_multiplier")


def search_of(params: str | Path) -> dict:
    """The competition file's ``peer_search``: ``trials`` (the study's finished trials) and
    ``seed`` (its TPE sampler's), checked (config.load.check_peer_search)."""
    raw = read_yaml(params).get("peer_search")
    check_peer_search(Path(params), raw)
    return raw


def space(peer: str, h: int):
    """NeuralForecast's default search space of ``peer``'s Auto model at horizon ``h``, less
    the keys fixed here (:data:`FIXED`): a function of an Optuna trial that samples it as
    NeuralForecast's Optuna backend does (its ``_ray_config_to_optuna``: an integer's bounds
    both included, a log-uniform float, a quantized one in its steps), each categorical's
    choices as JSON text, so the journal keeps the lists and None among them."""
    import json

    from neuralforecast import auto
    from ray import tune
    with quiet():
        config = getattr(auto, "Auto" + PEERS[peer]).get_default_config(h=h, backend="ray")
    config = {k: v for k, v in config.items() if k not in FIXED}

    def one(trial, key: str, v):
        if isinstance(v, tune.search.sample.Categorical):
            return json.loads(trial.suggest_categorical(key, [json.dumps(c)
                                                             for c in v.categories]))
        if isinstance(v, tune.search.sample.Integer):
            return trial.suggest_int(key, v.lower, v.upper)
        if isinstance(v, tune.search.sample.Float):
            q = getattr(v.sampler, "q", None)
            log = isinstance(v.sampler.get_sampler() if q else v.sampler,
                             tune.search.sample.Float._LogUniform)
            return trial.suggest_float(key, v.lower, v.upper, log=log, **({"step": q} if q and
                                                                          not log else {}))
        return v

    def sample(trial) -> dict:
        return {k: one(trial, k, v) for k, v in config.items()}
    return sample


def settings_of(config: dict) -> dict:
    """A trial's configuration as the competition file's ``peers.<peer>`` takes it:
    max_steps, seed and the network's own settings (names.PEER_NETWORK; no scaler is
    NeuralForecast's identity)."""
    net = {k: (list(v) if isinstance(v, (list, tuple)) else v) for k, v in config.items()
           if k in PEER_NETWORK}
    if net.get("scaler_type", "") is None:
        net["scaler_type"] = "identity"
    return {"max_steps": int(config["max_steps"]), "seed": int(config["random_seed"]),
            "network": net}


def _study(journal: str, name: str, setup: dict, seed: int):
    """The study in ``journal``, created or resumed (refused if it was run on another setup);
    a trial left running by an interrupted run is failed, so it is run again."""
    import optuna
    from optuna.trial import TrialState
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    storage = open_storage(journal, "the search's journal")
    with quiet():
        exists = name in {s.study_name for s in storage.get_all_studies()}
        done = 0
        if exists:
            study = optuna.load_study(study_name=name, storage=storage)
            if (was := study.user_attrs.get(SETUP)) != setup:
                changed = sorted(k for k in {*setup, *(was or {})}
                                 if (was or {}).get(k) != setup.get(k))
                raise UserInputError(
                    f"{journal}: study {name} was run on another setup ({', '.join(changed)} "
                    "differ); delete the journal to search again")
            for t in study.get_trials(deepcopy=False, states=(TrialState.RUNNING,)):
                storage.set_trial_state_values(t._trial_id, TrialState.FAIL)
            done = len(study.get_trials(deepcopy=False))
        sampler = optuna.samplers.TPESampler(seed=seed + done)   # no draw repeated on resume
        if exists:        # (loaded again with its sampler: nothing written to the journal)
            study = optuna.load_study(study_name=name, storage=storage, sampler=sampler)
        else:
            study = optuna.create_study(study_name=name, storage=storage, sampler=sampler,
                                        direction="minimize")
            study.set_user_attr(SETUP, setup)
    return study


def write_log(study, path: str) -> None:
    """Every trial: its number, state, sMAPE on the validation cut, training seconds and
    settings (NeuralForecast's names)."""
    trials = study.get_trials(deepcopy=False)
    keys = sorted({k for t in trials for k in t.params})
    with atomic_path(path) as tmp, open(tmp, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["number", "state", "smape", "seconds", "fallback_windows", *keys])
        for t in trials:
            w.writerow([t.number, t.state.name, "" if t.value is None else f"{t.value:.6f}",
                        t.user_attrs.get("seconds", ""), t.user_attrs.get("fallback_windows", ""),
                        *[t.params.get(k, "") for k in keys]])


def write_best(study, peer: str, subset: str, setup: dict, path: str) -> dict:
    """The best trial's settings, as competitions/params.yaml's ``peers.<peer>`` takes them
    (the other subsets take them too, each with its own input size), with where they came
    from."""
    best = study.best_trial
    out = {"peer": peer, "subset": subset, "trial": best.number,
           "smape_validation": round(best.value, 6), "input_size": setup["input_size"],
           "settings": best.user_attrs["settings"]}
    with atomic_path(path) as tmp:
        Path(tmp).write_text(yaml.safe_dump(out, sort_keys=False))
    return out


def step(params: str, subset: str, peer: str, journal: str, log: str, best: str) -> dict:
    """peer_search@``subset``-``peer``: the study finished to ``peer_search.trials`` trials
    (resumed from ``journal``), every trial to ``log``, the best one's settings to ``best``."""
    if peer not in SEARCHED:
        raise UserInputError(f"peer_search: {peer!r} has no Auto search here; allowed: "
                             f"{', '.join(SEARCHED)}")
    cfg = search_of(params)           # a wrong setting is named before the extra is looked for
    library()
    from optuna.trial import TrialState
    t0 = time.perf_counter()
    input_size = competition_peers(read_yaml(params)["peers"])["input_size"][subset]
    p, prof = subset_params(params, subset, holdout="validation")
    store = field_store(p, prof)
    season = check_data(p, store)
    ends = store.ends("test")
    levels = levels_of(p)
    setup = {"subset": subset, "holdout": "validation", "input_size": input_size,
             "levels": list(levels), "data": store.key(), "seed": cfg["seed"]}
    study = _study(journal, f"{subset}-{peer}", setup, cfg["seed"])
    sample = space(peer, store.horizon)

    def objective(trial) -> float:
        s = settings_of(sample(trial))
        f = Peer(peer, input_size, s["max_steps"], s["seed"], levels, network=s["network"])
        fc = run(store, [f], ("test",), levels, season=season).forecasts[peer]["test"]
        trial.set_user_attr("settings", s)
        trial.set_user_attr("seconds", round(f.seconds, 1))
        # a window the network could not forecast is Naive2's (forecasters/run.py), counted
        fallback = 0 if fc.failed is None else int(np.count_nonzero(fc.failed))
        trial.set_user_attr("fallback_windows", fallback)
        value = smape(store.targets(ends), fc.point)
        if not np.isfinite(value):
            raise UserInputError(f"its validation sMAPE is {value}")
        print(f"peer_search@{subset}-{peer}: trial {trial.number}: sMAPE {value:.3f} on the "
              f"validation cut in {f.seconds:.0f} s"
              + (f" ({fallback} windows Naive2's)" if fallback else ""), flush=True)
        return value

    def complete() -> int:
        return len(study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,)))

    failed = 0
    while complete() < cfg["trials"]:
        with quiet():
            t = study.ask()
        try:
            study.tell(t, objective(t))
            failed = 0
        except (KeyboardInterrupt, SystemExit):
            study.tell(t, state=TrialState.FAIL)
            raise Interrupted(f"interrupted at trial {t.number} (the study's {complete()} "
                              f"finished trials are in {journal}, where a rerun resumes; its "
                              "log and choice are written when it ends)") from None
        except Exception as err:  # noqa: BLE001  (a configuration the network refuses)
            study.tell(t, state=TrialState.FAIL)
            print(f"peer_search@{subset}-{peer}: trial {t.number} failed: "
                  f"{str(err).splitlines()[0] if str(err) else type(err).__name__}", flush=True)
            failed += 1
            if failed >= 3:
                write_log(study, log)
                raise UserInputError(f"peer_search@{subset}-{peer}: three trials in a row "
                                     "failed; see the lines above") from None
    write_log(study, log)
    out = write_best(study, peer, subset, setup, best)
    print(f"peer_search@{subset}-{peer}: {complete()} trials (NeuralForecast's Auto"
          f"{PEERS[peer]} space, Optuna's TPE, seed {cfg['seed']}); best trial "
          f"{out['trial']}, sMAPE {out['smape_validation']:.3f} on the validation cut; "
          f"{time.perf_counter() - t0:.0f} s -> {best}")
    return out
