"""End-to-end: what git holds stays small whatever the series' length. The full test
predictions are a DVC-cached output; the committed, plotted CSV keeps the last 1,000 test
windows."""
from __future__ import annotations

import pandas as pd

CONFIG = {"data.n_points": 5200, "prepare.window": 10, "train.epochs": 2,
          "evaluate.baselines": ["naive", "mean"], "model.pooling": "last"}


def test_committed_predictions_are_a_bounded_sample(project_factory):
    proj = project_factory("committed", CONFIG)
    res = proj.run(["dvc", "repro"], timeout=300)
    assert res.returncode == 0, res.stdout + res.stderr
    full = pd.read_csv(proj.path / "data/predictions.csv")   # every window, with its id
    sample = pd.read_csv(proj.path / "reports/predictions.csv")  # the median series' last
    assert len(full) == 1040 and len(sample) == 1000
    assert set(full["id"]) == {"sine"}
    pd.testing.assert_frame_equal(sample, full.drop(columns="id").iloc[-1000:]
                                  .reset_index(drop=True))
    ignored = proj.run(["git", "check-ignore", "data/predictions.csv"])
    assert ignored.returncode == 0, "the full predictions must not go to git"
    tracked = proj.run(["git", "check-ignore", "reports/predictions.csv"])
    assert tracked.returncode == 1
    # the plot still reads the committed sample
    res = proj.run(["dvc", "plots", "show", "--json", "reports/predictions.csv"], timeout=120)
    assert res.returncode == 0 and "failed to load" not in res.stderr, res.stderr
