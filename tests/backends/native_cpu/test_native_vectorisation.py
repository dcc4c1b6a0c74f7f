"""The native CPU's work-item loop vectorises (timings live in benchmarks/, not here)."""
from __future__ import annotations

from native_harness import COMPILER, llvm_text
from test_native_kernels import conv3x3_module


def test_conv3x3_optimised_ir_is_vectorised():
    opt = COMPILER.optimized_ir(llvm_text(conv3x3_module()))
    assert "x float>" in opt, "the inner work-item loop was not vectorised"
