"""Every forecaster's name, in one place, as plain data (no imports: the params schema reads
it without pulling the forecasters in): the statistical ones, the combinations by their
members, every baseline, the blend's possible members."""

# StatsForecast's models (statistical.py), and the M4 competition's benchmarks on the
# seasonally adjusted series
STAT_FORECASTERS = ("ses", "ets", "theta", "dot", "ces", "arima", "m4_ses", "m4_holt",
                    "m4_damped")
# the combinations by name, equal-weight means of their members: ``comb``, StatsForecast's M3
# ensemble; ``m4_comb``, the M4 competition's Comb benchmark (on the seasonally adjusted series)
COMBINATIONS = {"comb": ("arima", "ets", "ces", "dot"),
                "m4_comb": ("m4_ses", "m4_holt", "m4_damped")}
# every baseline's name, in the order a list of them is fitted (params: evaluate.baselines)
NAMES = ("naive", "seasonal_naive", "naive2", "mean", "ridge", *STAT_FORECASTERS,
         *COMBINATIONS, "zeroshot")
# what the forecast command can refit on a whole series (a blend's members beside the model)
FUTURE_MEMBERS = ("naive", "seasonal_naive", "naive2", "mean", *STAT_FORECASTERS)
# the blend's name, and the forecast to use: the blend where there is one, else the model
BLEND = "blend"
TO_USE = (BLEND, "model")


def to_use(present) -> str:
    """The forecast to use among the forecasters ``present`` (names with forecasts)."""
    return next((n for n in TO_USE if n in present), "model")
