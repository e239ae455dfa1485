"""Stage pretrain's step: whether the committed prior was made with these settings (then it
is kept), else pretraining it as ``params.pretrain`` says, with its record, history and
metrics. Needs torch."""
from __future__ import annotations

import os
import time

from ..config.load import load_params
from ..config.profiles import values
from ..config.schema import Params
from ..cpu import unpin_torch
from ..io import write_columns, write_json
from ..model import checkpoint
from ..errors import UserInputError
from ..model.settings import ModelSettings
from ..training.corpus import competition_train_parts
from ..training.distributed import distributed, peak_rss_mib
from ..training.pretrain import pretrain, summary
from ..training.settings import TrainSettings
from ..progress import Progress
from ..setup.training import device

# how a run executes, not what it learns: a change of these alone keeps the prior
EXECUTION = ("device", "compile", "nproc", "threads", "live")


def learned(settings: dict) -> dict:
    """The pretrain settings that change what is learned (the execution ones left out)."""
    out = dict(settings)
    out["train"] = {k: v for k, v in settings.get("train", {}).items() if k not in EXECUTION}
    return out


def kept(p: Params, paths: list[str]) -> bool:
    """Whether the prior already there was made with these settings: then it is kept, so that
    `dvc repro --force`, `dvc exp run -f` and an edit of the library do not pretrain again. A
    new prior with the same settings: delete models/pretrained.pt first."""
    if not all(os.path.isfile(f) for f in paths):
        return False
    try:
        made = checkpoint.read(paths[0], "the prior").get("pretrain") or {}
    except UserInputError:   # an unreadable file is one to pretrain again
        return False
    return learned(made) == learned(p.pretrain.model_dump())


def settings(pp) -> tuple[ModelSettings, TrainSettings]:
    """The prior's model (``pretrain.model`` for the longest context and horizon) and its
    training (``pretrain.train``), as the library's types."""
    return (ModelSettings.of(pp.model.model_dump(), window=pp.window, horizon=pp.horizon),
            TrainSettings.of(pp.train.model_dump()))


def from_params(p: Params, dist) -> tuple:
    """Pretrain the prior as ``params.pretrain`` says, in this process of the run (``dist``);
    returns the model, the per-round history and the checkpoint's record (the corpus and
    settings, the summary the metrics file holds)."""
    pp = p.pretrain
    s, t = settings(pp)
    real = []
    for subset in pp.real:
        real += competition_train_parts("m3", subset, pp.min_context + pp.horizon)
    bar = Progress(pp.train.epochs, enabled=dist.rank == 0, what="pretrain: round")
    t0 = time.perf_counter()
    try:
        model, history = pretrain(pp, s, t, dist.device, dist, real,
                                  lambda row: bar.update(row["round"], row["train_loss"],
                                                         row["val_loss"]),
                                  wrap=dist.wrapper(pp.train.compile))
    finally:
        bar.close()
        dist.close()
    record = {"prepare": {}, "kind": "pretrained", "pretrain": pp.model_dump(),
              "history": history, "real_series": len(real),
              "summary": summary(pp, t, model, history, time.perf_counter() - t0, dist,
                                 peak_rss_mib())}
    return model, history, record


def step(params: str, model: str, history: str, metrics: str,
         relaunch: tuple[str, list[str]]) -> list:
    """pretrain (or keep) the prior -> ``model``, its per-round ``history`` and ``metrics``;
    ``relaunch``: the stage's script and arguments, run again under torchrun when
    ``pretrain.train.nproc`` > 1. Returns the per-round history ([] when kept)."""
    # only the pretrain section matters here: auto elsewhere resolves as the synthetic data's,
    # so a competition's settings (competitions/params.yaml) are never read
    p = load_params(params, values({}))
    t = p.pretrain.train
    if kept(p, [model, history, metrics]):
        print(f"pretrain: {model} was made with these settings (pretrain in params.yaml): "
              "kept; delete it to pretrain afresh")
        return []
    if t.compile:  # before torch's first operation
        unpin_torch()
    dist = distributed(t.nproc, device(t, "pretrain.train"), *relaunch)
    net, rounds, record = from_params(p, dist)
    if dist.rank != 0:
        return rounds
    checkpoint.save(model, net, record)
    write_columns(history, {k: [row[k] for row in rounds]
                            for k in ("round", "train_loss", "val_loss", "lr")}, 6)
    write_json(metrics, record["summary"])
    s = record["summary"]
    print(f"pretrain: {s['parameters']:,} parameters, {s['rounds']} rounds x "
          f"{p.pretrain.steps_per_round} steps of {t.batch_size} windows on {dist.device} "
          f"in {s['seconds']:.0f} s ({s['windows_per_s']:,.0f} windows/s, peak "
          f"{s['peak_mib']:.0f} MiB), validation pinball {s['val_loss']:.4f} -> {model}")
    return rounds
