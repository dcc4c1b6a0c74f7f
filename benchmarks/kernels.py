"""The benchmark workloads as pysycl kernels (the same algorithms as the peers)."""
from __future__ import annotations

import numpy as np

import pysycl as sycl

f32 = np.float32
coeff_id = sycl.specialization_id(np.dtype((np.float32, (3, 3))))
ntaps_id = sycl.specialization_id(np.int32, 16)
TILE = 16
WG = 256


@sycl.kernel
def conv3x3_spec(it: sycl.item[2], h: sycl.kernel_handler,
                 inp: sycl.accessor[f32, 2, sycl.read_only],
                 out: sycl.accessor[f32, 2, sycl.write_only]):
    coeff = h.get_specialization_constant(coeff_id)
    rows = inp.get_range(0)
    cols = inp.get_range(1)
    acc = f32(0)
    for i in range(-1, 2):
        r = it.get_id(0) + i
        if r >= 0 and r < rows:
            for j in range(-1, 2):
                c = it.get_id(1) + j
                if c >= 0 and c < cols:
                    acc += coeff[i + 1][j + 1] * inp[r, c]
    out[it] = acc


@sycl.kernel
def conv3x3_args(it: sycl.item[2], coeff: sycl.global_ptr[f32],
                 inp: sycl.accessor[f32, 2, sycl.read_only],
                 out: sycl.accessor[f32, 2, sycl.write_only]):
    rows = inp.get_range(0)
    cols = inp.get_range(1)
    acc = f32(0)
    for i in range(-1, 2):
        r = it.get_id(0) + i
        if r >= 0 and r < rows:
            for j in range(-1, 2):
                c = it.get_id(1) + j
                if c >= 0 and c < cols:
                    acc += coeff[(i + 1) * 3 + j + 1] * inp[r, c]
    out[it] = acc


@sycl.kernel
def fir_spec(it: sycl.item[1], h: sycl.kernel_handler, x: sycl.global_ptr[f32],
             taps: sycl.global_ptr[f32], y: sycl.global_ptr[f32]):
    ntaps = h.get_specialization_constant(ntaps_id)
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
def saxpy(it: sycl.item[1], a: f32, x: sycl.global_ptr[f32], y: sycl.global_ptr[f32]):
    i = it.get_id(0)
    y[i] = a * x[i] + y[i]


@sycl.kernel
def empty(it: sycl.item[1], a: sycl.global_ptr[f32], b: sycl.global_ptr[f32]):
    pass


@sycl.kernel
def reduce_sum(nd: sycl.nd_item[1], x: sycl.global_ptr[f32], total: sycl.global_ptr[f32],
               scratch: sycl.local_accessor[f32, 1]):
    lid = nd.get_local_id(0)
    scratch[lid] = x[nd.get_global_id(0)]
    stride = nd.get_local_range(0) // 2
    while stride > 0:
        sycl.group_barrier(nd.get_group())
        if lid < stride:
            scratch[lid] += scratch[lid + stride]
        stride //= 2
    if lid == 0:
        sycl.atomic_ref(total, 0).fetch_add(scratch[0])


@sycl.kernel
def reduction_sum(it: sycl.item[1], x: sycl.global_ptr[f32], total: sycl.reducer[f32]):
    """A 16M float32 sum as SYCL 2020 writes it (sycl.reduction, 4.10.6)."""
    total += x[it.get_id(0)]


@sycl.kernel
def histogram(it: sycl.item[1], x: sycl.global_ptr[np.int32], bins: sycl.global_ptr[np.int32],
              nbins: np.int32):
    b = x[it.get_id(0)] % nbins
    sycl.atomic_ref(bins, b).fetch_add(np.int32(1))


@sycl.kernel
def matmul_tiled(nd: sycl.nd_item[2], a: sycl.global_ptr[f32], b: sycl.global_ptr[f32],
                 c: sycl.global_ptr[f32], n: np.int64,
                 ta: sycl.local_accessor[f32, 2], tb: sycl.local_accessor[f32, 2]):
    row = nd.get_global_id(0)
    col = nd.get_global_id(1)
    lr = nd.get_local_id(0)
    lc = nd.get_local_id(1)
    acc = f32(0)
    for t in range(n // TILE):
        ta[lr, lc] = a[row * n + t * TILE + lc]
        tb[lr, lc] = b[(t * TILE + lr) * n + col]
        sycl.group_barrier(nd.get_group())
        for k in range(TILE):
            acc += ta[lr, k] * tb[k, lc]
        sycl.group_barrier(nd.get_group())
    c[row * n + col] = acc


HIST_WG = 64        # work-items per group of the privatised histogram
HIST_CHUNK = 4096   # input elements per work-item


@sycl.kernel
def histogram_local(nd: sycl.nd_item[1], x: sycl.global_ptr[np.int32],
                    bins: sycl.global_ptr[np.int32], n: np.int64, nbins: np.int32,
                    hist: sycl.local_accessor[np.int32, 1]):
    """Per-work-group histogram in local memory, merged into ``bins`` at the end: the
    privatised algorithm of the Numba peer (per-chunk histograms, then a merge)."""
    lid = nd.get_local_id(0)
    wg = nd.get_local_range(0)
    for b in range(lid, nbins, wg):
        hist[b] = np.int32(0)
    sycl.group_barrier(nd.get_group())
    lo = nd.get_global_id(0) * HIST_CHUNK
    hi = min(lo + HIST_CHUNK, n)
    for i in range(lo, hi):
        sycl.atomic_ref(hist, x[i] % nbins).fetch_add(np.int32(1))
    sycl.group_barrier(nd.get_group())
    for b in range(lid, nbins, wg):
        sycl.atomic_ref(bins, b).fetch_add(hist[b])


# The same algorithms written the way users write them: pointers with flattened
# ``row * w + col`` indexing, bounds from scalar arguments, ``continue``/``break``
# guards and early returns (benchmarks/user_forms.py).
@sycl.kernel
def conv3x3_ptr_continue(it: sycl.item[2], inp: sycl.global_ptr[f32],
                         coeff: sycl.global_ptr[f32], out: sycl.global_ptr[f32],
                         h: np.int32, w: np.int32):
    row = it.get_id(0)
    col = it.get_id(1)
    acc = f32(0)
    for i in range(-1, 2):
        r = row + i
        if r < 0 or r >= h:
            continue
        for j in range(-1, 2):
            c = col + j
            if c < 0 or c >= w:
                continue
            acc += coeff[(i + 1) * 3 + (j + 1)] * inp[r * w + c]
    out[row * w + col] = acc


@sycl.kernel
def fir_ptr_guarded(it: sycl.item[1], x: sycl.global_ptr[f32], taps: sycl.global_ptr[f32],
                    y: sycl.global_ptr[f32], n: np.int32, ntaps: np.int32):
    """FIR over an unpadded signal: taps past its end are skipped."""
    i = it.get_id(0)
    acc = f32(0)
    for k in range(ntaps):
        if i + k >= n:
            break
        acc += taps[k] * x[i + k]
    y[i] = acc


@sycl.kernel
def stencil5_early_exit(it: sycl.item[2], a: sycl.global_ptr[f32], b: sycl.global_ptr[f32],
                        h: np.int32, w: np.int32):
    """A Jacobi step: the border is copied and the item returns early."""
    r = it.get_id(0)
    c = it.get_id(1)
    if r == 0 or c == 0 or r >= h - 1 or c >= w - 1:
        b[r * w + c] = a[r * w + c]
        return
    b[r * w + c] = f32(0.25) * (a[(r - 1) * w + c] + a[(r + 1) * w + c] +
                                a[r * w + c - 1] + a[r * w + c + 1])
