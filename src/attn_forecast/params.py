"""Typed, validated view of ``params.yaml``: one pydantic model per section.

The schema's defaults are ``params.yaml``'s values (one set; a test compares them).
Every stage validates the whole file when it starts, so a typo anywhere is caught before any
work is done. A bad value raises :class:`ParamsError` with one line naming the key, the value
and what is allowed, e.g. ``params.yaml: prepare.window must be an integer >= 1, got 0``.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import (AllowInfNan, BaseModel, BeforeValidator, ConfigDict, Field,
                      PlainValidator, Strict, ValidationError)
from pydantic_core import PydanticCustomError

from .errors import UserInputError


class ParamsError(UserInputError):
    """A key of params.yaml is missing, unknown, of the wrong type or out of range."""


def _no_bool(v: Any) -> Any:
    # YAML `true` would otherwise pass as 1.0 for a float field.
    if isinstance(v, bool):
        raise ValueError("bool")
    return v


def _auto_or_int(v: Any) -> Any:
    if v == "auto" or (isinstance(v, int) and not isinstance(v, bool) and v >= 1):
        return v
    raise PydanticCustomError("described", "auto or an integer >= 1")


def _auto_or_zero(v: Any) -> Any:
    if v == "auto" or (isinstance(v, int) and not isinstance(v, bool) and v >= 0):
        return v
    raise PydanticCustomError("described", "auto or an integer >= 0")


def _auto_or_number(low: float, closed: bool):
    sign = ">=" if closed else ">"

    def check(v: Any) -> Any:
        if v == "auto":
            return v
        if isinstance(v, str):   # YAML reads 1e-3 (no dot) as text
            try:
                v = float(v)
            except ValueError:
                pass
        if isinstance(v, (int, float)) and not isinstance(v, bool) and \
                (v >= low if closed else v > low) and v == v and abs(v) != float("inf"):
            return float(v)
        raise PydanticCustomError("described", f"auto or a number {sign} {low:g}")
    return check


Int = Annotated[int, Strict()]
AutoOrInt = Annotated[str | int, PlainValidator(_auto_or_int)]
AutoOrPositive = Annotated[str | float, PlainValidator(_auto_or_number(0, False))]
AutoOrNonNegative = Annotated[str | float, PlainValidator(_auto_or_number(0, True))]
AutoOrZero = Annotated[str | int, PlainValidator(_auto_or_zero)]
Bool = Annotated[bool, Strict()]
Float = Annotated[float, BeforeValidator(_no_bool), AllowInfNan(False)]


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def _sep(v: Any) -> Any:
    # what users type for a tab: a backslash and t (as -S 'data.csv_sep="\\t"' delivers it)
    return "\t" if v in ("\\t", "tab", "TAB") else v


class DataParams(_Section):
    kind: Literal["sine", "seasonal", "random_walk", "csv", "panel", "competition"] = "sine"
    n_points: Int = Field(300, ge=2)          # points (panel: per series, at most)
    n_series: Int = Field(50, ge=1)           # panel: related series, each on its own scale
    panel_min_points: Int = Field(0, ge=0)    # panel: lengths from [this, n_points]; 0 = all
    noise_std: Float = Field(0.15, ge=0)
    seed: Int = Field(42, ge=0)
    trend: Float = 0.002                      # seasonal: trend per step, two periods
    period1: Float = Field(50.0, gt=0)
    amplitude1: Float = 1.0
    period2: Float = Field(12.0, gt=0)
    amplitude2: Float = 0.5
    start_price: Float = Field(100.0, gt=0)   # random_walk: geometric Brownian motion
    drift: Float = 0.0002
    volatility: Float = Field(0.01, ge=0)
    csv_path: str = "data/external/example.csv"
    csv_column: str = "value"
    csv_time_column: str = ""
    csv_time_format: str = Field("auto", min_length=1)  # auto, or strftime like %d/%m/%Y
    csv_sep: Annotated[str, BeforeValidator(_sep), Field(min_length=1)] = ","
    csv_decimal: str = Field(".", min_length=1, max_length=1)
    csv_thousands: str = Field("", max_length=1)  # '' = none
    missing: Literal["error", "ffill", "drop"] = "error"
    # past covariates beside csv_column: model inputs of the input steps only
    csv_feature_columns: list[str] = Field(default_factory=list)
    csv_id_column: str = ""                   # a long-format file's id column ('' = one series)
    time_gaps: Literal["error", "allow"] = "error"  # a time column must be regular, or allow
    # competition: every series of one subset, each with the competition's test part (its
    # horizon) or, holdout validation, the last horizon of its train part (for choosing)
    competition: Literal["m3", "m1", "tourism"] = "m3"
    subset: Literal["yearly", "quarterly", "monthly", "other"] = "monthly"
    holdout: Literal["test", "validation"] = "test"


TIME_FEATURES = ("minute", "hour", "dayofweek", "dayofmonth", "dayofyear", "month")
TimeFeature = Literal["minute", "hour", "dayofweek", "dayofmonth", "dayofyear", "month"]
FeatureTransform = Literal["none", "diff", "log_return", "log1p"]


class PrepareParams(_Section):
    window: AutoOrInt = 60              # input steps; auto: the data's profile (see PROFILES)
    horizon: Int = Field(1, ge=1)
    test_frac: Float = Field(0.2, gt=0, lt=1)
    val_frac: AutoOrNonNegative = 0.0      # validation (early stopping, best epoch)
    # a window needs this many input values, the earlier steps padded and masked; 0 = whole
    min_context: Int = Field(0, ge=0)
    cal_frac: Float = Field(0.0, ge=0, lt=1)   # calibration (conformal intervals)
    scaler: Literal["zscore", "minmax", "none"] = "zscore"
    transform: Literal["none", "diff", "log_return"] = "none"
    time_features: list[TimeFeature] = Field(default_factory=list)  # calendar inputs
    # one per data.csv_feature_columns entry ([] = none for all)
    feature_transforms: list[FeatureTransform] = Field(default_factory=list)


class ModelParams(_Section):
    kind: Literal["attention", "lstm"] = "attention"
    d_model: Int = Field(32, ge=1)
    ffn_dim: Int = Field(64, ge=1)
    n_heads: Int = Field(1, ge=1)
    n_layers: Int = Field(1, ge=1)
    positional: Literal["sinusoidal", "learned", "none"] = "sinusoidal"
    residual: Bool = False
    pooling: Literal["last", "mean", "flatten"] = "mean"
    dropout: Float = Field(0.0, ge=0, lt=1)
    # per-window, reversible; seasonal: the change from seasonal naive (without a season: last)
    instance_norm: Literal["auto", "none", "revin", "last", "seasonal", "mean", "delta"] = \
        "none"
    revin_affine: Bool = True
    patch_len: Int = Field(0, ge=0)     # steps per token (PatchTST); 0 = one token per step
    patch_stride: Int = Field(0, ge=0)  # steps between tokens; 0 = patch_len
    highway: Bool = False               # + a linear forecast from the window (LSTNet)
    lookbacks: list[Annotated[Int, Field(ge=1)]] = Field(default_factory=list)  # windows of
    #                                   an ensemble over lookbacks; [] = prepare.window alone
    quantiles: list[Annotated[Float, Field(gt=0, lt=1)]] = Field(default_factory=list)


class TrainParams(_Section):
    seed: Int = Field(42, ge=0)
    # scratch: random initial weights; pretrained: the prior's (models/pretrained.pt),
    # fine-tuned with early stopping; auto: the data's profile
    init: Literal["auto", "scratch", "pretrained"] = "scratch"
    epochs: AutoOrInt = 300
    lr: AutoOrPositive = 0.005
    batch_size: AutoOrZero = "auto"    # 0 = full batch; auto: full up to 1,024 windows, else 256
    max_steps: AutoOrZero = 0          # stop after this many optimizer steps (0 = epochs only)
    optimizer: Literal["adam", "adamw"] = "adam"
    weight_decay: Float = Field(0.0, ge=0)
    loss: Literal["mse", "mae", "huber", "smape", "mase"] = "mse"
    scheduler: Literal["none", "step", "cosine"] = "none"
    step_size: Int = Field(100, ge=1)
    gamma: Float = Field(0.5, gt=0, le=1)
    warmup_epochs: Int = Field(0, ge=0)
    grad_clip: Float = Field(0.0, ge=0)
    patience: AutoOrZero = 0
    augment_noise: AutoOrNonNegative = 0.3
    augment_units: Literal["scaled", "moves"] = "scaled"
    augment_scale: Float = Field(0.0, ge=0, lt=1)
    augment_shift: Float = Field(0.0, ge=0)
    device: Literal["auto", "cpu", "cuda"] = "auto"
    precision: Literal["fp32", "bf16"] = "fp32"
    compile: Bool = False
    nproc: Int = Field(1, ge=1)
    threads: AutoOrInt = "auto"        # torch threads per process: auto (by the job) or N
    ensemble: AutoOrInt = 3            # models with seeds seed .. seed + N - 1, mean forecast
    live: Bool = False                 # log every epoch through DVCLive into dvclive/


BASELINES = ("naive", "seasonal_naive", "naive2", "mean", "ridge", "ses", "ets", "theta",
             "dot", "ces", "arima", "comb", "zeroshot")
Baseline = Literal["naive", "seasonal_naive", "naive2", "mean", "ridge", "ses", "ets", "theta",
                   "dot", "ces", "arima", "comb", "zeroshot"]


class EvaluateParams(_Section):
    ridge_alpha: Float = Field(1.0, ge=0)
    season: AutoOrZero = 0               # steps; 0 = none; auto: the data's profile
    baselines: Literal["auto"] | list[Baseline] = Field(      # auto: the data's profile
        default_factory=lambda: ["naive", "seasonal_naive", "mean", "ridge", "ets", "theta"])
    conformal: Literal["none", "split"] = "none"  # split: calibrate on the calibration part
    # forecasters averaged into one more, named by their names: model+comb, model+ets+theta
    combinations: list[Annotated[str, Field(pattern=r"^\w+(\+\w+)+$")]] = \
        Field(default_factory=list)


class BacktestParams(_Section):
    folds: Int = Field(0, ge=0)        # rolling origins inside the test part; 0 = off
    fold_size: Int = Field(0, ge=0)    # test targets per fold; 0 = the test part shared evenly
    train_size: Int = Field(0, ge=0)   # 0 = expanding training part; N = the last N targets
    gap: Int = Field(0, ge=0)          # targets between the training part and the fold's
    jobs: AutoOrInt = "auto"           # folds trained at once; auto = the cores


class RenderParams(_Section):
    dpi: Int = Field(110, ge=50, le=600)


Generator = Literal["kernel", "ets", "arima", "trend_season"]


class PretrainParams(_Section):
    """The prior (stage pretrain): the corpus, the model and its training."""
    seed: Int = Field(0, ge=0)
    generators: list[Generator] = Field(
        default_factory=lambda: ["kernel", "ets", "arima", "trend_season"], min_length=1)
    real: list[Literal["yearly", "quarterly", "monthly", "other"]] = \
        Field(default_factory=list)      # M3 subsets whose train parts join the corpus
    real_share: Float = Field(0.0, ge=0, le=1)  # share of each round's series from them
    series_per_round: Int = Field(1000, ge=1)
    min_length: Int = Field(48, ge=2)
    max_length: Int = Field(400, ge=2)
    shift_prob: Float = Field(0.1, ge=0, le=1)  # a level shift in a series
    spike_prob: Float = Field(0.1, ge=0, le=1)  # a few spikes in a series
    window: Int = Field(128, ge=2)      # the longest context (steps)
    horizon: Int = Field(24, ge=1)      # the longest horizon
    min_context: Int = Field(8, ge=1)   # the shortest context it is trained on
    patch_len: Int = Field(8, ge=1)
    patch_stride: Int = Field(4, ge=1)
    d_model: Int = Field(64, ge=2)
    n_heads: Int = Field(4, ge=1)
    n_layers: Int = Field(3, ge=1)
    ffn_dim: Int = Field(128, ge=1)
    instance_norm: Literal["revin", "last", "delta", "mean"] = "revin"
    quantiles: list[Annotated[Float, Field(gt=0, lt=1)]] = Field(
        default_factory=lambda: [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9])
    rounds: Int = Field(60, ge=1)
    steps_per_round: Int = Field(100, ge=1)
    batch_size: Int = Field(256, ge=1)
    lr: Float = Field(0.001, gt=0)
    warmup_rounds: Int = Field(2, ge=0)
    grad_clip: Float = Field(1.0, ge=0)
    val_series: Int = Field(500, ge=1)
    device: Literal["auto", "cpu", "cuda"] = "auto"
    precision: Literal["fp32", "bf16"] = "fp32"
    compile: Bool = False
    nproc: Int = Field(1, ge=1)


class Params(_Section):
    data: DataParams = DataParams()
    prepare: PrepareParams = PrepareParams()
    model: ModelParams = ModelParams()
    train: TrainParams = TrainParams()
    evaluate: EvaluateParams = EvaluateParams()
    backtest: BacktestParams = BacktestParams()
    render: RenderParams = RenderParams()
    pretrain: PretrainParams = PretrainParams()


# What ``auto`` means for the keys that take it, by the data's profile: the built-in synthetic
# data keeps the values tuned for the lecture's sine (the schema's defaults above); real data (a user's CSV, a competition)
# gets what the real-series benchmark chose (bench/real.py --validation; docs/your-data.md).
# A window or season of auto on real data is chosen from its training parts (seasons.py).
PROFILES = {
    "synthetic": {"prepare.window": 60, "prepare.val_frac": 0.0, "evaluate.season": 0,
                  "model.instance_norm": "none", "train.init": "scratch", "train.epochs": 300,
                  "train.lr": 0.005, "train.patience": 0, "train.augment_noise": 0.3,
                  "train.ensemble": 3, "train.max_steps": 0,
                  "evaluate.baselines": ["naive", "seasonal_naive", "mean", "ridge", "ets",
                                         "theta"]},
    "real": {"prepare.window": "auto", "prepare.val_frac": 0.1, "evaluate.season": "auto",
             "model.instance_norm": "seasonal", "train.init": "pretrained",
             "train.epochs": 100, "train.lr": 0.0005, "train.patience": 10,
             "train.augment_noise": 0.0, "train.ensemble": 1, "train.max_steps": 300,
             "evaluate.baselines": ["naive", "seasonal_naive", "mean", "ridge", "ets", "theta",
                                    "zeroshot"]},
}
# a competition's short series keep every point for training: settings are chosen on its
# own validation cut (data.holdout validation), not on a validation part of each series
PROFILES["competition"] = {**PROFILES["real"], "prepare.val_frac": 0.0, "train.patience": 0}
SYNTHETIC_KINDS = ("sine", "seasonal", "random_walk", "panel")


def profile_of(kind: str) -> str:
    """The profile of a ``data.kind``: synthetic for the built-in generators, competition
    for the competitions' series, else real."""
    return "synthetic" if kind in SYNTHETIC_KINDS else \
        "competition" if kind == "competition" else "real"


def resolve(raw: dict, profile: str) -> tuple[dict, dict]:
    """``raw`` params with every ``auto`` of a profile key replaced by the profile's value
    (a window or season of auto on real data stays auto: chosen from the data); returns them
    and what was replaced (``key -> value``)."""
    out = {k: dict(v) if isinstance(v, dict) else v for k, v in raw.items()}
    chosen = {}
    for key, value in PROFILES[profile].items():
        section, name = key.split(".")
        sec = out.setdefault(section, {})
        if isinstance(sec, dict) and sec.get(name, "auto") == "auto":
            sec[name] = value       # a key left out is auto too
            chosen[key] = value
    if chosen.get("train.init") == "pretrained" and _side_inputs(out):
        out["train"]["init"] = chosen["train.init"] = "scratch"  # the prior reads levels only
    return out, chosen


def _side_inputs(raw: dict) -> list[str]:
    """The keys of ``raw`` that ask for what the prior cannot take: calendar features, past
    covariates, an ensemble of lookbacks."""
    return [f"{sec}.{name}" for sec, name in (("prepare", "time_features"),
                                              ("data", "csv_feature_columns"),
                                              ("model", "lookbacks"))
            if isinstance(raw.get(sec), dict) and raw[sec].get(name)]


_WHAT = {
    "int_type": "an integer",
    "int_from_float": "an integer",
    "int_parsing": "an integer",
    "float_type": "a number",
    "float_parsing": "a number",
    "bool_type": "true or false",
    "string_type": "a string",
    "model_type": "a mapping of keys",
    "list_type": "a list",
    "value_error": "a number",
    "finite_number": "a finite number",
    "string_pattern_mismatch": "names of forecasters joined by + (e.g. model+comb)",
}
_BOUND = {"greater_than": ">", "greater_than_equal": ">=", "less_than": "<",
          "less_than_equal": "<="}


def _field_kind(model: type[BaseModel], loc: tuple) -> str:
    """'an integer' or 'a number' for the field at ``loc``, '' if unknown."""
    for key in loc[:-1]:
        model = model.model_fields[key].annotation
    field = model.model_fields.get(loc[-1]) if isinstance(model, type) else None
    if field is None:
        return ""
    return {int: "an integer", float: "a number"}.get(field.annotation, "")


def _one_line(err: ValidationError) -> str:
    e = err.errors()[0]
    loc = tuple(str(p) for p in e["loc"])
    key = ".".join(loc)
    typ, got = e["type"], e.get("input")
    if typ == "extra_forbidden":
        parent: Any = Params
        for p in loc[:-1]:
            parent = parent.model_fields[p].annotation
        known = ", ".join(parent.model_fields)
        return f"params.yaml: unknown key {key} (known keys here: {known})"
    if typ == "literal_error" and len(loc) == 3 and loc[-1].isdigit():  # an item of a list
        allowed = e["ctx"]["expected"].replace("' or '", "' | '").replace("', '", "' | '")
        return (f"params.yaml: {'.'.join(loc[:-1])} may hold only {allowed}, got {got!r} "
                f"(item {int(loc[-1]) + 1})")
    if typ == "literal_error":
        allowed = e["ctx"]["expected"].replace("' or '", "' | '").replace("', '", "' | '")
        hint = ("; interpolate was removed: it filled a gap from the next value, which can be "
                "the target" if (key, got) == ("data.missing", "interpolate") else "")
        return f"params.yaml: {key} must be one of {allowed}, got {got!r}{hint}"
    if typ in _BOUND:
        bound = next(iter(e["ctx"].values()))
        kind = _field_kind(Params, loc) or "a number"
        return f"params.yaml: {key} must be {kind} {_BOUND[typ]} {bound}, got {got!r}"
    if typ == "described":
        return f"params.yaml: {key} must be {e['msg']}, got {got!r}"
    if typ in ("string_too_short", "string_too_long"):
        lo, hi = e["ctx"].get("min_length"), e["ctx"].get("max_length")
        what = "a non-empty string" if lo else f"at most {hi} character"
        return f"params.yaml: {key} must be {what}, got {got!r}"
    what = _WHAT.get(typ, e["msg"].lower())
    return f"params.yaml: {key} must be {what}, got {got!r}"


def parse_params(raw: Any, profile: str | None = None) -> Params:
    """Validate a parsed params mapping, with the ``auto`` values of ``profile``'s keys
    resolved (None: the profile of its own ``data.kind``); raises ParamsError with one
    line."""
    if not isinstance(raw, dict):
        raise ParamsError(f"params.yaml: must be a mapping of sections, got {type(raw).__name__}")
    try:
        p = Params.model_validate(raw)   # every key checked before any is resolved
        p = Params.model_validate(resolve(raw, profile or profile_of(p.data.kind))[0])
    except ValidationError as err:
        raise ParamsError(_one_line(err)) from None
    from .rules import check_combinations
    check_combinations(p)
    return p


def chosen(path: str | Path, profile: str) -> dict:
    """What ``auto`` became in a params file for ``profile``: ``key -> value``."""
    return resolve(yaml.safe_load(Path(path).read_text()) or {}, profile)[1]


def load_params(path: str | Path = "params.yaml", profile: str | None = None) -> Params:
    """Read and validate a params file (YAML, safe loader), ``auto`` resolved by ``profile``
    (a stage after prepare passes the prepared data's; None: that of the file's
    ``data.kind``)."""
    path = Path(path)
    try:
        text = path.read_text()
    except FileNotFoundError:
        raise ParamsError(f"{path}: file not found") from None
    try:
        raw = yaml.safe_load(text) or {}
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark else ""
        raise ParamsError(f"{path}: not valid YAML{where}") from None
    return parse_params(raw, profile)


# ---------------------------------------------------------------- the worked example
# The lecture's worked example, where it differs from the defaults (params.yaml's values).
SOURCE = {"prepare.window": 10, "prepare.scaler": "none", "model.pooling": "last",
          "train.batch_size": 0, "train.augment_noise": 0.0, "train.ensemble": 1}
# Keys that say how a run executes on this machine, not what it computes.
EXECUTION_KEYS = ("train.threads", "backtest.jobs")


def source_settings() -> dict[str, Any]:
    """The lecture's worked example as ``section.key -> value`` for every key, so a run with
    all of them is the worked example whatever ``params.yaml`` holds."""
    out = {f"{section}.{key}": value for section, values in Params().model_dump().items()
           for key, value in values.items() if f"{section}.{key}" not in EXECUTION_KEYS
           and section != "pretrain"}
    return {**out, **SOURCE}


def dvc_set_args(settings: dict[str, Any]) -> list[str]:
    """``-S key=value`` arguments for ``dvc exp run`` (values in YAML, as DVC parses them)."""
    out = []
    for key, value in settings.items():
        text = json.dumps(value, separators=(",", ":")) if isinstance(value, list) else \
            yaml.safe_dump(value, default_flow_style=True).splitlines()[0]
        if any(c.isspace() for c in text):
            raise ValueError(f"{key}: {text!r} is not one shell word")
        out += ["-S", f"{key}={text}"]
    return out


if __name__ == "__main__":  # python -m attn_forecast.params: the source's -S arguments
    print(" ".join(dvc_set_args(source_settings())))
