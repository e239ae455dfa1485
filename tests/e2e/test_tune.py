"""End-to-end: ``attn-forecast tune`` on a copy of the project, with the real Optuna and the
real ``dvc exp run``. Each test builds its own copy; the search runs the project's search
pipeline (competitions/tune/dvc.yaml) on M3's "other" subset with a tiny model and a few
optimizer steps, so a trial takes seconds.

- Two workers on one journal file finish one study: every trial is run once (none lost,
  none twice), each is a DVC experiment that ``dvc exp show`` lists with its sMAPE, the best
  is written as the trial params file and every trial to the table (trials.csv), and no
  Optuna warning is printed between trials.
- Ctrl-C to the search's process alone ends the trial's run (dvc and its stage): it leaves
  no experiment and no process, the trial is queued again, and the same command resumes the
  study to its size, with no experiment but its trials'.
- A bad search file (a key params.yaml does not know, a value it refuses), a bad --storage, a
  study resumed with another search space, or a pipeline git does not hold: one line, exit 2,
  no trial run, nothing written.
"""
from __future__ import annotations

import csv
import json
import os
import re
import shutil
import signal
import subprocess
import time

import optuna
import pytest
import yaml

from attn_forecast.search import space as search_space
from attn_forecast.search import storage as search_storage
from attn_forecast.search import study as search_study
from conftest import ROOT, Project, competition_project, kill_processes_under, processes_under

optuna.logging.set_verbosity(optuna.logging.WARNING)

SPACE = {"study": "e2e", "storage": "competitions/tune/study.journal", "trials": 4,
         "direction": "minimize", "pipeline": "competitions/tune/dvc.yaml",
         "params": "competitions/tune/params.yaml",
         "metric": {"file": "competitions/tune/score.json", "key": "smape"},
         "sampler": {"name": "random", "seed": 3}, "pruner": {"name": "none"},
         "best": "competitions/tune/best.yaml",
         "apply": "competitions/dvc.yaml@competitions/params.yaml:other",
         "space": {"train.lr": {"low": 0.0005, "high": 0.01, "log": True},
                   "model.d_model": {"choices": [8, 16]}}}
TRIAL = {"subset": "other", "prepare": {"window": 24},
         "model": {"d_model": 8, "ffn_dim": 16, "n_layers": 1, "lookbacks": []},
         "train": {"max_steps": 6, "batch_size": 128, "threads": 1}, "evaluate": {}}


@pytest.fixture
def searchable(project: Project) -> Project:
    """The project copy with the search pipeline, a tiny trial and a 4-trial search file,
    committed; the prior in DVC's cache, as a clone's `make repro` leaves it (a --temp
    experiment restores its deps from the cache)."""
    dest = competition_project(project.path)      # a DVC project of its own, as committed
    (dest / "tune").mkdir(parents=True)
    for name in ("dvc.yaml", ".gitignore"):
        shutil.copy2(ROOT / "competitions" / "tune" / name, dest / "tune" / name)
    (dest / "tune" / "params.yaml").write_text(yaml.safe_dump(TRIAL, sort_keys=False))
    (dest / "tune" / "space.yaml").write_text(yaml.safe_dump(SPACE, sort_keys=False))
    project.run(["dvc", "commit", "-f", "-q", "pretrain"], check=True)
    project.git_commit("the search pipeline")
    return project


def _tune(proj: Project, *args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    return proj.run(["attn-forecast", "tune", "--space", "competitions/tune/space.yaml",
                     *args], timeout=timeout)


def _study(proj: Project, url: str | None = None) -> optuna.Study:
    from optuna.storages.journal import JournalFileBackend, JournalStorage
    storage = url or JournalStorage(JournalFileBackend(
        str(proj.path / "competitions" / "tune" / "study.journal")))
    return optuna.load_study(study_name="e2e", storage=storage)


def _experiments(proj: Project) -> dict[str, float]:
    """Each experiment `dvc exp show` lists (in competitions/, the trials' DVC project), by
    name, with its sMAPE."""
    res = proj.run(["dvc", "exp", "show", "--json"], timeout=180, check=True,
                   cwd=proj.path / "competitions")
    out = {}
    for rev in json.loads(res.stdout):
        for exp in rev.get("experiments") or []:
            for e in exp.get("revs", []):
                data = e.get("data") or {}
                metrics = (data.get("metrics") or {}).get("tune/score.json", {})
                out[exp.get("name") or e.get("name")] = metrics.get("data", {}).get("smape")
    return out


@pytest.mark.parametrize("storage", ["journal", "sqlite"])
def test_two_workers_on_one_storage_finish_one_study(searchable, storage):
    """The second worker joins once the first has a trial under way, as a second terminal
    would; with a database (sqlite) the trials also send heartbeats."""
    proj = searchable
    url = [] if storage == "journal" else ["--storage", "sqlite:///competitions/tune/study.db"]
    logs = [open(proj.path / f"worker{i}.log", "w+") for i in (0, 1)]
    cmd = ["attn-forecast", "tune", "--space", "competitions/tune/space.yaml", *url]
    workers = [proj.popen(cmd, logs[0])]
    try:
        deadline = time.time() + 300
        while not (proj.path / "competitions/tune/logs/e2e-000.log").exists():
            assert workers[0].poll() is None and time.time() < deadline, \
                (proj.path / "worker0.log").read_text()
            time.sleep(0.2)
        workers.append(proj.popen(cmd, logs[1]))
        codes = [w.wait(timeout=900) for w in workers]
    finally:
        kill_processes_under(proj.path)
    text = [(proj.path / f"worker{i}.log").read_text() for i in (0, 1)]
    assert codes == [0, 0], text
    study = _study(proj, None if storage == "journal"
                   else f"sqlite:///{proj.path}/competitions/tune/study.db")
    done = [t for t in study.trials if t.state == optuna.trial.TrialState.COMPLETE]
    assert len(done) == 4, [(t.number, t.state) for t in study.trials]
    # no two trials drew the same settings (the joining worker's sampler is its own)
    assert len({tuple(sorted(t.params.items())) for t in done}) == 4, [t.params for t in done]
    lost = [t for t in study.trials if t.state != optuna.trial.TrialState.COMPLETE
            and not t.user_attrs.get("surplus")]
    assert not lost, lost
    # both workers took trials; each trial was run once, by one of them
    ran = [[ln for ln in t.splitlines() if ln.startswith("tune e2e: trial ")] for t in text]
    assert len(ran[0]) + len(ran[1]) == 4 and ran[0] and ran[1], text
    names = {t.user_attrs["experiment"] for t in done}
    assert len(names) == 4
    # each trial is an experiment dvc exp show lists, with the value the study holds
    shown = _experiments(proj)
    for t in done:
        assert shown[t.user_attrs["experiment"]] == pytest.approx(t.value, rel=1e-4)
    # the best one is written as the trial params file, and named with how to apply it
    best = min(done, key=lambda t: t.value)
    written = yaml.safe_load((proj.path / "competitions/tune/best.yaml").read_text())
    assert written["subset"] == "other"
    assert written["train"]["lr"] == best.params["train.lr"]
    assert written["model"]["d_model"] == best.params["model.d_model"]
    assert f"cd competitions && dvc exp apply {best.user_attrs['experiment']}" in "".join(text)
    # the table of every trial, beside the search file
    with open(proj.path / "competitions/tune/trials.csv") as fh:
        rows = {int(r["number"]): r for r in csv.DictReader(fh)}
    for t in done:
        assert rows[t.number]["state"] == "complete" and \
            float(rows[t.number]["value"]) == t.value, rows[t.number]
    # each line's (k/4) counts the study's finished trials, every worker's
    counts = sorted(int(c) for c in re.findall(r"\((\d)/4 done\)", "".join(text)))
    assert len(counts) == 4 and counts[-1] == 4, text
    # no Optuna warning between trials, in the workers or in the trials' runs
    logs = [f.read_text() for f in (proj.path / "competitions/tune/logs").iterdir()]
    assert not [t for t in text + logs if "Warning" in t], text + logs
    # the workspace is as committed: trials ran in temporary copies
    status = proj.run(["git", "status", "--porcelain", "--untracked-files=no"], check=True)
    assert status.stdout.strip() == "", status.stdout


def test_an_interrupted_search_keeps_its_trials_and_resumes(searchable):
    """Ctrl-C to the search's process alone (a terminal's reaches it alone too: a trial's run
    is in a process group of its own)."""
    proj = searchable
    SPACE3 = {**SPACE, "trials": 3}
    (proj.path / "competitions/tune/space.yaml").write_text(yaml.safe_dump(SPACE3))
    proj.git_commit("three trials")
    log = open(proj.path / "tune.log", "w+")
    proc = subprocess.Popen(["attn-forecast", "tune", "--space",
                             "competitions/tune/space.yaml"], cwd=proj.path, env=proj.env,
                            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                            start_new_session=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        deadline = time.time() + 600
        trial1 = proj.path / "competitions/tune/logs/e2e-001.log"
        while not (trial1.exists() and "Running stage" in trial1.read_text()):
            assert proc.poll() is None and time.time() < deadline, \
                (proj.path / "tune.log").read_text()
            time.sleep(0.2)                            # trial 1 under way: its stage runs
        os.kill(proc.pid, signal.SIGINT)
        rc = proc.wait(timeout=120)
        time.sleep(1)                                  # a killed process is gone soon after
        left = processes_under(proj.path)              # the trial's dvc and stage ended
    finally:
        kill_processes_under(proj.path)
    out = (proj.path / "tune.log").read_text()
    assert rc == 130, out
    assert not left, out
    assert "interrupted in trial 1: it is queued again; 1 finished trials are kept" in out
    assert "Traceback" not in out, out
    study = _study(proj)
    states = {t.number: t.state for t in study.trials}
    assert states[0] == optuna.trial.TrialState.COMPLETE
    assert states[1] == optuna.trial.TrialState.FAIL
    interrupted = study.trials[1].params
    assert set(_experiments(proj)) == {"e2e-000"}      # trial 1's run saved nothing
    with open(proj.path / "competitions/tune/trials.csv") as fh:
        assert [r["state"] for r in csv.DictReader(fh)] == ["complete", "fail", "waiting"]
    # the same command resumes: the interrupted trial's settings first, up to 3 finished
    res = _tune(proj)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "1 of 3 trials taken" in res.stdout
    study = _study(proj)
    done = [t for t in study.trials if t.state == optuna.trial.TrialState.COMPLETE]
    assert len(done) == 3 and done[0].number == 0
    assert done[1].params == interrupted
    # every experiment is a finished trial's: none of the interrupted run, none twice
    assert set(t.user_attrs["experiment"] for t in done) == set(_experiments(proj))


@pytest.mark.parametrize("edit, args, words", [
    ({"trials": 0}, [], "'trials' must be >= 1"),
    ({"space": {"lr": {"low": 1, "high": 2}}}, [], "a key must be <section>.<name>"),
    ({"pipeline": "competitions/tune/nope.yaml"}, [],
     "competitions/tune/nope.yaml does not exist"),
    ({"space": {"train.learning_rate": {"low": 0.001, "high": 0.01}}}, [],
     "space.train.learning_rate is not a params key: unknown key train.learning_rate"),
    ({"space": {"train.lr": {"low": -1, "high": 0.01}}}, [],
     "space.train.lr: its low -1.0 is refused: train.lr must be a number > 0"),
    ({"metric": {"file": "competitions/tune/scores.json", "key": "smape"}}, [],
     "metric.file competitions/tune/scores.json is not an output of competitions/tune/dvc.yaml"),
    ({}, ["--storage", "competitions"], "competitions is a folder; give the journal file"),
    ({}, ["--storage", "competitions/tune/dvc.yaml/study.journal"],
     "--storage: cannot create the journal file"),
])
def test_a_bad_search_file_is_one_line_and_runs_nothing(searchable, edit, args, words):
    proj = searchable
    (proj.path / "competitions/tune/space.yaml").write_text(yaml.safe_dump({**SPACE, **edit}))
    res = _tune(proj, *args, timeout=120)
    assert res.returncode == 2 and words in res.stderr, res.stderr
    assert res.stderr.count("\n") == 1 and "Traceback" not in res.stderr
    assert not (proj.path / "competitions/tune/study.journal").exists()
    assert not (proj.path / "competitions/tune/trials.csv").exists()


def test_a_study_resumed_with_another_search_space_is_refused(searchable):
    """The study holds a finished trial of its space; the search file now has another key:
    refused before any trial, the study, the table and the best untouched."""
    proj = searchable
    journal = proj.path / "competitions/tune/study.journal"
    space = search_space.read_space(proj.path / "competitions/tune/space.yaml")
    study = search_study.make_study(space, str(journal))
    with search_storage.quiet():
        trial = study.ask()
    search_space.suggest(trial, space.space)
    study.tell(trial, 12.0)
    (proj.path / "competitions/tune/best.yaml").write_text("subset: other\n")
    before = journal.read_bytes()
    wider = {**SPACE["space"], "model.n_layers": {"low": 1, "high": 2}}
    (proj.path / "competitions/tune/space.yaml").write_text(yaml.safe_dump(
        {**SPACE, "space": wider}))
    res = _tune(proj, timeout=120)
    assert res.returncode == 2, res.stdout + res.stderr
    assert (f"error: competitions/tune/space.yaml: study e2e in {journal} was run with another "
            "search (added model.n_layers); keep its space, or name a new study (study: e2e-2 "
            "in competitions/tune/space.yaml) or another storage (--storage)\n") == res.stderr
    assert journal.read_bytes() == before
    assert (proj.path / "competitions/tune/best.yaml").read_text() == "subset: other\n"
    assert not (proj.path / "competitions/tune/trials.csv").exists()


def test_a_pipeline_git_does_not_hold_is_refused_before_any_trial(searchable):
    proj = searchable
    proj.run(["git", "rm", "-q", "--cached", "competitions/tune/dvc.yaml"], check=True)
    proj.run(["git", "commit", "-q", "-m", "the pipeline left out of git"], check=True)
    res = _tune(proj, timeout=120)
    assert res.returncode == 2, res.stdout + res.stderr
    assert "competitions/tune/dvc.yaml is not in git" in res.stderr
    assert "git add competitions/tune/dvc.yaml" in res.stderr


def test_your_own_search_as_the_docs_say_leaves_dvc_status_clean(project):
    """docs/tuning.md, "Your own search": copy competitions/tune/quick to a folder, rename it in
    its files, set its params, `dvc repro` its pipeline, commit: `dvc status` is clean, a
    search runs its trials there, and after the commit that keeps its table the trials are
    listed by `dvc exp show -A`."""
    quick, mine = ROOT / "competitions" / "tune" / "quick", project.path / "competitions" / \
        "tune" / "mine"
    competition_project(project.path)
    mine.mkdir(parents=True)
    for f in ("dvc.yaml", "params.yaml", "space.yaml", ".gitignore"):
        (mine / f).write_text((quick / f).read_text().replace("tune/quick", "tune/mine")
                              .replace("quick", "mine"))
    (mine / "params.yaml").write_text(yaml.safe_dump(TRIAL, sort_keys=False))   # tiny trials
    space = yaml.safe_load((mine / "space.yaml").read_text())
    assert space["pipeline"] == "competitions/tune/mine/dvc.yaml"
    space.update(trials=2, sampler={"name": "random", "seed": 3}, pruner={"name": "none"},
                 space={"train.lr": {"low": 0.0005, "high": 0.01, "log": True}})
    (mine / "space.yaml").write_text(yaml.safe_dump(space, sort_keys=False))
    project.run(["dvc", "commit", "-f", "-q", "pretrain"], check=True)
    comp = project.path / "competitions"          # its own DVC project: its commands run there
    project.run(["dvc", "repro", "tune/mine/dvc.yaml"], timeout=300, check=True, cwd=comp)
    status = project.run(["dvc", "status", "tune/mine/dvc.yaml"], check=True, cwd=comp)
    assert "up to date" in status.stdout, status.stdout
    project.git_commit("search: mine")
    base = project.run(["git", "rev-parse", "--short", "HEAD"], check=True).stdout.strip()
    res = project.run(["attn-forecast", "tune", "--space", "competitions/tune/mine/space.yaml"],
                      timeout=600)
    assert res.returncode == 0, res.stderr
    assert (mine / "trials.csv").is_file() and (mine / "best.yaml").is_file()
    project.git_commit("search: mine, its trials")
    shown = project.run(["dvc", "exp", "show", "-A", "--json"], timeout=180, check=True,
                        cwd=comp).stdout
    names = {e.get("name") for rev in json.loads(shown) for e in rev.get("experiments") or []}
    assert {"m3-other-mine-000", "m3-other-mine-001"} <= names, names
    listed = project.run(["dvc", "exp", "list", "--rev", base, "--name-only"], check=True,
                         cwd=comp)
    assert set(listed.stdout.split()) == {"m3-other-mine-000", "m3-other-mine-001"}
    status = project.run(["dvc", "status", "tune/mine/dvc.yaml"], check=True, cwd=comp)
    assert "up to date" in status.stdout, status.stdout
