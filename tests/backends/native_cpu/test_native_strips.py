"""Kernels with a loop of their own vectorise across work-items on the native CPU
(structural checks on the optimised LLVM and results; timings live in benchmarks/):

- a loop over a literal spec constant gets a constant trip count
  (passes/forward_constants), fully unrolls, and the work-item loop vectorises;
- a loop with a runtime, work-item-uniform trip count (kernel argument, emulated spec
  constant) runs in strips of work-items (passes/strip_uniform_loops), the strip loop
  inside it vectorised."""
from __future__ import annotations

import re

import numpy as np
import pytest

import pysycl as sycl
from pysycl.backends.native_cpu.compiler import NativeCpuCompiler
from pysycl.ir.builder import Builder
from pysycl.ir.core import Function, Module, Param, Region
from pysycl.ir.types import F32, I32, I64, IndexSpaceType, PointerType
from pysycl.passes.forward_constants import forward_constant_vars
from pysycl.passes.strip_uniform_loops import STRIP, strip_uniform_loops

f32 = np.float32
taps_id = sycl.specialization_id(np.int32, 16)


@sycl.kernel
def fir_spec(it: sycl.item[1], h: sycl.kernel_handler, x: sycl.global_ptr[f32],
             taps: sycl.global_ptr[f32], y: sycl.global_ptr[f32]):
    ntaps = h.get_specialization_constant(taps_id)
    i = it.get_id(0)
    acc = f32(0)
    for k in range(ntaps):
        acc += taps[k] * x[i + k]
    y[i] = acc


@sycl.kernel
def fir_args(it: sycl.item[1], x: sycl.global_ptr[f32], taps: sycl.global_ptr[f32],
             y: sycl.global_ptr[f32], ntaps: np.int32):
    i = it.get_id(0)
    acc = f32(0)
    for k in range(ntaps):
        acc += taps[k] * x[i + k]
    y[i] = acc


@sycl.kernel
def box_rows(it: sycl.item[2], a: sycl.global_ptr[f32], out: sycl.global_ptr[f32],
             cols: np.int64, r: np.int32, s: np.int32):
    """Two nested uniform loops, a 2-D index space."""
    i = it.get_id(0)
    j = it.get_id(1)
    acc = f32(0)
    for di in range(r):
        for dj in range(s):
            acc += a[(i + di) * (cols + s) + j + dj]
    out[i * cols + j] = acc


@sycl.kernel
def fir_nd(nd: sycl.nd_item[1], x: sycl.global_ptr[f32], taps: sycl.global_ptr[f32],
           y: sycl.global_ptr[f32], ntaps: np.int32):
    i = nd.get_global_id(0)
    acc = f32(0)
    for k in range(ntaps):
        acc += taps[k] * x[i + k]
    y[i] = acc + f32(nd.get_local_id(0))


@sycl.kernel
def divergent_loop(it: sycl.item[1], x: sycl.global_ptr[f32], y: sycl.global_ptr[f32]):
    """The trip count differs between items: no strips (stays correct either way)."""
    i = it.get_id(0)
    acc = f32(0)
    for k in range(i % 7):
        acc += x[i + k]
    y[i] = acc


def _queue():
    for dev in sycl.device.get_devices():
        if str(dev.backend).endswith("native_cpu"):
            return sycl.queue(dev)
    pytest.skip("no native_cpu device")


def _llvm(q, kernel, mode, value=None) -> str:
    """The kernel's LLVM IR as the native CPU build makes it for ``mode`` (and the value
    of ``taps_id``), generated here: a cached image carries no LLVM text."""
    from pysycl.bundle import toolchain
    from pysycl.passes.spec_constants import lower_spec_constants
    exe = sycl.build(sycl.get_kernel_bundle(q.get_context(), sycl.bundle_state.input,
                                            devices=[q.get_device()],
                                            kernel_ids=[sycl.get_kernel_id(kernel)]))
    lk = next(i for i in exe if i.has_kernel(kernel))._linked
    values = None
    if mode == "literal" and value is not None:
        values = {sym: np.int32(value).tobytes() for sym in lk.spec_ids.ids}
    target = toolchain.device_target(q.get_device())
    module = toolchain.clone(lk.module)
    lower_spec_constants(module, lk.spec_ids, mode, values)
    return toolchain.codegen(toolchain.kernel_passes(module, target), target)


def _vector_ops(llvm: str) -> set[str]:
    opt = NativeCpuCompiler().optimized_ir(llvm)
    return set(re.findall(r"<(?:4|8|16) x float>", opt))


@pytest.mark.parametrize("ntaps", [7, 16, 33])
def test_fir_literal_spec_constant_unrolls_and_vectorises(ntaps):
    llvm = _llvm(_queue(), fir_spec, "literal", ntaps)
    assert "llvm.loop.unroll.full" in llvm
    assert _vector_ops(llvm) & {"<8 x float>", "<16 x float>"}, "work-item loop not vectorised"


@pytest.mark.parametrize("kernel,mode", [(fir_args, "literal"), (fir_spec, "emulated")])
def test_fir_runtime_trip_count_vectorises_across_items(kernel, mode):
    llvm = _llvm(_queue(), kernel, mode, 16 if kernel is fir_spec else None)
    assert "strip_end" in llvm
    assert _vector_ops(llvm) & {"<8 x float>", "<16 x float>"}, "strip loop not vectorised"


def _fir_ref(x, taps, n):
    return sum(taps[k] * x[k:k + n].astype(np.float64) for k in range(len(taps)))


@pytest.mark.parametrize("n,ntaps", [(1, 3), (STRIP - 1, 5), (3 * STRIP + 17, 40), (5000, 0)])
def test_fir_strips_results(n, ntaps):
    q = _queue()
    rng = np.random.default_rng(n + ntaps)
    x = sycl.malloc_shared((n + ntaps,), f32, q)
    t = sycl.malloc_shared((max(ntaps, 1),), f32, q)
    y = sycl.malloc_shared((n,), f32, q)
    np.asarray(x)[...] = rng.standard_normal(n + ntaps)
    np.asarray(t)[...] = rng.standard_normal(max(ntaps, 1))
    ref = _fir_ref(np.asarray(x), np.asarray(t)[:ntaps], n)
    q.submit(lambda h: h.parallel_for(sycl.range(n), fir_args, x, t, y, np.int32(ntaps))).wait()
    np.testing.assert_allclose(np.asarray(y), ref, rtol=1e-4, atol=1e-4)
    # an nd_range launch: strips within each work-group, local ids intact
    if n % 8 == 0:
        np.asarray(y)[...] = 0
        q.submit(lambda h: h.parallel_for(sycl.nd_range(sycl.range(n), sycl.range(8)),
                                          fir_nd, x, t, y, np.int32(ntaps))).wait()
        np.testing.assert_allclose(np.asarray(y), ref + np.arange(n) % 8, rtol=1e-4, atol=1e-4)
    for p in (x, t, y):
        sycl.free(p, q)


def test_nested_uniform_loops_2d():
    q = _queue()
    rows, cols, r, s = 37, 2 * STRIP + 3, 3, 4
    rng = np.random.default_rng(1)
    a = sycl.malloc_shared(((rows + r) * (cols + s),), f32, q)
    out = sycl.malloc_shared((rows * cols,), f32, q)
    np.asarray(a)[...] = rng.standard_normal(a.shape[0] if hasattr(a, "shape") else
                                             (rows + r) * (cols + s))
    q.submit(lambda h: h.parallel_for(sycl.range(rows, cols), box_rows, a, out, np.int64(cols),
                                      np.int32(r), np.int32(s))).wait()
    a2 = np.asarray(a).reshape(rows + r, cols + s).astype(np.float64)
    ref = sum(a2[di:di + rows, dj:dj + cols] for di in range(r) for dj in range(s))
    np.testing.assert_allclose(np.asarray(out).reshape(rows, cols), ref, rtol=1e-4, atol=1e-4)
    for p in (a, out):
        sycl.free(p, q)


def test_divergent_loop_is_left_alone():
    q = _queue()
    assert "strip_end" not in _llvm(q, divergent_loop, "literal")
    n = 1000
    x = sycl.malloc_shared((n + 8,), f32, q)
    y = sycl.malloc_shared((n,), f32, q)
    np.asarray(x)[...] = np.arange(n + 8, dtype=f32)
    q.submit(lambda h: h.parallel_for(sycl.range(n), divergent_loop, x, y)).wait()
    xa = np.asarray(x).astype(np.float64)
    ref = [sum(xa[i:i + i % 7]) for i in range(n)]
    np.testing.assert_allclose(np.asarray(y), ref, rtol=1e-5)
    for p in (x, y):
        sycl.free(p, q)


# IR-level behaviour of the two passes -------------------------------------------------------
def _loop_kernel(bound_from_var: bool, stores_in_body: bool = False):
    params = [Param("it", IndexSpaceType("item", 1)), Param("p", PointerType(F32)),
              Param("n", I32)]
    body = Region()
    fn = Function("k", "kernel", params, body=body)
    b = Builder(body)
    _, p, n = (q.value for q in params)
    b.var("m", I32)
    b.var("acc", F32)
    b.store_var("m", b.const(40, I32) if bound_from_var else n)
    b.store_var("acc", b.const(0.0, F32))
    loop_body = b.for_("k", b.const(0, I32), b.load_var("m", I32), b.const(1, I32))
    x = loop_body.load(p)
    loop_body.store_var("acc", loop_body.op("add", loop_body.load_var("acc", F32), x, type=F32))
    if stores_in_body:
        loop_body.store(p, x)
    gid = b.op("wi.global_id", type=I64, dim=0)
    b.store(b.op("ptr.offset", p, gid, type=PointerType(F32)), b.load_var("acc", F32))
    return Module("m", [fn]), fn


def test_forward_constant_vars_makes_the_bound_constant():
    m, fn = _loop_kernel(bound_from_var=True)
    forward_constant_vars(m)
    loop = next(op for op in fn.walk() if op.name == "for")
    assert loop.operands[1].owner.name == "const"
    assert loop.operands[1].owner.attrs["value"] == 40


def test_strip_pass_marks_uniform_loops_only():
    m, fn = _loop_kernel(bound_from_var=False)
    strip_uniform_loops(m)
    assert fn.attrs.get("wi_strip") == STRIP
    loop = next(op for op in fn.walk() if op.name == "for")
    assert loop.regions[0].ops[0].name == "barrier"
    m, fn = _loop_kernel(bound_from_var=False, stores_in_body=True)
    strip_uniform_loops(m)
    assert "wi_strip" not in fn.attrs


MM_TILE = 8


@sycl.kernel
def matmul_tiled(nd: sycl.nd_item[2], a: sycl.global_ptr[f32], b: sycl.global_ptr[f32],
                 c: sycl.global_ptr[f32], n: np.int64,
                 ta: sycl.local_accessor[f32, 2], tb: sycl.local_accessor[f32, 2]):
    row = nd.get_global_id(0)
    col = nd.get_global_id(1)
    lr = nd.get_local_id(0)
    lc = nd.get_local_id(1)
    acc = f32(0)
    for t in range(n // MM_TILE):
        ta[lr, lc] = a[row * n + t * MM_TILE + lc]
        tb[lr, lc] = b[(t * MM_TILE + lr) * n + col]
        sycl.group_barrier(nd.get_group())
        for k in range(MM_TILE):
            acc += ta[lr, k] * tb[k, lc]
        sycl.group_barrier(nd.get_group())
    c[row * n + col] = acc


def test_tiled_matmul_keeps_the_constant_loop_in_the_item_loop():
    """fission_uniform leaves ``for k in range(MM_TILE)`` (fully unrolled) inside the
    work-item loop: one vectorised block holds all MM_TILE products, ``acc`` in a
    register, instead of MM_TILE item loops each loading and storing ``acc``."""
    q = _queue()
    opt = NativeCpuCompiler().optimized_ir(_llvm(q, matmul_tiled, "literal"))
    blocks = opt.split("\n\n")
    # a product per k: a vector multiply, or a multiply-add (``acc += a * b``)
    tap = r"fmul <(?:4|8|16) x float>|@llvm\.fmuladd\.v(?:4|8|16)f32\("
    fmuls = max(len(re.findall(tap, blk)) for blk in blocks)
    assert fmuls >= MM_TILE, "k loop not unrolled inside the vectorised work-item loop"
    n = 4 * MM_TILE
    rng = np.random.default_rng(3)
    a, b, c = (sycl.malloc_shared((n, n), f32, q) for _ in range(3))
    np.asarray(a)[...] = rng.standard_normal((n, n))
    np.asarray(b)[...] = rng.standard_normal((n, n))
    q.submit(lambda h: h.parallel_for(
        sycl.nd_range(sycl.range(n, n), sycl.range(MM_TILE, MM_TILE)), matmul_tiled, a, b, c,
        np.int64(n), h.local_accessor(f32, (MM_TILE, MM_TILE)),
        h.local_accessor(f32, (MM_TILE, MM_TILE)))).wait()
    np.testing.assert_allclose(np.asarray(c), np.asarray(a) @ np.asarray(b), rtol=1e-4,
                               atol=1e-4)
    for p in (a, b, c):
        sycl.free(p, q)
