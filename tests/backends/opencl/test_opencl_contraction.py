"""Float contraction on OpenCL: a multiply feeding an add or a subtraction in one
expression is one OpenCL.std ``mad`` in the SPIR-V (OpenCL C's default FP_CONTRACT ON),
which the driver may fuse; a product kept in a variable, used twice, or widened before
the add stays a separate OpFMul. (The native CPU keeps two roundings:
tests/backends/native_cpu/test_native_contraction.py.)

Results are checked element by element against both NumPy roundings (fused: the f64
sum of the exact f32 product; separate: f32 product, then f32 sum)."""
from __future__ import annotations

import re
import shutil

import numpy as np
import pytest

import pysycl as sycl
from pysycl.backends.opencl.compiler import SpirvCompiler, validate
from pysycl.backends.opencl.target import SPIRV64
from pysycl.bundle import toolchain
from pysycl.bundle.kernel_id import get_kernel_id
from pysycl.bundle.linker import default_linked_kernel
from pysycl.passes.spec_constants import lower_spec_constants

F32, F64, I32 = np.float32, np.float64, np.int32
F4 = sycl.vec(np.float32, 4)
needs_tools = pytest.mark.skipif(
    shutil.which("spirv-dis") is None or shutil.which("spirv-val") is None,
    reason="SPIRV-Tools not installed")

taps_id = sycl.specialization_id(I32, 5)


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
    out[j] = p + c[j]
    wide[j] = c[j] * a[j] + d[j]     # f32 product widened to f64 before the add


@sycl.kernel
def k_vec(i: sycl.id[1], a: sycl.global_ptr[F4], b: sycl.global_ptr[F4],
          c: sycl.global_ptr[F4], out: sycl.global_ptr[F4]):
    out[i[0]] = a[i[0]] * b[i[0]] - c[i[0]]


def _module(kernel):
    lk = default_linked_kernel(get_kernel_id(kernel))
    module = toolchain.clone(lk.module)
    lower_spec_constants(module, lk.spec_ids, "native", None)
    return lk, module


def _spirv(kernel) -> str:
    lk, module = _module(kernel)
    c = SpirvCompiler()
    spv = c.compile(toolchain.codegen(module, SPIRV64), [lk.name])
    validate(spv)
    return c.disassemble(spv)


def _count(asm: str, pattern: str) -> int:
    return len(re.findall(pattern, asm))


@pytest.fixture(scope="module")
def cl_queue():
    devs = [d for d in sycl.device.get_devices() if d.backend.name == "opencl"]
    if not devs:
        pytest.skip("no OpenCL device")
    return sycl.queue(devs[0])


# SPIR-V ------------------------------------------------------------------------------------
@needs_tools
def test_fir_taps_are_mad_and_nothing_else():
    asm = _spirv(k_fir)
    assert _count(asm, r"OpExtInst %\w+ %\w+ mad ") == 1
    assert _count(asm, r"\bOpFMul\b") == 0 and _count(asm, r"\bOpFAdd\b") == 0
    # The trip count is the spec constant itself (its SpecId is what the driver sets).
    assert re.search(r"OpDecorate (%\w+) SpecId", asm)


@needs_tools
def test_the_four_forms_are_mad_with_the_right_negation():
    asm = _spirv(k_forms)
    assert _count(asm, r"OpExtInst %\w+ %\w+ mad ") == 4
    assert _count(asm, r"\bOpFNegate\b") == 2          # -c and -a
    assert _count(asm, r"\bOpF(Mul|Add|Sub)\b") == 0


@needs_tools
def test_kept_and_widened_products_are_not_contracted():
    asm = _spirv(k_kept)
    assert _count(asm, r" mad ") == 0
    assert _count(asm, r"\bOpFMul\b") == 2 and _count(asm, r"\bOpFAdd\b") == 2


@needs_tools
def test_vec_operands_are_one_vector_mad():
    asm = _spirv(k_vec)
    mads = re.findall(r"(%\w+) = OpExtInst (%\w+) %\w+ mad ", asm)
    assert len(mads) == 1
    vec_type = mads[0][1]
    assert re.search(rf"{vec_type} = OpTypeVector %\w+ 4", asm)


# Results -----------------------------------------------------------------------------------
def _shared(q, data):
    d = sycl.malloc_shared(data.shape, data.dtype, q)
    np.asarray(d)[...] = data
    return d


def test_forms_give_a_rounding_of_the_exact_result(cl_queue):
    n = 1000
    rng = np.random.default_rng(7)
    a, b, c = (rng.standard_normal(n, dtype=F32) for _ in range(3))
    bufs = [_shared(cl_queue, v) for v in (a, b, c)]
    out = sycl.malloc_shared(4 * n, F32, cl_queue)
    try:
        cl_queue.parallel_for(sycl.range(n), k_forms, *bufs, out).wait()
        got = np.asarray(out).reshape(n, 4).copy()
    finally:
        for d in (*bufs, out):
            sycl.free(d, cl_queue)
    p = a * b   # f32 product, the separate rounding's first step
    exact_p = a.astype(F64) * b.astype(F64)
    for col, (sp, sc) in enumerate([(1, 1), (1, 1), (1, -1), (-1, 1)]):
        fused = (sp * exact_p + sc * c.astype(F64)).astype(F32)
        separate = (F32(sp) * p + F32(sc) * c).astype(F32)
        ok = (got[:, col] == fused) | (got[:, col] == separate)
        assert ok.all(), (col, got[~ok, col][:5], fused[~ok][:5], separate[~ok][:5])
        np.testing.assert_allclose(got[:, col], sp * exact_p + sc * c, rtol=1e-5, atol=1e-6)


def test_fir_matches_numpy(cl_queue):
    n, ntaps = 4096, 9
    rng = np.random.default_rng(11)
    x = rng.standard_normal(n + ntaps, dtype=F32)
    taps = rng.standard_normal(ntaps, dtype=F32)
    dx, dt = _shared(cl_queue, x), _shared(cl_queue, taps)
    y = sycl.malloc_shared(n, F32, cl_queue)
    try:
        def cgf(cgh):
            cgh.set_specialization_constant(taps_id, ntaps)
            cgh.parallel_for(sycl.range(n), k_fir, dx, dt, y)
        cl_queue.submit(cgf).wait()
        got = np.asarray(y).copy()
    finally:
        for d in (dx, dt, y):
            sycl.free(d, cl_queue)
    expected = np.correlate(x.astype(F64), taps.astype(F64), mode="valid")[:n]
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-5)
