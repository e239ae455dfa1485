"""Evaluation: metrics per window, series and subset, intervals, the Diebold-Mariano and sign
tests, scoring every forecaster on the same windows, and the backtest's folds. No torch."""
