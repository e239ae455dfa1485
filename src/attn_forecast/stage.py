"""What every stage script in ``stages/`` starts and ends with, written once.

A stage imports this module before anything that loads numpy or torch (its first
``attn_forecast`` import, which the import order puts first)::

    from attn_forecast import stage
    from attn_forecast.config.load import load_params   # numpy loads here, pinned
    ...

    @stage.main
    def main(argv: list[str] | None = None) -> None: ...

    if __name__ == "__main__":
        stage.run(main)

Importing it pins the CPU code paths (:func:`attn_forecast.cpu.pin`: the same kernels on every
x86-64 CPU with AVX2, and Ctrl-C while numpy and torch load is one line). ``stage.main`` names
a library message's roles by their params.yaml keys; ``stage.run`` runs a stage under the
one-line error rule (bad input, an unusable file, Ctrl-C: one line and a non-zero exit).
Importing the package itself sets nothing; only this module, which only stages import.
"""
from __future__ import annotations

from . import cpu
from .errors import naming, run_cli      # (neither these nor cpu load numpy)
from .setup.keys import PARAMS_KEYS

cpu.pin()

main = naming(PARAMS_KEYS)   # a stage's main: its errors' roles named by params.yaml keys
run = run_cli                # a stage's entry point: the one-line error rule
unpin_torch = cpu.unpin_torch

__all__ = ["main", "run", "unpin_torch"]
