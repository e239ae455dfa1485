"""What the stages, the search and bench/ share, between the params and the library: params
turned into the library's plain arguments and checked against the data (forecasting.py), the
training setup written once (training.py: ``fit``), the backtest's folds (folds.py) and the
names of settings in messages (keys.py). With config, the only packages that know
params.yaml's keys, beside the stages' own steps (pipeline/)."""
