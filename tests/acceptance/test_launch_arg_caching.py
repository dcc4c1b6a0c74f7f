"""Repeated launches of one kernel on every device, checked against NumPy.

A launch loop takes the queue's fast path (``q.parallel_for`` of a kernel already
launched: cached launcher, packer and per-array KernelArgs), and the OpenCL driver sets
only the kernel arguments that changed since the kernel object's last launch. These
tests change what the caches key on between launches: USM arrays, scalar values (more
of them than the packer caches), a freed array, a second kernel and a second queue
sharing the kernel object, the general path interleaved with the fast one, local memory
sizes, and threads."""
import sys
import threading

import numpy as np
import pytest

import pysycl as sycl

f32 = np.float32


@sycl.kernel
def axpb(it: sycl.item[1], a: f32, b: np.int32, x: sycl.global_ptr[f32],
         y: sycl.global_ptr[f32]):
    i = it.get_id(0)
    y[i] = a * x[i] + f32(b)


@sycl.kernel
def add_into(it: sycl.item[1], x: sycl.global_ptr[f32], y: sycl.global_ptr[f32]):
    i = it.get_id(0)
    y[i] = y[i] + x[i]


@sycl.kernel
def mul_into(it: sycl.item[1], x: sycl.global_ptr[f32], y: sycl.global_ptr[f32]):
    i = it.get_id(0)
    y[i] = y[i] * x[i]


@sycl.kernel
def group_reverse(nd: sycl.nd_item[1], x: sycl.global_ptr[f32], y: sycl.global_ptr[f32],
                  scratch: sycl.local_accessor[f32, 1]):
    lid = nd.get_local_id(0)
    n = nd.get_local_range(0)
    scratch[lid] = x[nd.get_global_id(0)]
    sycl.group_barrier(nd.get_group())
    y[nd.get_global_id(0)] = scratch[n - 1 - lid]


N = 257


@pytest.fixture
def rng():
    return np.random.default_rng(7)


@pytest.fixture
def arrays(queue, rng):
    """Four shared arrays with random contents, freed after the test."""
    made = []

    def make(n=N):
        a = sycl.malloc_shared(n, f32, queue)
        np.asarray(a)[:] = rng.standard_normal(n).astype(f32)
        made.append(a)
        return a
    yield make
    queue.wait()
    for a in made:
        sycl.free(a, queue)


def _assert_axpb(actual, want):
    # CUDA contracts a*x + b into one FMA (one rounding, like every CUDA compiler): an
    # ulp from NumPy's two roundings; a stale argument would be off by far more.
    np.testing.assert_allclose(np.asarray(actual), want, rtol=1e-6, atol=1e-6)


def _on_fast_path(q, kernel) -> bool:
    return q._plans.get(kernel) is not None


def test_usm_arguments_change_between_launches(queue, arrays):
    xs = [arrays() for _ in range(3)]
    ys = [arrays() for _ in range(3)]
    a, b = f32(1.5), np.int32(2)
    queue.parallel_for(N, axpb, a, b, xs[0], ys[0]).wait()
    assert _on_fast_path(queue, axpb)
    # every pairing, back to back without waiting: each launch must see its own arrays
    pairs = [(i, j) for i in range(3) for j in range(3)]
    expected = {}
    for i, j in pairs:
        queue.parallel_for(N, axpb, a, b, xs[i], ys[j])
        expected[j] = np.asarray(xs[i]) * a + f32(b)
        queue.wait()   # the next pairing may write the same y
        _assert_axpb(ys[j], expected[j])
    # the same array in both pointer arguments, then a different one again
    queue.parallel_for(N, add_into, xs[1], ys[1]).wait()
    want = np.asarray(ys[1]) * 2
    queue.parallel_for(N, add_into, ys[1], ys[1]).wait()
    np.testing.assert_array_equal(np.asarray(ys[1]), want)
    want = np.asarray(ys[2]) + np.asarray(xs[2])
    queue.parallel_for(N, add_into, xs[2], ys[2]).wait()
    np.testing.assert_array_equal(np.asarray(ys[2]), want)


def test_scalar_arguments_change_between_launches(queue, arrays):
    x, y = arrays(), arrays()
    queue.parallel_for(N, axpb, f32(0), np.int32(0), x, y).wait()
    # more distinct values than the packer caches (256), repeats, and Python numbers
    values = [(f32(k) * f32(0.25), np.int32(k % 7 - 3)) for k in range(300)]
    values += values[:5] + [(2.0, 3), (2, -1), (f32(2.0), 3), (True, 1)]
    for a, b in values:
        queue.parallel_for(N, axpb, a, b, x, y).wait()
        _assert_axpb(y, f32(a) * np.asarray(x) + f32(b))


def test_freed_array_is_rejected_and_a_new_one_used(queue, arrays, rng):
    x, y = arrays(), arrays()
    for _ in range(3):
        queue.parallel_for(N, add_into, x, y)
    queue.wait()
    gone = sycl.malloc_shared(N, f32, queue)
    np.asarray(gone)[:] = 1
    queue.parallel_for(N, add_into, gone, y).wait()
    queue.parallel_for(N, add_into, gone, y).wait()
    sycl.free(gone, queue)
    with pytest.raises(sycl.exception) as info:
        queue.parallel_for(N, add_into, gone, y)
    assert info.value.code() == sycl.errc.invalid
    # a new allocation (possibly at the freed address) is set, not the stale argument
    fresh = sycl.malloc_shared(N, f32, queue)
    try:
        vals = rng.standard_normal(N).astype(f32)
        np.asarray(fresh)[:] = vals
        before = np.asarray(y).copy()
        queue.parallel_for(N, add_into, fresh, y).wait()
        np.testing.assert_array_equal(np.asarray(y), before + vals)
    finally:
        sycl.free(fresh, queue)


def test_different_kernels_with_the_same_arguments(queue, arrays):
    x, y = arrays(), arrays()
    np.asarray(x)[:] = np.linspace(0.5, 1.5, N, dtype=f32)
    want = np.asarray(y).copy()
    for k in range(6):
        kernel = add_into if k % 2 == 0 else mul_into
        queue.parallel_for(N, kernel, x, y)
        want = want + np.asarray(x) if kernel is add_into else want * np.asarray(x)
        queue.wait()
        np.testing.assert_allclose(np.asarray(y), want, rtol=1e-6)


def test_general_path_interleaved_with_fast_path(queue, arrays):
    x1, x2, y = arrays(), arrays(), arrays()
    want = np.asarray(y).copy()
    for k in range(6):
        x = x1 if k % 3 else x2
        if k % 2:
            queue.submit(lambda cgh, x=x: cgh.parallel_for(N, add_into, x, y)).wait()
        else:
            queue.parallel_for(N, add_into, x, y).wait()
        want = want + np.asarray(x)
        np.testing.assert_array_equal(np.asarray(y), want)


def test_two_queues_share_the_kernel(device, rng):
    qs = [sycl.queue(device, in_order=True) for _ in range(2)]
    xs = [sycl.malloc_shared(N, f32, q) for q in qs]
    ys = [sycl.malloc_shared(N, f32, q) for q in qs]
    try:
        for x, y in zip(xs, ys):
            np.asarray(x)[:] = rng.standard_normal(N).astype(f32)
            np.asarray(y)[:] = 0
        for _ in range(5):
            for q, x, y in zip(qs, xs, ys):
                q.parallel_for(N, add_into, x, y)
        for q in qs:
            q.wait()
        for x, y in zip(xs, ys):
            np.testing.assert_allclose(np.asarray(y), 5 * np.asarray(x), rtol=1e-6)
    finally:
        for q in qs:
            q.wait()
        for a in xs + ys:
            sycl.free(a, qs[0])


def test_threads_launch_one_kernel_with_their_own_arguments(device, rng):
    threads, launches = 4, 40
    q = sycl.queue(device)
    xs = [sycl.malloc_shared(N, f32, q) for _ in range(threads)]
    ys = [sycl.malloc_shared(N, f32, q) for _ in range(threads)]
    errors = []
    try:
        for x, y in zip(xs, ys):
            np.asarray(x)[:] = rng.integers(-8, 8, N).astype(f32)
            np.asarray(y)[:] = 0
        q.parallel_for(N, axpb, f32(1), np.int32(0), xs[0], ys[0]).wait()
        np.asarray(ys[0])[:] = 0

        def work(t):
            try:
                tq = sycl.queue(device, in_order=True)
                for _ in range(launches):
                    tq.parallel_for(N, add_into, xs[t], ys[t])
                tq.wait()
            except Exception as e:  # noqa: BLE001 - reported below
                errors.append(e)
        pool = [threading.Thread(target=work, args=(t,)) for t in range(threads)]
        for th in pool:
            th.start()
        for th in pool:
            th.join()
        assert not errors
        for x, y in zip(xs, ys):
            np.testing.assert_array_equal(np.asarray(y), launches * np.asarray(x))
    finally:
        q.wait()
        for a in xs + ys:
            sycl.free(a, q)


@pytest.mark.parametrize("in_order", [False, True], ids=["out_of_order", "in_order"])
def test_threads_share_one_queue_and_wait_sees_every_launch(device, rng, in_order):
    """q.wait() after threads launched on one queue covers every launch (the queue's
    record of the newest launch must not be one issued before another thread's)."""
    threads, launches = 4, 60
    q = sycl.queue(device, in_order=in_order)
    xs = [sycl.malloc_shared(N, f32, q) for _ in range(threads)]
    ys = [sycl.malloc_shared(N, f32, q) for _ in range(threads)]
    errors = []
    try:
        for x, y in zip(xs, ys):
            np.asarray(x)[:] = rng.integers(1, 8, N).astype(f32)
            np.asarray(y)[:] = 0
        q.parallel_for(N, add_into, xs[0], ys[0]).wait()
        np.asarray(ys[0])[:] = 0
        start = threading.Barrier(threads)

        def work(t):
            try:
                start.wait()
                for _ in range(launches):
                    q.parallel_for(N, add_into, xs[t], ys[t])
            except Exception as e:  # noqa: BLE001 - reported below
                errors.append(e)
        pool = [threading.Thread(target=work, args=(t,)) for t in range(threads)]
        switch = sys.getswitchinterval()
        sys.setswitchinterval(1e-6)   # threads take turns between any two launches
        try:
            for th in pool:
                th.start()
            for th in pool:
                th.join()
        finally:
            sys.setswitchinterval(switch)
        q.wait()
        assert not errors
        for x, y in zip(xs, ys):
            np.testing.assert_array_equal(np.asarray(y), launches * np.asarray(x))
    finally:
        q.wait()
        for a in xs + ys:
            sycl.free(a, q)


@sycl.kernel
def slow_fill(it: sycl.item[1], a: sycl.global_ptr[f32], n: np.int32):
    acc = f32(0)
    for k in range(n):
        acc = acc * f32(0.5) + f32(1)
    a[it.get_id(0)] = acc


def test_wait_covers_a_launch_issued_while_another_thread_was_in_its_launch(device, rng):
    """Thread T's launch is issued, then (before T records it) the main thread issues a
    slow one: q.wait() must still wait for the slow one, although T's record comes last
    and T's launch runs first on the in-order device queue."""
    q = sycl.queue(device)   # out-of-order: q.wait() waits for the recorded launches
    x, y, s = (sycl.malloc_shared(N, f32, q) for _ in range(3))
    try:
        np.asarray(x)[:] = 1
        np.asarray(y)[:] = 0
        for _ in range(2):   # the second launch of each kernel takes the fast path
            q.parallel_for(N, add_into, x, y).wait()
            q.parallel_for(N, slow_fill, s, 1).wait()
        fast = q._plans.get(add_into)
        if not fast or fast.bound is None:
            pytest.skip("no bound fast path on this device")
        real = fast.bound
        issued, go = threading.Event(), threading.Event()

        def paused(*a):
            tok = real(*a)
            issued.set()
            go.wait(10)
            return tok
        fast.bound = paused
        np.asarray(s)[:] = 0
        th = threading.Thread(target=lambda: q.parallel_for(N, add_into, x, y))
        th.start()
        try:
            assert issued.wait(10)
            fast.bound = real
            q.parallel_for(N, slow_fill, s, 1_000_000)
        finally:
            go.set()
            th.join()
        q.wait()
        np.testing.assert_array_equal(np.asarray(s), np.full(N, 2, f32))
        np.testing.assert_array_equal(np.asarray(y), np.full(N, 3, f32))
    finally:
        q.wait()
        for a in (x, y, s):
            sycl.free(a, q)


def test_local_memory_size_changes_between_launches(queue, arrays):
    n = 64
    x, y = arrays(n), arrays(n)
    for wg in (4, 16, 4, 8, 8, 2):
        if wg > queue.get_device().max_work_group_size:
            continue
        # a local_accessor needs the handler: the general path, whose driver launch sets
        # only the arguments that changed (here the local size, and the pointers once)
        queue.submit(lambda cgh, wg=wg: cgh.parallel_for(
            sycl.nd_range(n, wg), group_reverse, x, y, cgh.local_accessor(f32, wg))).wait()
        want = np.asarray(x).reshape(-1, wg)[:, ::-1].reshape(-1)
        np.testing.assert_array_equal(np.asarray(y), want)
