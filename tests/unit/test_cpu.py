"""Unit tests for attn_forecast.cpu: which pins each kind of machine gets."""
from __future__ import annotations

from attn_forecast.cpu import NUMPY_AVX512, pins

AVX2 = {"sse4_2", "avx", "avx2", "fma"}


def test_avx512_machine_gets_every_pin():
    got = pins(AVX2 | {"avx512f", "avx512bw"}, "x86_64")
    assert got == {"ATEN_CPU_CAPABILITY": "avx2", "OPENBLAS_CORETYPE": "Haswell",
                   "MKL_CBWR": "AUTO,STRICT", "NPY_DISABLE_CPU_FEATURES": NUMPY_AVX512}


def test_avx2_machine_has_nothing_wider_to_disable():
    assert pins(AVX2, "x86_64") == {"ATEN_CPU_CAPABILITY": "avx2",
                                    "OPENBLAS_CORETYPE": "Haswell", "MKL_CBWR": "AUTO,STRICT"}


def test_no_pins_where_avx2_kernels_would_not_run():
    assert pins({"sse4_2", "avx"}, "x86_64") == {}      # an old or masked CPU
    assert pins(AVX2 | {"avx512f"}, "aarch64") == {}    # not x86
