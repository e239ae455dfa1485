"""Per-epoch logging through DVCLive (``train.live: true``), for watching a running experiment.

DVCLive writes ``dvclive/metrics.json`` (the latest epoch) and ``dvclive/plots/metrics/*.tsv``
(one row per epoch, no timestamps) after every epoch, so ``dvc exp show`` lists a running
experiment's loss and the VS Code extension or ``dvc plots show`` draws it while it trains.
It never touches the project's ``dvc.yaml``: its files are declared in ``dvclive/dvc.yaml``,
written here, beside them. No DVC experiment is saved (``save_dvc_exp=False``), no report is
made, no system metrics are read. dvclive is imported only when logging is on (it costs about
half a second of import); the committed history CSV is written either way.
"""
from __future__ import annotations

import os

LIVE_DIR = "dvclive"
DVC_YAML = "metrics:\n- metrics.json\nplots:\n- plots/metrics:\n    x: step\n"


class LiveLog:
    """One training run's DVCLive logger; call it with each epoch's history row, then close."""

    def __init__(self, directory: str = LIVE_DIR):
        from dvclive import Live  # lazy: only when train.live is on
        self.live = Live(dir=directory, resume=False, report=None, save_dvc_exp=False,
                         dvcyaml=None, monitor_system=False)
        with open(os.path.join(directory, "dvc.yaml"), "w") as fh:
            fh.write(DVC_YAML)

    def __call__(self, row: dict) -> None:
        self.live.step = int(row["epoch"])  # the x axis is the epoch (1, 2, ...)
        for key in ("train_loss", "val_loss", "lr"):
            if row.get(key) is not None:
                self.live.log_metric(key, float(row[key]))
        self.live.next_step()

    def close(self) -> None:
        self.live.end()


def epoch_logger(enabled: bool, directory: str = LIVE_DIR) -> LiveLog | None:
    return LiveLog(directory) if enabled else None

