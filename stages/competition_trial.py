"""Stage trial of a search pipeline (competitions/tune/dvc.yaml, competitions/tune/quick/dvc.yaml
or a copy): the attention model of one competition subset, its settings those of the
competition pipeline with the trial's params (the search's params.yaml, --trial) on top,
trained on every series' training part and scored on its validation cut (the last horizon of
the training part; never the test part).

out: the trial's metrics (json): sMAPE over every forecast of the validation cut (the field's
rule), the epochs run, whether the search pruned it. Under ``attn-forecast tune`` the score
after every epoch goes to the study at the optimizer steps taken so far, whose pruner may stop
the run (still written, marked) before its last step.
"""
from __future__ import annotations

import argparse

from attn_forecast import stage  # first: it pins the CPU before numpy loads
from attn_forecast.search.trial import step


@stage.main
def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--params", required=True, help="the competition pipeline's params")
    ap.add_argument("--trial", required=True, help="the trial's params (subset, sections)")
    ap.add_argument("--metrics", required=True, help="the trial's metrics (json)")
    ap.add_argument("--pretrained", required=True, help="the prior (train.init pretrained)")
    return step(**vars(ap.parse_args(argv)))


if __name__ == "__main__":
    stage.run(main)
