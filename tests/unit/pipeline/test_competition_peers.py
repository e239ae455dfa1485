"""Stage peers@<subset>-<peer>'s step on M3 other (174 series) with NeuralForecast's NHITS at a
few optimizer steps: trained on the holdout's training parts and on the calibration cut's, its
row calibrated on the cut like every other stage's, its own quantiles kept beside as a second
row, the file checked as the leaderboard reads it."""
from __future__ import annotations

import numpy as np
import pytest
import yaml

from attn_forecast.evaluation.subset import check_medians
from attn_forecast.forecasters import saved
from attn_forecast.pipeline.competition import field_store, subset_params
from conftest import ROOT

pytest.importorskip("neuralforecast")


def test_a_peer_is_calibrated_on_the_cut_with_its_own_quantiles_beside(tmp_path, capsys):
    from attn_forecast.pipeline.competition_peers import OWN, step
    c = yaml.safe_load((ROOT / "competitions" / "params.yaml").read_text())
    c["peers"]["nf_nhits"] = {"max_steps": 3, "seed": 1}
    params = tmp_path / "params.yaml"
    params.write_text(yaml.safe_dump(c))
    out = tmp_path / "nf_nhits.npz"
    step(str(params), "other", "nf_nhits", str(out))
    line = capsys.readouterr().out
    assert "calibrated on its calibration cut" in line and "nf_nhits_raw" in line, line
    fs = saved.load(out)
    p, prof = subset_params(params, "other")
    store = field_store(p, prof)
    saved.check_against(fs, store.ends("test"), store.horizon, str(out))
    check_medians(fs, str(out))
    assert set(fs.names()) == {"nf_nhits", "nf_nhits_raw"}
    how = fs.record["intervals"]["forecasters"]
    assert how["nf_nhits"]["how"] == "calibrated" and how["nf_nhits_raw"] == {"how": OWN}
    assert fs.record["peer"]["max_steps"] == 3
    cal, raw = (fs.forecasts[n]["test"] for n in ("nf_nhits", "nf_nhits_raw"))
    np.testing.assert_array_equal(cal.point, raw.point)      # one network, one point
    assert not np.allclose(cal.quantiles, raw.quantiles)     # the cut's margins widen it
    assert np.all(np.diff(cal.quantiles, axis=-1) >= 0)
