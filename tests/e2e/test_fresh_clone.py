"""End-to-end, on a git clone of the committed project, as a new user starts: `make repro` on a
CPU whose arithmetic differs from the one the committed run was made on leaves `git status`
clean, and the documented undo of a workspace experiment returns to the committed run.

A CPU of other arithmetic is this one with the stages' pins off (``ATTN_FORECAST_NATIVE_CPU``:
torch, OpenBLAS and numpy take their widest kernels, which round differently in the last
bits, as another vendor's CPU does). The Makefile's own recipe runs, with the suite's venv."""
from __future__ import annotations

import json
import re
import subprocess

import pytest

from conftest import ROOT, VENV_BIN, Project


@pytest.fixture(scope="module")
def clone(tmp_path_factory):
    path = tmp_path_factory.mktemp("fresh") / "clone"
    subprocess.run(["git", "clone", "-q", str(ROOT), str(path)], check=True)
    proj = Project(path, {})
    proj.env["ATTN_FORECAST_NATIVE_CPU"] = "1"
    proj.env.pop("PYTHONPATH", None)          # as a user's shell: the stages set their own
    res = proj.run(["make", "repro", f"VENV={VENV_BIN.parent}", "STAMP="], timeout=600)
    assert res.returncode == 0, res.stdout + res.stderr
    proj.made = res.stdout + res.stderr
    return proj


def _status(proj) -> tuple[str, dict]:
    git = proj.run(["git", "status", "--porcelain"], check=True).stdout
    dvc = proj.run(["dvc", "status", "--json"], check=True, timeout=180).stdout
    return git, json.loads(dvc or "{}")


def test_make_repro_on_a_fresh_clone_leaves_git_status_clean_on_any_cpu(clone):
    git, dvc = _status(clone)
    assert git == "" and dvc == {}, (git, dvc, clone.made)
    assert "Running stage" not in clone.made, clone.made   # the committed run, not retrained
    assert (clone.path / "models" / "model.pt").is_file()
    assert (clone.path / "data" / "forecasts.npz").is_file()


def test_the_documented_undo_returns_to_the_committed_run(clone):
    text = (ROOT / "docs" / "experiments.md").read_text()
    undo = re.search(r"```bash\n(git restore [^\n]+)\n```", text).group(1)
    committed = (clone.path / "dvc.lock").read_text()
    res = clone.run(["dvc", "exp", "run", "-S", "train.epochs=3"], timeout=600)
    assert res.returncode == 0, res.stdout + res.stderr
    assert (clone.path / "dvc.lock").read_text() != committed
    res = clone.run(undo, timeout=300)
    assert res.returncode == 0, res.stdout + res.stderr
    git, dvc = _status(clone)
    assert git == "" and dvc == {}, (git, dvc)
    assert (clone.path / "models" / "model.pt").is_file()
