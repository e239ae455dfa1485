# make repro: set up .venv from the pinned constraints and run the pipeline.
# make test:  set up .venv and run the test suite.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

export PATH := $(abspath $(BIN)):$(PATH)
export DVC_NO_ANALYTICS := 1
export ITERATIVE_DO_NOT_TRACK := 1

.PHONY: venv repro test bench docs source-baseline clean

venv: $(STAMP)

$(STAMP): pyproject.toml constraints.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q -c constraints.txt -e '.[dev]'
	touch $(STAMP)

repro: $(STAMP)
	$(BIN)/dvc repro

test: $(STAMP)
	$(BIN)/python -m pytest -q

# The lecture's worked example as it was written (window 10, last-step pooling, no
# augmentation), as one DVC experiment beside the tuned defaults.
SOURCE_BASELINE := -S prepare.window=10 -S model.pooling=last -S train.augment_noise=0.0
source-baseline: $(STAMP)
	$(BIN)/dvc exp run -f -n source-baseline $(SOURCE_BASELINE)

# Benchmarks (not tests): accuracy over seeds 42, 1, 2, 3, 4 and speed, beside the source's
# worked example when REFERENCE points at it.
REFERENCE ?= ../shared/reference/seed_reference.py
bench: $(STAMP)
	$(BIN)/python bench/accuracy.py --reference $(REFERENCE)
	$(BIN)/python bench/accuracy.py -S prepare.scaler=none --reference $(REFERENCE)
	$(BIN)/python bench/speed.py --reference $(REFERENCE)

# Refresh the README's copies of the default run's figures and summary table.
docs: repro
	$(BIN)/python docs/refresh.py

clean:
	rm -rf $(VENV) .pytest_cache
