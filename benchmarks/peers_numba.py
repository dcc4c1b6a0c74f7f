"""The benchmark workloads written for Numba (``@njit(parallel=True)``), same algorithms
as the pysycl kernels, so ratios compare code generation and scheduling, not algorithms."""
from __future__ import annotations

import numpy as np

try:
    import numba
    from numba import njit, prange
except ImportError:  # the suite reports Numba as absent
    numba = None


def available() -> bool:
    return numba is not None


if numba is not None:
    @njit(parallel=True, fastmath=False, cache=False)
    def conv3x3(inp, coeff, out):
        rows, cols = inp.shape
        for r in prange(rows):
            for c in range(cols):
                acc = np.float32(0)
                for i in range(-1, 2):
                    rr = r + i
                    if rr >= 0 and rr < rows:
                        for j in range(-1, 2):
                            cc = c + j
                            if cc >= 0 and cc < cols:
                                acc += coeff[i + 1, j + 1] * inp[rr, cc]
                out[r, c] = acc

    @njit(parallel=True)
    def conv3x3_flat_continue(inp, coeff, out):
        """The convolution as Numba users also write it: flat coefficients, ``continue``
        guards."""
        rows, cols = inp.shape
        for r in prange(rows):
            for c in range(cols):
                acc = np.float32(0)
                for i in range(-1, 2):
                    rr = r + i
                    if rr < 0 or rr >= rows:
                        continue
                    for j in range(-1, 2):
                        cc = c + j
                        if cc < 0 or cc >= cols:
                            continue
                        acc += coeff[(i + 1) * 3 + j + 1] * inp[rr, cc]
                out[r, c] = acc

    @njit(parallel=True)
    def fir_guarded(x, taps, y, ntaps):
        n = x.shape[0]
        for i in prange(n):
            acc = np.float32(0)
            for k in range(ntaps):
                if i + k >= n:
                    break
                acc += taps[k] * x[i + k]
            y[i] = acc

    @njit(parallel=True)
    def stencil5(a, b):
        h, w = a.shape
        for r in prange(h):
            for c in range(w):
                if r == 0 or c == 0 or r >= h - 1 or c >= w - 1:
                    b[r, c] = a[r, c]
                    continue
                b[r, c] = np.float32(0.25) * (a[r - 1, c] + a[r + 1, c] + a[r, c - 1] +
                                              a[r, c + 1])

    @njit(parallel=True)
    def fir(x, taps, y, ntaps):
        n = y.shape[0]
        for i in prange(n):
            acc = np.float32(0)
            for k in range(ntaps):
                acc += taps[k] * x[i + k]
            y[i] = acc

    @njit(parallel=True)
    def saxpy(a, x, y):
        for i in prange(x.shape[0]):
            y[i] = a * x[i] + y[i]

    @njit(parallel=True)
    def reduce_sum(x):
        s = np.float32(0)
        for i in prange(x.shape[0]):
            s += x[i]
        return s

    @njit(parallel=True)
    def histogram(x, nbins, out):
        # Per-chunk private histograms merged at the end: the fastest Numba form.
        nchunks = 64
        n = x.shape[0]
        partial = np.zeros((nchunks, nbins), np.int32)
        for ch in prange(nchunks):
            lo = ch * n // nchunks
            hi = (ch + 1) * n // nchunks
            for i in range(lo, hi):
                partial[ch, x[i] % nbins] += 1
        for b in range(nbins):
            s = 0
            for ch in range(nchunks):
                s += partial[ch, b]
            out[b] = s

    @njit(parallel=True)
    def matmul(a, b, c):
        n, k = a.shape
        m = b.shape[1]
        for i in prange(n):
            for j in range(m):
                c[i, j] = 0
            for p in range(k):
                aip = a[i, p]
                for j in range(m):
                    c[i, j] += aip * b[p, j]
