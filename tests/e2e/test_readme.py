"""End-to-end: the README's commands, as written, in a copy of the project after `make repro`
(its `dvc repro`, on the tiny config): every ``bash`` block but the two make commands, line by
line, each must exit 0 and write what the README says it writes."""
from __future__ import annotations

import re
import shlex

import numpy as np
import pandas as pd

from conftest import ROOT


def readme_commands() -> list[str]:
    """The README's shell commands: each line of its bash blocks, comments and line
    continuations resolved; `make` (the harness itself) and `source` (the test's PATH already
    holds the venv) left out."""
    text = (ROOT / "README.md").read_text()
    out = []
    for block in re.findall(r"```bash\n(.*?)```", text, flags=re.S):
        for line in block.replace("\\\n", " ").splitlines():
            line = line.split(" #")[0].strip() if not line.lstrip().startswith("#") else ""
            if line and not line.startswith(("make ", "source ")):
                out.append(line)
    return out


def test_the_readme_has_commands_to_try():
    cmds = readme_commands()
    assert any(c.startswith("dvc exp run") for c in cmds) and \
        any(c.startswith("attn-forecast") for c in cmds), cmds


def test_every_readme_command_works_as_written(project_factory):
    proj = project_factory("readme")
    res = proj.run(["dvc", "repro"], timeout=300)
    assert res.returncode == 0, res.stdout + res.stderr
    proj.git_commit("make repro")
    for cmd in readme_commands():
        res = proj.run(shlex.split(cmd), timeout=300)
        assert res.returncode == 0, f"{cmd}\n--- stdout\n{res.stdout}\n--- stderr\n{res.stderr}"
    fc = pd.read_csv(proj.path / "forecast.csv")
    levels = ["q2.5", "q10", "q20", "q30", "q40", "q60", "q70", "q80", "q90", "q97.5"]  # q50:
    #                                                  the forecast column
    # the model's horizon (the sine's: the lecture's one step), its quantiles calibrated
    assert list(fc.columns) == ["step", "time", "forecast", *levels, "calibrated"]
    assert len(fc) == 1 and fc["calibrated"].all()
    q = fc[levels].to_numpy()                          # every step's quantiles, none crossing
    assert np.isfinite(q).all() and (np.diff(q, axis=1) >= 0).all()
    assert fc["time"].iloc[0] == 100                   # the tiny series has 100 points
    assert (proj.path / "dvc_plots" / "index.html").is_file()
    # the --temp experiments left the workspace as committed
    status = proj.run(["git", "status", "--porcelain", "--untracked-files=no"]).stdout
    assert status.strip() == "", status
    shown = proj.run(["dvc", "exp", "show", "--json"], check=True).stdout
    assert shown.count('"rev"') >= 3                   # workspace, main and the experiments
