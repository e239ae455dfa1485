# make repro: set up .venv from the pinned constraints and run the pipeline.
# make test:  set up .venv and run the test suite.
# TORCH=cpu (make repro TORCH=cpu): install torch 2.13.0's CPU-only build from PyTorch's own
# wheel index first, instead of PyPI's, which on Linux x86_64 is the CUDA build with several
# GB of NVIDIA runtime wheels (pinned in constraints.txt).
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

export PATH := $(abspath $(BIN)):$(PATH)
export DVC_NO_ANALYTICS := 1
export ITERATIVE_DO_NOT_TRACK := 1

.PHONY: venv repro store test bench bench-real bench-m3 docs source-baseline clean

venv: $(STAMP)

TORCH ?= default
TORCH_CPU_INDEX := https://download.pytorch.org/whl/cpu

$(STAMP): pyproject.toml constraints.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@if [ "$(TORCH)" = cpu ]; then \
	    echo "installing torch==2.13.0 (CPU only) from $(TORCH_CPU_INDEX)"; \
	    $(BIN)/python -m pip install -q torch==2.13.0 --index-url $(TORCH_CPU_INDEX); \
	elif [ "$(TORCH)" != default ]; then \
	    echo "TORCH must be cpu or default, got '$(TORCH)'" >&2; exit 2; fi
	$(BIN)/python -m pip install -q -c constraints.txt -e '.[dev]'
	touch $(STAMP)

# The committed run's cached outputs (model, data, forecasts) come from data/store, a DVC
# remote inside the repository, so a fresh clone's `dvc repro` finds them up to date on any
# CPU (a CPU of other arithmetic would retrain them to other bits); `dvc repro --force`
# retrains everything.
repro: $(STAMP)
	$(BIN)/dvc pull -q -r store --allow-missing
	$(BIN)/dvc repro

# When the default run changes: put its outputs in the store, and only them (`dvc gc -w`
# also trims the local cache to the workspace's run).
store: repro
	$(BIN)/dvc push -r store
	$(BIN)/dvc gc -f -w -c -r store

# The tests also need the service's extras (serve: FastAPI, uvicorn, onnxruntime; load: locust),
# which `make repro` leaves out.
TEST_STAMP := $(VENV)/.installed-test
$(TEST_STAMP): $(STAMP)
	$(BIN)/python -m pip install -q -c constraints.txt -e '.[dev,serve,load]'
	touch $(TEST_STAMP)

# The linter first (ruff, configured in pyproject.toml), then the fast unit tests
# (tests/unit/<package>/, as src/attn_forecast/), then the end-to-end tests (the real dvc in
# throw-away repositories), each part two at a time (on 2 cores: 49 s for the unit tests, not
# 88 s one at a time); both print [done/total].
test: $(TEST_STAMP)
	$(BIN)/ruff check -q
	$(BIN)/python -m pytest -q -n 2 tests/unit
	$(BIN)/python -m pytest -q -n 2 --dist loadfile tests/e2e

# The lecture's worked example exactly as written, as one DVC experiment beside the
# defaults: every setting is given (data, windows, scaler, model, training), so nothing an
# earlier `dvc exp run -S` left in params.yaml leaks in; --temp runs it in a temporary copy and
# leaves the workspace (params.yaml and outputs) untouched.
source-baseline: $(STAMP)
	$(BIN)/dvc exp run --temp -f -n source-baseline \
	    $$(PYTHONPATH=src $(BIN)/python -m tools.worked_example)

# Benchmarks (not tests): accuracy over seeds 42, 1, 2, 3, 4 and speed, beside the source's
# worked example when REFERENCE points at it.
REFERENCE ?= ../shared/reference/seed_reference.py
bench: $(STAMP)
	$(BIN)/python bench/accuracy.py --reference $(REFERENCE)
	$(BIN)/python bench/accuracy.py -S prepare.scaler=none --reference $(REFERENCE)
	$(BIN)/python bench/speed.py --reference $(REFERENCE)

# The real-series benchmark: public series shipped inside pmdarima and statsmodels (the bench
# extra), scored by a rolling-origin backtest against naive, seasonal naive, ridge, ETS, Theta
# and ARIMA. About 15 minutes on two cores.
BENCH_STAMP := $(VENV)/.installed-bench
$(BENCH_STAMP): $(STAMP)
	$(BIN)/python -m pip install -q -c constraints.txt -e '.[dev,bench]'
	touch $(BENCH_STAMP)

bench-real: $(BENCH_STAMP)
	$(BIN)/python bench/real.py

# The M3 benchmark: one global attention model per subset against the statistical field
# (StatsForecast) on the competition's test parts, beside the published figures.
bench-m3: $(STAMP)
	$(BIN)/python bench/m3.py

# Refresh the README's copy of the default run's summary table.
docs: repro
	$(BIN)/python docs/refresh.py

clean:
	rm -rf $(VENV) .pytest_cache
