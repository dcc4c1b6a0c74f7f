"""The CUDA backend's performance items, with the peers in the same run on the same GPU.

    python -m benchmarks.gpu [--quick] [--json PATH]

1. 3x3 convolution of an 8192x8192 float32 image (zero padding, one work-item per
   pixel): pysycl with the coefficients as a literal specialization constant, against
   Triton with the coefficients through a pointer and a CuPy RawKernel with the
   coefficients as compile-time literals; the memory floor is a device-to-device copy
   of the image (``q.memcpy``, i.e. ``cuMemcpyAsync``). The one-pixel kernel runs as
   built under ``PYSYCL_COARSEN`` (``auto``: the compiler gives each thread 4 rows) and
   as built with ``PYSYCL_COARSEN=off``; the kernel coarsened by hand beside them.
2. ``y = a*x + y`` (memory-bound): bandwidth as a fraction of the device-to-device copy's.
3. Launch overhead: asynchronous ``q.parallel_for`` of a tiny kernel with two USM
   pointers, amortised over 10,000 launches, against CuPy ``RawKernel``.
4. FIR filter: the tap count as a literal spec constant against a runtime argument.
5. Build latency in fresh processes (``benchmarks/build_latency.py`` on the GPU): cold
   build, a new spec-constant value set, a disk-cache hit; against Triton's recompile
   for a new ``tl.constexpr`` value and CuPy's NVRTC compile of a RawKernel for a new
   ``-D`` value, each with an empty cache of its own.
6. Autotuning (``sycl.autotune``, ``benchmarks/autotune.py``): the 3x3 convolution and
   the 32-tap FIR with outputs per work-item (1, 2, 4, 8) and the work-group size
   chosen by measuring, against the hand-picked config (4 rows per work-item, 4x64,
   the fastest pysycl row of item 1; one output per work-item for the FIR) and the
   best config of the tuner's sweep.

Every output is checked against NumPy before its time is reported (a wrong answer is
reported as WRONG, never timed). GPU times are the best of a few rounds of ``reps``
asynchronous launches followed by one synchronisation, divided by ``reps`` (the launches
queue up, so this is the GPU's time per kernel once it is longer than a launch). Prints
a table and writes JSON (default ``gpu_bench.json``).
"""
from __future__ import annotations

import argparse
import itertools
import json
import math
import os
import platform
import struct
import sys
import time
from functools import partial

import numpy as np

import pysycl as sycl

from .harness import environment

F32 = np.float32
R = sycl.properties(sycl.restrict)
coeff_id = sycl.specialization_id(np.dtype((np.float32, (3, 3))))
ntaps_id = sycl.specialization_id(np.int32, 16)
RNG = np.random.default_rng(2020)


# -- pysycl kernels ---------------------------------------------------------------------
@sycl.kernel
def conv3x3_literal(it: sycl.item[2], h: sycl.kernel_handler,
                    inp: sycl.annotated_ptr[F32, R], out: sycl.annotated_ptr[F32, R],
                    rows: np.int64, cols: np.int64):
    coeff = h.get_specialization_constant(coeff_id)
    r0 = it.get_id(0)
    c0 = it.get_id(1)
    acc = F32(0)
    for i in range(-1, 2):
        r = r0 + i
        if r >= 0 and r < rows:
            for j in range(-1, 2):
                c = c0 + j
                if c >= 0 and c < cols:
                    acc += coeff[i + 1][j + 1] * inp[r * cols + c]
    out[r0 * cols + c0] = acc


@sycl.kernel
def conv3x3_literal_rows4(it: sycl.item[2], h: sycl.kernel_handler,
                          inp: sycl.annotated_ptr[F32, R], out: sycl.annotated_ptr[F32, R],
                          rows: np.int64, cols: np.int64):
    # The same convolution, four vertically adjacent pixels per work-item: each input
    # row read serves up to three outputs (18 loads for 4 pixels instead of 36).
    coeff = h.get_specialization_constant(coeff_id)
    r0 = it.get_id(0) * 4
    c = it.get_id(1)
    a0 = F32(0)
    a1 = F32(0)
    a2 = F32(0)
    a3 = F32(0)
    for k in range(6):
        r = r0 + k - 1
        if r >= 0 and r < rows:
            base = r * cols + c
            vm = inp[base]
            vl = F32(0)
            vr = F32(0)
            if c >= 1:
                vl = inp[base - 1]
            if c + 1 < cols:
                vr = inp[base + 1]
            if k <= 2:
                a0 += coeff[k][0] * vl + coeff[k][1] * vm + coeff[k][2] * vr
            if k >= 1 and k <= 3:
                a1 += coeff[k - 1][0] * vl + coeff[k - 1][1] * vm + coeff[k - 1][2] * vr
            if k >= 2 and k <= 4:
                a2 += coeff[k - 2][0] * vl + coeff[k - 2][1] * vm + coeff[k - 2][2] * vr
            if k >= 3:
                a3 += coeff[k - 3][0] * vl + coeff[k - 3][1] * vm + coeff[k - 3][2] * vr
    o = r0 * cols + c
    out[o] = a0
    out[o + cols] = a1
    out[o + 2 * cols] = a2
    out[o + 3 * cols] = a3


@sycl.kernel
def saxpy4(it: sycl.item[1], a: F32, x: sycl.annotated_ptr[F32, R],
           y: sycl.annotated_ptr[F32, R], m: np.int64):
    # Four independent elements per work-item, m apart (each access stays coalesced):
    # all eight loads are issued before the first store (more bytes in flight).
    i = it.get_id(0)
    x0 = x[i]
    x1 = x[i + m]
    x2 = x[i + 2 * m]
    x3 = x[i + 3 * m]
    y0 = y[i]
    y1 = y[i + m]
    y2 = y[i + 2 * m]
    y3 = y[i + 3 * m]
    y[i] = a * x0 + y0
    y[i + m] = a * x1 + y1
    y[i + 2 * m] = a * x2 + y2
    y[i + 3 * m] = a * x3 + y3


@sycl.kernel
def saxpy(it: sycl.item[1], a: F32, x: sycl.annotated_ptr[F32, R],
          y: sycl.annotated_ptr[F32, R]):
    i = it.get_id(0)
    y[i] = a * x[i] + y[i]


@sycl.kernel
def tiny(it: sycl.item[1], a: sycl.global_ptr[F32], b: sycl.global_ptr[F32]):
    i = it.get_id(0)
    b[i] = a[i]


@sycl.kernel
def fir_spec(it: sycl.item[1], h: sycl.kernel_handler, x: sycl.annotated_ptr[F32, R],
             taps: sycl.annotated_ptr[F32, R], y: sycl.annotated_ptr[F32, R]):
    ntaps = h.get_specialization_constant(ntaps_id)
    i = it.get_id(0)
    acc = F32(0)
    for k in range(ntaps):
        acc += taps[k] * x[i + k]
    y[i] = acc


@sycl.kernel
def fir_args(it: sycl.item[1], x: sycl.annotated_ptr[F32, R], taps: sycl.annotated_ptr[F32, R],
             y: sycl.annotated_ptr[F32, R], ntaps: np.int32):
    i = it.get_id(0)
    acc = F32(0)
    for k in range(ntaps):
        acc += taps[k] * x[i + k]
    y[i] = acc


# -- peers ------------------------------------------------------------------------------
CUPY_CONV = r"""
extern "C" __global__ void conv3x3(const float* __restrict__ in, float* __restrict__ out,
                                   int rows, int cols) {
    const float C[3][3] = {%s};
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    int r = blockIdx.y * blockDim.y + threadIdx.y;
    if (r >= rows || c >= cols) return;
    float acc = 0.0f;
#pragma unroll
    for (int i = -1; i <= 1; ++i) {
        int rr = r + i;
        if (rr >= 0 && rr < rows) {
#pragma unroll
            for (int j = -1; j <= 1; ++j) {
                int cc = c + j;
                if (cc >= 0 && cc < cols) acc += C[i + 1][j + 1] * in[(size_t)rr * cols + cc];
            }
        }
    }
    out[(size_t)r * cols + c] = acc;
}
"""

CUPY_CONV_ROWS4 = r"""
extern "C" __global__ void conv3x3_rows4(const float* __restrict__ in, float* __restrict__ out,
                                         int rows, int cols) {
    const float C[3][3] = {%s};
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    int r0 = (blockIdx.y * blockDim.y + threadIdx.y) * 4;
    if (r0 >= rows || c >= cols) return;
    float a[4] = {0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll
    for (int k = 0; k < 6; ++k) {
        int r = r0 + k - 1;
        if (r >= 0 && r < rows) {
            size_t base = (size_t)r * cols + c;
            float vm = in[base];
            float vl = c >= 1 ? in[base - 1] : 0.0f;
            float vr = c + 1 < cols ? in[base + 1] : 0.0f;
#pragma unroll
            for (int o = 0; o < 4; ++o) {
                int i = k - o;
                if (i >= 0 && i <= 2) a[o] += C[i][0] * vl + C[i][1] * vm + C[i][2] * vr;
            }
        }
    }
    size_t o = (size_t)r0 * cols + c;
#pragma unroll
    for (int j = 0; j < 4; ++j) out[o + (size_t)j * cols] = a[j];
}
"""

CUPY_TINY = r"""
extern "C" __global__ void tiny(const float* a, float* b) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    b[i] = a[i];
}
"""

CUPY_SAXPY = r"""
extern "C" __global__ void saxpy(float a, const float* __restrict__ x, float* __restrict__ y,
                                 long long n) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
"""


def _c_float(v) -> str:
    return float(np.float32(v)).hex() + "f"


def _triton_conv():
    import triton
    import triton.language as tl

    @triton.autotune(configs=[
        triton.Config({"BM": 8, "BN": 128}, num_warps=4),
        triton.Config({"BM": 16, "BN": 128}, num_warps=4),
        triton.Config({"BM": 4, "BN": 256}, num_warps=4),
        triton.Config({"BM": 16, "BN": 256}, num_warps=8)], key=["rows", "cols"])
    @triton.jit
    def conv3x3(inp, coeff, out, rows, cols, BM: tl.constexpr, BN: tl.constexpr):
        r = tl.program_id(0) * BM + tl.arange(0, BM)[:, None]
        c = tl.program_id(1) * BN + tl.arange(0, BN)[None, :]
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for i in tl.static_range(3):
            for j in tl.static_range(3):
                rr = r + (i - 1)
                cc = c + (j - 1)
                m = (rr >= 0) & (rr < rows) & (cc >= 0) & (cc < cols)
                w = tl.load(coeff + i * 3 + j)
                acc += w * tl.load(inp + rr * cols + cc, mask=m, other=0.0)
        tl.store(out + r * cols + c, acc, mask=(r < rows) & (c < cols))

    def run(x, w, y):
        rows, cols = x.shape
        grid = lambda meta: (triton.cdiv(rows, meta["BM"]), triton.cdiv(cols, meta["BN"]))  # noqa: E731
        conv3x3[grid](x, w, y, rows, cols)
    return run


# -- timing -----------------------------------------------------------------------------
def gpu_time(launch, sync, reps: int = 20, rounds: int = 5) -> float:
    """Seconds per launch: best of ``rounds`` of ``reps`` async launches + one sync."""
    launch()
    sync()
    best = math.inf
    for _ in range(rounds):
        t0 = time.perf_counter()
        for _ in range(reps):
            launch()
        sync()
        best = min(best, (time.perf_counter() - t0) / reps)
    return best


class Table:
    def __init__(self):
        self.rows: list[dict] = []

    def add(self, workload, impl, seconds, ok=True, note="", **extra):
        row = {"workload": workload, "impl": impl, "seconds": seconds, "ok": bool(ok),
               "note": note, **extra}
        self.rows.append(row)
        t = f"{seconds * 1e6:11.2f} us" if seconds is not None else "          -   "
        print(f"  {workload:<34} {impl:<44} {t}  {'ok' if ok else 'WRONG'} {note}",
              flush=True)
        return row

    def measure(self, workload, impl, run, result, expected, sync, *, rtol=1e-4, atol=1e-4,
                reps=20, note="", **extra):
        """``run()`` launches; ``result()`` returns the output as NumPy after a sync."""
        try:
            run()
            sync()
            ok = expected is None or bool(np.allclose(result(), expected, rtol=rtol, atol=atol))
            seconds = gpu_time(run, sync, reps) if ok else None
        except Exception as e:  # noqa: BLE001 - a failure is reported, not fatal
            ok, seconds, note = False, None, f"{type(e).__name__}: {e}"[:160]
        return self.add(workload, impl, seconds, ok, note, **extra)


def _to_host(q, a: "sycl.usm_array") -> np.ndarray:
    out = np.empty(a.shape, a.dtype)
    q.memcpy(out, a).wait()
    return out


def _device_array(q, host: np.ndarray):
    d = sycl.malloc_device(host.shape, host.dtype, q)
    q.memcpy(d, host).wait()
    return d


def _coarsening(setting: str):
    """Builds inside use ``PYSYCL_COARSEN=setting`` (the launch reads the image)."""
    return environment("PYSYCL_COARSEN", setting)


def _coarsening_plan(exe) -> str:
    """How the bundle's build coarsened its kernel, for the table's note."""
    for img in exe:
        for raw in (img.property_sets.get("PYSYCL/coarsening") or {}).values():
            dim, factor = struct.unpack("<II", raw)
            return f"coarsened: {factor} work-items per thread along dimension {dim}"
    return "not coarsened (one pixel per thread)"


# -- workloads --------------------------------------------------------------------------
def bench_conv(t: Table, q, n: int, cp, torch, triton_conv) -> dict:
    wl = f"conv3x3 {n}x{n} f32"
    img = RNG.standard_normal((n, n), dtype=np.float32)
    coeff = RNG.standard_normal((3, 3), dtype=np.float32)
    padded = np.pad(img, 1)
    expected = np.zeros_like(img)
    for i in range(3):
        for j in range(3):
            expected += coeff[i, j] * padded[i:i + n, j:j + n]
    del padded
    d_in, d_out = _device_array(q, img), sycl.malloc_device((n, n), F32, q)
    d_copy = sycl.malloc_device((n, n), F32, q)
    res = {}
    res["floor"] = t.measure(wl, "memory floor: D2D copy (q.memcpy)",
                             lambda: q.memcpy(d_copy, d_in), lambda: _to_host(q, d_copy), img,
                             q.wait)
    kb = sycl.get_kernel_bundle(q.get_context(), sycl.bundle_state.input,
                                devices=[q.get_device()],
                                kernel_ids=[sycl.get_kernel_id(conv3x3_literal)])
    kb.set_specialization_constant(coeff_id, coeff)
    # auto on CUDA: literal (constants folded into the PTX) and, with PYSYCL_COARSEN's
    # default, 4 rows per thread (the compiler coarsens the one-pixel kernel itself).
    exe = sycl.build(kb)
    with _coarsening("off"):      # the same kernel, one pixel per thread, for comparison
        exe_1px = sycl.build(kb)
    plan = _coarsening_plan(exe)

    def run_pysycl(local=None, bundle=exe):
        def cgf(cgh):
            cgh.use_kernel_bundle(bundle)
            r = sycl.range(n, n) if local is None else sycl.nd_range(sycl.range(n, n),
                                                                      sycl.range(*local))
            cgh.parallel_for(r, conv3x3_literal, d_in, d_out, np.int64(n), np.int64(n))
        return q.submit(cgf)
    res["pysycl"] = t.measure(wl, "pysycl literal spec const (range)", run_pysycl,
                              lambda: _to_host(q, d_out), expected, q.wait, note=plan)
    res["pysycl_nd"] = t.measure(wl, "pysycl literal spec const (nd_range 8x32)",
                                 lambda: run_pysycl((8, 32)), lambda: _to_host(q, d_out),
                                 expected, q.wait, note=plan)
    res["pysycl_off"] = t.measure(wl, "pysycl literal, PYSYCL_COARSEN=off (range)",
                                  lambda: run_pysycl(bundle=exe_1px),
                                  lambda: _to_host(q, d_out), expected, q.wait,
                                  note=_coarsening_plan(exe_1px))
    res["pysycl_nd_off"] = t.measure(wl, "pysycl literal, PYSYCL_COARSEN=off (nd 8x32)",
                                     lambda: run_pysycl((8, 32), exe_1px),
                                     lambda: _to_host(q, d_out), expected, q.wait,
                                     note=_coarsening_plan(exe_1px))
    kb4 = sycl.get_kernel_bundle(q.get_context(), sycl.bundle_state.input,
                                 devices=[q.get_device()],
                                 kernel_ids=[sycl.get_kernel_id(conv3x3_literal_rows4)])
    kb4.set_specialization_constant(coeff_id, coeff)
    exe4 = sycl.build(kb4)

    def run_rows4(local=None):
        def cgf(cgh):
            cgh.use_kernel_bundle(exe4)
            r = sycl.range(n // 4, n) if local is None else sycl.nd_range(
                sycl.range(n // 4, n), sycl.range(*local))
            cgh.parallel_for(r, conv3x3_literal_rows4, d_in, d_out, np.int64(n), np.int64(n))
        return q.submit(cgf)
    res["pysycl_rows4"] = t.measure(wl, "pysycl literal, 4 rows per item (range)", run_rows4,
                                    lambda: _to_host(q, d_out), expected, q.wait)
    res["pysycl_rows4_nd"] = t.measure(wl, "pysycl literal, 4 rows per item (nd 4x64)",
                                       lambda: run_rows4((4, 64)), lambda: _to_host(q, d_out),
                                       expected, q.wait)
    if cp is not None:
        x = cp.asarray(img)
        y = cp.empty_like(x)
        lit = ", ".join(_c_float(v) for v in coeff.ravel())
        k4 = cp.RawKernel(CUPY_CONV_ROWS4 % lit, "conv3x3_rows4")
        res["cupy_rows4"] = t.measure(
            wl, "CuPy RawKernel literal, 4 rows per thread (64x4)",
            lambda: k4(((n + 63) // 64, (n // 4 + 3) // 4, 1), (64, 4, 1),
                       (x, y, np.int32(n), np.int32(n))),
            lambda: cp.asnumpy(y), expected, cp.cuda.Device().synchronize)
        src = CUPY_CONV % lit
        k = cp.RawKernel(src, "conv3x3")
        block = (32, 8, 1)
        grid = ((n + 31) // 32, (n + 7) // 8, 1)
        res["cupy"] = t.measure(wl, "CuPy RawKernel, literal coefficients (32x8)",
                                lambda: k(grid, block, (x, y, np.int32(n), np.int32(n))),
                                lambda: cp.asnumpy(y), expected, cp.cuda.Device().synchronize)
        yc = cp.empty_like(x)
        res["cupy_copy"] = t.measure(wl, "memory floor: D2D copy (CuPy)",
                                     lambda: yc.__setitem__(Ellipsis, x), lambda: cp.asnumpy(yc),
                                     img, cp.cuda.Device().synchronize)
        del x, y, yc
    if torch is not None and triton_conv is not None:
        tx = torch.from_numpy(img).cuda()
        tw = torch.from_numpy(coeff.ravel().copy()).cuda()
        ty = torch.empty_like(tx)
        res["triton"] = t.measure(wl, "Triton, coefficients through a pointer",
                                  lambda: triton_conv(tx, tw, ty), lambda: ty.cpu().numpy(),
                                  expected, torch.cuda.synchronize)
        # The same pysycl kernel on PyTorch tensors, no copies (DLPack).
        res["pysycl_torch"] = t.measure(
            wl, "pysycl literal (range) on torch tensors",
            lambda: q.submit(lambda cgh: (cgh.use_kernel_bundle(exe), cgh.parallel_for(
                sycl.range(n, n), conv3x3_literal, tx, ty, np.int64(n), np.int64(n)))),
            lambda: ty.cpu().numpy(), expected, q.wait)
        del tx, tw, ty
    for a in (d_in, d_out, d_copy):
        sycl.free(a, q)
    return res


def bench_saxpy(t: Table, q, n: int, cp) -> dict:
    wl = f"saxpy {n >> 20}M f32"
    x = RNG.standard_normal(n, dtype=np.float32)
    y = RNG.standard_normal(n, dtype=np.float32)
    a = F32(1.5)
    dx, dy, dc = _device_array(q, x), _device_array(q, y), sycl.malloc_device(n, F32, q)
    res = {"floor": t.measure(wl, "memory floor: D2D copy (q.memcpy)", lambda: q.memcpy(dc, dx),
                              lambda: _to_host(q, dc), x, q.wait)}
    # y changes on every launch: check one launch from the start, then time.
    q.parallel_for(sycl.range(n), saxpy, a, dx, dy).wait()
    ok = np.allclose(_to_host(q, dy), a * x + y, rtol=1e-5, atol=1e-5)
    sec = gpu_time(lambda: q.parallel_for(sycl.range(n), saxpy, a, dx, dy), q.wait) if ok else None
    res["pysycl"] = t.add(wl, "pysycl y = a*x + y", sec, ok)
    q.memcpy(dy, y).wait()
    m = n // 4
    q.parallel_for(sycl.range(m), saxpy4, a, dx, dy, np.int64(m)).wait()
    ok = np.allclose(_to_host(q, dy), a * x + y, rtol=1e-5, atol=1e-5)
    sec = gpu_time(lambda: q.parallel_for(sycl.range(m), saxpy4, a, dx, dy, np.int64(m)),
                   q.wait) if ok else None
    res["pysycl4"] = t.add(wl, "pysycl y = a*x + y, 4 elements per item", sec, ok)
    if cp is not None:
        cx, cy = cp.asarray(x), cp.asarray(y)
        k = cp.RawKernel(CUPY_SAXPY, "saxpy")
        launch = lambda: k(((n + 255) // 256,), (256,), (a, cx, cy, np.int64(n)))  # noqa: E731
        launch()
        cp.cuda.Device().synchronize()
        ok = np.allclose(cp.asnumpy(cy), a * x + y, rtol=1e-5, atol=1e-5)
        sec = gpu_time(launch, cp.cuda.Device().synchronize) if ok else None
        res["cupy"] = t.add(wl, "CuPy RawKernel y = a*x + y", sec, ok)
        del cx, cy
    for d in (dx, dy, dc):
        sycl.free(d, q)
    return res


def _alternating(first, second):
    """A launch that is ``first`` and ``second`` in turn."""
    turns = itertools.cycle((first, second))
    return lambda: next(turns)()


def bench_launch(t: Table, q, cp, torch=None, launches: int = 10_000, rounds: int = 5) -> dict:
    """Per launch over bursts of ``launches``, each case's best of ``rounds``. The cases
    take turns burst by burst: the host's speed drifts by tens of percent over seconds
    on shared machines, and a ratio of two figures measured far apart would show it."""
    wl = f"launch overhead, {launches} async"
    n = 32
    host = np.arange(n, dtype=np.float32)
    da, db = _device_array(q, host), sycl.malloc_device(n, F32, q)
    r = sycl.range(n)
    cases = {}   # label -> (launch, sync, clear the output, check it)
    for label, queue in (("pysycl q.parallel_for (default queue)", q),
                         ("pysycl q.parallel_for (in_order queue)",
                          sycl.queue(q.get_device(), in_order=True))):
        cases[label] = (partial(queue.parallel_for, r, tiny, da, db), queue.wait,
                        lambda: q.memset(db, 0, db.nbytes).wait(),
                        lambda queue=queue: np.array_equal(_to_host(queue, db), host))
    # The command-group form: q.submit(lambda h: h.parallel_for(...)).
    cases["pysycl q.submit(cgf), cgf = h.parallel_for"] = (
        partial(q.submit, lambda h: h.parallel_for(r, tiny, da, db)), q.wait,
        lambda: q.memset(db, 0, db.nbytes).wait(),
        lambda: np.array_equal(_to_host(q, db), host))
    # A loop whose launches alternate their arguments (a -> b, then b -> a): no launch
    # repeats the one before it, which a launch loop over fixed arguments does.
    cases["pysycl q.parallel_for, arguments alternating"] = (
        _alternating(partial(q.parallel_for, r, tiny, da, db),
                     partial(q.parallel_for, r, tiny, db, da)), q.wait,
        lambda: q.memset(db, 0, db.nbytes).wait(),
        lambda: np.array_equal(_to_host(q, db), host))
    if cp is not None:
        # The same launch with CuPy's arrays as the kernel's arguments (no USM).
        ca, cb = cp.asarray(host), cp.empty(n, cp.float32)
        qi = sycl.queue(q.get_device(), in_order=True)
        clear, check = (lambda: cb.fill(0)), (lambda: np.array_equal(cp.asnumpy(cb), host))
        cases["pysycl q.parallel_for, CuPy array arguments"] = (
            partial(q.parallel_for, r, tiny, ca, cb), q.wait, clear, check)
        cases["pysycl in_order queue, CuPy array arguments"] = (
            partial(qi.parallel_for, r, tiny, ca, cb), qi.wait, clear, check)
        if torch is not None:
            ta, tb = torch.from_numpy(host).cuda(), torch.zeros(n, device="cuda")
            cases["pysycl q.parallel_for, PyTorch tensor arguments"] = (
                partial(q.parallel_for, r, tiny, ta, tb), q.wait, tb.zero_,
                lambda: np.array_equal(tb.cpu().numpy(), host))
        k = cp.RawKernel(CUPY_TINY, "tiny")
        cases["cupy"] = (partial(k, (1,), (n,), (ca, cb)), cp.cuda.Device().synchronize,
                         clear, check)
        cases["cupy, arguments alternating"] = (
            _alternating(partial(k, (1,), (n,), (ca, cb)), partial(k, (1,), (n,), (cb, ca))),
            cp.cuda.Device().synchronize, clear, check)
    best = {}
    for label, (launch, sync, clear, check) in cases.items():
        clear()
        launch()
        sync()
        best[label] = math.inf if check() else None
    for _ in range(rounds):
        for label, (launch, sync, _clear, _check) in cases.items():
            if best[label] is None:
                continue
            t0 = time.perf_counter()
            for _ in range(launches):
                launch()
            sync()
            best[label] = min(best[label], (time.perf_counter() - t0) / launches)
    res = {}
    for label, sec in best.items():
        shown = label.replace("cupy", "CuPy RawKernel") if label.startswith("cupy") else label
        res[label] = t.add(wl, shown, sec, sec is not None)
    sycl.free(da, q)
    sycl.free(db, q)
    return res


@sycl.kernel
def reduction_sum(it: sycl.item[1], x: sycl.global_ptr[F32], total: sycl.reducer[F32]):
    """A float32 sum as SYCL 2020 writes it (sycl.reduction, 4.10.6)."""
    total += x[it.get_id(0)]


def bench_reduction(t: Table, q, n: int, cp) -> dict:
    """A float32 sum with ``sycl.reduction`` against CuPy's ``sum`` and the memory floor
    (the time a device-to-device copy takes to read the data once, half its traffic)."""
    wl = f"sycl.reduction sum {n >> 20}M f32"
    x = RNG.random(n, dtype=np.float32)
    want = float(x.astype(np.float64).sum())
    dx, dc = _device_array(q, x), sycl.malloc_device(n, F32, q)
    total = sycl.malloc_device(1, F32, q)
    red = sycl.reduction(total, sycl.plus(), sycl.property.reduction.initialize_to_identity())
    q.parallel_for(sycl.range(n), reduction_sum, dx, red).wait()
    got = float(_to_host(q, total)[0])
    ok = abs(got - want) <= 1e-5 * abs(want) + 1e-3
    res = {"pysycl": t.add(wl, "pysycl sycl.reduction(plus)", gpu_time(
        lambda: q.parallel_for(sycl.range(n), reduction_sum, dx, red), q.wait)
        if ok else None, ok, "" if ok else f"got {got}, want {want}")}
    copy = gpu_time(lambda: q.memcpy(dc, dx), q.wait)
    res["floor"] = t.add(wl, "memory floor: one read (half a D2D copy)", copy / 2)
    if cp is not None:
        cx = cp.asarray(x)
        ok = abs(float(cx.sum()) - want) <= 1e-5 * abs(want) + 1e-3
        res["cupy"] = t.add(wl, "CuPy sum", gpu_time(lambda: cx.sum(),
                                                     cp.cuda.Device().synchronize), ok)
        del cx
    for d in (dx, dc, total):
        sycl.free(d, q)
    return res


def bench_fir(t: Table, q, n: int, taps_counts=(7, 16, 33)) -> dict:
    res = {}
    for ntaps in taps_counts:
        wl = f"FIR {ntaps} taps, {n >> 20}M f32"
        x = RNG.standard_normal(n + ntaps, dtype=np.float32)
        taps = RNG.standard_normal(ntaps, dtype=np.float32)
        expected = np.convolve(x, taps[::-1], mode="valid")[:n].astype(np.float32)
        dx, dt, dy = _device_array(q, x), _device_array(q, taps), sycl.malloc_device(n, F32, q)

        def run_spec():
            def cgf(cgh):
                cgh.set_specialization_constant(ntaps_id, np.int32(ntaps))
                cgh.parallel_for(sycl.range(n), fir_spec, dx, dt, dy)
            return q.submit(cgf)
        res[(ntaps, "spec")] = t.measure(wl, "pysycl literal spec const", run_spec,
                                         lambda: _to_host(q, dy), expected, q.wait,
                                         rtol=1e-3, atol=1e-3)
        res[(ntaps, "arg")] = t.measure(
            wl, "pysycl runtime argument",
            lambda: q.parallel_for(sycl.range(n), fir_args, dx, dt, dy, np.int32(ntaps)),
            lambda: _to_host(q, dy), expected, q.wait, rtol=1e-3, atol=1e-3)
        for d in (dx, dt, dy):
            sycl.free(d, q)
    return res


_TRITON_BUILD = r'''
import json, os, sys, tempfile, time
os.environ["TRITON_CACHE_DIR"] = tempfile.mkdtemp()   # cold: nothing compiled before
import torch, triton, triton.language as tl

@triton.jit
def scale(x, n, K: tl.constexpr, BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = i < n
    tl.store(x + i, tl.load(x + i, mask=m) * K, mask=m)

x = torch.ones(1024, device="cuda")
torch.cuda.synchronize()
def call(k):
    t0 = time.perf_counter()
    scale[(1,)](x, 1024, K=k, BLOCK=1024)
    torch.cuda.synchronize()
    return time.perf_counter() - t0
first = call(4)
new = call(5)
old = call(4)
print(json.dumps({"first": first, "new_value": new, "old_value": old}))
'''

_CUPY_BUILD = r'''
import json, os, tempfile, time
os.environ["CUPY_CACHE_DIR"] = tempfile.mkdtemp()
os.environ["CUPY_CACHE_IN_MEMORY"] = "0"
import cupy as cp
SRC = 'extern "C" __global__ void scale(float* x) { x[threadIdx.x] *= K; }'
x = cp.ones(1024, cp.float32)
cp.cuda.Device().synchronize()
def call(k):
    t0 = time.perf_counter()
    cp.RawKernel(SRC, "scale", options=(f"-DK={k}",))((1,), (1024,), (x,))
    cp.cuda.Device().synchronize()
    return time.perf_counter() - t0
first = call(4)
new = call(5)
print(json.dumps({"first": first, "new_value": new}))
'''


def bench_build(t: Table, q) -> dict:
    """Build latency on the GPU, every figure from fresh interpreters (medians of 3)."""
    import os
    from . import build_latency as B
    res = {}
    for m in B.measure(q):
        res[m.workload] = t.add(m.workload, m.impl, m.seconds, m.ok, m.note)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    for name, code, keys in (("triton", _TRITON_BUILD, ("first", "new_value", "old_value")),
                             ("cupy", _CUPY_BUILD, ("first", "new_value"))):
        try:
            r = B._median_runs(code, env, 3)
        except Exception as e:  # noqa: BLE001 - a missing peer is reported, not fatal
            t.add(f"build: {name}", name, None, False, str(e).splitlines()[-1][:120])
            continue
        labels = {"first": "first call (cold compile)",
                  "new_value": "new constexpr / -D value (recompile)",
                  "old_value": "earlier value again"}
        for k in keys:
            res[f"{name} {k}"] = t.add(f"build: {labels[k]}", name, r[k])
    return res


def bench_autotune(t: Table, q, conv_n: int, fir_n: int) -> dict:
    """The tuned convolution and FIR against the hand-picked config and the best of
    a sweep (each config launched by hand), outputs checked against NumPy."""
    from . import autotune as at
    res = {}

    def tuned_rows(wl, kernel, configs, space, args, out, expected, hand, key):
        tuned = sycl.autotune(kernel, configs=configs, key=key, reps=10)
        t0 = time.perf_counter()
        with at.measuring():
            q.parallel_for(space, tuned, *args).wait()
        first = time.perf_counter() - t0
        chosen = tuned.best_config(q, space, *args)
        print(f"  {wl}: first launch {first * 1e3:.0f} ms for {len(configs)} configs",
              flush=True)
        sweep = [(s, c) for c, s in next(iter(tuned.timings.values())) if s is not None]
        best = min(sweep, key=lambda sc: sc[0])[1]
        result = lambda: _to_host(q, out).reshape(expected.shape)  # noqa: E731
        res[wl] = {
            "tuned": t.measure(wl, f"pysycl autotuned (chose {at.label(chosen)})",
                               lambda: q.parallel_for(space, tuned, *args), result,
                               expected, q.wait, rtol=1e-3, atol=1e-3),
            "hand": t.measure(wl, f"pysycl hand-picked {at.label(hand)}",
                              lambda: at.launch_config(q, kernel, hand, space, args),
                              result, expected, q.wait, rtol=1e-3, atol=1e-3),
            "sweep": t.measure(wl, f"pysycl best of tuner's sweep {at.label(best)}",
                               lambda: at.launch_config(q, kernel, best, space, args),
                               result, expected, q.wait, rtol=1e-3, atol=1e-3),
            "first_launch_s": first}

    wgs = ({}, {"work_group": (8, 32)}, {"work_group": (4, 64)}, {"work_group": (16, 16)},
           {"work_group": (1, 256)})
    img, _w, configs, space, expected = at.conv_problem(conv_n, wgs)
    d_in, d_out = _device_array(q, img), sycl.malloc_device(img.shape, F32, q)
    hand = next(c for c in configs if c[at.outputs_id] == 4 and
                c.get("work_group") == (4, 64))
    tuned_rows(f"autotune conv3x3 {conv_n}x{conv_n}", at.conv3x3_rows, configs, space,
               (d_in, d_out, np.int64(conv_n), np.int64(conv_n)), d_out, expected, hand,
               ["inp", "rows", "cols"])
    del d_in, d_out
    x, _taps, configs, space, expected = at.fir_problem(
        fir_n, ({}, {"work_group": (128,)}, {"work_group": (256,)}, {"work_group": (512,)}))
    dx, dy = _device_array(q, x), sycl.malloc_device((fir_n,), F32, q)
    tuned_rows(f"autotune fir {at.FIR_TAPS} taps {fir_n >> 20}M", at.fir_outputs, configs,
               space, (dx, dy), dy, expected, configs[0], ["x"])
    return res


def _ratio(a, b):
    if not a or not b or a.get("seconds") is None or b.get("seconds") is None:
        return None
    return a["seconds"] / b["seconds"]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="smaller sizes (a smoke test)")
    ap.add_argument("--json", default="gpu_bench.json")
    ap.add_argument("--only", default="conv,saxpy,reduction,launch,fir,build,autotune")
    args = ap.parse_args(argv)
    gpus = [d for d in sycl.device.get_devices() if d.backend.name == "cuda"]
    if not gpus:
        print("no CUDA device: nothing to measure", file=sys.stderr)
        return 1
    q = sycl.queue(gpus[0])
    try:
        import cupy as cp
    except Exception:  # noqa: BLE001
        cp = None
    try:
        import torch
        triton_conv = _triton_conv()
    except Exception:  # noqa: BLE001
        torch = triton_conv = None
    only = set(args.only.split(","))
    print(f"device: {gpus[0].name}; cupy {getattr(cp, '__version__', None)}, "
          f"torch {getattr(torch, '__version__', None)}")
    t = Table()
    summary = {}
    if "conv" in only:
        c = bench_conv(t, q, 1024 if args.quick else 8192, cp, torch, triton_conv)
        def best_of(keys):
            return min((c[k] for k in keys if c.get(k) and c[k]["ok"]),
                       key=lambda m: m["seconds"], default=None)
        best = best_of(("pysycl", "pysycl_nd", "pysycl_rows4", "pysycl_rows4_nd",
                        "pysycl_off", "pysycl_nd_off"))
        summary["conv_best_pysycl"] = best["impl"] if best else None
        summary["conv_pysycl_over_triton"] = _ratio(best, c.get("triton"))
        coarsened = best is not None and ("4 rows" in best["impl"] or
                                          best["note"].startswith("coarsened"))
        summary["conv_pysycl_over_cupy_literal_same_algorithm"] = _ratio(
            best, best_of(("cupy_rows4",)) if coarsened else c.get("cupy"))
        # The natural one-pixel kernel as the user writes it (coarsened by the compiler
        # under PYSYCL_COARSEN=auto) against Triton, and uncoarsened against CuPy's.
        summary["conv_pysycl_natural_over_triton"] = _ratio(
            best_of(("pysycl", "pysycl_nd")), c.get("triton"))
        summary["conv_pysycl_1px_over_cupy_1px"] = _ratio(
            best_of(("pysycl_off", "pysycl_nd_off")), c.get("cupy"))
        summary["conv_pysycl_over_memory_floor"] = _ratio(best, c.get("floor"))
    if "saxpy" in only:
        n = (1 << 20) if args.quick else (1 << 27)
        s = bench_saxpy(t, q, n, cp)
        fastest = min((m for m in (s["pysycl"], s.get("pysycl4")) if m and m["seconds"]),
                      key=lambda m: m["seconds"], default=None)
        if fastest and s["floor"]["seconds"]:
            summary["saxpy_best_pysycl"] = fastest["impl"]
            bw = 12 * n / fastest["seconds"]
            floor_bw = 8 * n / s["floor"]["seconds"]
            summary["saxpy_GBps"] = bw / 1e9
            summary["copy_GBps"] = floor_bw / 1e9
            summary["saxpy_fraction_of_copy_bandwidth"] = bw / floor_bw
            if s.get("cupy") and s["cupy"]["seconds"]:
                summary["cupy_saxpy_fraction_of_copy_bandwidth"] = \
                    12 * n / s["cupy"]["seconds"] / floor_bw
    if "reduction" in only:
        r = bench_reduction(t, q, (1 << 20) if args.quick else (1 << 24), cp)
        summary["reduction_pysycl_over_cupy_sum"] = _ratio(r["pysycl"], r.get("cupy"))
        summary["reduction_pysycl_over_memory_floor"] = _ratio(r["pysycl"], r["floor"])
    if "launch" in only:
        lr = bench_launch(t, q, cp, torch, 1000 if args.quick else 10_000)
        for label in ("pysycl q.parallel_for (default queue)",
                      "pysycl q.parallel_for (in_order queue)",
                      "pysycl q.parallel_for, CuPy array arguments",
                      "pysycl in_order queue, CuPy array arguments",
                      "pysycl q.parallel_for, PyTorch tensor arguments"):
            summary[f"launch_ratio_vs_cupy: {label}"] = _ratio(lr.get(label), lr.get("cupy"))
        summary["launch_ratio_vs_cupy: q.submit(cgf)"] = _ratio(
            lr.get("pysycl q.submit(cgf), cgf = h.parallel_for"), lr.get("cupy"))
        summary["launch_ratio_vs_cupy: arguments alternating"] = _ratio(
            lr.get("pysycl q.parallel_for, arguments alternating"),
            lr.get("cupy, arguments alternating"))
    if "fir" in only:
        f = bench_fir(t, q, (1 << 20) if args.quick else (1 << 24))
        for key in sorted({k[0] for k in f}):
            summary[f"fir_{key}_taps_literal_over_arg"] = _ratio(f[(key, "spec")],
                                                                f[(key, "arg")])
    if "build" in only:
        b = bench_build(t, q)
        ours = b.get("build: new spec-constant value set")
        summary["build_new_value_pysycl_over_triton_constexpr"] = _ratio(ours, b.get("triton new_value"))
        summary["build_new_value_pysycl_over_cupy_define"] = _ratio(ours, b.get("cupy new_value"))
    if "autotune" in only:
        a = bench_autotune(t, q, 1024 if args.quick else 8192,
                           (1 << 20) if args.quick else (1 << 24))
        for wl, r in a.items():
            summary[f"{wl}: tuned_over_hand_picked"] = _ratio(r["tuned"], r["hand"])
            summary[f"{wl}: tuned_over_sweep_best"] = _ratio(r["tuned"], r["sweep"])
            summary[f"{wl}: first_launch_s"] = r["first_launch_s"]
    print("\n| workload | implementation | time (us) | ok |\n|---|---|---|---|")
    for r in t.rows:
        sec = f"{r['seconds'] * 1e6:.2f}" if r["seconds"] is not None else "-"
        print(f"| {r['workload']} | {r['impl']} | {sec} | {'ok' if r['ok'] else 'WRONG ' + r['note']} |")
    print("\nsummary:")
    for k, v in summary.items():
        print(f"  {k}: {v:.3f}" if isinstance(v, float) else f"  {k}: {v}")
    with open(args.json, "w") as fh:
        json.dump({"device": gpus[0].name, "python": platform.python_version(),
                   "rows": t.rows, "summary": summary}, fh, indent=1, default=str)
    return 0


if __name__ == "__main__":
    sys.exit(main())
