"""Import hygiene of the stage scripts: what each one pulls in when it is imported.

Each stage is imported as a module from its file (``importlib``, so ``main`` does not run) in a
fresh interpreter with the project's src/ on PYTHONPATH, and reports which heavy libraries
ended up in ``sys.modules``. Only the train stage imports torch (it costs seconds per stage:
the model's forecasts and attention weights are written by train, so evaluate and render
never need it; backtest_train imports it only when the backtest is on), no stage imports
scikit-learn at import time (the baselines stage uses it lazily, for the ridge baseline;
StatsForecast likewise, for ETS, Theta and ARIMA), and only render imports matplotlib.
Importing the package changes nothing in the environment: the stages pin the CPU code paths
themselves.
"""
from __future__ import annotations

import json
import os
import subprocess
from concurrent.futures import ThreadPoolExecutor

import pytest

from conftest import ROOT, VENV_BIN, pipeline_stages

STAGES = pipeline_stages()
# backtest_train imports torch only when the backtest is on
NO_TORCH = {"generate", "prepare", "baselines", "evaluate", "render", "backtest_train",
            "backtest_evaluate"}
HEAVY = ["torch", "sklearn", "matplotlib", "statsforecast"]

PROBE = """
import importlib.util, json, sys
path = sys.argv[1]
spec = importlib.util.spec_from_file_location("stage_under_test", path)
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
print(json.dumps({"main": callable(getattr(module, "main", None)),
                  "loaded": {name: name in sys.modules for name in %r}}))
""" % (HEAVY,)


def _probe(stage: str) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env.update({"PYTHONPATH": str(ROOT / "src"), "PYTHONDONTWRITEBYTECODE": "1",
                "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "MPLBACKEND": "Agg"})
    return subprocess.run([str(VENV_BIN / "python"), "-c", PROBE,
                           str(ROOT / "stages" / f"{stage}.py")],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=120,
                          stdin=subprocess.DEVNULL)


@pytest.fixture(scope="module")
def imported() -> dict[str, dict]:
    with ThreadPoolExecutor(max_workers=2) as pool:
        results = dict(zip(STAGES, pool.map(_probe, STAGES)))
    out = {}
    for stage, res in results.items():
        assert res.returncode == 0, f"importing stages/{stage}.py failed:\n{res.stderr}"
        lines = res.stdout.strip().splitlines()
        # importing must not run the stage: the probe's line is the only output
        assert len(lines) == 1, f"stages/{stage}.py printed on import:\n{res.stdout}"
        out[stage] = json.loads(lines[0])
    return out


@pytest.mark.parametrize("stage", STAGES)
def test_stage_imports_without_running(stage, imported):
    assert imported[stage]["main"], f"stages/{stage}.py has no main()"


@pytest.mark.parametrize("stage", sorted(NO_TORCH))
def test_stage_does_not_import_torch(stage, imported):
    assert not imported[stage]["loaded"]["torch"], f"stages/{stage}.py imports torch"


@pytest.mark.parametrize("stage", STAGES)
def test_stage_does_not_import_sklearn(stage, imported):
    assert not imported[stage]["loaded"]["sklearn"], f"stages/{stage}.py imports sklearn"


@pytest.mark.parametrize("stage", STAGES)
def test_no_stage_imports_statsforecast_before_it_is_asked_for(stage, imported):
    assert not imported[stage]["loaded"]["statsforecast"], stage


@pytest.mark.parametrize("stage", STAGES)
def test_only_render_imports_matplotlib(stage, imported):
    assert imported[stage]["loaded"]["matplotlib"] == (stage == "render"), imported[stage]


def test_the_train_stage_does_import_torch(imported):
    """The probe sees imports at all: the stage that trains does load torch."""
    assert imported["train"]["loaded"]["torch"]


def _fresh_python(code: str):
    """What ``code`` prints (JSON) in a fresh interpreter with src/ on its path and no CPU pin
    (nor the switch that skips them) in its environment."""
    unset = ("ATEN_CPU_CAPABILITY", "OPENBLAS_CORETYPE", "NPY_DISABLE_CPU_FEATURES",
             "ATTN_FORECAST_NATIVE_CPU")
    env = {k: v for k, v in os.environ.items() if k not in unset}
    env["PYTHONPATH"] = str(ROOT / "src")
    res = subprocess.run([str(VENV_BIN / "python"), "-c", code], env=env, capture_output=True,
                         text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout)


def test_importing_the_package_leaves_the_environment_alone():
    code = ("import os, json; before = dict(os.environ); import attn_forecast, "
            "attn_forecast.data.store_io, attn_forecast.evaluation.scoring; "
            "print(json.dumps(dict(os.environ) == before))")
    assert _fresh_python(code) is True


def test_the_launcher_pins_before_it_loads_numpy_or_torch():
    """`from attn_forecast import stage` (every stage's first project import) sets the pins
    this CPU takes and loads none of the libraries they must come before."""
    code = ("import json, os, sys; from attn_forecast import stage, cpu; "
            "print(json.dumps({'loaded': [m for m in ('numpy', 'torch', 'pandas') "
            "if m in sys.modules], 'pins': {k: os.environ.get(k) for k in cpu.pins()}}))")
    out = _fresh_python(code)
    assert out["loaded"] == []
    from attn_forecast.cpu import pins
    assert out["pins"] == pins()          # every pin this CPU takes is set ({} off x86-64)


def test_the_baselines_field_loads_torch_only_for_the_zero_shot_prior():
    """Running, not only imported: the field of the default baselines leaves torch unloaded
    (a second or more of every baselines stage); naming the prior's zero-shot loads it."""
    code = ("import json, sys; from attn_forecast.config.load import parse_params; "
            "from attn_forecast.pipeline.baselines import field_of; out = []\n"
            "for names in (['naive', 'ets', 'theta', 'ridge'], ['naive', 'zeroshot']):\n"
            "    chosen, _ = field_of(parse_params({'evaluate': {'baselines': names, "
            "'blend': [], 'season': 12}}), 12, False, 'models/pretrained.pt', jobs=1)\n"
            "    out.append([[f.name for f in chosen], 'torch' in sys.modules])\n"
            "print(json.dumps(out))")
    assert _fresh_python(code) == [[["naive", "ets", "theta", "ridge"], False],
                                   [["naive", "zeroshot"], True]]
