"""attn_forecast: a single-head (and multi-head) Q/K/V self-attention forecaster for time
series, with the data, windowing, training, evaluation and figure code that the DVC stages in
``stages/`` wire together. Importing it has no side effects: the stages and the command line
pin the CPU code paths themselves (cpu.pin)."""

__version__ = "0.1.0"
