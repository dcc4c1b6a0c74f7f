"""Kernels run under ``PYSYCL_COARSEN`` by ``test_coarsening.py``, each in a process of
its own: ``python coarsen_cases.py BACKEND INDEX`` checks every case against NumPy on
random data and prints one line per case, ``<name> <dimension>x<factor>`` for a
coarsened kernel or ``<name> -`` for one that is not; a wrong result raises (the
process then fails)."""
from __future__ import annotations

import sys

import numpy as np

import pysycl as sycl
from pysycl.bundle import toolchain
from pysycl.bundle.launch import get_launcher

F32 = np.float32
I64 = np.int64
R = sycl.properties(sycl.restrict)
RNG = np.random.default_rng()


# Kernels that can be coarsened ------------------------------------------------------------
@sycl.kernel
def conv_usm(it: sycl.item[2], inp: sycl.annotated_ptr[F32, R], out: sycl.annotated_ptr[F32, R],
             coeff: sycl.global_ptr[F32], rows: I64, cols: I64):
    r0 = it.get_id(0)
    c0 = it.get_id(1)
    acc = F32(0)
    for i in range(-1, 2):
        r = r0 + i
        if r >= 0 and r < rows:
            for j in range(-1, 2):
                c = c0 + j
                if c >= 0 and c < cols:
                    acc += coeff[(i + 1) * 3 + j + 1] * inp[r * cols + c]
    out[r0 * cols + c0] = acc


@sycl.kernel
def conv_acc(it: sycl.item[2], inp: sycl.accessor[F32, 2, sycl.read_only],
             coeff: sycl.accessor[F32, 2, sycl.read_only],
             out: sycl.accessor[F32, 2, sycl.write_only]):
    rows = it.get_range(0)
    cols = it.get_range(1)
    acc = F32(0)
    for i in range(-1, 2):
        r = it.get_id(0) + i
        if 0 <= r < rows:
            for j in range(-1, 2):
                c = it.get_id(1) + j
                if 0 <= c < cols:
                    acc += coeff[i + 1, j + 1] * inp[r, c]
    out[it] = acc


@sycl.kernel
def queries_2d(it: sycl.item[2], out: sycl.global_ptr[I64]):
    # Everything the item says, one slot each, at the item's linear position.
    lin = it.get_linear_id()
    base = lin * 7
    out[base] = it.get_id(0)
    out[base + 1] = it.get_id(1)
    out[base + 2] = it.get_range(0)
    out[base + 3] = it.get_range(1)
    out[base + 4] = it.get_offset(0)
    out[base + 5] = it.get_offset(1)
    out[base + 6] = lin


@sycl.kernel
def queries_3d(it: sycl.item[3], out: sycl.global_ptr[I64]):
    lin = it.get_linear_id()
    out[lin] = (it.get_id(0) * 10000 + it.get_id(1) * 100 + it.get_id(2)) * 1000 + \
        it.get_range(0) * 100 + it.get_range(1) * 10 + it.get_range(2)


@sycl.kernel
def stencil_1d(it: sycl.item[1], x: sycl.global_ptr[F32], y: sycl.global_ptr[F32], n: I64):
    i = it.get_id(0)
    if i >= n:
        return            # a range larger than the data: the tail does nothing
    left = x[i - 1] if i > 0 else F32(0)
    right = x[i + 1] if i + 1 < n else F32(0)
    y[i] = left + 2 * x[i] + right


@sycl.kernel
def nd_other_dim(nd: sycl.nd_item[2], out: sycl.global_ptr[I64]):
    # Local and group queries along dimension 1 only: dimension 0 can be coarsened.
    r = nd.get_global_id(0)
    c = nd.get_global_id(1)
    w = nd.get_global_range(1)
    out[r * w + c] = r * 100000 + nd.get_local_id(1) * 1000 + nd.get_group(1) * 10 + \
        nd.get_global_range(0)


@sycl.kernel
def histogram(it: sycl.item[1], data: sycl.global_ptr[np.int32], bins: sycl.global_ptr[np.int32]):
    # Each work-item still adds once: the counts are the same.
    sycl.atomic_ref(bins, data[it.get_id(0)]).fetch_add(np.int32(1))


# Kernels with reductions: every copy of a work-item combines into its one accumulator.
@sycl.kernel
def red_scalars(it: sycl.item[1], x: sycl.global_ptr[F32], k: sycl.global_ptr[np.int32],
                s: sycl.reducer[F32], p: sycl.reducer[I64, sycl.multiplies],
                lo: sycl.reducer[np.int32, sycl.minimum], hi: sycl.reducer[F32, sycl.maximum],
                xo: sycl.reducer[np.uint32, sycl.bit_xor],
                bits: sycl.reducer[np.int32, sycl.bit_or]):
    i = it.get_id(0)
    s += x[i]
    p *= I64(k[i] % 8 - 4)
    lo.combine(k[i])
    hi.combine(x[i])
    xo ^= np.uint32(k[i])
    bits |= k[i] & (k[i] >> 20)


@sycl.kernel
def red_span(it: sycl.item[1], x: sycl.global_ptr[np.int32], h: sycl.reducer[np.int32, 16],
             top: sycl.reducer[np.int32, 16, sycl.maximum]):
    v = x[it.get_id(0)]
    if v < 0:
        return            # an early return ends the copy, not the thread's others
    h[v % 16] += 1
    top[v % 16].combine(v)


@sycl.kernel
def red_buffer(it: sycl.item[1], a: sycl.accessor[F32, 1, sycl.read_only],
               s: sycl.reducer[F32], n: sycl.reducer[I64]):
    s += a[it]
    n += I64(1)


@sycl.kernel
def red_2d(it: sycl.item[2], x: sycl.global_ptr[F32], s: sycl.reducer[F32],
           m: sycl.reducer[I64, sycl.maximum]):
    s += x[it.get_linear_id()]
    m.combine(it.get_id(0) * 1000 + it.get_range(0))


@sycl.kernel
def red_nd(nd: sycl.nd_item[1], x: sycl.global_ptr[F32], s: sycl.reducer[F32]):
    s += x[nd.get_global_id(0)]


# Kernels that cannot ------------------------------------------------------------------------
@sycl.kernel
def with_barrier(nd: sycl.nd_item[1], x: sycl.global_ptr[F32], y: sycl.global_ptr[F32],
                 scratch: sycl.local_accessor[F32, 1]):
    i = nd.get_global_id(0)
    lid = nd.get_local_id(0)
    scratch[lid] = x[i]
    sycl.group_barrier(nd.get_group())
    y[i] = scratch[nd.get_local_range(0) - 1 - lid]


@sycl.kernel(properties=sycl.properties(sycl.work_group_size(4)))
def with_wg_size(it: sycl.item[1], x: sycl.global_ptr[F32]):
    x[it.get_id(0)] = x[it.get_id(0)] * 3


@sycl.kernel
def with_local_linear(nd: sycl.nd_item[1], out: sycl.global_ptr[I64]):
    out[nd.get_global_id(0)] = nd.get_local_linear_id()


# The cases -----------------------------------------------------------------------------------
def conv_reference(image, coeff):
    rows, cols = image.shape
    padded = np.pad(image, 1)
    out = np.zeros_like(image)
    for i in range(3):
        for j in range(3):
            out += coeff[i, j] * padded[i:i + rows, j:j + cols]
    return out


def plan(kernel, q) -> str:
    c = get_launcher(kernel, q.get_device()).coarsening
    return "-" if c is None else f"{c.dim}x{c.factor}"


def check(got, expected, what):
    if not np.allclose(got, expected, rtol=1e-5, atol=1e-5):
        raise AssertionError(f"{what}: wrong result\n{got}\nexpected\n{expected}")


def case_conv_usm(q):
    for rows, cols in ((13, 17), (64, 33), (1, 5), (2, 3), (9, 1)):
        img = RNG.standard_normal((rows, cols), dtype=F32)
        coeff = RNG.standard_normal((3, 3), dtype=F32)
        a = sycl.malloc_shared((rows, cols), F32, q)
        a[:] = img
        o = sycl.malloc_shared((rows, cols), F32, q)
        o[:] = np.nan
        w = sycl.malloc_shared(9, F32, q)
        w[:] = coeff.ravel()
        q.parallel_for(sycl.range(rows, cols), conv_usm, a, o, w, I64(rows), I64(cols)).wait()
        check(o.to_numpy(), conv_reference(img, coeff), f"conv_usm {rows}x{cols}")
    return plan(conv_usm, q)


def case_conv_acc(q):
    for shape in ((7, 13), (32, 8), (5, 5)):
        img = RNG.standard_normal(shape, dtype=F32)
        coeff = RNG.standard_normal((3, 3), dtype=F32)
        out = np.full(shape, np.nan, F32)
        with sycl.buffer(img) as b_in, sycl.buffer(coeff) as b_co, sycl.buffer(out) as b_out:
            q.submit(lambda cgh: cgh.parallel_for(
                sycl.range(*shape), conv_acc, sycl.accessor(b_in, cgh, sycl.read_only),
                sycl.accessor(b_co, cgh, sycl.read_only),
                sycl.accessor(b_out, cgh, sycl.write_only, sycl.no_init))).wait()
        check(out, conv_reference(img, coeff), f"conv_acc {shape}")
    return plan(conv_acc, q)


def queries_reference(shape, offset):
    rows, cols = shape
    out = np.zeros((rows * cols, 7), I64)
    for r in range(rows):
        for c in range(cols):
            lin = r * cols + c
            out[lin] = (r + offset[0], c + offset[1], rows, cols, offset[0], offset[1], lin)
    return out


def case_queries_2d(q):
    shape = (int(RNG.integers(5, 12)), int(RNG.integers(2, 7)))
    out = sycl.malloc_shared(shape[0] * shape[1] * 7, I64, q)
    q.parallel_for(sycl.range(*shape), queries_2d, out).wait()
    check(out.to_numpy().reshape(-1, 7), queries_reference(shape, (0, 0)), "queries_2d")
    if toolchain.driver_for(q.get_device()).supports_global_offset:
        shape, offset = (6, 4), (int(RNG.integers(1, 9)), 3)
        out = sycl.malloc_shared(shape[0] * shape[1] * 7, I64, q)
        q.parallel_for(sycl.nd_range(sycl.range(*shape), sycl.range(2, 2),
                                     sycl.id(*offset)), queries_2d, out).wait()
        check(out.to_numpy().reshape(-1, 7), queries_reference(shape, offset),
              "queries_2d with an offset")
    return plan(queries_2d, q)


def case_queries_3d(q):
    shape = (5, 3, 4)
    out = sycl.malloc_shared(60, I64, q)
    q.parallel_for(sycl.range(*shape), queries_3d, out).wait()
    i, j, k = np.indices(shape)
    expected = ((i * 10000 + j * 100 + k) * 1000 + 5 * 100 + 3 * 10 + 4).ravel()
    check(out.to_numpy(), expected, "queries_3d")
    return plan(queries_3d, q)


def case_stencil_1d(q):
    for n, launched in ((37, 37), (16, 21), (1, 3)):
        x = RNG.standard_normal(n, dtype=F32)
        dx = sycl.malloc_shared(n, F32, q)
        dx[:] = x
        dy = sycl.malloc_shared(n, F32, q)
        q.parallel_for(launched, stencil_1d, dx, dy, I64(n)).wait()
        padded = np.pad(x, 1)
        check(dy.to_numpy(), padded[:-2] + 2 * x + padded[2:], f"stencil_1d {n}")
    return plan(stencil_1d, q)


def case_nd_other_dim(q):
    shape, local = (12, 8), (2, 4)
    out = sycl.malloc_shared(96, I64, q)
    q.parallel_for(sycl.nd_range(sycl.range(*shape), sycl.range(*local)), nd_other_dim,
                   out).wait()
    r, c = np.indices(shape)
    expected = r * 100000 + (c % 4) * 1000 + (c // 4) * 10 + 12
    check(out.to_numpy().reshape(shape), expected, "nd_other_dim")
    return plan(nd_other_dim, q)


def case_histogram(q):
    data = RNG.integers(0, 16, 1001).astype(np.int32)
    dd = sycl.malloc_shared(data.size, np.int32, q)
    dd[:] = data
    bins = sycl.malloc_shared(16, np.int32, q)
    bins[:] = 0
    q.parallel_for(data.size, histogram, dd, bins).wait()
    check(bins.to_numpy(), np.bincount(data, minlength=16), "histogram")
    return plan(histogram, q)


def case_with_barrier(q):
    x = RNG.standard_normal(64, dtype=F32)
    dx = sycl.malloc_shared(64, F32, q)
    dx[:] = x
    dy = sycl.malloc_shared(64, F32, q)
    q.submit(lambda cgh: cgh.parallel_for(sycl.nd_range(sycl.range(64), sycl.range(8)),
                                          with_barrier, dx, dy,
                                          cgh.local_accessor(F32, 8))).wait()
    check(dy.to_numpy(), x.reshape(8, 8)[:, ::-1].ravel(), "with_barrier")
    return plan(with_barrier, q)


def case_with_wg_size(q):
    x = RNG.standard_normal(16, dtype=F32)
    dx = sycl.malloc_shared(16, F32, q)
    dx[:] = x
    q.parallel_for(16, with_wg_size, dx).wait()
    check(dx.to_numpy(), x * 3, "with_wg_size")
    return plan(with_wg_size, q)


def case_with_local_linear(q):
    out = sycl.malloc_shared(24, I64, q)
    q.parallel_for(sycl.nd_range(sycl.range(24), sycl.range(6)), with_local_linear, out).wait()
    check(out.to_numpy(), np.arange(24) % 6, "with_local_linear")
    return plan(with_local_linear, q)


INIT = sycl.property.reduction.initialize_to_identity()
SIZES = (1, 7, 1001, 4099)    # not divisible by the factors the tests force (4, 16)


def shared(q, host):
    a = sycl.malloc_shared(host.shape, host.dtype, q)
    a[:] = host
    return a


def case_red_scalars(q):
    for n in SIZES:
        x = RNG.integers(-50, 50, n).astype(F32)        # integers: exact float sums
        k = RNG.integers(-2**31, 2**31, n, dtype=np.int32)
        outs = [shared(q, np.array([v], t)) for v, t in
                ((1.5, F32), (3, I64), (0, np.int32), (0, F32), (0xf0f0, np.uint32),
                 (4, np.int32))]
        q.parallel_for(sycl.range(n), red_scalars, shared(q, x), shared(q, k),
                       sycl.reduction(outs[0], sycl.plus()),
                       sycl.reduction(outs[1], sycl.multiplies()),
                       sycl.reduction(outs[2], sycl.minimum(), INIT),
                       sycl.reduction(outs[3], sycl.maximum(), INIT),
                       sycl.reduction(outs[4], sycl.bit_xor()),
                       sycl.reduction(outs[5], sycl.bit_or(), INIT)).wait()
        with np.errstate(over="ignore"):
            prod = np.prod((k % 8 - 4).astype(I64)) * 3     # wraps as the kernel's does
        want = [x.sum() + F32(1.5), prod, k.min(), x.max(),
                np.bitwise_xor.reduce(k.view(np.uint32)) ^ np.uint32(0xf0f0),
                np.bitwise_or.reduce(k & (k >> 20))]
        got = [o.to_numpy()[0] for o in outs]
        for g, w, what in zip(got, want, ("sum", "product", "min", "max", "xor", "or")):
            if g != w:
                raise AssertionError(f"red_scalars {what} of {n}: {g}, expected {w}")
    return plan(red_scalars, q)


def case_red_span(q):
    for n in SIZES:
        x = RNG.integers(-10**5, 10**6, n).astype(np.int32)
        h = shared(q, np.arange(16, dtype=np.int32))
        top = shared(q, np.zeros(16, np.int32))
        q.parallel_for(n, red_span, shared(q, x), sycl.reduction(sycl.span(h, 16), sycl.plus()),
                       sycl.reduction(sycl.span(top), sycl.maximum(), INIT)).wait()
        kept = x[x >= 0]
        want_top = np.full(16, np.iinfo(np.int32).min, np.int32)
        np.maximum.at(want_top, kept % 16, kept)
        exact(h.to_numpy(), np.bincount(kept % 16, minlength=16) + np.arange(16), "red_span")
        exact(top.to_numpy(), want_top, "red_span top")
    return plan(red_span, q)


def case_red_buffer(q):
    for n in SIZES:
        x = RNG.integers(-50, 50, n).astype(F32)
        total, count = np.array([123.0], F32), np.array([7], I64)
        with sycl.buffer(x) as bx, sycl.buffer(total) as bt, sycl.buffer(count) as bn:
            q.submit(lambda cgh: cgh.parallel_for(
                n, red_buffer, sycl.accessor(bx, cgh, sycl.read_only),
                sycl.reduction(bt, cgh, sycl.plus(), INIT),
                sycl.reduction(bn, cgh, sycl.plus()))).wait()
        exact(total, [x.sum()], "red_buffer sum")
        exact(count, [n + 7], "red_buffer count")
    return plan(red_buffer, q)


def case_red_2d(q):
    for rows, cols in ((13, 5), (1, 3), (33, 2)):
        x = RNG.integers(-50, 50, (rows, cols)).astype(F32)
        s, m = shared(q, np.array([0.5], F32)), shared(q, np.array([-1], I64))
        q.parallel_for(sycl.range(rows, cols), red_2d, shared(q, x),
                       sycl.reduction(s, sycl.plus()), sycl.reduction(m, sycl.maximum())).wait()
        exact(s.to_numpy(), [x.sum() + F32(0.5)], "red_2d sum")
        exact(m.to_numpy(), [(rows - 1) * 1000 + rows], "red_2d max")
    return plan(red_2d, q)


def case_red_nd(q):
    x = RNG.integers(-50, 50, 64).astype(F32)
    s = shared(q, np.zeros(1, F32))
    q.parallel_for(sycl.nd_range(sycl.range(64), sycl.range(8)), red_nd, shared(q, x),
                   sycl.reduction(s, sycl.plus())).wait()
    exact(s.to_numpy(), [x.sum()], "red_nd")
    return plan(red_nd, q)


def exact(got, expected, what):
    if not np.array_equal(np.asarray(got), np.asarray(expected)):
        raise AssertionError(f"{what}: wrong result\n{got}\nexpected\n{expected}")


CASES = {name[5:]: fn for name, fn in sorted(globals().items()) if name.startswith("case_")}


def main(backend: str, index: int) -> None:
    dev = [d for d in sycl.device.get_devices() if d.backend.name == backend][index]
    q = sycl.queue(dev)
    for name, case in CASES.items():
        print(name, case(q), flush=True)


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]))
