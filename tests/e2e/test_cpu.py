"""End-to-end: the train stage gives the same bytes whatever CPU code paths the machine
offers, and whatever thread count runs it (for models that train on one thread by default).

The pins of ``attn_forecast.cpu`` replace what the process environment asks for, so a run
told to use torch's generic kernels (``ATEN_CPU_CAPABILITY=default``, as on a CPU without AVX)
and one told to use AVX-512 (as on a newer CPU) must write identical checkpoints. Runs on
x86-64 CPUs with AVX2 and FMA; skipped elsewhere.

And Ctrl-C to a real process while a stage starts (its CPU code paths pinned, its imports under
way) is one line, not a traceback.
"""
from __future__ import annotations

import pytest

from attn_forecast.cpu import cpu_flags, pins
from conftest import sha256

X86_AVX2 = bool(pins())
# the default window and model, 300 points, enough epochs for kernel differences to show
CONFIG = {"data.n_points": 300, "train.epochs": 60}


@pytest.fixture(scope="module")
def prepared(project_factory):
    proj = project_factory("cpu", overrides=CONFIG, git=False)
    for stage in ("generate", "prepare"):
        res = proj.stage(stage)
        assert res.returncode == 0, res.stderr
    return proj


def _train(proj, env: dict, params: dict | None = None) -> str:
    if params:
        proj.update_params(params)
    old = dict(proj.env)
    proj.env.update(env)
    try:
        res = proj.stage("train")
    finally:
        proj.env = old
    assert res.returncode == 0, res.stderr
    return sha256(proj.path / "models" / "model.pt")


@pytest.mark.skipif(not X86_AVX2, reason="needs an x86-64 CPU with AVX2 and FMA")
def test_checkpoint_does_not_depend_on_the_kernels_the_cpu_offers(prepared):
    generic = _train(prepared, {"ATEN_CPU_CAPABILITY": "default"})
    widest = _train(prepared, {"ATEN_CPU_CAPABILITY": "avx512" if "avx512f" in cpu_flags()
                               else "avx2"})
    assert generic == widest
    # without the pins the same two runs differ: the test can see a difference
    native = {"ATTN_FORECAST_NATIVE_CPU": "1"}
    assert _train(prepared, {**native, "ATEN_CPU_CAPABILITY": "default"}) != generic


def test_checkpoint_does_not_depend_on_the_thread_count(prepared):
    one = _train(prepared, {}, {"train.threads": 1})
    two = _train(prepared, {}, {"train.threads": 2})
    assert one == two


def test_ctrl_c_while_a_stage_starts_is_one_line_not_a_traceback():
    """Ctrl-C while a stage still imports numpy and torch (after cpu.pin, before run_cli):
    one line, exit 130; once run_cli runs, Ctrl-C is Python's KeyboardInterrupt again."""
    import subprocess
    import sys
    starting = ("import attn_forecast.cpu as c, os, signal, time; c.pin(); "
                "os.kill(os.getpid(), signal.SIGINT); time.sleep(10)")
    res = subprocess.run([sys.executable, "-c", starting], capture_output=True, text=True,
                         timeout=60)
    assert res.returncode == 130
    assert res.stderr.strip() == "interrupted while starting; nothing written"
    working = ("import attn_forecast.cpu as c, os, signal, time; c.pin(); "
               "from attn_forecast.errors import run_cli; "
               "run_cli(lambda argv: os.kill(os.getpid(), signal.SIGINT) or time.sleep(10))")
    res = subprocess.run([sys.executable, "-c", working], capture_output=True, text=True,
                         timeout=60)
    assert res.returncode == 130
    assert res.stderr.strip() == "interrupted; nothing written"
