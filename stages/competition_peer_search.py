"""Stage peer_search@<subset>-<peer> of the competition pipeline (competitions/dvc.yaml):
NeuralForecast's Auto search of one peer (NHITS or NBEATS: the ``peers`` extra) on a subset's
validation cuts, its Optuna study in a journal file, resumed where it stopped.

journal: the study (committed); log: every trial (CSV); best: the best trial's settings, as
the competition file's ``peers.<peer>`` takes them (YAML).
"""
from __future__ import annotations

import argparse

from attn_forecast import stage  # first: it pins the CPU before numpy loads
from attn_forecast.search.peers import step


@stage.main
def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--params", required=True, help="the competition pipeline's params")
    ap.add_argument("--subset", required=True)
    ap.add_argument("--peer", required=True, help="nf_nhits or nf_nbeats")
    ap.add_argument("--journal", required=True, help="the study (an Optuna journal file)")
    ap.add_argument("--log", required=True, help="every trial (CSV)")
    ap.add_argument("--best", required=True, help="the best trial's settings (YAML)")
    step(**vars(ap.parse_args(argv)))


if __name__ == "__main__":
    stage.run(main)
