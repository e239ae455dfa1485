"""setup/forecasting.py: params turned into the library's plain arguments (the peers')."""
from __future__ import annotations

from attn_forecast.config.load import parse_params
from attn_forecast.setup.forecasting import peer_settings


def test_each_peer_is_given_its_own_steps_and_seed_and_the_window_as_input():
    p = parse_params({"prepare": {"window": 24},
                      "peers": {"nf_lstm": {"max_steps": 7, "seed": 3}}})
    assert peer_settings(p, "nf_lstm") == {"input_size": 24, "max_steps": 7, "seed": 3,
                                           "network": {},
                                           "levels": tuple(p.evaluate.quantiles)}
    assert peer_settings(p, "nf_nhits")["max_steps"] == 1000      # the schema's default
