"""What a kernel's launches keep: a kernel made again under the same name runs its own
code (no cache entry of an earlier one serves it, on the queue's or the handler's
road), and command groups with their own specialization-constant values find their
plans again and run with their own values."""
import numpy as np
import pytest

import pysycl as sycl

f32 = np.float32
N = 96
scale_id = sycl.specialization_id(f32, 1.0)


def _scaled_by(scale):
    """A kernel of one name each time, with its own constant."""
    factor = f32(scale)

    @sycl.kernel
    def scaled(it: sycl.item[1], x: sycl.global_ptr[f32]):
        i = it.get_id(0)
        x[i] = x[i] * factor
    return scaled


@sycl.kernel
def times_spec(it: sycl.item[1], h: sycl.kernel_handler, x: sycl.global_ptr[f32],
               out: sycl.global_ptr[f32]):
    i = it.get_id(0)
    out[i] = x[i] * h.get_specialization_constant(scale_id)


@pytest.fixture
def host():
    return np.random.default_rng(3).standard_normal(N).astype(f32)


def test_a_kernel_made_again_runs_its_own_code(device, host):
    for scale in (2.0, -3.0, 0.5, 2.0, -3.0):
        q = sycl.queue(device)
        x = sycl.malloc_shared(N, f32, q)
        try:
            kernel = _scaled_by(scale)
            np.asarray(x)[:] = host
            q.parallel_for(N, kernel, x).wait()
            q.submit(lambda cgh: cgh.parallel_for(N, kernel, x)).wait()
            np.testing.assert_allclose(np.asarray(x), host * f32(scale) * f32(scale),
                                       rtol=1e-6)
        finally:
            sycl.free(x, q)


def test_group_spec_values_find_their_plans_again(device, host):
    q = sycl.queue(device)
    x = sycl.malloc_shared(N, f32, q)
    out = sycl.malloc_shared(N, f32, q)
    np.asarray(x)[:] = host
    values = [f32(v) for v in np.random.default_rng(9).uniform(-4, 4, 5)]
    try:
        for value in values * 3:
            def cgf(cgh, value=value):
                cgh.set_specialization_constant(scale_id, value)
                cgh.parallel_for(sycl.range(N), times_spec, x, out)
            q.submit(cgf).wait()
            np.testing.assert_allclose(np.asarray(out), host * value, rtol=1e-6)
        assert len(q._group_plans) == len(values)
    finally:
        sycl.free(x, q)
        sycl.free(out, q)


@sycl.kernel
def group_of(nd: sycl.nd_item[1], out: sycl.global_ptr[np.int32]):
    out[nd.get_global_id(0)] = np.int32(nd.get_group(0))


def test_an_nd_range_changed_in_place_is_checked_and_used_again(queue):
    """A launch remembers the last nd_range it checked; the same object with other
    ranges is another launch."""
    n = 64
    out = sycl.malloc_shared(n, np.int32, queue)
    try:
        nd = sycl.nd_range(sycl.range(n), sycl.range(8))
        for local in (8, 8, 16, 4, 16):
            nd.local_range = sycl.range(local)
            np.asarray(out)[:] = -1
            queue.parallel_for(nd, group_of, out).wait()
            np.testing.assert_array_equal(np.asarray(out), np.arange(n) // local)
        nd.local_range = sycl.range(5)   # 64 is no multiple of 5
        with pytest.raises(sycl.exception) as info:
            queue.parallel_for(nd, group_of, out)
        assert info.value.code() == sycl.errc.nd_range
    finally:
        sycl.free(out, queue)
