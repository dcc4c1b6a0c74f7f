"""``queue.submit(cgf, secondary_queue)`` (SYCL 2020 4.6.5.1) and
``info::device::built_in_kernel_ids``, on every device."""
import numpy as np
import pytest

import pysycl as sycl

F32 = np.float32


def _axpy_with_sub_group_size(size):
    @sycl.kernel(properties=sycl.properties(sycl.sub_group_size(size)),
                 name=f"fallback.axpy_sg{size}")
    def axpy(it: sycl.nd_item[1], a: F32, x: sycl.global_ptr[F32], y: sycl.global_ptr[F32]):
        i = it.get_global_id(0)
        y[i] = a * x[i] + y[i]
    return axpy


@sycl.kernel
def plain_axpy(it: sycl.id[1], a: F32, x: sycl.global_ptr[F32], y: sycl.global_ptr[F32]):
    y[it[0]] = a * x[it[0]] + y[it[0]]


@pytest.fixture
def rng():
    return np.random.default_rng(41)


def _other_device_with(size, device):
    for d in sycl.device.get_devices():
        if d != device and size in d.sub_group_sizes:
            return d
    return None


def test_secondary_queue_takes_what_the_primary_cannot_run(device, rng):
    # A sub-group size the primary device lacks and some other device has.
    size = next((s for s in (16, 8, 1, 32) if s not in device.sub_group_sizes
                 and _other_device_with(s, device) is not None), None)
    if size is None:
        pytest.skip("no second device with a sub-group size this one lacks")
    other = _other_device_with(size, device)
    kernel = _axpy_with_sub_group_size(size)
    primary, secondary = sycl.queue(device), sycl.queue(other)
    n = 4 * size
    x, y = rng.standard_normal(n).astype(F32), rng.standard_normal(n).astype(F32)
    a = F32(rng.standard_normal())
    dx, dy = sycl.malloc_shared(n, F32, secondary), sycl.malloc_shared(n, F32, secondary)
    try:
        np.asarray(dx)[:], np.asarray(dy)[:] = x, y

        def cgf(cgh):
            cgh.parallel_for(sycl.nd_range(n, size), kernel, a, dx, dy)
        with pytest.raises(sycl.exception) as err:       # alone, the primary refuses it
            primary.submit(cgf)
        assert err.value.code() == sycl.errc.kernel_not_supported
        primary.submit(cgf, secondary).wait()
        np.testing.assert_allclose(np.asarray(dy), a * x + y, rtol=1e-6)
        # keyword form, with dependencies
        ev = secondary.memset(dy, 0)
        primary.submit(cgf, depends_on=[ev], secondary_queue=secondary).wait()
        np.testing.assert_allclose(np.asarray(dy), a * x, rtol=1e-6)
    finally:
        sycl.free(dx, secondary)
        sycl.free(dy, secondary)


def test_secondary_queue_unused_when_the_primary_runs_it(queue, rng):
    calls = []

    class Watch(sycl.queue):
        def _submit_cgf(self, cgf, depends_on):
            calls.append(self)
            return super()._submit_cgf(cgf, depends_on)
    secondary = Watch(queue.get_device())
    n = 50
    x, y = rng.standard_normal(n).astype(F32), rng.standard_normal(n).astype(F32)
    dx, dy = sycl.malloc_shared(n, F32, queue), sycl.malloc_shared(n, F32, queue)
    try:
        np.asarray(dx)[:], np.asarray(dy)[:] = x, y
        queue.submit(lambda cgh: cgh.parallel_for(n, plain_axpy, F32(2), dx, dy),
                     secondary).wait()
        np.testing.assert_allclose(np.asarray(dy), 2 * x + y, rtol=1e-6)
        assert calls == []
    finally:
        sycl.free(dx, queue)
        sycl.free(dy, queue)


def test_both_queues_failing_raise_the_secondary_error_caused_by_the_primary(queue):
    second = sycl.queue(queue.get_device())

    def bad(cgh):
        cgh.parallel_for(4, plain_axpy, F32(1))            # arguments missing
    with pytest.raises(sycl.exception) as err:
        queue.submit(bad, second)
    assert isinstance(err.value.__cause__, sycl.exception)
    assert err.value.code() == err.value.__cause__.code()

    def interrupted(cgh):
        raise KeyboardInterrupt
    with pytest.raises(KeyboardInterrupt):                 # never a reason to fall back
        queue.submit(interrupted, second)
    with pytest.raises(sycl.exception) as err:
        queue.submit(bad, secondary_queue="not a queue")
    assert err.value.code() == sycl.errc.invalid


def test_built_in_kernel_ids_is_an_empty_list(device):
    ids = device.get_info(sycl.info.device.built_in_kernel_ids)
    assert ids == [] and isinstance(ids, list)
    assert device.built_in_kernel_ids == []
