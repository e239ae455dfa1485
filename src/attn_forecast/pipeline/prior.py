"""The pretrain stage's steps: whether the committed prior was made with these settings (then
it is kept), and pretraining it as ``params.pretrain`` says, with its record. Needs torch."""
from __future__ import annotations

import os
import time

from ..config.schema import Params
from ..errors import UserInputError
from ..model.checkpoint import read
from ..model.settings import ModelSettings
from ..training.corpus import competition_train_parts
from ..training.distributed import peak_rss_mib
from ..training.pretrain import pretrain, summary
from ..training.settings import TrainSettings
from ..progress import Progress

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
        made = read(paths[0], "the prior").get("pretrain") or {}
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
