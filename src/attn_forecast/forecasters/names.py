"""Every forecaster's name, in one place, as plain data (no imports: the params schema reads
it without pulling the forecasters in): the quantile levels they forecast, the statistical
ones, the combinations by their members, every baseline, the blend's possible members."""

# the quantile levels the field's WQL averages over (fev's and Chronos' nine): the prior's
# head, and with the 95 % interval's two, every forecaster's (evaluate.quantiles)
WQL_LEVELS = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)

# StatsForecast's models by name, as statistical.make builds them (one entry adds a
# statistical forecaster): its class, the settings it is built with, the longest season it is
# given (1: none; None: the data's, whatever it is; a longer one and it is fitted without),
# and whether it runs on the seasonally adjusted series (the M4 competition's benchmarks)
STATISTICAL = {
    "ses": {"cls": "AutoETS", "args": {"model": "ANN"}, "season": 1, "adjusted": False},
    "ets": {"cls": "AutoETS", "args": {}, "season": None, "adjusted": False},
    "theta": {"cls": "Theta", "args": {}, "season": None, "adjusted": False},
    "dot": {"cls": "DynamicOptimizedTheta", "args": {}, "season": None, "adjusted": False},
    "ces": {"cls": "AutoCES", "args": {}, "season": None, "adjusted": False},
    "arima": {"cls": "AutoARIMA", "args": {"max_P": 1, "max_Q": 1}, "season": 24,
              "adjusted": False},
    "m4_ses": {"cls": "AutoETS", "args": {"model": "ANN", "damped": False}, "season": 1,
               "adjusted": True},
    "m4_holt": {"cls": "AutoETS", "args": {"model": "AAN", "damped": False}, "season": 1,
                "adjusted": True},
    "m4_damped": {"cls": "AutoETS", "args": {"model": "AAN", "damped": True}, "season": 1,
                  "adjusted": True},
}
STAT_FORECASTERS = tuple(STATISTICAL)
# the combinations by name, equal-weight means of their members: ``comb``, StatsForecast's M3
# ensemble; ``m4_comb``, the M4 competition's Comb benchmark (on the seasonally adjusted series)
COMBINATIONS = {"comb": ("arima", "ets", "ces", "dot"),
                "m4_comb": ("m4_ses", "m4_holt", "m4_damped")}
# NeuralForecast's networks by name -> its class (forecasters/peers.py: one global model each,
# the ``peers`` extra): the neural peers a user would pick instead of the model
PEERS = {"nf_nhits": "NHITS", "nf_nbeats": "NBEATS", "nf_lstm": "LSTM",
         "nf_patchtst": "PatchTST"}
# a peer's settings a search chooses beside its steps and seed (peers.<peer>.network): the
# keys of NeuralForecast's Auto search space (AutoNHITS, AutoNBEATS) other than the input size,
# which is each subset's for every peer (peers.input_size)
PEER_NETWORK = ("learning_rate", "scaler_type", "batch_size", "windows_batch_size",
                "step_size", "n_pool_kernel_size", "n_freq_downsample")
# a peer's second row on the competition leaderboard: its own quantiles, not calibrated
RAW_ROW = "_raw"


def raw_row(peer: str) -> str:
    """The name of ``peer``'s raw row (nf_nhits -> nf_nhits_raw)."""
    return peer + RAW_ROW


# every baseline's name, in the order a list of them is fitted (params: evaluate.baselines)
NAMES = ("naive", "seasonal_naive", "naive2", "mean", "ridge", *STAT_FORECASTERS,
         *COMBINATIONS, "zeroshot", *PEERS)
# the competition leaderboard's rows after the model's: every baseline, each peer followed by
# its raw row
ROWS = tuple(m for n in NAMES for m in ((n, raw_row(n)) if n in PEERS else (n,)))
# what the forecast command can refit on a whole series (a blend's members beside the model)
FUTURE_MEMBERS = ("naive", "seasonal_naive", "naive2", "mean", *STAT_FORECASTERS)
# what a name means where the name alone does not say (params.yaml's list of them says it)
MEANING = {"naive2": "naive on the seasonally adjusted series", "ses": "simple exponential "
           "smoothing", "dot": "dynamic optimized theta", "ces": "complex exponential smoothing",
           "m4_ses": "M4's SES on the seasonally adjusted series", "m4_holt": "M4's Holt",
           "m4_damped": "M4's damped Holt", "zeroshot": "the prior, models/pretrained.pt, not "
           "trained on the data",
           **{n: f"NeuralForecast's {c}, the peers extra" for n, c in PEERS.items()}}
# how calibration treats a level with fewer windows than split conformal's rank needs
# (evaluate.few_windows; evaluation/intervals.py:margins says what each does)
FEW_WINDOWS = ("gaussian", "pooled", "largest")
# the blend's name, and the forecast to use: the blend where there is one, else the model
BLEND = "blend"
TO_USE = (BLEND, "model")


def forecaster_names(blend: dict | None) -> tuple[str, ...]:
    """What a forecast may be asked of: the blend (where the pipeline learned one), the model
    and each of the blend's other members."""
    if not blend:
        return ("model",)
    return (BLEND, "model", *[m for m in blend["members"] if m != "model"])


def to_use(present) -> str:
    """The forecast to use among the forecasters ``present`` (names with forecasts)."""
    return next((n for n in TO_USE if n in present), "model")


def listed() -> str:
    """Every baseline's name as params.yaml lists them: what it means where the name does not
    say, a combination with its members."""
    def one(n: str) -> str:
        if n in COMBINATIONS:
            return f"{n} (mean of {', '.join(COMBINATIONS[n])})"
        return f"{n} ({MEANING[n]})" if n in MEANING else n
    return ", ".join(one(n) for n in NAMES)
