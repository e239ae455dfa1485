"""Unit tests for the engine's version check on a Dask cluster at an address (engine.py): the
real probe's answer, the check on fake workers' answers (one line naming the first worker that
differs, what differs and what to do), the probe sent by value (a worker without the project
answers "missing"), and real workers of a cluster on this machine passing it."""
from __future__ import annotations

import importlib.metadata
import platform
import sys

import cloudpickle
import pytest

import attn_forecast
from attn_forecast.engine import PROBE, Engine, EngineError, same_versions

ADDRESS = "tcp://10.0.0.5:8786"


def test_the_probe_answers_this_environments_versions():
    here = PROBE()
    assert here["numpy"] == importlib.metadata.version("numpy")
    assert here["statsforecast"] == importlib.metadata.version("statsforecast")
    assert here["python"] == platform.python_version()
    assert here["attn_forecast"].startswith(f"{attn_forecast.__version__} (source sha256 ")
    assert PROBE() == here                                   # the same files, the same answer


def test_workers_with_this_processes_versions_pass():
    here = PROBE()
    same_versions({"tcp://10.0.0.7:40001": dict(here), "tcp://10.0.0.6:40001": dict(here)},
                  here, ADDRESS)
    same_versions({}, here, ADDRESS)                        # (no worker: waited on elsewhere)


def test_the_first_worker_that_differs_is_named_in_one_line():
    here = PROBE()
    answers = {"tcp://10.0.0.9:40001": {**here, "numpy": "1.26.4"},
               "tcp://10.0.0.7:40001": dict(here),
               "tcp://10.0.0.8:40001": {**here, "statsforecast": "1.7.8", "numpy": "2.0.0"}}
    with pytest.raises(EngineError) as info:
        same_versions(answers, here, ADDRESS)
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith(f"the Dask worker tcp://10.0.0.8:40001 of the cluster at "
                              f"engine_address {ADDRESS} runs other versions than this process: "
                              f"numpy 2.0.0 (here {here['numpy']}), statsforecast 1.7.8 (here "
                              f"{here['statsforecast']}); ")
    assert "same commit" in message and "pip install -c constraints.txt -e ." in message
    # the params key by its name where a stage re-words it
    named = info.value.named({"engine_address": "evaluate.engine_address"})
    assert f"at evaluate.engine_address {ADDRESS}" in str(named)


def test_another_commit_of_the_project_differs_by_its_source_digest():
    here = PROBE()
    version = attn_forecast.__version__
    other = {**here, "attn_forecast": f"{version} (source sha256 000000000000)"}
    with pytest.raises(EngineError, match=rf"attn_forecast {version} \(source sha256 0{{12}}\)"
                                          rf" \(here {version} \(source sha256 [0-9a-f]{{12}}\)"):
        same_versions({"tcp://10.0.0.7:40001": other}, here, ADDRESS)


def test_a_worker_without_the_project_runs_the_probe_and_answers_missing(monkeypatch):
    """The probe travels by value: unpickled and run where attn_forecast cannot be imported,
    it says the project is missing (a by-reference pickle would fail to load there)."""
    payload = cloudpickle.dumps(PROBE)
    for name in [m for m in sys.modules if m.split(".")[0] == "attn_forecast"]:
        monkeypatch.setitem(sys.modules, name, None)          # import attn_forecast fails
    with pytest.raises(ImportError):
        import attn_forecast.engine  # noqa: F401
    answer = cloudpickle.loads(payload)()
    assert answer["attn_forecast"] == "missing"
    monkeypatch.undo()
    here = PROBE()
    assert answer == {**here, "attn_forecast": "missing"}
    with pytest.raises(EngineError, match=r"tcp://w:1 .*: attn_forecast missing \(here "):
        same_versions({"tcp://w:1": answer}, here, ADDRESS)


def test_the_workers_of_a_cluster_on_this_machine_pass_the_check(monkeypatch):
    """Real worker processes of this environment: an embedded cluster (not asked: its workers
    are this stage's own), and a cluster reached at its address, whose every worker is asked
    at each map and passes; both map as ``local`` does."""
    from distributed import LocalCluster

    from attn_forecast import engine as engines
    checked = []

    def spy(answers, here, address):
        checked.append((answers, address))
        same_versions(answers, here, address)
    monkeypatch.setattr(engines, "same_versions", spy)
    with Engine("dask", jobs=1) as engine:
        assert engine.map(abs, [-1, 2, -3]) == [1, 2, 3]
        assert list(engine.client.run(PROBE).values()) == [PROBE()]
    assert checked == []
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                      dashboard_address=None) as cluster, \
            Engine("dask", address=cluster.scheduler_address) as engine:
        cluster.wait_for_workers(2)
        assert engine.map(abs, [-4, 5]) == [4, 5]
        assert engine.map(abs, [-6]) == [6]
        workers = set(cluster.scheduler_info["workers"])
    assert len(checked) == 2 and all(a == cluster.scheduler_address for _, a in checked)
    assert all(set(answers) == workers and all(v == PROBE() for v in answers.values())
               for answers, _ in checked)
