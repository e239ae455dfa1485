"""Stage peers@<subset>-<peer> of the competition pipeline (competitions/dvc.yaml): one
NeuralForecast network (NHITS, NBEATS, LSTM or PatchTST: the ``peers`` extra) trained as one
global model on one subset's training parts, with the settings of the competition file's
``peers`` section, forecasting every series' test part (or validation cut); trained again on
the calibration cut, where its quantiles are calibrated, its own quantiles kept beside.

out: its forecasts as the leaderboard scores them (a compact ForecastSet npz, committed).
"""
from __future__ import annotations

import argparse

from attn_forecast import stage  # first: it pins the CPU before numpy loads
from attn_forecast.pipeline.competition_peers import step


@stage.main
def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--params", required=True, help="the competition pipeline's params")
    ap.add_argument("--subset", required=True)
    ap.add_argument("--peer", required=True, help="nf_nhits, nf_nbeats, nf_lstm or nf_patchtst")
    ap.add_argument("--out", required=True, help="its forecasts (npz)")
    step(**vars(ap.parse_args(argv)))


if __name__ == "__main__":
    stage.run(main)
