"""Native CPU USM placement: large blocks start on a 4 KiB boundary, so that arrays
allocated one after another sit at the same offset in their pages (a store to ``y[i]``
and a load of ``x[i + k]`` then differ in their low 12 address bits whenever they are
far apart in memory order), small blocks keep the 64-byte cache-line alignment."""
from __future__ import annotations

import numpy as np
import pytest

import pysycl as sycl
from pysycl.backends.native_cpu import driver as native_driver

F32 = np.float32
ntaps_id = sycl.specialization_id(np.int32, 4)


@sycl.kernel
def _fir(it: sycl.item[1], h: sycl.kernel_handler, x: sycl.global_ptr[F32],
         taps: sycl.global_ptr[F32], y: sycl.global_ptr[F32]):
    i = it.get_id(0)
    acc = F32(0)
    for k in range(h.get_specialization_constant(ntaps_id)):
        acc += taps[k] * x[i + k]
    y[i] = acc


@pytest.fixture(scope="module")
def native_queue():
    for dev in sycl.device.get_devices():
        if str(dev.backend).endswith("native_cpu"):
            return sycl.queue(dev)
    pytest.skip("no native_cpu device")


@pytest.mark.parametrize("kind", ["device", "shared", "host"])
def test_consecutive_large_blocks_share_their_page_offset(native_queue, kind):
    """Input then output, as a program allocates them: both page-aligned (before, the
    output came a few cache lines past the input within its page)."""
    n = 1 << 16
    blocks = [getattr(sycl, f"malloc_{kind}")((n + extra,), F32, native_queue)
              for extra in (7, 0, 33, 0)]
    try:
        assert [b.ptr % native_driver.PAGE_ALIGNMENT for b in blocks] == [0, 0, 0, 0]
    finally:
        for b in blocks:
            sycl.free(b, native_queue)


def test_small_blocks_stay_cache_line_aligned(native_queue):
    rng = np.random.default_rng(3)
    sizes = rng.integers(1, native_driver.LARGE_BLOCK // 4, 16)
    blocks = [sycl.malloc_shared((int(s),), F32, native_queue) for s in sizes]
    try:
        assert all(b.ptr % native_driver.ALIGNMENT == 0 for b in blocks)
        # an aligned_alloc asking for more still gets it
        big = sycl.aligned_alloc_shared(8192, native_driver.LARGE_BLOCK, np.uint8, native_queue)
        assert big.ptr % 8192 == 0
        sycl.free(big, native_queue)
    finally:
        for b in blocks:
            sycl.free(b, native_queue)


@pytest.mark.parametrize("ntaps", [7, 16, 33])
def test_fir_on_page_aligned_blocks_matches_numpy(native_queue, ntaps):
    n = 1 << 17
    rng = np.random.default_rng(ntaps)
    x = rng.standard_normal(n + ntaps, dtype=F32)
    taps = rng.standard_normal(ntaps, dtype=F32)
    dx = sycl.malloc_shared((n + ntaps,), F32, native_queue)
    dt = sycl.malloc_shared((ntaps,), F32, native_queue)
    dy = sycl.malloc_shared((n,), F32, native_queue)
    try:
        np.asarray(dx)[...] = x
        np.asarray(dt)[...] = taps

        def cgf(cgh):
            cgh.set_specialization_constant(ntaps_id, np.int32(ntaps))
            cgh.parallel_for(sycl.range(n), _fir, dx, dt, dy)
        native_queue.submit(cgf).wait()
        got = np.asarray(dy).copy()
    finally:
        for d in (dx, dt, dy):
            sycl.free(d, native_queue)
    expected = np.correlate(x.astype(np.float64), taps.astype(np.float64), mode="valid")[:n]
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4)
