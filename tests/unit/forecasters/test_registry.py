"""Unit tests for attn_forecast.forecasters.registry: the baselines by name."""
from __future__ import annotations

from attn_forecast.forecasters.run import run
from attn_forecast.forecasters.registry import Unavailable, baselines
from unit.forecasters.helpers import LEVELS, _series, _store


# ---------------------------------------------------------------- the factory
def test_seasonal_naive_without_a_season_is_unavailable_with_the_reason():
    chosen, unavailable = baselines(["naive", "seasonal_naive", "mean", "ridge", "ets"],
                                    season=0, ridge_alpha=1.0, features=True)
    assert [f.name for f in chosen] == ["naive", "seasonal_naive", "mean", "ridge",
                                        "ridge_features", "ets"]
    assert unavailable == {"seasonal_naive": "no season"}
    assert isinstance(chosen[1], Unavailable) and chosen[1].reason == "no season"
    s = _store([_series(60, seed=19)], window=4, horizon=2, test=0.2, cal=0.2)
    fs = run(s, chosen[:3], ("test", "cal"), LEVELS, season=0)
    assert fs.forecasts["seasonal_naive"] == {"test": None, "cal": None, "past": None}
    assert fs.forecasts["naive"]["test"] is not None and fs.forecasts["mean"]["cal"] is not None
    # with a season it is there; without covariates ridge comes alone
    chosen, unavailable = baselines(["seasonal_naive", "ridge"], season=7, ridge_alpha=1.0,
                                    features=False)
    assert [f.name for f in chosen] == ["seasonal_naive", "ridge"] and unavailable == {}
    assert chosen[0].season == 7


def test_a_combination_named_in_the_registry_brings_its_members():
    chosen, _ = baselines(["naive", "m4_comb"], season=12, ridge_alpha=1.0, features=False)
    assert [f.name for f in chosen] == ["naive", "m4_ses", "m4_holt", "m4_damped", "m4_comb"]
