"""Launch loops on a real GPU: a launch repeated with the same range and argument
objects is made again from the driver's record (runtime/replay.py,
backends/cuda/launch_call.py). Every launch must run with its own arguments: the
kernel accumulates, so a launch skipped, doubled or made with another launch's
arguments changes the result, which is checked exactly against NumPy."""
from __future__ import annotations

import threading

import numpy as np
import pytest

import pysycl as sycl
from pysycl.backends.cuda import launch_call as lc

pytestmark = pytest.mark.cuda

F32 = np.float32


@sycl.kernel
def accumulate(it: sycl.item[1], x: sycl.global_ptr[F32], y: sycl.global_ptr[F32], k: F32):
    i = it.get_id(0)
    y[i] = y[i] + k * x[i]


@pytest.fixture(scope="module")
def gpu():
    gpus = [d for d in sycl.device.get_devices() if d.backend.name == "cuda"]
    if not gpus:
        pytest.skip("no CUDA GPU")
    lc.launch_call()                  # made on a thread of its own: wait for it here
    for thread in threading.enumerate():
        if thread.name == "pysycl-cuda-launch":
            thread.join(30)
    assert lc.launch_call()[0] is not None
    return gpus[0]


def small_ints(rng, n):
    """Values whose sums stay exact in float32."""
    return rng.integers(0, 8, n).astype(F32)


def on_device(q, host):
    a = sycl.malloc_device(host.size, F32, q)
    q.memcpy(a, host).wait()
    return a


def to_host(q, a, n):
    out = np.empty(n, F32)
    q.memcpy(out, a).wait()
    return out


@pytest.mark.parametrize("in_order", [False, True])
def test_a_launch_loop_runs_every_launch_with_its_arguments(gpu, in_order):
    q = sycl.queue(gpu, in_order=in_order)
    rng = np.random.default_rng(21)
    n = 1000                          # not a multiple of the work-group
    hx, hx2, hx3 = (small_ints(rng, n) for _ in range(3))
    x, x2, y = on_device(q, hx), on_device(q, hx2), on_device(q, np.zeros(n, F32))
    expected = np.zeros(n, F32)
    r, k = sycl.range(n), F32(2)
    events = [q.parallel_for(r, accumulate, x, y, k) for _ in range(40)]
    expected += 40 * 2 * hx
    plan = q._plans.entries[accumulate]
    assert plan.again is not None     # the loop's launches were made again
    events[-1].wait()
    assert events[-1].status.name == "complete"
    for _ in range(10):               # another array, a new range object each time
        q.parallel_for(sycl.range(n), accumulate, x2, y, 3.0)
    expected += 10 * 3 * hx2
    for step in range(10):            # a new scalar object each time
        q.parallel_for(r, accumulate, x, y, F32(-1 - step % 2))
    expected -= 15 * hx
    for _ in range(5):                # the first array again
        q.parallel_for(r, accumulate, x, y, k)
    expected += 5 * 2 * hx
    q.wait()
    sycl.free(x2, q)                  # a new array may get the freed one's address
    x3 = on_device(q, hx3)
    for _ in range(7):
        q.parallel_for(r, accumulate, x3, y, k)
    expected += 7 * 2 * hx3
    q.parallel_for(r, accumulate, x, y, k, depends_on=[q.parallel_for(r, accumulate, x3, y, k)])
    expected += 2 * hx + 2 * hx3
    q.wait()
    np.testing.assert_array_equal(to_host(q, y, n), expected)
    for a in (x, x3, y):
        sycl.free(a, q)


def test_threads_launching_one_kernel_on_one_queue_keep_their_arguments(gpu):
    q = sycl.queue(gpu)
    rng = np.random.default_rng(22)
    n, launches, threads = 4096, 200, 4
    hosts = [small_ints(rng, n) for _ in range(threads)]
    xs = [on_device(q, h) for h in hosts]
    ys = [on_device(q, np.zeros(n, F32)) for _ in range(threads)]
    start, errors = threading.Barrier(threads), []
    r = sycl.range(n)

    def loop(t):
        try:
            k = F32(t + 1)
            start.wait()
            for _ in range(launches):
                q.parallel_for(r, accumulate, xs[t], ys[t], k)
        except BaseException as e:   # reported below, in the test's thread
            errors.append(e)
    workers = [threading.Thread(target=loop, args=(t,)) for t in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(60)
    q.wait()
    assert errors == []
    for t in range(threads):
        np.testing.assert_array_equal(to_host(q, ys[t], n), launches * (t + 1) * hosts[t])
    for a in xs + ys:
        sycl.free(a, q)


def test_queues_sharing_a_kernel_keep_their_own_launches(gpu):
    queues = [sycl.queue(gpu), sycl.queue(gpu, in_order=True)]
    rng = np.random.default_rng(23)
    n = 2048
    hosts = [small_ints(rng, n) for _ in queues]
    xs = [on_device(q, h) for q, h in zip(queues, hosts)]
    ys = [on_device(q, np.zeros(n, F32)) for q in queues]
    r = sycl.range(n)
    for _ in range(30):               # interleaved: one record each
        for i, q in enumerate(queues):
            q.parallel_for(r, accumulate, xs[i], ys[i], F32(i + 2))
    for i, q in enumerate(queues):
        q.wait()
        np.testing.assert_array_equal(to_host(q, ys[i], n), 30 * (i + 2) * hosts[i])
        sycl.free(xs[i], q)
        sycl.free(ys[i], q)


@sycl.kernel
def accumulate_nd(it: sycl.nd_item[1], x: sycl.global_ptr[F32], y: sycl.global_ptr[F32],
                  k: F32):
    i = it.get_global_id(0)
    y[i] = y[i] + k * x[i] + F32(it.get_local_range(0))


@sycl.kernel
def accumulate_one(x: sycl.global_ptr[F32], y: sycl.global_ptr[F32]):
    y[0] = y[0] + x[0]


def test_nd_range_and_single_task_loops(gpu):
    q = sycl.queue(gpu)
    rng = np.random.default_rng(24)
    n = 1024
    hx = small_ints(rng, n)
    x, y = on_device(q, hx), on_device(q, np.zeros(n, F32))
    expected = np.zeros(n, F32)
    nd = sycl.nd_range(sycl.range(n), sycl.range(64))
    for _ in range(20):                   # the same nd_range object
        q.parallel_for(nd, accumulate_nd, x, y, F32(1))
    expected += 20 * (hx + 64)
    assert q._plans.entries[accumulate_nd].again is not None
    for _ in range(10):                   # a new, equal nd_range each time
        q.parallel_for(sycl.nd_range(sycl.range(n), sycl.range(64)), accumulate_nd, x, y,
                       F32(1))
    expected += 10 * (hx + 64)
    nd.local_range = sycl.range(128)      # changed in place: the new work-group size
    for _ in range(10):
        q.parallel_for(nd, accumulate_nd, x, y, F32(1))
    expected += 10 * (hx + 128)
    for _ in range(15):
        q.single_task(accumulate_one, x, y)
    expected[0] += 15 * hx[0]
    q.wait()
    np.testing.assert_array_equal(to_host(q, y, n), expected)
    sycl.free(x, q)
    sycl.free(y, q)


def test_freed_arrays_give_their_memory_back_after_a_launch_loop(gpu):
    # Nothing a launch loop leaves behind (the plan's replay, the driver's record of
    # the last launch) keeps a freed array's memory: it goes back to the device.
    import gc

    from cuda.bindings import driver as cu
    q = sycl.queue(gpu)
    n = 64 << 20                          # 256 MiB of float32 each
    x, y = sycl.malloc_device(n, F32, q), sycl.malloc_device(n, F32, q)
    q.memset(x, 0, x.nbytes)
    q.memset(y, 0, y.nbytes)
    r = sycl.range(4096)
    for _ in range(5):
        q.parallel_for(r, accumulate, x, y, F32(1))
    assert q._plans.entries[accumulate].again is not None
    q.wait()
    err, free_before, _total = cu.cuMemGetInfo()
    assert err == 0
    sycl.free(x, q)
    sycl.free(y, q)
    del x, y
    gc.collect()
    err, free_after, _total = cu.cuMemGetInfo()
    assert free_after - free_before >= 2 * n * 4 * 0.9


@pytest.mark.parametrize("in_order", [False, True])
def test_alternating_launches_run_with_their_own_arguments(gpu, in_order):
    # A stencil's two buffers: launches alternate a -> b and b -> a; both are made
    # again from the driver's two records, each with its own arguments.
    q = sycl.queue(gpu, in_order=in_order)
    rng = np.random.default_rng(25)
    n = 2048
    ha, hb = small_ints(rng, n), small_ints(rng, n)
    a, b = on_device(q, ha), on_device(q, hb)
    r = sycl.range(n)
    ea, eb = ha.copy(), hb.copy()
    for step in range(24):          # (sums stay exact in float32)
        if step % 2:
            q.parallel_for(r, accumulate, b, a, F32(1))
            ea += eb
        else:
            q.parallel_for(r, accumulate, a, b, F32(1))
            eb += ea
    plan = q._plans.entries[accumulate]
    assert plan.again is not None and plan.again2 is not None
    q.wait()
    np.testing.assert_array_equal(to_host(q, a, n), ea)
    np.testing.assert_array_equal(to_host(q, b, n), eb)
    sycl.free(a, q)
    sycl.free(b, q)


def test_command_group_launch_loops(gpu):
    # q.submit(lambda h: h.parallel_for(...)) loops are made again as well; a group
    # with an accessor or a dependency in between takes the general path and runs in
    # its place.
    q = sycl.queue(gpu, in_order=True)
    rng = np.random.default_rng(26)
    n = 1024
    hx = small_ints(rng, n)
    x, y = on_device(q, hx), on_device(q, np.zeros(n, F32))
    r, k = sycl.range(n), F32(3)
    expected = np.zeros(n, F32)
    for _ in range(20):
        q.submit(lambda h: h.parallel_for(r, accumulate, x, y, k))
    expected += 20 * 3 * hx
    assert q._plans.entries[accumulate].again is not None
    host = np.zeros(n, F32)
    with sycl.buffer(host) as buf:
        def with_accessor(h):
            h.require(sycl.accessor(buf, h, sycl.write_only))
            h.parallel_for(r, accumulate, x, y, k)
        q.submit(with_accessor)
        ev = q.submit(lambda h: h.parallel_for(r, accumulate, x, y, k))
        q.submit(lambda h: (h.depends_on(ev), h.parallel_for(r, accumulate, x, y, k)))
    expected += 3 * 3 * hx
    for _ in range(5):
        q.submit(lambda h: h.parallel_for(r, accumulate, x, y, k))
    expected += 5 * 3 * hx
    q.wait()
    np.testing.assert_array_equal(to_host(q, y, n), expected)
    sycl.free(x, q)
    sycl.free(y, q)
