"""The native CPU's work-item loop vectorises (timings live in benchmarks/, not here)."""
from __future__ import annotations

import re

import numpy as np

import pysycl as sycl
from native_harness import COMPILER, llvm_text
from test_native_kernels import conv3x3_module


def test_conv3x3_optimised_ir_is_vectorised():
    opt = COMPILER.optimized_ir(llvm_text(conv3x3_module()))
    assert "x float>" in opt, "the inner work-item loop was not vectorised"



@sycl.kernel
def cdiv(i: sycl.id[1], a: sycl.global_ptr[np.complex64], b: sycl.global_ptr[np.complex64],
         out: sycl.global_ptr[np.complex64]):
    out[i] = a[i] / b[i]


def test_complex_division_loop_is_vectorised():
    """Complex values are {T, T} structs, whose loads split into scalar ones that the
    loop vectoriser interleaves (a ``<2 x float>`` value would stop it)."""
    opt = COMPILER.optimized_ir(llvm_text(cdiv.ir_module()))
    widths = {int(w) for w in re.findall(r"<(\d+) x float>", opt)}
    assert widths and max(widths) >= 4, "the complex work-item loop was not vectorised"
