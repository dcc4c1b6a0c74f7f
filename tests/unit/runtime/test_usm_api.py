"""SYCL 2020 USM API: pointer queries, aligned allocation, usm_allocator, prefetch and
mem_advise (4.8, 4.9.4.3) on every device."""
import numpy as np
import pytest

import pysycl as sycl

KINDS = ["device", "shared", "host"]


@pytest.mark.parametrize("kind", KINDS)
def test_pointer_queries(queue, kind):
    ctx, dev = queue.get_context(), queue.get_device()
    a = getattr(sycl, f"malloc_{kind}")(100, np.float32, queue)
    want = getattr(sycl.usm.alloc, kind)
    for ptr in (a, a.ptr, a.ptr + 4 * 99, np.uint64(a.ptr + 8)):
        assert sycl.get_pointer_type(ptr, ctx) == want
        assert sycl.get_pointer_device(ptr, ctx) == dev
    assert sycl.get_pointer_type(a.ptr + 400, ctx) == sycl.usm.alloc.unknown   # one past
    other = sycl.context(dev)                                # another context: unknown
    assert sycl.get_pointer_type(a, other) == sycl.usm.alloc.unknown
    with pytest.raises(sycl.exception) as e:
        sycl.get_pointer_device(a, other)
    assert e.value.code() == sycl.errc.invalid
    sycl.free(a)
    assert sycl.get_pointer_type(a, ctx) == sycl.usm.alloc.unknown


def test_pointer_queries_of_foreign_memory(queue):
    ctx = queue.get_context()
    host = np.random.default_rng(0).random(10)
    assert sycl.get_pointer_type(host, ctx) == sycl.usm.alloc.unknown
    assert sycl.get_pointer_type(host.ctypes.data, ctx) == sycl.usm.alloc.unknown

    class Foreign:   # another library's view of our memory, through DLPack only
        def __init__(self, a):
            self.a = a

        def __dlpack__(self, **kw):
            return self.a.__dlpack__(**kw)

        def __dlpack_device__(self):
            return self.a.__dlpack_device__()

    a = sycl.malloc_shared(10, np.int32, queue)
    assert sycl.get_pointer_type(Foreign(a), ctx) == sycl.usm.alloc.shared
    with pytest.raises(TypeError):
        sycl.get_pointer_type("0x10", ctx)
    with pytest.raises(TypeError):
        sycl.get_pointer_type(a, queue)             # a queue is not a context


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("alignment", [64, 256, 4096])
def test_aligned_alloc(queue, kind, alignment):
    ref = np.random.default_rng(alignment).integers(0, 99, 33, dtype=np.int16)
    try:
        a = getattr(sycl, f"aligned_alloc_{kind}")(alignment, 33, np.int16, queue)
    except sycl.exception as e:             # a backend that cannot align that far says so
        assert e.code() == sycl.errc.memory_allocation
        return
    assert a.ptr % alignment == 0 and a.usm_type == kind
    queue.copy(ref, a).wait()
    np.testing.assert_array_equal(a.to_numpy(), ref)
    b = sycl.aligned_alloc(alignment, (2, 3), np.float64, queue, sycl.usm.alloc[kind])
    assert b.ptr % alignment == 0 and b.shape == (2, 3)


def test_aligned_alloc_rejects_bad_alignment(queue):
    for bad in (3, 48, -64):
        with pytest.raises(sycl.exception) as e:
            sycl.aligned_alloc_shared(bad, 4, np.float32, queue)
        assert e.value.code() == sycl.errc.invalid


def test_usm_allocator(queue):
    ctx, dev = queue.get_context(), queue.get_device()
    al = sycl.usm_allocator(np.float64, sycl.usm.alloc.shared, queue)
    assert al == sycl.usm_allocator(np.float64, "shared", ctx, dev)
    assert al != sycl.usm_allocator(np.float64, sycl.usm.alloc.host, queue)
    a = al.allocate(17)
    ref = np.random.default_rng(4).random(17)
    a[:] = ref
    np.testing.assert_array_equal(np.asarray(a), ref)
    assert sycl.get_pointer_type(a, ctx) == sycl.usm.alloc.shared
    al.deallocate(a, 17)
    assert sycl.get_pointer_type(a, ctx) == sycl.usm.alloc.unknown
    with pytest.raises(sycl.exception):
        sycl.usm_allocator(np.float32, sycl.usm.alloc.device, queue)


@pytest.mark.parametrize("kind", KINDS)
def test_prefetch_and_mem_advise_order_commands(queue, kind):
    ref = np.random.default_rng(8).random(64, dtype=np.float32)
    a = getattr(sycl, f"malloc_{kind}")(64, np.float32, queue)
    e1 = queue.copy(ref, a)
    e2 = queue.prefetch(a, depends_on=e1)
    e3 = queue.submit(lambda cgh: (cgh.depends_on(e2), cgh.prefetch(a.ptr + 16, 32)))
    e4 = queue.mem_advise(a, a.nbytes, 0, depends_on=e3)
    e5 = queue.submit(lambda cgh: (cgh.depends_on(e4), cgh.mem_advise(a.ptr, 4, 1)))
    out = np.zeros_like(ref)
    queue.memcpy(out, a, depends_on=e5).wait()
    np.testing.assert_array_equal(out, ref)


def test_prefetch_range_errors(queue):
    a = sycl.malloc_shared(8, np.float32, queue)
    for bad in (lambda: queue.prefetch(a, 33), lambda: queue.prefetch(a.ptr + 16, 17),
                lambda: queue.prefetch(12345), lambda: queue.mem_advise(a, 4, "x"),
                lambda: queue.prefetch(np.zeros(3))):
        with pytest.raises(sycl.exception) as e:
            bad()
        assert e.value.code() == sycl.errc.invalid


PL = sycl.property_list([])


def test_cxx_allocation_forms(queue):
    # The forms of DPC++'s USM tests: untyped byte counts, a device and context, a
    # context alone for host memory, free with a context.
    ctx, dev = queue.get_context(), queue.get_device()
    forms = {
        "malloc_shared(bytes, q)": (sycl.malloc_shared(64, queue), "shared"),
        "malloc_device(bytes, dev, ctx)": (sycl.malloc_device(64, dev, ctx), "device"),
        "malloc_host(n, dtype, ctx)": (sycl.malloc_host(16, np.int32, ctx), "host"),
        "malloc(bytes, q, kind)": (sycl.malloc(64, queue, sycl.usm.alloc.host), "host"),
        "aligned_alloc_device(a, bytes, q)": (sycl.aligned_alloc_device(128, 64, queue),
                                              "device"),
        "aligned_alloc(a, bytes, q, kind)": (sycl.aligned_alloc(128, 64, queue, "shared"),
                                             "shared"),
        # SYCL 2020's trailing property list, and the kind after a device and context.
        "malloc_shared(n, dtype, dev, props)": (sycl.malloc_shared(16, np.int32, dev, PL),
                                                "shared"),
        "malloc_device(bytes, dev, ctx, props)": (sycl.malloc_device(64, dev, ctx, PL),
                                                  "device"),
        "malloc_host(bytes, q, props)": (sycl.malloc_host(64, queue, PL), "host"),
        "malloc(bytes, dev, ctx, kind, props)": (sycl.malloc(64, dev, ctx, sycl.usm.alloc.host,
                                                             PL), "host"),
        "malloc(n, dtype, dev, ctx, kind)": (sycl.malloc(8, np.float64, dev, ctx, "device"),
                                             "device"),
        "aligned_alloc(a, bytes, dev, ctx, kind, props)": (
            sycl.aligned_alloc(128, 64, dev, ctx, sycl.usm.alloc.shared, PL), "shared"),
        "aligned_alloc_host(a, n, dtype, q, properties=)": (
            sycl.aligned_alloc_host(128, 16, np.float32, queue, properties=PL), "host"),
    }
    ref = np.random.default_rng(9).integers(0, 255, 64, dtype=np.uint8)
    for form, (a, kind) in forms.items():
        assert a.nbytes == 64 and a.usm_type == kind, form
        if form.startswith("aligned"):
            assert a.ptr % 128 == 0, form
        assert sycl.get_pointer_type(a, ctx) == sycl.usm.alloc[kind], form
        queue.memcpy(a, ref).wait()
        out = np.zeros_like(ref)
        queue.memcpy(out, a).wait()
        np.testing.assert_array_equal(out, ref, err_msg=form)
        sycl.free(a, ctx)
    with pytest.raises(sycl.exception, match="one kind"):
        sycl.malloc(64, queue, sycl.usm.alloc.host, sycl.usm.alloc.device)
    with pytest.raises(sycl.exception, match="properties given twice"):
        sycl.malloc_shared(64, queue, PL, properties=PL)


def test_usm_of_another_device_names_both_devices(queue):
    # An OpenCL CPU device and the native CPU (or a sub-device and its parent) share a
    # name: the message tells them apart by backend and partition.
    parent = queue.get_device()
    others = [d for d in sycl.device.get_devices() if d.backend != parent.backend]
    if sycl.info.partition_property.partition_equally in parent.get_info(
            sycl.info.device.partition_properties):
        others.append(parent.create_sub_devices(
            sycl.info.partition_property.partition_equally, 1)[-1])
    for other in others:
        mem = sycl.malloc_device(8, np.int32, sycl.queue(other))
        with pytest.raises(sycl.exception) as e:
            queue.parallel_for(8, _increment, mem).wait()
        assert e.value.code() == sycl.errc.kernel_argument
        assert repr(other) in str(e.value) and repr(parent) in str(e.value)


@sycl.kernel
def _increment(it: sycl.item[1], x: sycl.global_ptr[np.int32]):
    x[it] = x[it] + 1
