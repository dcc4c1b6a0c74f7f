"""Float contraction on the native CPU: a multiply feeding an add or a subtraction in one
expression is ``llvm.fmuladd`` (OpenCL C's and clang's default FP_CONTRACT ON, the rule
the OpenCL backend applies with ``mad``), one FMA on a CPU that has them; a product kept
in a variable (used once or twice) or widened before the add stays a separate multiply.

Results are checked element by element against both NumPy roundings (fused: the f64
sum of the exact f32 product; separate: f32 product, then f32 sum)."""
from __future__ import annotations

import re

import numpy as np
import pytest

import pysycl as sycl
from pysycl.backends.native_cpu.compiler import NativeCpuCompiler
from pysycl.backends.native_cpu.target import native_cpu_target
from pysycl.bundle import toolchain
from pysycl.bundle.kernel_id import get_kernel_id
from pysycl.bundle.linker import default_linked_kernel
from pysycl.passes.spec_constants import lower_spec_constants

F32, F64, I32 = np.float32, np.float64, np.int32
F4 = sycl.vec(np.float32, 4)
taps_id = sycl.specialization_id(I32, 16)


@sycl.kernel
def k_fir(it: sycl.item[1], h: sycl.kernel_handler, x: sycl.global_ptr[F32],
          taps: sycl.global_ptr[F32], y: sycl.global_ptr[F32]):
    i = it.get_id(0)
    acc = F32(0)
    for k in range(h.get_specialization_constant(taps_id)):
        acc += taps[k] * x[i + k]
    y[i] = acc


@sycl.kernel
def k_forms(i: sycl.id[1], a: sycl.global_ptr[F32], b: sycl.global_ptr[F32],
            c: sycl.global_ptr[F32], out: sycl.global_ptr[F32]):
    j = i[0]
    n = 4 * j
    out[n] = a[j] * b[j] + c[j]
    out[n + 1] = c[j] + a[j] * b[j]
    out[n + 2] = a[j] * b[j] - c[j]
    out[n + 3] = c[j] - a[j] * b[j]


@sycl.kernel
def k_kept(i: sycl.id[1], a: sycl.global_ptr[F32], b: sycl.global_ptr[F32],
           c: sycl.global_ptr[F32], d: sycl.global_ptr[F64], out: sycl.global_ptr[F32],
           wide: sycl.global_ptr[F64]):
    j = i[0]
    p = a[j] * b[j]                  # a product kept in a variable: rounded on its own
    out[2 * j] = p + c[j]
    out[2 * j + 1] = p - c[j]        # ... and used twice
    wide[j] = c[j] * a[j] + d[j]     # f32 product widened to f64 before the add


@sycl.kernel
def k_vec(i: sycl.id[1], a: sycl.global_ptr[F4], b: sycl.global_ptr[F4],
          c: sycl.global_ptr[F4], out: sycl.global_ptr[F4]):
    out[i[0]] = a[i[0]] * b[i[0]] - c[i[0]]


def _llvm(kernel) -> str:
    """The kernel's LLVM IR for the host, spec constants at their defaults."""
    lk = default_linked_kernel(get_kernel_id(kernel))
    module = toolchain.clone(lk.module)
    lower_spec_constants(module, lk.spec_ids, "literal", None)
    return toolchain.codegen(module, native_cpu_target())


def _optimized(kernel) -> str:
    return NativeCpuCompiler().optimized_ir(_llvm(kernel))


def _count(text: str, pattern: str) -> int:
    return len(re.findall(pattern, text))


# IR ------------------------------------------------------------------------------------------
def test_the_four_forms_are_fmuladd_with_the_right_negation():
    ir = _optimized(k_forms)
    assert _count(ir, r"call float @llvm\.fmuladd\.f32\(") == 4
    assert _count(ir, r"\bfneg float\b") == 2              # -c and -a
    assert _count(ir, r"\bf(mul|add|sub) float\b") == 0


def test_kept_widened_and_twice_used_products_are_not_contracted():
    ir = _optimized(k_kept)
    assert "fmuladd" not in ir
    assert _count(ir, r"\bfmul float\b") == 2       # p, and c * a before the widening
    assert _count(ir, r"\bfadd float\b") == 1 and _count(ir, r"\bfsub float\b") == 1
    assert _count(ir, r"\bfadd double\b") == 1


def test_vec_operands_are_one_vector_fmuladd():
    ir = _llvm(k_vec)
    assert _count(ir, r"@\"?llvm\.fmuladd\.v4f32\"?\(") == 2   # its declaration and the call
    assert _count(ir, r"\bfsub <4 x float>") == 0


def test_fir_taps_are_fused_multiply_adds_in_the_host_code():
    ir = _optimized(k_fir)
    assert "fmuladd" in ir
    assert _count(ir, r"\bf(mul|add) (float|<\d+ x float>)") == 0
    if "+fma" in native_cpu_target().features.split(","):
        asm = NativeCpuCompiler().assembly(_llvm(k_fir))
        assert _count(asm, r"\bvfmadd\d+[ps]s\b") >= 16     # 16 taps, each one FMA
        assert _count(asm, r"\bv(mul|add)[ps]s\b") == 0


# Results -------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def native_queue():
    for dev in sycl.device.get_devices():
        if str(dev.backend).endswith("native_cpu"):
            return sycl.queue(dev)
    pytest.skip("no native_cpu device")


def _shared(q, data):
    d = sycl.malloc_shared(data.shape, data.dtype, q)
    np.asarray(d)[...] = data
    return d


def test_forms_give_a_rounding_of_the_exact_result(native_queue):
    n = 1000
    rng = np.random.default_rng(17)
    a, b, c = (rng.standard_normal(n, dtype=F32) for _ in range(3))
    bufs = [_shared(native_queue, v) for v in (a, b, c)]
    out = sycl.malloc_shared(4 * n, F32, native_queue)
    try:
        native_queue.parallel_for(sycl.range(n), k_forms, *bufs, out).wait()
        got = np.asarray(out).reshape(n, 4).copy()
    finally:
        for d in (*bufs, out):
            sycl.free(d, native_queue)
    p = a * b
    exact_p = a.astype(F64) * b.astype(F64)
    fused_count = 0
    for col, (sp, sc) in enumerate([(1, 1), (1, 1), (1, -1), (-1, 1)]):
        fused = (sp * exact_p + sc * c.astype(F64)).astype(F32)
        separate = (F32(sp) * p + F32(sc) * c).astype(F32)
        ok = (got[:, col] == fused) | (got[:, col] == separate)
        assert ok.all(), (col, got[~ok, col][:5], fused[~ok][:5], separate[~ok][:5])
        fused_count += int(((got[:, col] == fused) & (fused != separate)).sum())
    if "+fma" in native_cpu_target().features.split(","):
        assert fused_count > 0      # where they differ, the FMA's single rounding shows


def test_kept_products_round_separately(native_queue):
    n = 1000
    rng = np.random.default_rng(19)
    a, b, c = (rng.standard_normal(n, dtype=F32) for _ in range(3))
    d = rng.standard_normal(n)
    bufs = [_shared(native_queue, v) for v in (a, b, c, d)]
    out = sycl.malloc_shared(2 * n, F32, native_queue)
    wide = sycl.malloc_shared(n, F64, native_queue)
    try:
        native_queue.parallel_for(sycl.range(n), k_kept, *bufs, out, wide).wait()
        got, got_wide = np.asarray(out).reshape(n, 2).copy(), np.asarray(wide).copy()
    finally:
        for buf in (*bufs, out, wide):
            sycl.free(buf, native_queue)
    p = a * b
    np.testing.assert_array_equal(got[:, 0], p + c)
    np.testing.assert_array_equal(got[:, 1], p - c)
    np.testing.assert_array_equal(got_wide, (c * a).astype(F64) + d)


@pytest.mark.parametrize("ntaps", [7, 16, 33])
def test_fir_matches_numpy(native_queue, ntaps):
    n = 4096 + 3               # a remainder after the vector loop
    rng = np.random.default_rng(ntaps)
    x = rng.standard_normal(n + ntaps, dtype=F32)
    taps = rng.standard_normal(ntaps, dtype=F32)
    dx, dt = _shared(native_queue, x), _shared(native_queue, taps)
    y = sycl.malloc_shared(n, F32, native_queue)
    try:
        def cgf(cgh):
            cgh.set_specialization_constant(taps_id, ntaps)
            cgh.parallel_for(sycl.range(n), k_fir, dx, dt, y)
        native_queue.submit(cgf).wait()
        got = np.asarray(y).copy()
    finally:
        for buf in (dx, dt, y):
            sycl.free(buf, native_queue)
    expected = np.correlate(x.astype(F64), taps.astype(F64), mode="valid")[:n]
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4)
