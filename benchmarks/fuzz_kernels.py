"""Kernels the bundle fuzzer saves, mutates, loads and runs (``fuzz_syclbin.py``); each
has a runner that launches it from a loaded bundle and checks the result against NumPy.

The expected values come from the bundle itself (its specialization-constant values),
so a file that changes a value consistently still counts as run correctly; a result
that disagrees with what the file says is a wrong result.
"""
from __future__ import annotations

import numpy as np

import pysycl as sycl

F32, I32, I64 = np.float32, np.int32, np.int64

fz_scale_id = sycl.specialization_id(F32, 2.0)
fz_shift_id = sycl.specialization_id(I32, 3)
fz_step_id = sycl.specialization_id(I64, 5)
fz_total = sycl.device_global(I64)


@sycl.kernel
def fz_scale(it: sycl.item[1], h: sycl.kernel_handler, x: sycl.global_ptr[F32],
             out: sycl.global_ptr[F32]):
    i = it.get_id(0)
    out[i] = x[i] * h.get_specialization_constant(fz_scale_id) + \
        F32(h.get_specialization_constant(fz_shift_id))


@sycl.kernel
def fz_axpy(it: sycl.item[1], x: sycl.global_ptr[F32], y: sycl.global_ptr[F32], a: F32):
    i = it.get_id(0)
    y[i] = a * x[i] + y[i]


@sycl.kernel
def fz_accumulate(h: sycl.kernel_handler):
    fz_total.set(fz_total.get() + h.get_specialization_constant(fz_step_id))


@sycl.kernel
def fz_reverse(it: sycl.nd_item[1], x: sycl.global_ptr[F32], out: sycl.global_ptr[F32],
               tile: sycl.local_accessor[F32, 1]):
    lid = it.get_local_id(0)
    n = it.get_local_range(0)
    tile[lid] = x[it.get_global_id(0)]
    sycl.group_barrier(it.get_group())
    out[it.get_global_id(0)] = tile[n - 1 - lid]


KERNELS = (fz_scale, fz_axpy, fz_accumulate, fz_reverse)
SPEC_IDS = (fz_scale_id, fz_shift_id, fz_step_id)
N = 256
WG = 32


def _value(kb, sid):
    """The value ``kb`` gives ``sid`` (its own, else the default), as the kernel sees it."""
    if kb.has_specialization_constant(sid):
        return kb.get_specialization_constant(sid)
    return sid.default


def _same(a, b):
    """Element-wise equality with NaN equal to NaN."""
    return (a == b) | (np.isnan(a) & np.isnan(b))


def _run_scale(q, kb, rng) -> bool:
    x = rng.standard_normal(N).astype(F32)
    dx, dout = sycl.malloc_shared(N, F32, q), sycl.malloc_shared(N, F32, q)
    try:
        np.asarray(dx)[:] = x
        np.asarray(dout)[:] = np.nan

        def cgf(cgh):
            cgh.use_kernel_bundle(kb)
            cgh.parallel_for(sycl.range(N), fz_scale, dx, dout)
        q.submit(cgf).wait()
        scale, shift = F32(_value(kb, fz_scale_id)), F32(I32(_value(kb, fz_shift_id)))
        got = np.asarray(dout)
        # ``x * scale + shift`` is one expression: fused (one rounding) or not, as the
        # device contracts it
        separate = x * scale + shift
        fused = (x.astype(np.float64) * scale + shift).astype(F32)
        return bool(np.all(_same(got, separate) | _same(got, fused)))
    finally:
        sycl.free(dx, q)
        sycl.free(dout, q)


def _run_axpy(q, kb, rng) -> bool:
    x, y = rng.standard_normal(N).astype(F32), rng.standard_normal(N).astype(F32)
    a = F32(rng.uniform(-3, 3))
    dx, dy = sycl.malloc_shared(N, F32, q), sycl.malloc_shared(N, F32, q)
    try:
        np.asarray(dx)[:] = x
        np.asarray(dy)[:] = y

        def cgf(cgh):
            cgh.use_kernel_bundle(kb)
            cgh.parallel_for(sycl.range(N), fz_axpy, dx, dy, a)
        q.submit(cgf).wait()
        return bool(np.allclose(np.asarray(dy), a * x + y, rtol=1e-6, atol=1e-6))
    finally:
        sycl.free(dx, q)
        sycl.free(dy, q)


def _run_accumulate(q, kb, rng) -> bool:
    start = np.array([rng.integers(-1000, 1000)], I64)
    q.copy(start, fz_total).wait()

    def cgf(cgh):
        cgh.use_kernel_bundle(kb)
        cgh.single_task(fz_accumulate)
    q.submit(cgf).wait()
    out = np.zeros(1, I64)
    q.copy(fz_total, out).wait()
    return int(out[0]) == int(start[0]) + int(I64(_value(kb, fz_step_id)))


def _run_reverse(q, kb, rng) -> bool:
    x = rng.standard_normal(N).astype(F32)
    dx, dout = sycl.malloc_shared(N, F32, q), sycl.malloc_shared(N, F32, q)
    try:
        np.asarray(dx)[:] = x

        def cgf(cgh):
            cgh.use_kernel_bundle(kb)
            tile = cgh.local_accessor(F32, WG)
            cgh.parallel_for(sycl.nd_range(sycl.range(N), sycl.range(WG)), fz_reverse,
                             dx, dout, tile)
        q.submit(cgf).wait()
        return bool(np.array_equal(np.asarray(dout), x.reshape(-1, WG)[:, ::-1].ravel()))
    finally:
        sycl.free(dx, q)
        sycl.free(dout, q)


RUNNERS = {fz_scale: _run_scale, fz_axpy: _run_axpy, fz_accumulate: _run_accumulate,
           fz_reverse: _run_reverse}
