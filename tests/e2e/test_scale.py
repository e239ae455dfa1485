"""End-to-end: the train stage's scale settings, run as the real script on a tiny prepared set.

generate and prepare run once (no DVC) in a copy of the project; then stages/train.py runs with
several params files side by side (``--params``), each writing to its own folder under runs/:
multi-process DistributedDataParallel (``train.nproc: 2``, gloo on CPU) against one process,
bf16 autocast on CPU, torch.compile, and mini-batches with validation and early stopping.
The runs go two at a time (the machine has two cores); the tests only look at the results.
"""
from __future__ import annotations

import importlib.util
import math
import shutil
from concurrent.futures import ThreadPoolExecutor
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
import torch
import yaml

from conftest import set_key

# 114 points, window 10, horizon 1, test_frac 0.2, no calibration part: targets 0..90 train,
# so 81 train windows (ends 10..90). 81 is odd on purpose: two ranks get 41 and 40 windows,
# and a mini-batch of 16 leaves a last batch of 1.
BASE = {"data.n_points": 114, "prepare.window": 10, "prepare.cal_frac": 0,
        "evaluate.conformal": "none", "train.epochs": 5,
        # no input noise: it draws from a per-rank generator, so with it one process and two
        # would see different inputs and their losses could not be compared
        "train.augment_noise": 0.0, "train.batch_size": 0, "train.device": "cpu"}
N_TRAIN = 81
VAL = {"prepare.val_frac": 0.2}

RUNS = {  # name -> (params overrides, prepared folder)
    "single": ({"train.nproc": 1}, "data/prepared"),
    "ddp": ({"train.nproc": 2}, "data/prepared"),
    "bf16": ({"train.precision": "bf16"}, "data/prepared"),
    "patience": ({**VAL, "train.patience": 2, "train.batch_size": 16, "train.epochs": 50},
                 "data/prepared_val"),
    "ddp_minibatch": ({"train.nproc": 2, "train.batch_size": 16}, "data/prepared"),
}


def _write_params(proj, rel: str, overrides: dict) -> str:
    params = yaml.safe_load((proj.path / "params.yaml").read_text())
    for key, value in overrides.items():
        set_key(params, key, value)
    (proj.path / rel).parent.mkdir(parents=True, exist_ok=True)
    (proj.path / rel).write_text(yaml.safe_dump(params, sort_keys=False))
    return rel


def _train(proj, name: str, overrides: dict, prepared: str, timeout: float = 180):
    run_dir = f"runs/{name}"
    params = _write_params(proj, f"{run_dir}/params.yaml", overrides)
    res = proj.run(["python", "stages/train.py", "--params", params, "--prepared", prepared,
                    "--model", f"{run_dir}/model.pt", "--onnx", f"{run_dir}/model.onnx",
                    "--onnx-meta", f"{run_dir}/model.json", "--history", f"{run_dir}/history.csv",
                    "--forecasts", f"{run_dir}/fc.npz", "--attention", f"{run_dir}/att.npz",
                    "--lags", f"{run_dir}/lags.csv"], timeout=timeout)
    return SimpleNamespace(name=name, res=res, dir=proj.path / run_dir)


@pytest.fixture(scope="module")
def scale(project_factory):
    """A copy with the tiny series generated and prepared twice: without and with a
    validation part."""
    proj = project_factory("scale", overrides=BASE, git=False)
    for cmd in (["python", "stages/generate.py", "--inputs", "data/external",
                 "--out", "data/raw/series.csv"],
                ["python", "stages/prepare.py", "--series", "data/raw/series.csv",
                 "--out", "data/prepared"],
                ["python", "stages/prepare.py", "--params",
                 _write_params(proj, "runs/prepare-val.yaml", VAL),
                 "--series", "data/raw/series.csv", "--out", "data/prepared_val"]):
        proj.run(cmd, check=True)
    meta = proj.read_json("data/prepared/store.json")
    assert meta["n_windows"]["train"] == N_TRAIN, meta
    return proj


@pytest.fixture(scope="module")
def runs(scale):
    with ThreadPoolExecutor(max_workers=2) as pool:
        futures = {name: pool.submit(_train, scale, name, over, prepared)
                   for name, (over, prepared) in RUNS.items()}
        return {name: f.result() for name, f in futures.items()}


def _ok(run) -> pd.DataFrame:
    """The run's history, after checking that it exited 0 and wrote a loadable checkpoint."""
    res = run.res
    assert res.returncode == 0, (f"{run.name}: exit {res.returncode}\n--- stdout\n{res.stdout}"
                                 f"\n--- stderr\n{res.stderr}")
    payload = torch.load(run.dir / "model.pt", map_location="cpu", weights_only=True)
    keys = list(payload["state_dict"])
    assert keys and not any(k.startswith(("module.", "_orig_mod.")) for k in keys), keys[:3]
    assert not list(run.dir.glob("*.tmp"))
    return pd.read_csv(run.dir / "history.csv")


def _rel(a, b) -> np.ndarray:
    a, b = np.asarray(a, float), np.asarray(b, float)
    return np.abs(a - b) / np.abs(b)


# ---------------------------------------------------------------- several processes
def test_ddp_two_processes_trains_and_writes_outputs(runs):
    hist = _ok(runs["ddp"])
    assert "x 2 processes" in runs["ddp"].res.stdout, runs["ddp"].res.stdout
    assert runs["ddp"].res.stdout.count("train: ") == 1  # rank 0 alone reports and writes
    assert list(hist.columns) == ["epoch", "train_loss", "val_loss", "lr"]
    assert hist["epoch"].tolist() == [1, 2, 3, 4, 5]
    assert np.isfinite(hist["train_loss"]).all()


def test_ddp_first_epoch_loss_matches_one_process(runs):
    """Epoch 1 is computed with the initial weights, which are the same (same seed, and DDP
    broadcasts rank 0's); each rank takes every 2nd window of the same full batch and the
    logged loss is the sum over ranks / N, i.e. the mean over all windows: equal to rounding."""
    one, two = _ok(runs["single"]), _ok(runs["ddp"])
    assert _rel(two["train_loss"][0], one["train_loss"][0]) < 1e-5, (one, two)
    # Later epochs follow the updates; each rank's loss is weighted by its share of the batch
    # (41 and 40 of 81 windows), so the averaged gradient is the whole batch's.
    assert (_rel(two["train_loss"], one["train_loss"]) < 1e-3).all(), (one, two)


def _full_history(run) -> np.ndarray:
    """The loss history at full precision, from the checkpoint (the CSV has 6 digits)."""
    payload = torch.load(run.dir / "model.pt", map_location="cpu", weights_only=True)
    return np.array([h["train_loss"] for h in payload["history"]])


def test_ddp_history_matches_one_process_to_rounding_with_uneven_shards(runs):
    one, two = _full_history(runs["single"]), _full_history(runs["ddp"])
    assert len(one) == len(two) == 5
    assert (_rel(two, one) < 1e-6).all(), (one, two)
    np.testing.assert_allclose(_ok(runs["single"])["train_loss"], one, rtol=5e-6)  # 6 digits


def test_ddp_minibatch_with_a_one_window_last_batch(runs):
    hist = _ok(runs["ddp_minibatch"])
    assert len(hist) == 5 and np.isfinite(hist["train_loss"]).all()


# ---------------------------------------------------------------- precision and compile
def test_bf16_autocast_on_cpu(runs):
    hist = _ok(runs["bf16"])
    fp32 = _ok(runs["single"])
    assert hist["epoch"].tolist() == [1, 2, 3, 4, 5]
    assert np.isfinite(hist["train_loss"]).all() and (hist["train_loss"] > 0).all()
    # Same initial weights; bf16 keeps ~3 significant digits in the forward pass only.
    assert _rel(hist["train_loss"][0], fp32["train_loss"][0]) < 0.05
    assert hist["train_loss"][0] != fp32["train_loss"][0]  # not silently fp32


def _stage_in_process(proj, name: str):
    spec = importlib.util.spec_from_file_location(f"train_stage_{name}",
                                                  proj.path / "stages" / "train.py")
    stage = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(stage)
    return stage


@pytest.mark.parametrize("precision, expect_bf16", [("bf16", True), ("fp32", False)])
def test_bf16_autocast_reaches_the_forward_pass(scale, monkeypatch, precision, expect_bf16):
    """The train stage, in this process, with a spy on every Linear layer of the model it
    builds: under bf16 the layers compute in bfloat16 (autocast took effect), under fp32 not."""
    from attn_forecast.model.networks import build_model
    stage = _stage_in_process(scale, precision)
    seen = set()
    real_build = build_model

    def spy_build(settings, *args):
        model = real_build(settings, *args)
        for layer in model.modules():
            if isinstance(layer, torch.nn.Linear):
                layer.register_forward_hook(lambda mod, inp, out: seen.add(out.dtype))
        return model
    from attn_forecast.training import members     # where a member's network is built
    monkeypatch.setattr(members, "build_model", spy_build)
    run_dir = scale.path / "runs" / f"spy-{precision}"
    params = _write_params(scale, f"runs/spy-{precision}/params.yaml",
                           {"train.precision": precision, "train.epochs": 1})
    old = torch.get_num_threads()
    try:
        stage.main(["--params", str(scale.path / params), "--prepared",
                    str(scale.path / "data/prepared"), "--model", str(run_dir / "model.pt"),
                    "--onnx", str(run_dir / "model.onnx"), "--onnx-meta",
                    str(run_dir / "model.json"),
                    "--history", str(run_dir / "history.csv"), "--forecasts",
                    str(run_dir / "fc.npz"), "--attention", str(run_dir / "att.npz"), "--lags",
                    str(run_dir / "lags.csv")])
    finally:
        torch.set_num_threads(old)
    assert (torch.bfloat16 in seen) == expect_bf16, seen


@pytest.mark.skipif(not any(shutil.which(c) for c in ("cc", "gcc", "clang")),
                    reason="torch.compile on CPU needs a C compiler")
def test_slow_torch_compile_on_cpu(scale, tmp_path):
    """torch.compile compiles lazily, on the compiled module's first call: kernels in a fresh
    inductor cache show that the compiled module ran."""
    cache = tmp_path / "inductor"
    scale.env["TORCHINDUCTOR_CACHE_DIR"] = str(cache)
    try:
        run = _train(scale, "compile", {"train.compile": True, "train.epochs": 2},
                     "data/prepared", timeout=240)
    finally:
        scale.env.pop("TORCHINDUCTOR_CACHE_DIR")
    hist = _ok(run)
    assert hist["epoch"].tolist() == [1, 2]
    assert np.isfinite(hist["train_loss"]).all()
    kernels = [f for f in cache.rglob("*") if f.suffix in (".py", ".so", ".cpp")]
    assert kernels, "no compiled kernel: the compiled module was never called"


# ---------------------------------------------------------------- validation, early stopping
def test_minibatches_with_validation_and_patience(runs, scale):
    run = runs["patience"]
    hist = _ok(run)
    epochs, patience = 50, 2
    assert 1 <= len(hist) <= epochs
    assert hist["epoch"].tolist() == list(range(1, len(hist) + 1))
    assert hist["val_loss"].notna().all() and np.isfinite(hist["val_loss"]).all()
    assert np.isfinite(hist["train_loss"]).all()

    payload = torch.load(run.dir / "model.pt", map_location="cpu", weights_only=True)
    best = payload["best_epoch"]
    assert best == int(hist["val_loss"].to_numpy().argmin()) + 1
    # stops `patience` epochs after the best one, unless the epochs run out first
    assert len(hist) == min(epochs, best + patience), (best, len(hist))

    # the checkpoint holds the best epoch's weights, not the last epoch's
    from attn_forecast.model.checkpoint import load as load_checkpoint
    from attn_forecast.training.loop import evaluate_loss
    from attn_forecast.training.losses import make_loss
    from attn_forecast.data.store_io import load
    prep = load(scale.path / "data/prepared_val")
    assert payload["prepare"]["n_windows"]["val"] >= 1
    model, _ = load_checkpoint(run.dir / "model.pt")
    val = evaluate_loss(model, torch.from_numpy(prep.z), torch.from_numpy(prep.ends("val")),
                        prep.window, prep.horizon, make_loss("mse"))
    assert math.isclose(val, hist["val_loss"][best - 1], rel_tol=1e-5), (val, best)
