"""Shared fixtures for the end-to-end tests: a throw-away copy of the project in tmp_path.

The copy holds dvc.yaml, params.yaml (shrunk to a tiny config), stages/, src/ and the DVC config;
it is a fresh git repository with one commit, so ``dvc repro`` and ``dvc exp`` work in it. Every
command runs with the project's venv first on PATH, the copy's src/ on PYTHONPATH and DVC's
analytics and update checks off.
"""
from __future__ import annotations

import copy
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

os.environ["DVC_NO_ANALYTICS"] = "1"
os.environ["ITERATIVE_DO_NOT_TRACK"] = "1"

ROOT = Path(__file__).resolve().parents[1]
PKG = ROOT / "src" / "attn_forecast"
VENV_BIN = ROOT / ".venv" / "bin"
if not VENV_BIN.is_dir():  # a venv elsewhere: use the interpreter running the tests
    VENV_BIN = Path(sys.executable).parent

# The tiny config every e2e test starts from; tests add their own overrides on top.
TINY = {"data.n_points": 100, "train.epochs": 3, "backtest.folds": 0, "train.ensemble": 1}


def like_a_terminal() -> None:
    """In a child before it runs: Ctrl-C's signal at its default, as under a terminal. The
    test session may have been started in the background of a non-interactive shell, which
    starts its jobs with SIGINT ignored, and every process inherits that: a Ctrl-C test would
    then interrupt nothing."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def with_overrides(base: dict, overrides: list[str]) -> dict:
    """``base`` with `section.key=value` overrides (the value read as YAML, as `dvc exp run
    -S` reads it)."""
    p = copy.deepcopy(base)
    for item in overrides:
        key, _, raw = item.partition("=")
        set_key(p, key, yaml.safe_load(raw))
    return p


def exp_sets(settings: dict[str, Any]) -> list[str]:
    """``dvc exp run``'s -S arguments for ``settings`` (a list as JSON: [16,8])."""
    return [x for k, v in settings.items() for x in
            ("-S", f"{k}={json.dumps(v, separators=(',', ':')) if isinstance(v, list) else v}")]


def set_key(params: dict, dotted: str, value: Any) -> None:
    """``set_key(p, "train.lr", 0.01)`` sets p["train"]["lr"]; creates missing sections."""
    *parents, last = dotted.split(".")
    node = params
    for key in parents:
        node = node.setdefault(key, {})
    node[last] = value


def sha256(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


class Project:
    """A copy of the project and a way to run commands in it."""

    def __init__(self, path: Path, base_params: dict) -> None:
        self.path = path
        self.base_params = base_params
        self.env = dict(os.environ)
        self.env.update({
            "PATH": f"{VENV_BIN}{os.pathsep}{os.environ.get('PATH', '')}",
            "PYTHONPATH": str(path / "src"),
            "DVC_NO_ANALYTICS": "1",
            "ITERATIVE_DO_NOT_TRACK": "1",
            "MPLBACKEND": "Agg",
            "PYTHONDONTWRITEBYTECODE": "1",
            "GIT_TERMINAL_PROMPT": "0",
        })
        self.env.pop("VIRTUAL_ENV", None)
        # One intra-op thread per torch process: on a shared 2-core machine, two OpenMP threads
        # that spin against other load make training 10-20x slower.
        self.env.setdefault("OMP_NUM_THREADS", "1")
        self.env.setdefault("MKL_NUM_THREADS", "1")

    # ------------------------------------------------------------------ commands
    def run(self, cmd: str | list[str], timeout: float = 120, check: bool = False,
            cwd: Path | None = None) -> subprocess.CompletedProcess:
        """Run ``cmd`` (a shell string or an argv list) in the copy; output is captured."""
        res = subprocess.run(cmd, shell=isinstance(cmd, str), cwd=cwd or self.path,
                             env=self.env, capture_output=True, text=True, timeout=timeout,
                             stdin=subprocess.DEVNULL)
        if check and res.returncode != 0:
            raise AssertionError(f"{cmd!r} exited {res.returncode}\n--- stdout\n{res.stdout}"
                                 f"\n--- stderr\n{res.stderr}")
        return res

    def stage(self, name: str, timeout: float = 120) -> subprocess.CompletedProcess:
        """Run one stage's script directly, with the command line dvc.yaml gives it (the
        venv's python first on PATH), without DVC."""
        return self.run(stage_command(name), timeout=timeout)

    @staticmethod
    def stage_outs(name: str) -> list[str]:
        """Every path the stage writes according to dvc.yaml."""
        return stage_outs(name)

    def popen(self, cmd: list[str], stdout, **kw) -> subprocess.Popen:
        return subprocess.Popen(cmd, cwd=self.path, env=self.env, stdout=stdout,
                                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                preexec_fn=like_a_terminal, **kw)

    # ------------------------------------------------------------------ files
    def write_params(self, overrides: dict[str, Any] | None = None) -> dict:
        """Write params.yaml = the tiny config with ``overrides`` (dotted keys) on top."""
        params = copy.deepcopy(self.base_params)
        for key, value in (overrides or {}).items():
            set_key(params, key, value)
        (self.path / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
        return params

    def update_params(self, overrides: dict[str, Any]) -> dict:
        """Set dotted keys in the current params.yaml (keys not in the file are added)."""
        path = self.path / "params.yaml"
        params = yaml.safe_load(path.read_text())
        for key, value in overrides.items():
            set_key(params, key, value)
        path.write_text(yaml.safe_dump(params, sort_keys=False))
        return params

    def clone(self, dest: Path) -> "Project":
        """A file copy of this project at ``dest`` (git and DVC state included)."""
        shutil.copytree(self.path, dest, symlinks=True)
        return Project(dest, self.base_params)

    def read_json(self, rel: str) -> Any:
        return json.loads((self.path / rel).read_text())

    def hashes(self, rels: list[str]) -> dict[str, str]:
        """sha256 of each file; a folder contributes every file under it."""
        out = {}
        for rel in rels:
            p = self.path / rel
            files = sorted(f for f in p.rglob("*") if f.is_file()) if p.is_dir() else [p]
            for f in files:
                out[str(f.relative_to(self.path))] = sha256(f)
        return out

    def git_commit(self, message: str) -> None:
        self.run("git add -A && git commit -q -m " + json.dumps(message), check=True)


def dvc_spec(params: dict | None = None) -> dict:
    """The project's dvc.yaml with its ``vars`` (``${p.series}``) and the params it templates
    (``${data.csv_path}``, from ``params`` or the project's params.yaml) substituted."""
    spec = yaml.safe_load((ROOT / "dvc.yaml").read_text())
    names: dict[str, Any] = dict(params or yaml.safe_load((ROOT / "params.yaml").read_text()))
    for entry in spec.get("vars") or []:
        if isinstance(entry, dict):
            names.update(entry)

    def look(m: re.Match) -> str:
        node: Any = names
        for part in m.group(1).split("."):
            node = node[part]
        return str(node)

    def sub(node: Any) -> Any:
        if isinstance(node, str):
            return re.sub(r"\$\{\s*([\w.]+)\s*\}", look, node)
        if isinstance(node, list):
            return [sub(x) for x in node]
        if isinstance(node, dict):
            return {sub(k): sub(v) for k, v in node.items()}
        return node
    return sub(spec)


def pipeline_stages(prior: bool = False) -> list[str]:
    """The default pipeline's stages, in dvc.yaml's order (a new stage is in every test that
    lists them); the prior's (pretrain) only when asked: a copy takes the committed prior and
    its `dvc repro` never runs it."""
    return [s for s in yaml.safe_load((ROOT / "dvc.yaml").read_text())["stages"]
            if prior or s != "pretrain"]


def _paths(items) -> list[str]:
    out = []
    for item in items or []:
        out.extend(str(p).rstrip("/") for p in (item if isinstance(item, dict) else [item]))
    return out


def stage_command(name: str) -> str:
    """The stage's command line from dvc.yaml, e.g. ``python stages/prepare.py --series ...``."""
    return " ".join(str(dvc_spec()["stages"][name]["cmd"]).split())


def stage_outs(name: str) -> list[str]:
    """Every path the stage writes (outs, metrics, plots) according to dvc.yaml."""
    stage = dvc_spec()["stages"][name]
    return [p for kind in ("outs", "metrics", "plots") for p in _paths(stage.get(kind))]


def _source_deps() -> list[str]:
    """Dependencies in dvc.yaml that no stage writes (e.g. a folder of user CSVs): the copy
    needs them to exist."""
    stages = dvc_spec().get("stages") or {}
    deps = {d for st in stages.values() for d in _paths(st.get("deps"))}
    outs = {o for name in stages for o in stage_outs(name)}
    return sorted(d for d in deps - outs
                  if not d.startswith(("stages/", "src/")) and (ROOT / d).exists())


PRETRAIN_OUTS = ("models/pretrained.pt", "reports/pretrain/history.csv", "reports/pretrain.json")
COMPETITION_LINKS = ("src", "stages", "models")   # competitions/'s links to the project's


def competition_project(dest: Path) -> Path:
    """``dest``/competitions as the repository holds it: a DVC project of its own (`dvc init
    --subdir`: its .dvc config and .dvcignore) with its params and its links to the project's
    src, stages and models; returns the folder."""
    comp = dest / "competitions"
    (comp / ".dvc").mkdir(parents=True, exist_ok=True)
    for rel in (".dvc/config", ".dvc/.gitignore", ".dvcignore", "params.yaml"):
        shutil.copy2(ROOT / "competitions" / rel, comp / rel)
    for name in COMPETITION_LINKS:
        if not (comp / name).exists():
            os.symlink(Path("..") / name, comp / name)
    return comp


def copy_prior(dest: Path) -> None:
    """The committed prior and its dvc.lock entry, as a clone of the project has them: the
    copy's ``dvc repro`` finds the pretrain stage up to date and never pretrains."""
    lock = ROOT / "dvc.lock"
    entry = (yaml.safe_load(lock.read_text()) or {}).get("stages", {}).get("pretrain") \
        if lock.exists() else None
    if not entry or not all((ROOT / rel).exists() for rel in PRETRAIN_OUTS):
        return
    for rel in PRETRAIN_OUTS:
        (dest / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / rel, dest / rel)
    (dest / "dvc.lock").write_text(yaml.safe_dump({"schema": "2.0",
                                                   "stages": {"pretrain": entry}},
                                                  sort_keys=False))


def _make_project(dest: Path, overrides: dict[str, Any] | None = None,
                  git: bool = True) -> Project:
    dest.mkdir(parents=True, exist_ok=True)
    for name in ("dvc.yaml", "params.yaml", ".gitignore", ".dvcignore"):
        if (ROOT / name).exists():
            shutil.copy2(ROOT / name, dest / name)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info")
    for name in ("stages", "src", "tools", *_source_deps()):
        src = ROOT / name
        if src.is_dir():
            shutil.copytree(src, dest / name, ignore=ignore, dirs_exist_ok=True)
        elif src.is_file() and not (dest / name).exists():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / name)

    copy_prior(dest)
    real = yaml.safe_load((ROOT / "params.yaml").read_text())
    for key, value in {**TINY, **(overrides or {})}.items():
        set_key(real, key, value)
    proj = Project(dest, real)
    proj.write_params()

    if git:
        proj.run(["git", "init", "-q"], check=True)
        proj.run(["git", "config", "user.name", "e2e tests"], check=True)
        proj.run(["git", "config", "user.email", "e2e@example.invalid"], check=True)
        proj.run(["git", "config", "commit.gpgsign", "false"], check=True)
        # dvc init writes an empty .dvc/config, so the project's config goes in afterwards.
        proj.run(["dvc", "init", "-q"], check=True)
    (dest / ".dvc").mkdir(exist_ok=True)
    src_config = ROOT / ".dvc" / "config"
    config = src_config.read_text() if src_config.exists() else ""
    (dest / ".dvc" / "config").write_text(config)
    if (ROOT / ".dvc" / "plots").is_dir():  # the custom plot templates and page
        shutil.copytree(ROOT / ".dvc" / "plots", dest / ".dvc" / "plots", dirs_exist_ok=True)
    for page in (ROOT / ".dvc").glob("*.html"):
        shutil.copy2(page, dest / ".dvc" / page.name)
    if git and not ("analytics = false" in config and "check_update = false" in config):
        proj.run(["dvc", "config", "core.analytics", "false"], check=True)
        proj.run(["dvc", "config", "core.check_update", "false"], check=True)
    if git:
        proj.git_commit("tiny copy of the project")
    return proj


@pytest.fixture(scope="session")
def project_factory(tmp_path_factory):
    """``project_factory(name, overrides=None, git=True)`` -> a fresh :class:`Project`.

    Session-scoped so module-scoped fixtures can share one copy between several tests.
    """
    def make(name: str = "proj", overrides: dict[str, Any] | None = None,
             git: bool = True) -> Project:
        return _make_project(tmp_path_factory.mktemp(name) / "repo", overrides, git)
    return make


@pytest.fixture
def project(tmp_path) -> Project:
    """A fresh copy of the project (tiny params, git repo with one commit, DVC initialised)."""
    return _make_project(tmp_path / "repo")


@pytest.fixture(scope="module")
def one_torch_thread():
    """Torch on one thread for a module's in-process tests: on 2 shared cores, two threads
    oversubscribe and slow small models down many times."""
    import torch
    old = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(old)


# ---------------------------------------------------------------- no process outlives the tests
def processes_under(root: Path) -> list[int]:
    """Processes (not this one) whose working directory lies inside ``root``: what the tests
    started in their project copies, detached DVC queue workers included."""
    root_s, me, out = str(root), os.getpid(), []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == me:
            continue
        try:
            cwd = os.readlink(entry / "cwd")
        except OSError:  # gone, or not ours to read
            continue
        if cwd == root_s or cwd.startswith(root_s + os.sep):
            out.append(int(entry.name))
    return out


def kill_processes_under(root: Path, grace: float = 5.0) -> list[int]:
    """SIGTERM, then SIGKILL after ``grace`` seconds, every process working inside ``root``."""
    pids = processes_under(root)
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in pids:
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline and processes_under(root):
            time.sleep(0.1)
        pids = processes_under(root)
        if not pids:
            break
    return pids


def pytest_sessionfinish(session, exitstatus):
    """Also after Ctrl-C (pytest runs this hook on an interrupted session): stop any DVC queue
    worker or experiment still running in a project copy of this session."""
    factory = getattr(session.config, "_tmp_path_factory", None)
    if factory is None:
        return
    try:
        base = factory.getbasetemp()
    except OSError:
        return
    kill_processes_under(base)
