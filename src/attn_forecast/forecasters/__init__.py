"""Forecasters: one small protocol (fit on each series' training part, forecast windows in
levels) shared by the simple baselines, the statistical field, the model, the zero-shot prior
and the combinations; running them over a store, with a named fallback where one fails, and
their saved forecasts."""
