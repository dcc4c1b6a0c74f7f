"""What the performance work relies on, checked structurally (no timing): the executor's
per-launch caches, the queue's fast submit path, parallel work-item loops in the LLVM
of fission kernels, forced unrolling of small constant loops, and local atomics as plain
read-modify-writes on the native CPU."""
from __future__ import annotations

import numpy as np
import pytest

import pysycl as sycl
from native_harness import acc_args, acc_type, kernel, llvm_text, load, spec
from pysycl.ir.core import Param
from pysycl.ir.types import I64, IndexSpaceType


def _native_queue(**kw):
    for dev in sycl.device.get_devices():
        if str(dev.backend).endswith("native_cpu"):
            return sycl.queue(dev, **kw)
    pytest.skip("no native_cpu device")


@sycl.kernel
def _bump(it: sycl.item[1], a: sycl.global_ptr[np.int64], n: np.int64):
    a[it.get_id(0)] = a[it.get_id(0)] + n


@sycl.kernel
def _tree_sum(nd: sycl.nd_item[1], x: sycl.global_ptr[np.float32],
              out: sycl.global_ptr[np.float32], scratch: sycl.local_accessor[np.float32, 1]):
    lid = nd.get_local_id(0)
    scratch[lid] = x[nd.get_global_id(0)]
    stride = nd.get_local_range(0) // 2
    while stride > 0:
        sycl.group_barrier(nd.get_group())
        if lid < stride:
            scratch[lid] += scratch[lid + stride]
        stride //= 2
    if lid == 0:
        out[nd.get_group(0)] = scratch[0]


@sycl.kernel
def _tiled(nd: sycl.nd_item[2], a: sycl.global_ptr[np.float32], b: sycl.global_ptr[np.float32],
           c: sycl.global_ptr[np.float32], n: np.int64,
           ta: sycl.local_accessor[np.float32, 2], tb: sycl.local_accessor[np.float32, 2]):
    row = nd.get_global_id(0)
    col = nd.get_global_id(1)
    lr = nd.get_local_id(0)
    lc = nd.get_local_id(1)
    acc = np.float32(0)
    for t in range(n // 4):
        ta[lr, lc] = a[row * n + t * 4 + lc]
        tb[lr, lc] = b[(t * 4 + lr) * n + col]
        sycl.group_barrier(nd.get_group())
        for k in range(4):
            acc += ta[lr, k] * tb[k, lc]
        sycl.group_barrier(nd.get_group())
    c[row * n + col] = acc


@sycl.kernel
def _local_hist(nd: sycl.nd_item[1], x: sycl.global_ptr[np.int32],
                bins: sycl.global_ptr[np.int32], hist: sycl.local_accessor[np.int32, 1]):
    lid = nd.get_local_id(0)
    hist[lid] = np.int32(0)
    sycl.group_barrier(nd.get_group())
    sycl.atomic_ref(hist, x[nd.get_global_id(0)] % 8).fetch_add(np.int32(1))
    sycl.group_barrier(nd.get_group())
    sycl.atomic_ref(bins, lid).fetch_add(hist[lid])


def test_repeated_launch_reuses_packed_arguments():
    q = _native_queue()
    a = sycl.malloc_shared((64,), np.int64, q)
    np.asarray(a)[...] = 0
    for _ in range(5):
        q.parallel_for(sycl.range(64), _bump, a, np.int64(2)).wait()
    for _ in range(3):
        q.parallel_for(64, _bump, a, np.int64(1))
    q.wait()
    np.testing.assert_array_equal(np.asarray(a), np.full(64, 13))
    launcher = q._plans.get(_bump).launcher
    prep = launcher.program._prepared[launcher.kernel_name]
    assert len(prep.launches) == 2   # one range, two scalar values
    b = sycl.malloc_shared((64,), np.int64, q)
    np.asarray(b)[...] = 5
    q.parallel_for(64, _bump, b, np.int64(1)).wait()       # other memory: other argv
    np.testing.assert_array_equal(np.asarray(b), np.full(64, 6))
    assert len(prep.launches) == 3
    sycl.free(a, q)
    sycl.free(b, q)


@sycl.kernel
def _add_into(it: sycl.item[1], x: sycl.global_ptr[np.float32], y: sycl.global_ptr[np.float32]):
    y[it.get_id(0)] = y[it.get_id(0)] + x[it.get_id(0)]


def test_last_launch_memo_follows_arguments_and_ranges():
    """The executor reuses the last launch's packed arguments only for the very same
    KernelArg objects and range: other arrays, sizes, offsets and freed-and-reallocated
    memory all take their own."""
    q = _native_queue()
    rng = np.random.default_rng(11)
    n = 300
    xs = [sycl.malloc_shared((n,), np.float32, q) for _ in range(2)]
    y = sycl.malloc_shared((n,), np.float32, q)
    for x in xs:
        np.asarray(x)[...] = rng.standard_normal(n).astype(np.float32)
    np.asarray(y)[...] = rng.standard_normal(n).astype(np.float32)
    want = np.asarray(y).copy()
    plan = [(xs[0], n), (xs[0], n), (xs[1], n), (xs[1], 100), (xs[0], 100), (xs[0], n),
            (xs[1], 7), (xs[1], 7)]
    for x, size in plan:
        q.parallel_for(size, _add_into, x, y).wait()
        want[:size] += np.asarray(x)[:size]
        np.testing.assert_array_equal(np.asarray(y), want)
    launcher = q._plans.get(_add_into).launcher
    prep = launcher.program._prepared[launcher.kernel_name]
    assert prep.last is not None and prep.last[0] == (7,)
    # an nd_range with a global offset: the memo must not serve the offset-free launch
    for off in (5, 5, 2):
        q.submit(lambda h: h.parallel_for(sycl.nd_range(sycl.range(10), sycl.range(10),
                                                        sycl.id(off)), _add_into, xs[1], y)
                 ).wait()
        want[off:off + 10] += np.asarray(xs[1])[off:off + 10]
        np.testing.assert_array_equal(np.asarray(y), want)
    q.parallel_for(7, _add_into, xs[1], y).wait()
    want[:7] += np.asarray(xs[1])[:7]
    np.testing.assert_array_equal(np.asarray(y), want)
    # a freed array is refused; a new one (perhaps at the same address) is used
    sycl.free(xs[0], q)
    with pytest.raises(sycl.exception):
        q.parallel_for(n, _add_into, xs[0], y)
    fresh = sycl.malloc_shared((n,), np.float32, q)
    np.asarray(fresh)[...] = rng.standard_normal(n).astype(np.float32)
    q.parallel_for(n, _add_into, fresh, y).wait()
    want += np.asarray(fresh)
    np.testing.assert_array_equal(np.asarray(y), want)
    for p in (xs[1], y, fresh):
        sycl.free(p, q)


def test_fast_path_events_and_errors():
    q = _native_queue(in_order=True)
    a = sycl.malloc_shared((8,), np.int64, q)
    np.asarray(a)[...] = 0
    q.parallel_for(8, _bump, a, np.int64(1)).wait()
    ev = q.parallel_for(8, _bump, a, np.int64(1))
    assert ev.status == sycl.info.event_command_status.complete if hasattr(sycl, "info") \
        else ev.status.name == "complete"
    assert q._last is ev
    with pytest.raises(sycl.exception):
        q.parallel_for(8, _bump, a)              # wrong argument count: synchronous error
    with pytest.raises(sycl.exception):
        q.parallel_for(sycl.range(2, 4), _bump, a, np.int64(1))   # 2-D range, 1-D kernel
    q.wait_and_throw()
    np.testing.assert_array_equal(np.asarray(a), np.full(8, 2))
    sycl.free(a, q)


def test_fission_kernels_compute_and_vectorise():
    q = _native_queue()
    n, wg = 1024, 64
    x = np.arange(n, dtype=np.float32) % 17
    dx = sycl.malloc_shared((n,), np.float32, q)
    out = sycl.malloc_shared((n // wg,), np.float32, q)
    np.asarray(dx)[...] = x

    def cgf(cgh):
        cgh.parallel_for(sycl.nd_range(sycl.range(n), sycl.range(wg)), _tree_sum, dx, out,
                         cgh.local_accessor(np.float32, (wg,)))
    q.submit(cgf).wait()
    np.testing.assert_array_equal(np.asarray(out), x.reshape(-1, wg).sum(axis=1))
    m = 8
    a = np.arange(m * m, dtype=np.float32).reshape(m, m) / 7
    b = np.eye(m, dtype=np.float32) * 2 + 1
    da, db, dc = (sycl.malloc_shared((m, m), np.float32, q) for _ in range(3))
    np.asarray(da)[...] = a
    np.asarray(db)[...] = b

    def cgf2(cgh):
        cgh.parallel_for(sycl.nd_range(sycl.range(m, m), sycl.range(4, 4)), _tiled, da, db, dc,
                         np.int64(m), cgh.local_accessor(np.float32, (4, 4)),
                         cgh.local_accessor(np.float32, (4, 4)))
    q.submit(cgf2).wait()
    np.testing.assert_allclose(np.asarray(dc), a @ b, rtol=1e-5)
    from pysycl.bundle import launch
    text = launch.get_launcher(_tree_sum, q.get_device()).image.stages().get("llvm") \
        if hasattr(launch.get_launcher(_tree_sum, q.get_device()).image, "stages") else None
    if text:   # freshly built (not from the disk cache): the loops are marked parallel
        assert "llvm.loop.parallel_accesses" in text and "llvm.access.group" in text
    for p in (dx, out, da, db, dc):
        sycl.free(p, q)


def test_local_atomics_on_native_cpu():
    q = _native_queue()
    n, wg = 256, 8
    x = (np.arange(n, dtype=np.int32) * 7) % 97
    dx = sycl.malloc_shared((n,), np.int32, q)
    bins = sycl.malloc_shared((wg,), np.int32, q)
    np.asarray(dx)[...] = x
    np.asarray(bins)[...] = 0

    def cgf(cgh):
        cgh.parallel_for(sycl.nd_range(sycl.range(n), sycl.range(wg)), _local_hist, dx, bins,
                         cgh.local_accessor(np.int32, (wg,)))
    q.submit(cgf).wait()
    np.testing.assert_array_equal(np.asarray(bins), np.bincount(x % 8, minlength=8))
    sycl.free(dx, q)
    sycl.free(bins, q)


def test_small_constant_loops_ask_for_full_unrolling():
    m, b, (it, x) = kernel("k_unroll", [Param("it", IndexSpaceType("item", 1)),
                                        Param("x", acc_type(I64))])
    b.for_("i", b.const(0, I64), b.const(3, I64), b.const(1, I64))
    assert "llvm.loop.unroll.full" in llvm_text(m)
    prog = load(m)
    prog.launch("k_unroll", (4,), None, acc_args(np.zeros(4, np.int64)) + [spec()])
