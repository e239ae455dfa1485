"""End-to-end: an interrupted test run leaves no DVC process behind.

An inner pytest session (this suite's own fixtures and hooks) queues a long experiment in a
project copy and starts the real ``dvc queue`` worker, a detached daemon; the inner session is
then interrupted with SIGINT sent to pytest alone. Afterwards no process may be
left working inside the inner session's temporary folder. The inner session runs under
pytest-xdist, as `make test` runs the end-to-end tests (a worker process holds the project).
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

from conftest import ROOT, VENV_BIN, kill_processes_under, like_a_terminal, processes_under

INNER_TEST = """
import subprocess
import time


def test_hangs_with_a_queue_worker(project):
    project.run(["dvc", "exp", "run", "--queue", "-S", "train.epochs=100000"], check=True)
    subprocess.run(["dvc", "queue", "start"], cwd=project.path, env=project.env,
                   stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL, check=True, timeout=60)
    time.sleep(600)
"""


def _worker_running(base) -> bool:
    for pid in processes_under(base):
        try:
            cmd = open(f"/proc/{pid}/cmdline", "rb").read().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if "exec-run" in cmd:  # the worker runs the experiment
            return True
    return False


def test_interrupted_session_stops_queue_workers(tmp_path):
    inner = tmp_path / "inner"
    inner.mkdir()
    (inner / "conftest.py").write_text(textwrap.dedent(f"""
        import importlib.util, sys
        spec = importlib.util.spec_from_file_location("suite_conftest",
                                                      {str(ROOT / "tests" / "conftest.py")!r})
        suite = importlib.util.module_from_spec(spec)
        sys.modules["suite_conftest"] = suite
        spec.loader.exec_module(suite)
        project = suite.project                            # the fixture
        pytest_sessionfinish = suite.pytest_sessionfinish  # the clean-up hook
    """))
    (inner / "test_hang.py").write_text(INNER_TEST)
    base = tmp_path / "base"
    env = {**os.environ, "PATH": f"{VENV_BIN}{os.pathsep}{os.environ.get('PATH', '')}",
           "PYTHONPATH": str(ROOT / "src")}
    proc = subprocess.Popen(
        [str(VENV_BIN / "python"), "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "1",
         f"--basetemp={base}", str(inner)],
        cwd=inner, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, text=True, start_new_session=True,
        preexec_fn=like_a_terminal)
    try:
        deadline = time.monotonic() + 120
        while not _worker_running(base):
            assert proc.poll() is None, f"inner session ended early:\n{proc.stdout.read()}"
            assert time.monotonic() < deadline, "the queue worker never started"
            time.sleep(0.5)
        # SIGINT to pytest alone (as from `timeout -s INT` or a CI runner; a terminal's Ctrl-C
        # also reaches the worker, which shares the process group, and stops it by itself)
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=120)
        time.sleep(1)
        left = processes_under(base)
        assert not left, f"processes left after the interrupt: {left}\n{out}"
        assert "KeyboardInterrupt" in out or "Interrupted" in out or "interrupted" in out, out
    finally:
        if proc.poll() is None:
            proc.kill()
        kill_processes_under(base)  # never leave our own test's processes behind
        sys.stdout.flush()
