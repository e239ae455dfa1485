"""End-to-end: attn_forecast.commands.tune with real processes (a stand-in `dvc` script, git,
Ctrl-C)."""
from __future__ import annotations

import csv
import os
import re
import signal
import subprocess
import sys
import textwrap
import time
import warnings
from pathlib import Path
from types import SimpleNamespace

import optuna
import pytest

from attn_forecast.errors import UserInputError
from attn_forecast.search import experiments as search_runs
from attn_forecast.search import space as search_space
from attn_forecast.search import storage as search_storage
from attn_forecast.search import study as search_study
from attn_forecast.commands import tune as tune_command
from unit.search.helpers import GOOD, _write

optuna.logging.set_verbosity(optuna.logging.WARNING)
Trial = optuna.trial.TrialState
pytestmark = pytest.mark.filterwarnings("ignore:Heartbeat of storage is supposed")


def test_a_dead_workers_journal_trial_is_run_again_once_its_heartbeat_is_old(tmp_path,
                                                                            monkeypatch):
    """A worker killed outright (SIGKILL) leaves its trial running in the journal. It counts as
    taken while its heartbeat is fresh; once 3 heartbeats old, the next worker fails it and
    queues its settings again, which it then runs."""
    journal = str(tmp_path / "study.journal")
    space = search_space.read_space(_write(tmp_path, {**GOOD, "storage": journal, "trials": 1}))
    dead = subprocess.run([sys.executable, "-c", textwrap.dedent(f"""
        import os, signal
        from attn_forecast.search import experiments as search_runs
        from attn_forecast.search import space as search_space
        from attn_forecast.search import storage as search_storage
        from attn_forecast.search import study as search_study
        from attn_forecast.commands import tune as tune_command
        space = search_space.read_space({str(tmp_path / 'space.yaml')!r})
        study = search_study.make_study(space, {journal!r})
        trial = study.ask()
        search_space.suggest(trial, space.space)
        study._storage.record_heartbeat(trial._trial_id)
        os.kill(os.getpid(), signal.SIGKILL)""")], capture_output=True, text=True)
    assert dead.returncode == -signal.SIGKILL, dead.stderr
    study = search_study.make_study(space, journal)
    assert [t.state for t in study.trials] == [Trial.RUNNING]
    with search_storage.quiet():
        optuna.storages.fail_stale_trials(study)
    assert search_study.count(study, *search_study.TAKEN) == 1   # fresh: a live worker's, maybe
    later = time.time() + 3 * search_storage.HEARTBEAT_S + 1
    monkeypatch.setattr(search_storage, "time", SimpleNamespace(time=lambda: later))
    root = _repo(tmp_path)
    _fake_dvc(monkeypatch, tmp_path)
    assert search_study.tune(space, root) == 1
    trials = optuna.load_study(study_name="s", storage=search_storage.open_storage(journal)).trials
    assert [t.state for t in trials] == [Trial.FAIL, Trial.COMPLETE]
    assert trials[1].params == trials[0].params


def _repo(tmp_path: Path) -> Path:
    """A git repository with one commit (a trial's experiments are of a commit)."""
    root = tmp_path / "repo"
    (root / "p").mkdir(parents=True)
    (root / "p" / "params.yaml").write_text("subset: other\n")
    (root / "p" / "dvc.yaml").write_text(
        "stages:\n  trial:\n    cmd: x\n    metrics: [{score.json: {cache: false}}]\n")
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}
    for cmd in (["git", "init", "-q"], ["git", "add", "."], ["git", "commit", "-qm", "x"]):
        subprocess.run(cmd, cwd=root, check=True, env=env)
    return root


def _fake_dvc(monkeypatch, tmp_path: Path, crash: str = "") -> None:
    """`dvc` stood in for by a script: the experiment named ``crash`` fails with a bug of its
    stage's; every other one is saved with sMAPE = its trial number."""
    fake = tmp_path / "fake_dvc.py"
    fake.write_text(textwrap.dedent(f"""
        import sys
        name = sys.argv[sys.argv.index("-n") + 1]
        print("Running stage 'trial':")
        if name == {crash!r}:
            print("Traceback (most recent call last):")
            print("RuntimeError: the stage's own bug")
            print("ERROR: failed to reproduce 'trial': exited with 1")
            sys.exit(1)"""))
    monkeypatch.setattr(search_runs, "DVC", [sys.executable, str(fake)])
    def metric(root, name, space, base):
        return {"smape": float(name.rsplit("-", 1)[1]), "pruned": False}
    for module in (search_runs, search_study):   # a trial's, and a settled one's
        monkeypatch.setattr(module, "experiment_metric", metric)


def test_the_loop_records_a_crash_and_goes_on_counts_every_workers_trials_and_writes_the_table(
        tmp_path, monkeypatch, capsys):
    """A study of 4 trials whose trial 0 another worker runs (alive); here trial 1 crashes
    inside `dvc exp run` (its reason kept, on the progress output and in the table), and the
    study goes on. Each line's (k/N) counts the study's finished trials, every worker's. The
    table lists every trial. No Optuna ExperimentalWarning on the way. The help names the
    command the trial ran."""
    root = _repo(tmp_path)
    space = search_space.read_space(_write(root, {**GOOD, "storage": str(tmp_path / "j.journal")}))
    space.path = Path("space.yaml")
    other = search_study.make_study(space, str(tmp_path / "j.journal")).ask()   # another worker's
    search_space.suggest(other, space.space)
    _fake_dvc(monkeypatch, tmp_path, crash="s-001")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert search_study.tune(space, root) == 3
    out = capsys.readouterr()
    assert not [w for w in caught if issubclass(w.category,
                                                optuna.exceptions.ExperimentalWarning)]
    assert "trial 1 failed: dvc exp run exited 1: RuntimeError: the stage's own bug" in out.err
    assert re.findall(r"trial (\d) \((\d)/4 done\)", out.out) == [("2", "1"), ("3", "2"),
                                                                 ("4", "3")]
    study = optuna.load_study(study_name="s", storage=search_storage.open_storage(
        str(tmp_path / "j.journal")))
    assert study.trials[1].state == Trial.FAIL
    assert study.trials[1].user_attrs["fail_reason"] == "RuntimeError: the stage's own bug"
    rows = list(csv.DictReader(open(root / "trials.csv")))
    assert [(r["number"], r["state"], r["experiment"]) for r in rows] == [
        ("0", "running", ""), ("1", "fail", "s-001"), ("2", "complete", "s-002"),
        ("3", "complete", "s-003"), ("4", "complete", "s-004")]
    assert rows[1]["note"] == "RuntimeError: the stage's own bug" and rows[2]["value"] == "2.0"
    assert float(rows[3]["train.lr"]) == study.trials[3].params["train.lr"]
    # the help's command is the one the trial ran
    with pytest.raises(SystemExit):
        tune_command.main(["--help"])
    shown = next(ln.strip() for ln in capsys.readouterr().out.splitlines() if "dvc exp" in ln)
    pattern = re.escape(shown).replace(re.escape("<value> ..."), r"\S+( -S \S+)*")
    ran = (root / "logs" / "s-002.log").read_text().splitlines()[0].removeprefix("$ ")
    assert re.fullmatch(re.sub(r"<[^>]+>", r"\\S+", pattern), ran), (shown, ran)


def test_ctrl_c_ends_the_trials_whole_process_group(tmp_path):
    """Like `dvc exp run`, the group's leader ignores Ctrl-C while its stage runs: the stage
    gets it (and stops), or, if it ignores it too, SIGKILL ends both after the grace time."""
    for stage_ignores in (False, True):
        pids = tmp_path / f"pids{stage_ignores}"
        stage = ("import signal, time; signal.signal(signal.SIGINT, signal.SIG_IGN)"
                 if stage_ignores else "import time") + "; time.sleep(60)"
        leader = textwrap.dedent(f"""
            import os, signal, subprocess, sys
            signal.signal(signal.SIGINT, signal.SIG_IGN)
            child = subprocess.Popen([sys.executable, "-c", {stage!r}])
            open({str(pids)!r}, "w").write(f"{{os.getpid()}} {{child.pid}}")
            sys.exit(child.wait())""")
        proc = subprocess.Popen([sys.executable, "-c", leader], start_new_session=True)
        while not (pids.exists() and pids.read_text()):
            time.sleep(0.05)
        time.sleep(0.3)
        search_runs.end_group(proc, grace=1.0)
        deadline = time.time() + 10                 # a killed process is gone soon after
        while time.time() < deadline and [p for p in map(int, pids.read_text().split())
                                          if _running(p)]:
            time.sleep(0.05)
        assert not [p for p in map(int, pids.read_text().split()) if _running(p)], stage_ignores


def _running(pid: int) -> bool:
    try:
        return "(zombie)" not in Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False


def test_the_search_files_outputs_are_checked_before_any_trial(tmp_path):
    root = _repo(tmp_path)
    (root / "f").write_text("")
    for change, words in (({"metric": {"file": "p/other.json", "key": "smape"}},
                           "metric.file p/other.json is not an output of p/dvc.yaml (its "
                           "outputs: p/score.json)"),
                          ({"best": "f/best.yaml"}, "best: cannot create f"),
                          ({"table": "p"}, "table: cannot write p (a folder"),
                          ({"table": "/proc/self/trials.csv"}, "table: cannot")):
        space = search_space.read_space(_write(root, {**GOOD, **change}))
        with pytest.raises(UserInputError) as err:
            search_runs.check_outputs(root, space)
        assert words in str(err.value) and "\n" not in str(err.value), change
    search_runs.check_outputs(root, search_space.read_space(_write(root, GOOD)))
