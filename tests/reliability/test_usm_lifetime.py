"""USM lifetime is the same on every backend: memory goes back when its array is
collected or freed, and NumPy views and DLPack exports keep it alive until they die."""
import gc

import numpy as np
import pytest

import pysycl as sycl
from reliability_helpers import device_prelude


def test_dropped_arrays_are_freed(device, run_python):
    # 300 x 4 MiB written and dropped, never freed by hand: each goes back to the driver
    # (counted at the driver) and its address is forgotten.
    out = run_python("""
        driver = dev.driver
        freed = []
        real_free = driver.free
        driver.free = lambda allocation: (freed.append(1), real_free(allocation))[1]
        ctx = q.get_context()
        ptrs = []
        for i in range(300):
            a = sycl.malloc_shared(1 << 20, np.float32, q)
            q.fill(a, float(i)).wait()
            ptrs.append(a.ptr)
            del a
        gc.collect()
        known = sum(sycl.get_pointer_type(p, ctx) != sycl.usm.alloc.unknown for p in ptrs)
        print(len(freed), known)
    """, device_prelude(device))
    assert out.split()[-2:] == ["300", "0"]


@pytest.mark.parametrize("kind", ["shared", "host"])
def test_numpy_view_keeps_freed_memory(queue, kind):
    rng = np.random.default_rng(11)
    ref = rng.random((64, 8))
    a = getattr(sycl, f"malloc_{kind}")(ref.shape, np.float64, queue)
    view = np.asarray(a)
    view[...] = ref
    ptr, ctx = a.ptr, queue.get_context()
    sycl.free(a)
    with pytest.raises(sycl.exception):
        np.asarray(a)                     # the array itself is freed
    others = [getattr(sycl, f"malloc_{kind}")(ref.shape, np.float64, queue) for _ in range(4)]
    for b in others:
        assert b.ptr != ptr               # the memory was not handed out again
        queue.fill(b, -7.0).wait()
    np.testing.assert_array_equal(view, ref)
    view[0, 0] = 42.0                     # writes land in the old block, not in others
    assert all((b.to_numpy() == -7.0).all() for b in others)
    assert sycl.get_pointer_type(ptr, ctx).name == kind
    del view
    gc.collect()
    assert sycl.get_pointer_type(ptr, ctx) == sycl.usm.alloc.unknown


def test_dlpack_export_keeps_freed_memory(queue):
    a = sycl.malloc_device(128, np.int32, queue)
    ptr, ctx = a.ptr, queue.get_context()
    capsule = a.__dlpack__()
    sycl.free(a)
    del a
    gc.collect()
    assert sycl.get_pointer_type(ptr, ctx) == sycl.usm.alloc.device
    del capsule
    gc.collect()
    assert sycl.get_pointer_type(ptr, ctx) == sycl.usm.alloc.unknown


def test_free_is_idempotent_and_use_after_free_is_refused(queue):
    a = sycl.malloc_device(4, np.float32, queue)
    sycl.free(a)
    sycl.free(a)
    for use in (lambda: queue.fill(a, 1.0), lambda: a.to_numpy(), lambda: a.__dlpack__()):
        with pytest.raises(sycl.exception) as e:
            use()
        assert e.value.code() == sycl.errc.invalid


def test_pending_commands_keep_dropped_memory(device, run_python):
    # Commands still waiting for a dependency hold the memory of an array the program
    # already dropped; nothing else gets its address meanwhile.
    out = run_python("""
        import threading
        q = sycl.queue(dev, in_order=True)
        ref = np.random.default_rng(6).random(1 << 16)
        out = np.zeros_like(ref)
        gate = threading.Event()
        q.host_task(lambda: gate.wait(60))
        a = sycl.malloc_device(ref.shape, np.float64, q)
        q.copy(ref, a)
        q.copy(a, out)
        del a
        gc.collect()
        others = [sycl.malloc_device(ref.shape, np.float64, dev) for _ in range(8)]
        for b in others:
            sycl.queue(dev).fill(b, -1.0).wait()
        gate.set()
        q.wait()
        print(bool((out == ref).all()))
    """, device_prelude(device))
    assert out.split()[-1] == "True"
