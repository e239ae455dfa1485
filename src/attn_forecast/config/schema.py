"""The typed schema of ``params.yaml``: one pydantic model per section, the one set of defaults.

A field's default is the setting of the built-in synthetic data (the lecture's sine); the
architecture's defaults are the model's own (``model.settings.ModelSettings``) and the
training loop's its own (``training.settings.TrainSettings``): the library's types keep
their defaults, below the config floor, and the schema reads them. params.yaml's
values are these defaults, or ``auto`` where a profile may choose (profiles.py), and a test
holds them in step. Every key is validated before any work; unknown keys are refused.
"""
from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import (AllowInfNan, BaseModel, BeforeValidator, ConfigDict, Field,
                      PlainValidator, Strict, create_model, field_validator, model_validator)
from pydantic_core import PydanticCustomError

from ..engine import ENGINES, LOCAL
from ..forecasters.names import (FEW_WINDOWS, FUTURE_MEMBERS, NAMES, PEER_NETWORK, PEERS,
                                 WQL_LEVELS)
from ..model.kinds import KINDS
from ..model.settings import ModelSettings
from ..training.settings import TrainSettings

ARCH = ModelSettings()   # the model's own defaults (the attention model's architecture)
TRAIN = TrainSettings()  # the training loop's own defaults


def _no_bool(v: Any) -> Any:
    # YAML `true` would otherwise pass as 1.0 for a float field.
    if isinstance(v, bool):
        raise ValueError("bool")
    return v


def _auto_or_int(low: int):
    def check(v: Any) -> Any:
        if v == "auto" or (isinstance(v, int) and not isinstance(v, bool) and v >= low):
            return v
        raise PydanticCustomError("described", f"auto or an integer >= {low}")
    return check


Int = Annotated[int, Strict()]
AutoOrInt = Annotated[str | int, PlainValidator(_auto_or_int(1))]
AutoOrZero = Annotated[str | int, PlainValidator(_auto_or_int(0))]
Bool = Annotated[bool, Strict()]
Float = Annotated[float, BeforeValidator(_no_bool), AllowInfNan(False)]
Subset = Literal["yearly", "quarterly", "monthly", "other"]


class Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def _sep(v: Any) -> Any:
    # what users type for a tab: a backslash and t (as -S 'data.csv_sep="\\t"' delivers it)
    return "\t" if v in ("\\t", "tab", "TAB") else v


class DataParams(Section):
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
    # horizon) or, holdout validation, the last horizon of its train part (for choosing), or
    # calibration, the horizon before that (for calibrating intervals: nothing chose on it)
    competition: Literal["m3", "m1", "tourism"] = "m3"
    subset: Subset = "monthly"
    holdout: Literal["test", "validation", "calibration"] = "test"


TimeFeature = Literal["minute", "hour", "dayofweek", "dayofmonth", "dayofyear", "month"]
FeatureTransform = Literal["none", "diff", "log_return", "log1p"]


class PrepareParams(Section):
    window: AutoOrInt = 60              # input steps; auto: from the training parts
    horizon: AutoOrInt = 1              # steps predicted at once; auto: the frequency's
    test_frac: Float = Field(0.2, gt=0, lt=1)
    val_frac: Float = Field(0.0, ge=0, lt=1)   # validation (early stopping, best epoch)
    # a window needs this many input values, the earlier steps padded and masked; 0 = whole
    min_context: Int = Field(0, ge=0)
    cal_frac: Float = Field(0.1, ge=0, lt=1)   # calibration (conformal intervals)
    scaler: Literal["zscore", "minmax", "none"] = "zscore"
    transform: Literal["none", "diff", "log_return"] = "none"
    time_features: list[TimeFeature] = Field(default_factory=list)  # calendar inputs
    # one per data.csv_feature_columns entry ([] = none for all)
    feature_transforms: list[FeatureTransform] = Field(default_factory=list)


Level = Annotated[Float, Field(gt=0, lt=1)]


class ModelParams(Section):
    kind: Literal[KINDS] = ARCH.kind  # type: ignore[valid-type]
    d_model: Int = Field(ARCH.d_model, ge=1)
    ffn_dim: Int = Field(ARCH.ffn_dim, ge=1)
    n_heads: Int = Field(ARCH.n_heads, ge=1)
    n_layers: Int = Field(ARCH.n_layers, ge=1)
    positional: Literal["sinusoidal", "learned", "none"] = ARCH.positional
    residual: Bool = ARCH.residual
    pooling: Literal["last", "mean", "flatten"] = ARCH.pooling
    dropout: Float = Field(ARCH.dropout, ge=0, lt=1)
    # per-window, reversible; seasonal: the change from seasonal naive (without a season: last)
    instance_norm: Literal["none", "revin", "last", "seasonal", "mean", "delta"] = \
        ARCH.instance_norm
    revin_affine: Bool = ARCH.revin_affine
    patch_len: Int = Field(ARCH.patch_len, ge=0)      # steps per token; 0 = one per step
    patch_stride: Int = Field(ARCH.patch_stride, ge=0)  # steps between tokens; 0 = patch_len
    highway: Bool = ARCH.highway        # + a linear forecast from the window (LSTNet)
    lookbacks: list[Annotated[Int, Field(ge=1)]] = Field(default_factory=list)  # windows of
    #                                   an ensemble over lookbacks; [] = prepare.window alone
    quantiles: list[Level] = Field(default_factory=list)
    # how an ensemble's members (seeds, losses, lookbacks) combine: their mean or median
    combine: Literal["mean", "median"] = "mean"


Loss = Literal["mse", "mae", "huber", "smape", "mape", "mase"]


class TrainParams(Section):
    seed: Int = Field(TRAIN.seed, ge=0)
    # scratch: random initial weights; pretrained: the prior's (models/pretrained.pt),
    # fine-tuned with early stopping
    init: Literal["scratch", "pretrained"] = "scratch"
    epochs: Int = Field(TRAIN.epochs, ge=1)
    lr: Float = Field(TRAIN.lr, gt=0)
    batch_size: AutoOrZero = TRAIN.batch_size  # 0 = full batch; auto: full up to 1,024, else 256
    max_steps: Int = Field(TRAIN.max_steps, ge=0)  # stop after this many optimizer steps
    optimizer: Literal["adam", "adamw"] = TRAIN.optimizer
    weight_decay: Float = Field(TRAIN.weight_decay, ge=0)
    loss: Loss = TRAIN.loss
    # an ensemble over training losses (each with train.ensemble seeds); [] = train.loss alone
    losses: list[Loss] = Field(default_factory=list)
    scheduler: Literal["none", "step", "cosine"] = TRAIN.scheduler
    step_size: Int = Field(TRAIN.step_size, ge=1)
    gamma: Float = Field(TRAIN.gamma, gt=0, le=1)
    warmup_epochs: Int = Field(TRAIN.warmup_epochs, ge=0)
    grad_clip: Float = Field(TRAIN.grad_clip, ge=0)
    patience: Int = Field(TRAIN.patience, ge=0)
    augment_noise: Float = Field(TRAIN.augment_noise, ge=0)
    augment_units: Literal["scaled", "moves"] = TRAIN.augment_units
    augment_scale: Float = Field(TRAIN.augment_scale, ge=0, lt=1)
    augment_shift: Float = Field(TRAIN.augment_shift, ge=0)
    device: Literal["auto", "cpu", "cuda"] = "auto"
    precision: Literal["fp32", "bf16"] = TRAIN.precision
    compile: Bool = False
    nproc: Int = Field(1, ge=1)
    threads: AutoOrInt = "auto"        # torch threads per process: auto (by the job) or N
    ensemble: Int = Field(TRAIN.ensemble, ge=1)  # seeds seed .. seed + N - 1, mean forecast
    live: Bool = False                 # log every epoch through DVCLive into dvclive/


BASELINES = NAMES                       # every baseline's name, from the one registry
Baseline = Literal[NAMES]               # type: ignore[valid-type]
BlendMember = Literal[("model", *FUTURE_MEMBERS)]  # type: ignore[valid-type]


# the levels every forecaster forecasts and the intervals are scored at: the nine the field's
# WQL averages over (fev, Chronos) and the 95 % interval's two (the M4 competition's MSIS)
LEVELS = (0.025, *WQL_LEVELS, 0.975)


class EvaluateParams(Section):
    ridge_alpha: Float = Field(1.0, ge=0)
    quantiles: list[Level] = Field(default_factory=lambda: list(LEVELS))  # [] = points only
    season: AutoOrZero = 0               # steps; 0 = none; auto: from the training parts
    baselines: list[Baseline] = Field(
        default_factory=lambda: ["naive", "seasonal_naive", "mean", "ridge", "ets", "theta"])
    conformal: Literal["none", "split"] = "split"  # split: calibrate on the calibration part
    # a level with fewer calibration windows than split conformal's rank needs: gaussian (the
    # normal tail from the widest level they calibrate) | pooled (every step's scores pooled,
    # then the normal tail) | largest (the largest score: two levels can coincide); chosen on
    # bench/real.py's validation parts (bench/README.md); evaluation/intervals.py:FEW
    few_windows: Literal[FEW_WINDOWS] = "gaussian"  # type: ignore[valid-type]
    # where the statistical field runs: local (this machine's processes) or dask (the cluster at
    # engine_address; '' = one embedded here, a worker per core)
    engine: Literal[ENGINES] = LOCAL  # type: ignore[valid-type]
    engine_address: str = ""
    # forecasters averaged into one more, named by their names: model+comb, model+ets+theta
    combinations: list[Annotated[str, Field(pattern=r"^\w+(\+\w+)+$")]] = \
        Field(default_factory=list)
    # members of the blend: weights each series learns on its validation part; [] = none
    # (the forecast command refits each on the whole series: the model and these baselines)
    blend: list[BlendMember] = Field(default_factory=list)


class PeerParams(Section):
    """One NeuralForecast peer's settings (forecasters/peers.py: what else it is given): the
    same in params.yaml's ``peers`` and in the competition file's."""
    max_steps: Int = Field(1000, ge=1)   # optimizer steps
    seed: Int = Field(1, ge=0)
    # the network's own settings over NeuralForecast's defaults (a search's choice:
    # competitions/params.yaml's peer_search); {} = its defaults
    network: dict[str, Any] = Field(default_factory=dict)

    @field_validator("network")
    @classmethod
    def _network_keys(cls, v: dict) -> dict:
        wrong = [k for k in v if k not in PEER_NETWORK]
        if wrong:
            raise PydanticCustomError("peer_network", "unknown key '{key}'; allowed: {allowed}",
                                      {"key": wrong[0], "allowed": ", ".join(PEER_NETWORK)})
        return v


# every NeuralForecast peer (forecasters/names.py: PEERS) by name, where evaluate.baselines
# names one (the peers extra); its input size is prepare.window (the competition file's:
# peers.input_size, each subset's)
PeersParams = create_model("PeersParams", __base__=Section,
                           **{name: (PeerParams, PeerParams()) for name in PEERS})


class BacktestParams(Section):
    folds: Int = Field(0, ge=0)        # rolling origins inside the test part; 0 = off
    fold_size: Int = Field(0, ge=0)    # test targets per fold; 0 = the test part shared evenly
    train_size: Int = Field(0, ge=0)   # 0 = expanding training part; N = the last N targets
    gap: Int = Field(0, ge=0)          # targets between the training part and the fold's
    jobs: AutoOrInt = "auto"           # folds trained at once; auto = the cores


class RenderParams(Section):
    dpi: Int = Field(110, ge=50, le=600)   # the figures' resolution (the only default)


Generator = Literal["kernel", "ets", "arima", "trend_season"]
# the prior's architecture and its training: the model's and training's own types
PRIOR_MODEL = {"d_model": 64, "n_heads": 4, "n_layers": 3, "ffn_dim": 128, "residual": True,
               "pooling": "mean", "instance_norm": "revin", "revin_affine": False,
               "patch_len": 8, "patch_stride": 4,
               "quantiles": list(WQL_LEVELS)}    # the prior's head: the field's nine
PRIOR_TRAIN = {"seed": 0, "epochs": 60, "batch_size": 256, "lr": 0.001, "scheduler": "cosine",
               "warmup_epochs": 2, "grad_clip": 1.0, "augment_noise": 0.0, "ensemble": 1}


class PretrainParams(Section):
    """The prior (stage pretrain): its corpus, and its model and training as ``model:`` and
    ``train:`` sections of the same types as the pipeline's (an epoch is a round: a corpus
    drawn afresh, ``steps_per_round`` steps on it)."""
    generators: list[Generator] = Field(
        default_factory=lambda: ["kernel", "ets", "arima", "trend_season"], min_length=1)
    real: list[Subset] = Field(default_factory=list)  # M3 subsets whose train parts join
    real_share: Float = Field(0.0, ge=0, le=1)  # share of each round's series from them
    series_per_round: Int = Field(1000, ge=1)
    steps_per_round: Int = Field(100, ge=1)
    min_length: Int = Field(48, ge=2)
    max_length: Int = Field(400, ge=2)
    shift_prob: Float = Field(0.1, ge=0, le=1)  # a level shift in a series
    spike_prob: Float = Field(0.1, ge=0, le=1)  # a few spikes in a series
    val_series: Int = Field(500, ge=1)  # a fixed validation corpus, scored after each round
    window: Int = Field(128, ge=2)      # the longest context (steps)
    horizon: Int = Field(24, ge=1)      # the longest horizon
    min_context: Int = Field(8, ge=1)   # the shortest context it is trained on
    model: ModelParams = ModelParams(**PRIOR_MODEL)
    train: TrainParams = TrainParams(**PRIOR_TRAIN)

    @model_validator(mode="before")
    @classmethod
    def _over_defaults(cls, raw: Any) -> Any:
        """``model:`` and ``train:`` given in part keep the prior's other settings (not the
        pipeline's defaults)."""
        if isinstance(raw, dict):
            raw = dict(raw)
            for key, base in (("model", PRIOR_MODEL), ("train", PRIOR_TRAIN)):
                if isinstance(raw.get(key), dict):
                    raw[key] = {**base, **raw[key]}
        return raw


class Params(Section):
    data: DataParams = DataParams()
    prepare: PrepareParams = PrepareParams()
    model: ModelParams = ModelParams()
    train: TrainParams = TrainParams()
    evaluate: EvaluateParams = EvaluateParams()
    peers: PeersParams = PeersParams()   # type: ignore[valid-type]
    backtest: BacktestParams = BacktestParams()
    render: RenderParams = RenderParams()
    pretrain: PretrainParams = PretrainParams()


# keys renamed for clarity: the old name's one-line error names the new one, and why
_PRIOR = ("the prior's model and training settings are pretrain.model and pretrain.train, of "
          "the same types as model and train")
_PEERS = ("each NeuralForecast peer's settings are its own, as in the competition file: "
          f"peers.<{' | '.join(PEERS)}>.max_steps and .seed")
RENAMED = {**{f"pretrain.{old}": (f"pretrain.{new}", _PRIOR) for old, new in {
    "seed": "train.seed", "rounds": "train.epochs", "batch_size": "train.batch_size",
    "lr": "train.lr", "warmup_rounds": "train.warmup_epochs", "grad_clip": "train.grad_clip",
    "device": "train.device", "precision": "train.precision", "compile": "train.compile",
    "nproc": "train.nproc", **{k: f"model.{k}" for k in (
        "patch_len", "patch_stride", "d_model", "n_heads", "n_layers", "ffn_dim",
        "instance_norm", "quantiles")}}.items()},
    "evaluate.peer_steps": ("peers.<peer>.max_steps", _PEERS),
    "evaluate.peer_seed": ("peers.<peer>.seed", _PEERS)}


def default(key: str) -> Any:
    """The schema's default of ``section.key`` (plain data)."""
    section, name = key.split(".", 1)
    return Params().model_dump()[section][name]
