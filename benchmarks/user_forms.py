"""Kernels written the way users write them (pointers with ``row * w + col`` indexing,
bounds from scalar arguments, ``continue``/``break`` guards, early returns), beside the
forms of ``suite.py`` and the Numba peers written both ways. The native CPU's row split
(``passes/split_item_range``) should make the user forms as fast as the others."""
from __future__ import annotations

import numpy as np

import pysycl as sycl

from . import kernels as K
from . import peers_numba
from .harness import Report
from .suite import RNG, _backend, _copy_floor, _timed, _usm, device_label


def _numba(q) -> bool:
    return _backend(q) == "native_cpu" and peers_numba.available()


def conv3x3_pointers(report: Report, q, n: int) -> None:
    """The 3x3 convolution on pointers with ``continue`` guards, and on accessors."""
    dev = device_label(q.get_device())
    wl = f"conv3x3 {n}x{n}, pointers + continue"
    img = RNG.standard_normal((n, n), dtype=np.float32)
    coeff = RNG.standard_normal((3, 3), dtype=np.float32)
    padded = np.pad(img, 1)
    expected = sum(coeff[i, j] * padded[i:i + n, j:j + n] for i in range(3) for j in range(3))
    d_in, d_co = _usm(q, img.ravel()), _usm(q, coeff.ravel())
    d_out = sycl.malloc_shared((n * n,), np.float32, q)
    b_in, b_out = sycl.buffer(img), sycl.buffer(np.empty_like(img))

    def launch_ptr():
        q.parallel_for(sycl.range(n, n), K.conv3x3_ptr_continue, d_in, d_co, d_out,
                       np.int32(n), np.int32(n)).wait()

    def launch_acc():
        def cgf(cgh):
            cgh.parallel_for(sycl.range(n, n), K.conv3x3_args, d_co,
                             sycl.accessor(b_in, cgh, sycl.read_only),
                             sycl.accessor(b_out, cgh, sycl.write_only, sycl.no_init))
        q.submit(cgf).wait()

    def read_acc():
        launch_acc()
        with sycl.host_accessor(b_out, sycl.read_only) as v:
            return np.array(v)
    report.run(wl, dev, "pysycl (pointers, continue)",
               _timed(lambda: (launch_ptr(), np.asarray(d_out).reshape(n, n))[1], launch_ptr),
               expected, is_pysycl=True)
    report.run(wl, dev, "pysycl (accessors, nested if)", _timed(read_acc, launch_acc),
               expected, is_pysycl=True)
    if _numba(q):
        nout = np.empty_like(img)
        flat = coeff.ravel().copy()
        report.run(wl, dev, "numba parallel",
                   lambda: (peers_numba.conv3x3(img, coeff, nout), nout)[1], expected)
        report.run(wl, dev, "numba parallel (continue, flat coeff)",
                   lambda: (peers_numba.conv3x3_flat_continue(img, flat, nout), nout)[1],
                   expected)
    _copy_floor(report, wl, dev, img)
    report.flush()
    b_in.close(); b_out.close()
    for a in (d_in, d_co, d_out):
        sycl.free(a, q)


def fir_guarded(report: Report, q, n: int, ntaps: int = 16) -> None:
    """FIR over an unpadded signal, ``break`` at its end, tap count a runtime argument."""
    dev = device_label(q.get_device())
    wl = f"fir {ntaps} taps, {n // (1 << 20)}M, break guard"
    x = RNG.standard_normal(n, dtype=np.float32)
    taps = RNG.standard_normal(ntaps, dtype=np.float32)
    expected = np.convolve(np.concatenate([x, np.zeros(ntaps, np.float32)]), taps[::-1],
                           mode="valid")[:n].astype(np.float32)
    dx, dt, dy = _usm(q, x), _usm(q, taps), sycl.malloc_shared((n,), np.float32, q)
    dxp = _usm(q, np.concatenate([x, np.zeros(ntaps, np.float32)]))

    def launch_guarded():
        q.parallel_for(sycl.range(n), K.fir_ptr_guarded, dx, dt, dy, np.int32(n),
                       np.int32(ntaps)).wait()

    def launch_padded():
        q.parallel_for(sycl.range(n), K.fir_args, dxp, dt, dy, np.int32(ntaps)).wait()

    def result(launch):
        return lambda: (launch(), np.asarray(dy))[1]
    tol = {"rtol": 1e-3, "atol": 1e-3}
    report.run(wl, dev, "pysycl (pointers, break)", _timed(result(launch_guarded),
                                                           launch_guarded),
               expected, is_pysycl=True, **tol)
    report.run(wl, dev, "pysycl (padded input, no guard)", _timed(result(launch_padded),
                                                                  launch_padded),
               expected, is_pysycl=True, **tol)
    if _numba(q):
        ny = np.empty(n, np.float32)
        report.run(wl, dev, "numba parallel (break)",
                   lambda: (peers_numba.fir_guarded(x, taps, ny, ntaps), ny)[1], expected,
                   **tol)
    _copy_floor(report, wl, dev, x)
    report.flush()
    for a in (dx, dt, dy, dxp):
        sycl.free(a, q)


def stencil_early_exit(report: Report, q, n: int) -> None:
    """A 5-point Jacobi step whose border items copy and return early."""
    dev = device_label(q.get_device())
    wl = f"stencil5 {n}x{n}, early return"
    a = RNG.standard_normal((n, n), dtype=np.float32)
    expected = a.copy()
    expected[1:-1, 1:-1] = np.float32(0.25) * (a[:-2, 1:-1] + a[2:, 1:-1] + a[1:-1, :-2] +
                                               a[1:-1, 2:])
    da, db = _usm(q, a.ravel()), sycl.malloc_shared((n * n,), np.float32, q)

    def launch():
        q.parallel_for(sycl.range(n, n), K.stencil5_early_exit, da, db, np.int32(n),
                       np.int32(n)).wait()
    report.run(wl, dev, "pysycl (pointers, early return)",
               _timed(lambda: (launch(), np.asarray(db).reshape(n, n))[1], launch), expected,
               is_pysycl=True)
    if _numba(q):
        nb = np.empty_like(a)
        report.run(wl, dev, "numba parallel (continue)",
                   lambda: (peers_numba.stencil5(a, nb), nb)[1], expected)
    _copy_floor(report, wl, dev, a)
    report.flush()
    for x in (da, db):
        sycl.free(x, q)


def run(report: Report, q, quick: bool = False) -> None:
    """All three at the suite's sizes (``--quick``: smaller)."""
    n2 = 1024 if quick else 4096
    conv3x3_pointers(report, q, n2)
    fir_guarded(report, q, (1 << 20) if quick else (4 << 20))
    stencil_early_exit(report, q, n2)
