"""End-to-end, on a git clone of the project: the competition pipeline (competitions/dvc.yaml,
a DVC project of its own: its commands run in competitions/) is up to date as committed (its
lock, its forecasts and its leaderboard), the default pipeline's commands never see it, and
the real ``dvc status`` reruns only what an edit touches: a model setting never refits the
field, an edit of evaluation/ or report/ never refits the baselines (main pipeline) nor the
field, an edit of the training code never refits the competition's field."""
from __future__ import annotations

import json
import subprocess

import pytest

from conftest import ROOT, Project


@pytest.fixture(scope="module")
def clone(tmp_path_factory):
    """A git clone of the committed project (what CI and a new user start from)."""
    path = tmp_path_factory.mktemp("competition") / "clone"
    subprocess.run(["git", "clone", "-q", str(ROOT), str(path)], check=True)
    return Project(path, {})


def _changed(proj, target: str) -> dict[str, list[str]]:
    """``dvc status`` of ``target`` (competitions/...: run in that DVC project): each stage
    whose dependencies changed, and which."""
    where = proj.path / "competitions" if target.startswith("competitions/") else proj.path
    res = proj.run(["dvc", "status", target.removeprefix("competitions/"), "--json"],
                   timeout=180, cwd=where)
    assert res.returncode == 0, res.stderr
    out = {}
    for stage, entries in json.loads(res.stdout or "{}").items():
        for entry in entries:
            if isinstance(entry, dict) and "changed deps" in entry:
                out[stage.split(":")[-1]] = sorted(entry["changed deps"])
    return out


def _edit(proj, rel: str, text: str = "\n# an edit\n") -> None:
    with open(proj.path / rel, "a") as fh:
        fh.write(text)


def _restore(proj) -> None:
    proj.run(["git", "checkout", "-q", "--", "."], check=True)


def test_the_committed_competition_pipeline_is_up_to_date(clone):
    res = clone.run(["dvc", "status", "--json"], timeout=180, cwd=clone.path / "competitions")
    assert res.returncode == 0 and json.loads(res.stdout or "{}") == {}, res.stdout
    # the default pipeline's commands never read the competition's pipelines
    top = clone.run(["dvc", "stage", "list", "--all"], timeout=180, check=True).stdout
    assert "field@" not in top and "leaderboard" not in top and "trial" not in top, top
    board = json.loads((clone.path / "competitions/m3/leaderboard.json").read_text())
    assert {"yearly", "quarterly", "monthly", "other", "all"} <= set(board)
    assert set(board["all"]["model"]) >= {"smape", "smape_series", "mase", "owa"}


@pytest.mark.parametrize("old, new, stage", [
    ("lr: 0.001", "lr: 0.002", "model@{}"),                  # a model setting: never the field
    ("nf_patchtst: {max_steps: 1000", "nf_patchtst: {max_steps: 999",
     "peers@{}-nf_patchtst"),
], ids=["model", "peer"])
def test_one_forecasters_setting_reruns_its_four_stages_and_the_leaderboard_only(
        clone, old, new, stage):
    try:
        text = (clone.path / "competitions/params.yaml").read_text()
        assert old in text
        (clone.path / "competitions/params.yaml").write_text(text.replace(old, new, 1))
        changed = _changed(clone, "competitions/dvc.yaml")
        mine = {stage.format(s) for s in ("yearly", "quarterly", "monthly", "other")}
        assert set(changed) == mine | {"leaderboard"}, changed
    finally:
        _restore(clone)


def test_a_search_setting_reruns_the_peers_searches_only(clone):
    """peer_search (its trials) reruns the searches, never a peer's stage: what a search
    chose reaches them only through peers.<peer>, by hand."""
    try:
        text = (clone.path / "competitions/params.yaml").read_text()
        assert "  trials: 20" in text
        (clone.path / "competitions/params.yaml").write_text(
            text.replace("  trials: 20", "  trials: 21", 1))
        changed = _changed(clone, "competitions/dvc.yaml")
        # (the leaderboard reads the whole file: its notes name what each stage ran)
        assert set(changed) == {"peer_search@monthly-nf_nbeats", "leaderboard"}, changed
    finally:
        _restore(clone)


def test_an_edit_of_evaluation_or_report_never_refits_a_baseline(clone):
    """An edit of the scores (not of the calibration each competition stage runs itself)."""
    try:
        _edit(clone, "src/attn_forecast/evaluation/metrics.py")
        _edit(clone, "src/attn_forecast/report/plots.py")
        # (a clone has no DVC cache: a stage's cached inputs read as changed; only the code
        # counts here)
        main = {s: [d for d in deps if d.startswith("src/")]
                for s, deps in _changed(clone, "dvc.yaml").items()}
        assert not main.get("baselines") and not main.get("train"), main
        assert main.get("evaluate") and main.get("render"), main
        # (the searches score by sMAPE too: rerun, each finds its study done and trains none)
        assert set(_changed(clone, "competitions/dvc.yaml")) - {
            "peer_search@monthly-nf_nbeats"} == {"leaderboard"}
    finally:
        _restore(clone)


def test_an_edit_of_the_training_code_never_refits_the_competitions_field(clone):
    try:
        _edit(clone, "src/attn_forecast/training/loop.py")
        changed = _changed(clone, "competitions/dvc.yaml")
        assert not [s for s in changed if s.startswith("field@")], changed
        assert "model@monthly" in changed
    finally:
        _restore(clone)


def test_the_documented_commands_show_how_m3_moved_between_two_commits(clone):
    """docs/many-series.md: `dvc metrics diff A B --targets m3/leaderboard.json --md` (in
    competitions/) shows the figures that moved between two commits, a row each (not one row of
    hundreds of columns), and nothing for the ones that did not."""
    path = clone.path / "competitions/m3/leaderboard.json"
    board = json.loads(path.read_text())
    try:
        board["monthly"]["model"]["smape"] = round(board["monthly"]["model"]["smape"] + 1, 4)
        path.write_text(json.dumps(board, indent=2))
        clone.run(["git", "commit", "-qam", "moved"], check=True)
        res = clone.run(["dvc", "metrics", "diff", "HEAD~1", "HEAD", "--targets",
                         "m3/leaderboard.json", "--md"], timeout=120,
                        cwd=clone.path / "competitions")
        assert res.returncode == 0, res.stderr
        rows = [ln for ln in res.stdout.splitlines() if ln.startswith("| m3/leaderboard")]
        assert len(rows) == 1 and "monthly.model.smape" in rows[0], res.stdout
        assert (clone.path / "competitions/m3/leaderboard.md").read_text().count("\n") > 20
    finally:
        clone.run(["git", "reset", "-q", "--hard", "HEAD~1"], check=True)


def test_a_misspelt_section_added_by_an_experiment_is_refused_not_ignored(clone):
    """`-S 'params.yaml:+montly=...'` (in competitions/) adds a section no fitting stage reads: the
    leaderboard tracks the whole file, so it reruns and its check refuses the key in one line
    (before, the experiment succeeded and changed nothing)."""
    try:
        res = clone.run(["dvc", "exp", "run", "-S",
                         "params.yaml:+montly={train: {ensemble: 1}}"],
                        timeout=600, cwd=clone.path / "competitions")
        assert res.returncode != 0, res.stdout[-2000:]
        assert ("unknown key 'montly'; allowed: competition, holdout, peers, peer_search, "
                "all, yearly") in \
            res.stdout + res.stderr, (res.stdout + res.stderr)[-3000:]
        assert "Traceback" not in res.stdout + res.stderr
    finally:
        _restore(clone)
