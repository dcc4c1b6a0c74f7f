"""Compile-time kernel properties and device globals in whole programs."""
import numpy as np
import pytest

import pysycl as sycl


# Kernel properties -----------------------------------------------------------------------
@sycl.kernel(properties=sycl.properties(sycl.work_group_size(8)))
def fixed_wg(nd: sycl.nd_item[1], out: sycl.global_ptr[np.int32]):
    out[nd.get_global_id(0)] = np.int32(nd.get_local_range(0) * 1000 + nd.get_local_id(0))


@sycl.kernel
def local_ids(nd: sycl.nd_item[1], out: sycl.global_ptr[np.int32]):
    out[nd.get_global_id(0)] = np.int32(nd.get_local_range(0) * 1000 + nd.get_local_id(0))


def _expected(n, wg):
    return wg * 1000 + np.arange(n) % wg


def test_work_group_size_property_on_the_kernel(queue):
    n = 64
    out = sycl.malloc_shared(n, np.int32, queue)
    try:
        np.asarray(out)[:] = -1
        queue.parallel_for(sycl.nd_range(n, 8), fixed_wg, out).wait()
        np.testing.assert_array_equal(np.asarray(out), _expected(n, 8))
        for local in (16, 4):
            with pytest.raises(sycl.exception) as info:
                queue.parallel_for(sycl.nd_range(n, local), fixed_wg, out).wait()
            assert info.value.code() == sycl.errc.nd_range
            assert "fixed_wg" in str(info.value) or "work_group_size" in str(info.value)
        # the queue is fine afterwards
        np.asarray(out)[:] = -1
        queue.parallel_for(sycl.nd_range(n, 8), fixed_wg, out).wait()
        np.testing.assert_array_equal(np.asarray(out), _expected(n, 8))
    finally:
        sycl.free(out, queue)


def test_work_group_size_property_at_launch(queue):
    n = 48
    out = sycl.malloc_shared(n, np.int32, queue)
    try:
        props = sycl.properties(sycl.work_group_size(4))
        with pytest.raises(sycl.exception) as info:
            queue.parallel_for(sycl.nd_range(n, 12), local_ids, out, properties=props).wait()
        assert info.value.code() == sycl.errc.nd_range
        np.asarray(out)[:] = -1
        queue.parallel_for(sycl.nd_range(n, 4), local_ids, out, properties=props).wait()
        np.testing.assert_array_equal(np.asarray(out), _expected(n, 4))
    finally:
        sycl.free(out, queue)


def test_kernel_properties_reach_the_device_image(queue):
    exe = sycl.get_kernel_bundle(queue.get_context(), sycl.bundle_state.executable,
                                 kernel=fixed_wg)
    img = next(i for i in exe if i.has_kernel(fixed_wg))
    text = repr(img.property_sets)
    assert "sycl-work-group-size" in text or "reqd_work_group_size" in text, text


@sycl.kernel(properties=sycl.properties(sycl.device_has(sycl.aspect.fp64)))
def needs_fp64(it: sycl.item[1], x: sycl.global_ptr[np.float64]):
    x[it.get_id(0)] = x[it.get_id(0)] * 2.0


def test_device_has_property(queue):
    dev = queue.get_device()
    kid = sycl.get_kernel_id(needs_fp64)
    assert sycl.is_compatible([kid], dev) == dev.has(sycl.aspect.fp64)
    if dev.has(sycl.aspect.fp64):
        rng = np.random.default_rng(8)
        x = rng.standard_normal(10)
        dx = sycl.malloc_shared(10, np.float64, queue)
        try:
            np.asarray(dx)[:] = x
            queue.parallel_for(sycl.range(10), needs_fp64, dx).wait()
            np.testing.assert_array_equal(np.asarray(dx), 2 * x)
        finally:
            sycl.free(dx, queue)


# Device globals --------------------------------------------------------------------------
zero_scalar = sycl.device_global(np.int64)
zero_table = sycl.device_global(np.dtype((np.float32, (16,))))
table = sycl.device_global(np.dtype((np.float32, (16,))))
bytes_table = sycl.device_global(np.dtype((np.int32, (8,))))
mailbox = sycl.device_global(np.int64)
pair_t = np.dtype([("count", np.int32), ("total", np.float64)], align=True)
pair = sycl.device_global(pair_t)
tally = sycl.device_global(np.int32)
bump_id = sycl.specialization_id(np.int32, 1)


@sycl.kernel
def read_zeros(it: sycl.item[1], out: sycl.global_ptr[np.float32]):
    i = it.get_id(0)
    out[i] = zero_table[i] + np.float32(zero_scalar.get())


@sycl.kernel
def scale_by_table(it: sycl.item[1], x: sycl.global_ptr[np.float32],
                   out: sycl.global_ptr[np.float32]):
    i = it.get_id(0)
    out[i] = x[i] * table[i % 16]


@sycl.kernel
def post(value: np.int64):
    mailbox.set(value)


@sycl.kernel
def collect(out: sycl.global_ptr[np.int64]):
    out[0] = mailbox.get() + 1


@sycl.kernel
def accumulate_pair(x: sycl.global_ptr[np.float64], n: np.int32):
    p = pair.get()
    for i in range(n):
        p.count += 1
        p.total += x[i]
    pair.set(p)


@sycl.kernel
def bump(h: sycl.kernel_handler):
    tally.set(tally.get() + h.get_specialization_constant(bump_id))


def test_device_global_zero_initialised(queue):
    host = np.full(16, np.nan, np.float32)
    queue.copy(zero_table, host).wait()                 # a copy counts as a first access
    np.testing.assert_array_equal(host, np.zeros(16, np.float32))
    out = sycl.malloc_shared(16, np.float32, queue)
    try:
        np.asarray(out)[:] = np.nan
        queue.parallel_for(sycl.range(16), read_zeros, out).wait()
        np.testing.assert_array_equal(np.asarray(out), np.zeros(16, np.float32))
    finally:
        sycl.free(out, queue)
    scalar = np.array([-1], np.int64)
    queue.memcpy(scalar, zero_scalar).wait()
    assert scalar[0] == 0


def test_device_global_copy_in_and_out(queue):
    rng = np.random.default_rng(11)
    weights = rng.standard_normal(16).astype(np.float32)
    queue.copy(weights, table).wait()
    back = np.zeros(16, np.float32)
    queue.memcpy(back, table).wait()
    np.testing.assert_array_equal(back, weights)
    n = 100
    x = rng.standard_normal(n).astype(np.float32)
    dx, out = sycl.malloc_shared(n, np.float32, queue), sycl.malloc_shared(n, np.float32, queue)
    try:
        np.asarray(dx)[:] = x
        queue.parallel_for(sycl.range(n), scale_by_table, dx, out).wait()
        np.testing.assert_array_equal(np.asarray(out), x * weights[np.arange(n) % 16])
    finally:
        sycl.free(dx, queue)
        sycl.free(out, queue)
    # partial copies: start_index (elements) and offset (bytes)
    part = rng.standard_normal(4).astype(np.float32)
    queue.copy(part, table, count=4, start_index=10).wait()
    expected = weights.copy()
    expected[10:14] = part
    got = np.zeros(3, np.float32)
    queue.copy(table, got, count=3, start_index=9).wait()
    np.testing.assert_array_equal(got, expected[9:12])
    queue.memcpy(table, part[:2], num_bytes=8, offset=4).wait()
    expected[1:3] = part[:2]
    all_back = np.zeros(16, np.float32)
    queue.submit(lambda cgh: cgh.copy(table, all_back)).wait()   # the handler form
    np.testing.assert_array_equal(all_back, expected)


def test_device_global_written_by_one_kernel_read_by_another(queue):
    rng = np.random.default_rng(12)
    out = sycl.malloc_shared(1, np.int64, queue)
    try:
        for _ in range(3):
            value = int(rng.integers(-10 ** 15, 10 ** 15))
            queue.single_task(post, np.int64(value)).wait()
            queue.single_task(collect, out).wait()
            assert int(np.asarray(out)[0]) == value + 1
    finally:
        sycl.free(out, queue)
    host = np.zeros(1, np.int64)
    queue.copy(mailbox, host).wait()
    assert host[0] == value


def test_struct_device_global(queue):
    if not queue.get_device().has(sycl.aspect.fp64):
        pytest.skip("needs fp64")
    rng = np.random.default_rng(13)
    start = np.array((5, 0.25), pair_t)
    queue.memcpy(pair, start).wait()
    x = rng.standard_normal(30)
    dx = sycl.malloc_shared(30, np.float64, queue)
    try:
        np.asarray(dx)[:] = x
        queue.single_task(accumulate_pair, dx, np.int32(30)).wait()
        queue.single_task(accumulate_pair, dx, np.int32(10)).wait()
    finally:
        sycl.free(dx, queue)
    got = np.zeros((), pair_t)
    queue.memcpy(got, pair).wait()
    assert got["count"] == 45
    np.testing.assert_allclose(got["total"], 0.25 + x.sum() + x[:10].sum(), rtol=1e-12)


def test_device_global_keeps_state_across_spec_constant_values(queue):
    queue.copy(np.array([0], np.int32), tally).wait()
    for value in (3, None, 40, 3):
        def cgf(cgh, value=value):
            if value is not None:
                cgh.set_specialization_constant(bump_id, value)
            cgh.single_task(bump)
        queue.submit(cgf).wait()
    host = np.zeros(1, np.int32)
    queue.copy(tally, host).wait()
    assert host[0] == 3 + 1 + 40 + 3


def test_device_global_out_of_range_copies(queue):
    cases = [
        lambda: queue.copy(np.zeros(9, np.int32), bytes_table),
        lambda: queue.copy(np.zeros(4, np.int32), bytes_table, count=4, start_index=5),
        lambda: queue.copy(bytes_table, np.zeros(9, np.int32), count=9),
        lambda: queue.memcpy(bytes_table, np.zeros(40, np.uint8), num_bytes=33),
        lambda: queue.memcpy(np.zeros(40, np.uint8), bytes_table, num_bytes=8, offset=28),
    ]
    for make in cases:
        with pytest.raises(sycl.exception) as info:
            make().wait()
        assert info.value.code() == sycl.errc.invalid
        assert "bytes_table" in str(info.value)
    # in-range copies still work afterwards
    values = np.random.default_rng(14).integers(-100, 100, 8).astype(np.int32)
    queue.copy(values, bytes_table).wait()
    back = np.zeros(8, np.int32)
    queue.copy(bytes_table, back).wait()
    np.testing.assert_array_equal(back, values)


def test_device_global_is_kernel_only_on_the_host():
    with pytest.raises(sycl.exception):
        table.get()
    assert table.unique_id == f"{__name__}.table"
