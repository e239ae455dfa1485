"""Pin the CPU code paths that numpy, OpenBLAS and torch pick by processor, before they load.

On x86-64 these libraries choose kernels by the instructions a CPU has (AVX-512 or AVX2 only),
and kernels of different widths round differently in the last bits; over 300 epochs of
training that reaches the 7th digit of the metrics. With AVX2 and FMA present, every stage
runs the AVX2 kernels, which every such CPU has and which cost nothing here (measured in
``bench/README.md``):

- ``ATEN_CPU_CAPABILITY=avx2``: torch's vectorized kernels (softmax, Adam, reductions...).
- ``OPENBLAS_CORETYPE=Haswell``: numpy's and scipy's OpenBLAS (the ridge baseline).
- ``NPY_DISABLE_CPU_FEATURES``: numpy's AVX-512 ufunc loops (``exp`` in the random walk).
- ``MKL_CBWR=AUTO,STRICT``: MKL, torch's matrix library, keeps its kernels for the CPU but
  splits a product the same way whatever the thread count (its strict reproducible mode; on
  Intel Xeons a product at 2 threads otherwise rounds apart from one at 1). Measured at no
  cost beyond run-to-run noise (bench/README.md).

Not pinned: MKL's kernels themselves. Its fully reproducible mode (``MKL_CBWR=COMPATIBLE``)
makes training much slower (bench/README.md) and still leaves Intel and AMD CPUs apart (MKL
takes other paths on each vendor), so results agree to the byte only between CPUs of one
vendor; committed metrics are written at 4 significant digits so that ``dvc metrics diff``
stays quiet across machines. ``ATTN_FORECAST_NATIVE_CPU=1`` skips the pins (for speed comparisons).

:func:`pin` must run before numpy or torch are imported: each stage does it by importing
:mod:`attn_forecast.stage` first, and so does the command line; importing the package itself
sets nothing.
"""
from __future__ import annotations

import os
import platform
import signal
import sys
import threading

PINS = {"ATEN_CPU_CAPABILITY": "avx2", "OPENBLAS_CORETYPE": "Haswell",
        "MKL_CBWR": "AUTO,STRICT"}
TORCH_PINS = ("ATEN_CPU_CAPABILITY", "MKL_CBWR")    # read as torch loads
# numpy 2.x names for its AVX-512 dispatch targets (older names are ignored)
NUMPY_AVX512 = "X86_V4,AVX512_ICL,AVX512_SPR"


def cpu_flags() -> set[str]:
    """Instruction-set flags of this CPU (Linux /proc/cpuinfo; empty elsewhere)."""
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


def pins(flags: set[str] | None = None, machine: str | None = None) -> dict[str, str]:
    """The environment to set on this CPU (nothing off x86-64 or without AVX2 and FMA)."""
    flags = cpu_flags() if flags is None else flags
    machine = platform.machine() if machine is None else machine
    if machine not in ("x86_64", "AMD64") or not {"avx2", "fma"} <= flags:
        return {}
    out = dict(PINS)
    if "avx512f" in flags:
        out["NPY_DISABLE_CPU_FEATURES"] = NUMPY_AVX512
    return out


def _starting(signum, frame) -> None:
    print("\ninterrupted while starting; nothing written", file=sys.stderr)
    sys.exit(130)


def pin() -> dict[str, str]:
    """Set the pins in this process's environment (children inherit them); returns them.

    Leaves out what comes too late to take effect (numpy's and OpenBLAS's pins once numpy is
    loaded, torch's once torch is), and everything when ``ATTN_FORECAST_NATIVE_CPU=1``. Also,
    as the first thing a stage or the command runs: Ctrl-C while it imports numpy and torch
    ends it with one line (``run_cli`` hands Ctrl-C back to Python when its work begins).
    """
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, _starting)
    if os.environ.get("ATTN_FORECAST_NATIVE_CPU") == "1":
        return {}
    chosen = pins()
    if "numpy" in sys.modules:
        chosen = {k: v for k, v in chosen.items() if k in TORCH_PINS}
    if "torch" in sys.modules:
        chosen = {k: v for k, v in chosen.items() if k not in TORCH_PINS}
    os.environ.update(chosen)
    return chosen


def unpin_torch() -> None:
    """Give torch back its native kernels, before its first operation. ``torch.compile``
    needs this: its generated code trains to NaN under ``ATEN_CPU_CAPABILITY=avx2`` on an
    AVX-512 CPU (torch 2.13), so compiled runs are not pinned."""
    os.environ.pop("ATEN_CPU_CAPABILITY", None)


def cores() -> int:
    """CPU cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1
