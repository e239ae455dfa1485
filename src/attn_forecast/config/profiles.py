"""What ``auto`` means, as data (profiles.yaml), and resolving it.

A key set to ``auto`` (or left out) takes its profile's value, else the schema's default. The
profile is the data's: ``synthetic`` (the built-in generators: the schema's defaults),
``real`` (a user's CSV) or ``competition``, whose settings for a subset are the competition
pipeline's params (``competitions/params.yaml``), so that
``dvc exp run -S data.kind=competition -S data.subset=monthly`` runs what that pipeline runs
(M1 and Tourism take M3's settings of the same subset: nothing is chosen on them).
"""
from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

import yaml

from .schema import default

SYNTHETIC_KINDS = ("sine", "seasonal", "random_walk", "panel")
# what an auto that stays auto becomes, and in which stage
LATER = {"prepare.window": "two seasons of the training parts' season, at prepare",
         "prepare.horizon": "the frequency's (M4's; a competition's own), at prepare",
         "evaluate.season": "from the training parts' autocorrelation, at prepare",
         "data.csv_time_format": "inferred from the time column's first value, at generate",
         "train.batch_size": "every window up to 1,024, else 256, at train",
         "train.threads": "by the size of a training step, at train",
         "train.device": "cuda when present, else cpu, at train",
         "backtest.jobs": "one fold per core, at backtest_train"}
COMPETITION_PARAMS = Path("competitions") / "params.yaml"
SECTIONS = ("data", "prepare", "model", "train", "evaluate", "backtest", "render")


def profile_of(kind: str) -> str:
    """The profile of a ``data.kind``."""
    return "synthetic" if kind in SYNTHETIC_KINDS else \
        "competition" if kind == "competition" else "real"


@cache
def profiles() -> dict[str, dict[str, Any]]:
    """profiles.yaml, with each profile's ``inherits`` followed."""
    raw = yaml.safe_load((Path(__file__).with_name("profiles.yaml")).read_text())
    out: dict[str, dict[str, Any]] = {"synthetic": {}}
    for name, keys in raw.items():
        keys = dict(keys)
        parent = keys.pop("inherits", None)
        out[name] = {**(out[parent] if parent else {}), **keys}
    return out


def flat(sections: dict) -> dict[str, Any]:
    """``{model: {d_model: 64}}`` as ``{"model.d_model": 64}``."""
    return {f"{sec}.{k}": v for sec, keys in (sections or {}).items()
            if isinstance(keys, dict) for k, v in keys.items()}


def competition_settings(path: str | Path, subset: str) -> dict[str, Any]:
    """A subset's settings in the competition pipeline's params file ``path`` (``all``, then
    the subset's own section), as dotted keys; none without that file."""
    path = Path(path)
    if not path.is_file():
        return {}
    raw = yaml.safe_load(path.read_text()) or {}
    return {**flat(raw.get("all")), **flat(raw.get(subset))}


def values(data: dict, root: str | Path = ".", competition_file: str | Path | None = None
           ) -> dict[str, Any]:
    """``key -> value`` of every key the profile of ``data`` (the raw ``data`` section)
    chooses; a competition's from ``competition_file`` (by default the project's
    competitions/params.yaml under ``root``)."""
    kind = data.get("kind", default("data.kind"))
    name = profile_of(kind)
    out = dict(profiles()[name])
    if name == "competition":
        out.update(competition_settings(competition_file or Path(root) / COMPETITION_PARAMS,
                                        data.get("subset", default("data.subset"))))
    return {"profile": name, "values": out}


def resolve(raw: dict, profile: dict) -> tuple[dict, dict]:
    """``raw`` params with every ``auto`` (or left-out key of the profile) replaced by the
    profile's value, else the schema's default (a value of auto stays auto: chosen from the
    data); returns them and what was chosen (``key -> value``)."""
    out = {k: dict(v) if isinstance(v, dict) else v for k, v in raw.items()}
    chosen = {}
    named = profile["values"]
    for sec in SECTIONS:
        section = out.get(sec)
        if not isinstance(section, dict):
            continue
        for name, value in section.items():
            key = f"{sec}.{name}"
            if value == "auto" and key not in named:
                try:
                    section[name] = default(key)
                except KeyError:
                    continue   # an unknown key: the schema names it
                if section[name] != "auto":
                    chosen[key] = section[name]
    for key, value in named.items():
        sec, name = key.split(".")
        section = out.setdefault(sec, {})
        if isinstance(section, dict) and section.get(name, "auto") == "auto":
            section[name] = value
            chosen[key] = value
    if chosen.get("train.init") == "pretrained" and side_inputs(out):
        out["train"]["init"] = chosen["train.init"] = "scratch"  # the prior reads values only
    return out, chosen


def side_inputs(raw: dict) -> list[str]:
    """The keys of ``raw`` that ask for what the prior cannot take: calendar features, past
    covariates, an ensemble of lookbacks."""
    return [f"{sec}.{name}" for sec, name in (("prepare", "time_features"),
                                              ("data", "csv_feature_columns"),
                                              ("model", "lookbacks"))
            if isinstance(raw.get(sec), dict) and raw[sec].get(name)]
