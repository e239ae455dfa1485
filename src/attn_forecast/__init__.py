"""attn_forecast: a single-head (and multi-head) Q/K/V self-attention forecaster for time
series, with the data, windowing, training, evaluation and figure code that the DVC stages in
``stages/`` wire together."""
from . import cpu as _cpu

_cpu.pin()  # before numpy or torch load: the same kernels on every x86-64 CPU with AVX2

__version__ = "0.1.0"
