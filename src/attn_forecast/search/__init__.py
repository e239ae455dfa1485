"""The hyperparameter search: Optuna's study over DVC experiments, one trial a stage run."""
