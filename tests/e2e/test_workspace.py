"""End-to-end: what a run leaves in the work tree, through the real ``dvc``.

One tiny project is reproduced and committed once; the tests then build on it in file order:
a failed stage and an interrupted one leave every git-tracked file as it was, a bad
``evaluate`` value stops the train stage before it trains, the source baseline runs with every
source setting whatever an earlier experiment left in params.yaml (and leaves the workspace
alone), unrelated files in data/external/ do not rerun anything, and the committed figures of
two commits compare with ``dvc plots diff`` on a fresh clone (no DVC cache).
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from types import SimpleNamespace

import pytest

from conftest import ROOT, Project

sys.path.insert(0, str(ROOT / "src"))
from tools.worked_example import dvc_set_args, source_settings  # noqa: E402


@pytest.fixture(scope="module")
def repo(project_factory):
    proj = project_factory("workspace")
    res = proj.run(["dvc", "repro"], timeout=300)
    assert res.returncode == 0, res.stdout + res.stderr
    proj.git_commit("outputs of the tiny config")
    return SimpleNamespace(proj=proj)


@pytest.fixture(autouse=True)
def committed_again(repo):
    """Every test starts from the committed outputs, whatever the one before did or failed."""
    yield
    _restore(repo.proj)


def _dirty(proj: Project) -> list[str]:
    """Paths git sees as changed, added or deleted (untracked files included)."""
    out = proj.run(["git", "status", "--porcelain"], check=True).stdout
    return sorted(line[3:] for line in out.splitlines())


def _restore(proj: Project) -> None:
    proj.run("git checkout -- . && git clean -fdq", check=True)
    assert proj.run(["dvc", "checkout", "-q"]).returncode == 0


def test_a_failed_stage_leaves_tracked_outputs_as_they_were(repo):
    proj = repo.proj
    # prepare reruns (what auto chooses must fit the season) and refuses it at its start
    proj.update_params({"evaluate.season": 100000})
    res = proj.run(["dvc", "repro"], timeout=300)
    assert res.returncode != 0
    assert "evaluate.season" in res.stderr and "Traceback" not in res.stderr, res.stderr
    assert _dirty(proj) == ["params.yaml"], _dirty(proj)


def test_a_bad_evaluate_value_stops_the_run_before_it_trains(repo):
    proj = repo.proj
    proj.update_params({"evaluate.season": 100000, "train.lr": 0.002, "train.epochs": 100000})
    t0 = time.monotonic()
    res = proj.run(["dvc", "repro"], timeout=300)
    out = res.stdout + res.stderr
    assert res.returncode != 0
    # refused at prepare, the first stage that reads the season
    assert "Running stage 'prepare'" in out and "Running stage 'train'" not in out, out
    assert "error: evaluate.season (100000)" in res.stderr, res.stderr
    # 100000 epochs would take minutes: the check ran before the first one
    assert time.monotonic() - t0 < 60
    assert _dirty(proj) == ["params.yaml"], _dirty(proj)


def test_ctrl_c_in_training_prints_one_line_and_changes_nothing(repo, tmp_path):
    proj = repo.proj
    proj.update_params({"train.epochs": 100000})
    log = tmp_path / "repro.log"
    with open(log, "w") as fh:
        proc = proj.popen(["dvc", "repro"], stdout=fh, start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        # progress shows once training has run a few seconds, also into a file
        while "train: epoch" not in log.read_text():
            assert proc.poll() is None, log.read_text()
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(0.5)
        os.killpg(proc.pid, signal.SIGINT)  # Ctrl-C: the terminal signals the whole group
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    text = log.read_text()
    assert proc.returncode != 0
    assert "Traceback" not in text and "KeyboardInterrupt" not in text, text
    lines = [ln for ln in text.splitlines() if "nothing written" in ln]
    assert len(lines) == 1 and lines[0].startswith("interrupted at epoch "), text
    # the stage exits with 130; DVC runs it through $SHELL, and a shell that waits for it
    # (dash as /bin/sh, when SHELL is unset) is itself ended by the same Ctrl-C: -2
    assert "exited with 130" in text or "exited with -2" in text, text
    assert _dirty(proj) == ["params.yaml"], _dirty(proj)


def _exp_params(proj: Project, name: str) -> dict:
    rows = json.loads(proj.run(["dvc", "exp", "show", "--json"], check=True).stdout)
    for base in rows:
        for group in base.get("experiments") or []:
            for rev in group["revs"]:
                if rev.get("name") == name:
                    return rev["data"]["params"]["params.yaml"]["data"]
    raise AssertionError(f"no experiment {name!r}")


def test_source_baseline_has_every_source_setting_whatever_ran_before(repo):
    proj = repo.proj
    # an earlier workspace experiment leaves an LSTM at lr 0.01 in params.yaml
    proj.run(["dvc", "exp", "run", "-S", "model.kind=lstm", "-S", "train.lr=0.01"],
             timeout=300, check=True)
    workspace = (proj.path / "params.yaml").read_text()
    # the Makefile's source-baseline recipe: every setting given, in a temporary copy
    makefile = (ROOT / "Makefile").read_text()
    assert "exp run --temp" in makefile and "-m tools.worked_example" in makefile
    args = proj.run([sys.executable, "-m", "tools.worked_example"],
                    check=True).stdout.split()
    assert args == dvc_set_args(source_settings())
    proj.run(["dvc", "exp", "run", "--temp", "-f", "-n", "source-baseline", *args],
             timeout=300, check=True)
    got = _exp_params(proj, "source-baseline")
    for key, value in source_settings().items():
        where = got
        for part in key.split("."):
            where = where[part]
        assert where == value, key
    # the temporary run left the workspace alone
    assert (proj.path / "params.yaml").read_text() == workspace


def test_a_file_beside_the_csv_in_use_reruns_generate_alone(repo):
    """generate depends on the folder of users' files (so a missing data.csv_path gets the
    stage's own one-line error, not DVC's): a new file there reruns generate, whose output
    is the same, so nothing after it reruns."""
    proj = repo.proj
    (proj.path / "data/external/other.csv").write_text("value\n1\n2\n")
    changed = json.loads(proj.run(["dvc", "status", "--json"], check=True).stdout)
    assert list(changed) == ["generate"], changed
    res = proj.run(["dvc", "repro"], timeout=300, check=True)
    assert "Running stage 'generate'" in res.stdout
    assert "Running stage 'prepare'" not in res.stdout, res.stdout


@pytest.mark.parametrize("path, expect", [
    ("data/external/nope.csv", ["data.csv_path", "file not found", "nope.csv"]),
    ("elsewhere.csv", ["data.csv_path must be inside data/external/", "elsewhere.csv"])])
def test_a_wrong_csv_path_through_dvc_names_the_key(repo, path, expect):
    """DVC checks a stage's deps before it runs it: with the folder as the dependency, the
    stage itself tells what is wrong with data.csv_path."""
    proj = repo.proj
    if path == "elsewhere.csv":
        (proj.path / path).write_text("value\n1\n2\n")
    proj.update_params({"data.kind": "csv", "data.csv_path": path})
    res = proj.run(["dvc", "repro"], timeout=300)
    assert res.returncode != 0
    assert "Traceback" not in res.stderr and "No such file" not in res.stderr, res.stderr
    line = next(ln for ln in res.stderr.splitlines() if ln.startswith("error: "))
    for text in expect:
        assert text in line, line


def test_figures_of_two_commits_compare_on_a_fresh_clone(repo, tmp_path):
    proj = repo.proj
    figures = sorted(p.name for p in (proj.path / "reports/figures").glob("*.png"))
    tracked = proj.run(["git", "ls-files", "reports/figures"], check=True).stdout.split()
    assert figures and tracked == [f"reports/figures/{f}" for f in figures]
    proj.update_params({"train.lr": 0.02})
    proj.run(["dvc", "repro"], timeout=300, check=True)
    proj.git_commit("another learning rate")
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(proj.path), str(clone)], check=True)
    fresh = Project(clone, proj.base_params)
    res = fresh.run(["dvc", "plots", "diff", "HEAD~1", "HEAD"], timeout=120, check=True)
    html = (clone / "dvc_plots" / "index.html").read_text()
    assert "failed to load" not in res.stderr, res.stderr
    for rev in ("HEAD~1", "HEAD"):
        for name in figures:
            assert f"{rev}_reports_figures_{name}" in html, (rev, name)
