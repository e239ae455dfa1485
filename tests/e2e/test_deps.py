"""End-to-end: the committed prior is up to date (the real `dvc status`): clones never pretrain."""
from __future__ import annotations

from conftest import ROOT


def test_the_committed_prior_is_up_to_date_so_a_clone_never_pretrains():
    """The pretrain stage's lock entry matches the committed files (its code, its params and
    its outputs), so `dvc repro` on a fresh clone skips it (the real dvc status). After an edit
    that cannot change the prior: `dvc commit pretrain`; after one that can: `dvc repro
    pretrain`."""
    import json
    import os
    import subprocess

    import yaml
    from conftest import VENV_BIN
    env = {**os.environ, "DVC_NO_ANALYTICS": "1", "ITERATIVE_DO_NOT_TRACK": "1"}
    res = subprocess.run([str(VENV_BIN / "dvc"), "status", "pretrain", "--json"], cwd=ROOT,
                         capture_output=True, text=True, timeout=120, env=env)
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout or "{}") == {}, f"pretrain is stale: {res.stdout} (dvc " \
        "commit pretrain, or dvc repro pretrain when the prior would change)"
    entry = yaml.safe_load((ROOT / "dvc.lock").read_text())["stages"]["pretrain"]
    params = yaml.safe_load((ROOT / "params.yaml").read_text())["pretrain"]
    assert entry["params"]["params.yaml"]["pretrain"] == params
    assert (ROOT / "models/pretrained.pt").stat().st_size < 5 * 2 ** 20
