"""What the stages call each setting a library message names by role (errors.SettingError):
its params.yaml key."""
from __future__ import annotations

PARAMS_KEYS = {
    "path": "data.csv_path", "column": "data.csv_column", "time_column": "data.csv_time_column",
    "time_format": "data.csv_time_format", "sep": "data.csv_sep", "decimal": "data.csv_decimal",
    "thousands": "data.csv_thousands", "missing": "data.missing",
    "features": "data.csv_feature_columns", "id_column": "data.csv_id_column",
    "time_gaps": "data.time_gaps", "window": "prepare.window", "horizon": "prepare.horizon",
    "transform": "prepare.transform", "folds": "backtest.folds",
    "fold_size": "backtest.fold_size", "gap": "backtest.gap", "lr": "train.lr",
    "grad_clip": "train.grad_clip", "quantiles": "model.quantiles",
    "lookbacks": "model.lookbacks", "season": "evaluate.season",
    "engine_address": "evaluate.engine_address", "test_frac": "prepare.test_frac",
    "val_frac": "prepare.val_frac", "cal_frac": "prepare.cal_frac",
}
