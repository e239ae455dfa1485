"""The docs' blocks on attention against recurrence and the MLP (tools/architectures.py), from
small committed-result files made here: every network's figures where they belong, the
spread over seeds where there are several, the command that measured them."""
from __future__ import annotations

import json

from tools.architectures import architectures_m3, long_lag, m3_peers


def _m3_row(subset: str, network: str, seed: int, by_step: list[float]) -> dict:
    return {"subset": subset, "network": network, "seed": seed, "series": 3, "params": 1000,
            "seconds": 1.0, "smape_by_step": by_step, "mase_by_step": [1.0] * len(by_step),
            "smape": sum(by_step) / len(by_step), "mase": 1.0,
            "sums": {"smape": 3 * sum(by_step), "forecasts": 3 * len(by_step)}}


def test_the_m3_block_pools_every_forecast_and_buckets_the_steps(tmp_path):
    out = tmp_path / "bench" / "results"
    out.mkdir(parents=True)
    rows = [_m3_row("yearly", "attention", 42, [10.0] * 6), _m3_row("yearly", "lstm", 42,
                                                                    [20.0] * 6),
            _m3_row("monthly", "attention", 42, [1.0] * 12 + [3.0] * 6),
            _m3_row("monthly", "lstm", 42, [2.0] * 18)]
    (out / "architectures_m3.json").write_text(json.dumps(
        {"command": "python bench/architectures_m3.py", "date": "2026-12-05", "commit": "abc",
         "rows": rows}))
    (out / "architectures_m3_seeds.json").write_text(json.dumps(
        {"command": "python bench/architectures_m3.py --seeds 43", "date": "2026-12-05",
         "commit": "abc", "rows": [_m3_row("monthly", "lstm", 43, [4.0] * 18)]}))
    text = architectures_m3(tmp_path)
    # attention: (6 x 10 + 12 x 1 + 6 x 3) / 24 forecasts per series
    assert "| attention | 10.00 / 1.000 | 1.67 / 1.000 | 3.75 | 1,000 |" in text
    assert "| monthly | lstm | 3.00 (2.00-4.00) |" in text          # the spread over seeds
    assert "| monthly | attention | 1.00 | 1.00 | 1.00 | 1.00 | 3.00 |" in text
    assert "| yearly | attention | 10.00 | 10.00 | 10.00 |  |  |" in text   # 6 steps only
    assert "`python bench/architectures_m3.py --seeds 43`" in text


def test_the_long_lag_block_shows_where_each_network_looks(tmp_path):
    out = tmp_path / "bench" / "results"
    out.mkdir(parents=True)
    rows = [{"lag": lag, "network": k, "params": 10, "seconds": 2.0, "mse": 0.2,
             "captured": c, "captured_min": c, "captured_max": c, "saliency_at_lag": sal,
             "weight_at_lag": w}
            for lag, k, c, sal, w in ((4, "attention", 0.9, 0.5, 0.6), (4, "lstm", 1.0, 0.7, None),
                                      (16, "attention", 1.0, 0.4, 0.8),
                                      (16, "lstm", 0.1, 0.02, None))]
    (out / "long_lag.json").write_text(json.dumps(
        {"command": "python bench/long_lag.py", "date": "2026-12-05", "commit": "abc",
         "window": 32, "steps": 10, "rows": rows}))
    text = long_lag(tmp_path)
    assert "| 16 | 1.00 (1.00-1.00) | 0.10 (0.10-0.10) |" in text
    assert "| 16 | 0.40 | 0.02 | 0.80 |" in text       # saliency of each, then attention's weight
    assert "evenly over the window: 0.031" in text


def test_the_peers_block_labels_each_peer_with_its_library_and_buckets_the_steps(tmp_path):
    m3 = tmp_path / "competitions" / "m3"
    m3.mkdir(parents=True)

    def row(smape: float, h: int) -> dict:
        return {"smape": smape, "mase": 1.0, "wql": 0.1, "smape_by_step": [smape] * h}
    board = {"yearly": {"model": row(10.0, 6), "nf_nhits": row(12.0, 6), "theta": row(11.0, 6)},
             "monthly": {"model": row(14.0, 18),
                         "nf_nhits": {**row(15.0, 18), "smape_by_step": [1.0] * 12 + [4.0] * 6},
                         "theta": row(13.0, 18)},
             "all": {"model": {"smape": 13.0}, "nf_nhits": {"smape": 14.0}},
             "measured_with": {"nf_nhits": "NeuralForecast 3.0.0"}}
    (m3 / "leaderboard.json").write_text(json.dumps(board))
    text = m3_peers(tmp_path)
    assert "| nf_nhits (NeuralForecast 3.0.0) | 12.00 / 1.000 / 0.100 | 15.00" in text, text
    assert "| model | 10.00" in text and "| theta | 11.00" in text
    assert "| monthly | nf_nhits (NeuralForecast 3.0.0) | 1.00 | 1.00 | 1.00 | 1.00 | 4.00 |" \
        in text, text
    assert "| yearly | model | 10.00 | 10.00 | 10.00 |  |  |" in text, text
    assert "nf_lstm" not in text           # a row is shown only where every subset has it
