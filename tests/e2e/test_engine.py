"""End-to-end: the many-series work on a Dask cluster (engine.py). The baselines stage of a
panel with ``evaluate.engine: dask`` (a cluster embedded in the stage: no cluster runs
outside the test) writes the forecasts, intervals and fallbacks of ``local`` to the last bit;
a worker killed in the middle of a run costs its tasks a retry on another worker, never a
missing series."""
from __future__ import annotations

import os
import signal
from pathlib import Path

import numpy as np
import pytest

from attn_forecast.engine import Engine

PANEL = {"data.kind": "panel", "data.n_series": 8, "data.n_points": 100,
         "data.panel_min_points": 50, "prepare.window": 12, "prepare.horizon": 3,
         "evaluate.season": 12, "prepare.cal_frac": 0.1,
         "evaluate.baselines": ["naive", "seasonal_naive", "naive2", "ets", "theta", "comb"]}


def _forecasts(path: Path) -> dict[str, np.ndarray]:
    from attn_forecast.forecasters.saved import load
    fs = load(path)
    out = {}
    for name, parts in fs.forecasts.items():
        for part, fc in parts.items():
            if fc is not None:
                out[f"{name}:{part}:point"] = fc.point
                out[f"{name}:{part}:quantiles"] = fc.quantiles
    return out


def test_the_field_on_an_embedded_dask_cluster_is_the_local_one(project_factory):
    proj = project_factory("engine", PANEL, git=False)
    for stage in ("generate", "prepare", "baselines"):
        res = proj.stage(stage, timeout=300)
        assert res.returncode == 0, res.stderr
    assert "ets" in res.stdout and "Dask" not in res.stdout     # local: the line as always
    local = _forecasts(proj.path / "data/baselines.npz")
    proj.update_params({"evaluate.engine": "dask"})
    res = proj.stage("baselines", timeout=300)
    assert res.returncode == 0, res.stderr
    assert "(the statistical models on a Dask cluster on this machine)" in res.stdout
    dask = _forecasts(proj.path / "data/baselines.npz")
    assert set(dask) == set(local) and any(k.startswith("ets:") for k in dask)
    for key, value in local.items():
        np.testing.assert_array_equal(dask[key], value, err_msg=key)


def _dies_once(args: tuple) -> int:
    """A task that kills its own worker the first time it runs (a marker file says so)."""
    marker, x = args
    if x == 3 and not os.path.exists(marker):
        Path(marker).write_text("died")
        os.kill(os.getpid(), signal.SIGKILL)
    return x * x


def test_a_worker_killed_mid_run_costs_a_retry_never_a_missing_result(tmp_path):
    marker = str(tmp_path / "died")
    with Engine("dask", jobs=2) as engine:
        got = engine.map(_dies_once, [(marker, x) for x in range(12)])
    assert Path(marker).read_text() == "died"          # a worker did die
    assert got == [x * x for x in range(12)]           # every task's result, in order


def _always_dies(x: int) -> int:
    """A task that ends the worker it runs on, every time (as a memory limit would)."""
    if x == 2:
        os.kill(os.getpid(), signal.SIGKILL)
    return x


def test_a_task_that_ends_every_worker_it_runs_on_is_one_line():
    import time

    import dask

    from attn_forecast.engine import EngineError
    t0 = time.perf_counter()
    # the scheduler (embedded, in this process) gives up on a task after one worker death
    with dask.config.set({"distributed.scheduler.allowed-failures": 0}):
        with Engine("dask", jobs=2) as engine:
            with pytest.raises(EngineError) as info:
                engine.map(_always_dies, list(range(6)))
    msg = str(info.value)
    assert "\n" not in msg and "ended every Dask worker it ran on" in msg
    assert "this stage started" in msg and "KilledWorker: 1 workers, the last tcp:" in msg
    assert time.perf_counter() - t0 < 120


def test_an_address_without_a_scheduler_is_one_line():
    from attn_forecast.engine import EngineError, dask_client
    with pytest.raises(EngineError, match=r"cannot reach the Dask cluster at engine_address "
                                          r"tcp://127.0.0.1:9"):
        with dask_client("tcp://127.0.0.1:9"):
            pass


def test_a_stage_whose_cluster_cannot_be_reached_stops_with_one_line_naming_the_key(
        project_factory):
    proj = project_factory("engine-unreachable", {**PANEL, "evaluate.engine": "dask",
                                                  "evaluate.engine_address": "tcp://127.0.0.1:9"},
                           git=False)
    for stage in ("generate", "prepare"):
        res = proj.stage(stage)
        assert res.returncode == 0, res.stderr
    res = proj.stage("baselines", timeout=120)
    lines = res.stderr.strip().splitlines()
    assert res.returncode == 2 and len(lines) == 1, res.stderr
    assert lines[0].startswith("error: cannot reach the Dask cluster at "
                               "evaluate.engine_address tcp://127.0.0.1:9 ("), lines[0]
    assert not (proj.path / "data/baselines.npz").exists()


def test_a_cluster_without_a_worker_is_an_error_not_a_silent_wait(monkeypatch):
    from distributed import LocalCluster

    from attn_forecast import engine as engines
    monkeypatch.setattr(engines, "WORKER_WAIT", 1)
    with LocalCluster(n_workers=0, processes=False, dashboard_address=None) as cluster, \
            Engine("dask", address=cluster.scheduler_address) as engine:
        with pytest.raises(engines.EngineError, match=r"at engine_address \S+ has no "
                                                      r"worker yet \(waited 1 s\); start one"):
            engine.map(abs, [1, -2])


def test_a_cluster_that_loses_every_worker_mid_map_is_an_error_not_a_silent_wait(
        tmp_path, monkeypatch):
    # a task whose function the workers cannot import (its module is on this process's path
    # only, put there after the workers started): each worker that gets one closes, none
    # comes back (distributed 2026.8: a task that cannot be unpickled breaks the worker's
    # stream from the scheduler and the worker closes; its nanny does not restart it)
    from attn_forecast import engine as engines
    monkeypatch.setattr(engines, "WORKER_WAIT", 1)
    monkeypatch.setattr(engines, "POLL", 0.5)
    (tmp_path / "here_only.py").write_text("def square(x):\n    return x * x\n")
    with Engine("dask", jobs=2) as engine:
        assert engine.map(abs, [-1, 2]) == [1, 2]          # the cluster works
        monkeypatch.syspath_prepend(str(tmp_path))
        from here_only import square
        with pytest.raises(engines.EngineError, match=r"the Dask cluster this stage started on "
                                                      r"this machine lost every worker \(waited "
                                                      r"1 s\): its workers could not start"):
            engine.map(square, [1, 2, 3])


def _tasks_on_scheduler(x: int) -> int:
    """How many tasks the scheduler holds while this one runs (asked every tenth task)."""
    if x % 10:
        return 0
    from distributed import get_client
    return get_client().run_on_scheduler(lambda dask_scheduler: len(dask_scheduler.tasks))


def test_the_map_keeps_two_batches_a_worker_out_never_the_whole_map():
    # 200 tasks on 2 single-threaded workers: 200 batches of one task; sent all at once the
    # scheduler would hold up to 200 of them; sent as results come back, at most 2 a worker
    with Engine("dask", jobs=2) as engine:
        held = engine.map(_tasks_on_scheduler, list(range(200)))
    assert len(held) == 200 and max(held) >= 1
    assert max(held) <= 2 * 2 + 1, max(held)     # + 1: a finished batch released a beat late


def _fails_at(x: int) -> int:
    """A task that fails (an error, not a dead worker) at 5; the others take a moment."""
    if x == 5:
        raise ValueError("no fit for task 5")
    import time
    time.sleep(0.05)
    return x


def test_a_task_that_fails_stops_the_map_with_its_error_and_the_cluster_takes_the_next():
    with Engine("dask", jobs=2) as engine:
        with pytest.raises(ValueError, match="no fit for task 5"):
            engine.map(_fails_at, list(range(400)))
        # the cluster takes the next map
        assert engine.map(_fails_at, [1, 2]) == [1, 2]
