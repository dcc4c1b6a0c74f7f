"""Whole programs on every device: the kernel language and the runtime, checked against
NumPy on random data."""
import numpy as np
import pytest

import pysycl as sycl

RNG_SEED = 20240611


@pytest.fixture
def rng():
    return np.random.default_rng(RNG_SEED)


def random_array(rng, shape, dtype):
    """Random values spanning the dtype's useful range, negative ones where they exist."""
    dt = np.dtype(dtype)
    if dt == np.bool_:
        return rng.integers(0, 2, size=shape).astype(np.bool_)
    if dt.kind in "iu":
        info = np.iinfo(dt)
        lo, hi = max(info.min, -(2 ** 40)), min(info.max, 2 ** 40)
        return rng.integers(lo, hi, size=shape, endpoint=True).astype(dt)
    return (rng.standard_normal(shape) * 100).astype(dt)


def require(device, *aspects):
    for a in aspects:
        if not device.has(a):
            pytest.skip(f"{device.name} lacks aspect {a.name}")


def aspects_for(dtype):
    dt = np.dtype(dtype)
    if dt == np.float16:
        return (sycl.aspect.fp16,)
    if dt == np.float64:
        return (sycl.aspect.fp64,)
    return ()


# Vector add over every scalar type ------------------------------------------------------
SCALAR_TYPES = [np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16,
                np.uint32, np.uint64, np.float16, np.float32, np.float64]

_vadd_kernels = {}


def vadd_kernel(dtype):
    """One kernel per element type: annotations are evaluated where the kernel is defined,
    so a closure variable gives the type."""
    dt = np.dtype(dtype)
    if dt not in _vadd_kernels:
        @sycl.kernel(name=f"e2e_vadd_{dt.name}")
        def vadd(it: sycl.item[1], a: sycl.global_ptr[dt], b: sycl.global_ptr[dt],
                 c: sycl.global_ptr[dt]):
            i = it.get_id(0)
            c[i] = a[i] + b[i]
        _vadd_kernels[dt] = vadd
    return _vadd_kernels[dt]


@pytest.mark.parametrize("dtype", SCALAR_TYPES, ids=lambda t: np.dtype(t).name)
def test_vector_add_every_scalar_type(queue, rng, dtype):
    require(queue.get_device(), *aspects_for(dtype))
    n = 1000
    a, b = random_array(rng, n, dtype), random_array(rng, n, dtype)
    with np.errstate(over="ignore"):
        expected = a + b  # NumPy wraps fixed-width integers, ORs booleans
    da = sycl.malloc_device(n, dtype, queue)
    db = sycl.malloc_device(n, dtype, queue)
    dc = sycl.malloc_shared(n, dtype, queue)
    try:
        queue.memcpy(da, a).wait()
        queue.memcpy(db, b).wait()
        queue.parallel_for(sycl.range(n), vadd_kernel(dtype), da, db, dc).wait()
        got = np.asarray(dc).copy()
    finally:
        for p in (da, db, dc):
            sycl.free(p, queue)
    assert got.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(got, expected)


# 2-D 3x3 convolution with boundary checks ------------------------------------------------
@sycl.kernel
def conv3x3(it: sycl.item[2], inp: sycl.accessor[np.float32, 2, sycl.read_only],
            coeff: sycl.accessor[np.float32, 2, sycl.read_only],
            out: sycl.accessor[np.float32, 2, sycl.write_only]):
    rows = inp.get_range(0)
    cols = inp.get_range(1)
    acc = np.float32(0)
    for i in range(-1, 2):
        r = it.get_id(0) + i
        if r >= 0 and r < rows:
            for j in range(-1, 2):
                c = it.get_id(1) + j
                if 0 <= c < cols:
                    acc += coeff[i + 1, j + 1] * inp[r, c]
    out[it] = acc


def conv_reference(image, coefficients):
    padded = np.pad(image, 1)
    rows, cols = image.shape
    out = np.zeros_like(image)
    for i in range(3):
        for j in range(3):
            out += coefficients[i, j] * padded[i:i + rows, j:j + cols]
    return out


@pytest.mark.parametrize("shape", [(1, 1), (7, 13), (64, 33)])
def test_convolution_3x3_boundaries(queue, rng, shape):
    image = rng.standard_normal(shape).astype(np.float32)
    coefficients = rng.standard_normal((3, 3)).astype(np.float32)
    result = np.full(shape, np.nan, np.float32)
    with sycl.buffer(image) as b_in, sycl.buffer(coefficients) as b_co, \
            sycl.buffer(result) as b_out:
        def cgf(cgh):
            cgh.parallel_for(sycl.range(*shape), conv3x3,
                             sycl.accessor(b_in, cgh, sycl.read_only),
                             sycl.accessor(b_co, cgh, sycl.read_only),
                             sycl.accessor(b_out, cgh, sycl.write_only, sycl.no_init))
        queue.submit(cgf).wait()
    np.testing.assert_allclose(result, conv_reference(image, coefficients),
                               rtol=1e-5, atol=1e-5)


# Work-group tree reduction: local memory, a barrier inside a loop ----------------------
@sycl.kernel
def tree_reduce_while(nd: sycl.nd_item[1], x: sycl.accessor[np.int64, 1, sycl.read_only],
                      partial: sycl.accessor[np.int64, 1, sycl.write_only],
                      scratch: sycl.local_accessor[np.int64, 1]):
    lid = nd.get_local_id(0)
    scratch[lid] = x[nd.get_global_id(0)]
    sycl.group_barrier(nd.get_group())
    stride = nd.get_local_range(0) // 2
    while stride > 0:
        if lid < stride:
            scratch[lid] += scratch[lid + stride]
        sycl.group_barrier(nd.get_group())
        stride //= 2
    if lid == 0:
        partial[nd.get_group(0)] = scratch[0]


@sycl.kernel
def tree_reduce_for(nd: sycl.nd_item[1], x: sycl.global_ptr[np.float32],
                    partial: sycl.global_ptr[np.float32],
                    scratch: sycl.local_accessor[np.float32, 1], levels: np.int32):
    lid = nd.get_local_id(0)
    scratch[lid] = x[nd.get_global_id(0)] * np.float32(2)
    sycl.group_barrier(nd.get_group())
    for level in range(levels):
        stride = nd.get_local_range(0) >> (level + 1)
        if lid < stride:
            scratch[lid] = scratch[lid] + scratch[lid + stride]
        sycl.group_barrier(nd.get_group())
    if lid == 0:
        partial[nd.get_group(0)] = scratch[0]


WG_SIZES = [1, 2, 16, 64, 256]


@pytest.mark.parametrize("wg", WG_SIZES)
def test_tree_reduction_while_loop_barrier(queue, rng, wg):
    if wg > queue.get_device().max_work_group_size:
        pytest.skip("work-group too large for this device")
    groups = 5
    x = rng.integers(-10 ** 9, 10 ** 9, size=wg * groups).astype(np.int64)
    partial = np.zeros(groups, np.int64) - 1
    with sycl.buffer(x) as bx, sycl.buffer(partial) as bp:
        def cgf(cgh):
            cgh.parallel_for(sycl.nd_range(sycl.range(wg * groups), sycl.range(wg)),
                             tree_reduce_while, sycl.accessor(bx, cgh, sycl.read_only),
                             sycl.accessor(bp, cgh, sycl.write_only, sycl.no_init),
                             cgh.local_accessor(np.int64, wg))
        queue.submit(cgf).wait()
    np.testing.assert_array_equal(partial, x.reshape(groups, wg).sum(axis=1))


@pytest.mark.parametrize("wg", WG_SIZES)
def test_tree_reduction_for_loop_barrier_usm(queue, rng, wg):
    if wg > queue.get_device().max_work_group_size:
        pytest.skip("work-group too large for this device")
    groups = 3
    # small integers in float32: every partial sum is exact, whatever the order
    x = rng.integers(-1000, 1000, size=wg * groups).astype(np.float32)
    dx = sycl.malloc_shared(x.shape, np.float32, queue)
    dp = sycl.malloc_shared(groups, np.float32, queue)
    try:
        np.asarray(dx)[:] = x
        np.asarray(dp)[:] = np.nan
        levels = np.int32(int(np.log2(wg)))
        queue.submit(lambda cgh: cgh.parallel_for(
            sycl.nd_range(wg * groups, wg), tree_reduce_for, dx, dp,
            cgh.local_accessor(np.float32, wg), levels)).wait()
        got = np.asarray(dp).copy()
    finally:
        sycl.free(dx, queue)
        sycl.free(dp, queue)
    np.testing.assert_array_equal(got, 2 * x.reshape(groups, wg).sum(axis=1))


@sycl.kernel
def group_sum(nd: sycl.nd_item[1], x: sycl.global_ptr[np.int32],
              out: sycl.global_ptr[np.int32]):
    total = sycl.reduce_over_group(nd.get_group(), x[nd.get_global_id(0)], sycl.plus())
    if nd.get_local_id(0) == 0:
        out[nd.get_group(0)] = total


@pytest.mark.parametrize("wg", [4, 32, 128])
def test_reduce_over_group(queue, rng, wg):
    groups = 4
    x = rng.integers(-10 ** 6, 10 ** 6, size=wg * groups).astype(np.int32)
    dx = sycl.malloc_shared(x.shape, np.int32, queue)
    out = sycl.malloc_shared(groups, np.int32, queue)
    try:
        np.asarray(dx)[:] = x
        np.asarray(out)[:] = -1
        queue.parallel_for(sycl.nd_range(sycl.range(wg * groups), sycl.range(wg)),
                           group_sum, dx, out).wait()
        got = np.asarray(out).copy()
    finally:
        sycl.free(dx, queue)
        sycl.free(out, queue)
    np.testing.assert_array_equal(got, x.reshape(groups, wg).sum(axis=1))


# Atomic histogram ------------------------------------------------------------------------
@sycl.kernel
def histogram(it: sycl.item[1], data: sycl.accessor[np.int32, 1, sycl.read_only],
              bins: sycl.accessor[np.int32, 1, sycl.read_write]):
    v = data[it]
    sycl.atomic_ref(bins, v).fetch_add(np.int32(1))


@sycl.kernel
def histogram_usm_max(it: sycl.item[1], data: sycl.global_ptr[np.uint32],
                      bins: sycl.global_ptr[np.uint32], maxima: sycl.global_ptr[np.uint32],
                      nbins: np.uint32):
    v = data[it.get_id(0)]
    b = v % nbins
    sycl.atomic_ref(bins, b, sycl.memory_order.relaxed, sycl.memory_scope.device).fetch_add(1)
    sycl.atomic_ref(maxima, b).fetch_max(v)


def test_atomic_histogram_accessor(queue, rng):
    data = rng.integers(0, 37, size=20000).astype(np.int32)
    bins = np.zeros(37, np.int32)
    with sycl.buffer(data) as bd, sycl.buffer(bins) as bb:
        queue.submit(lambda cgh: cgh.parallel_for(
            sycl.range(data.size), histogram, sycl.accessor(bd, cgh, sycl.read_only),
            sycl.accessor(bb, cgh, sycl.read_write))).wait()
    np.testing.assert_array_equal(bins, np.bincount(data, minlength=37))


def test_atomic_histogram_usm_fetch_max(queue, rng):
    nbins = 11
    data = rng.integers(0, 2 ** 32, size=5000, dtype=np.uint64).astype(np.uint32)
    d = sycl.malloc_shared(data.size, np.uint32, queue)
    bins = sycl.malloc_shared(nbins, np.uint32, queue)
    maxima = sycl.malloc_shared(nbins, np.uint32, queue)
    try:
        np.asarray(d)[:] = data
        queue.fill(bins, np.uint32(0)).wait()
        queue.memset(maxima, 0).wait()
        queue.parallel_for(sycl.range(data.size), histogram_usm_max, d, bins, maxima,
                           np.uint32(nbins)).wait()
        got_bins, got_max = np.asarray(bins).copy(), np.asarray(maxima).copy()
    finally:
        for p in (d, bins, maxima):
            sycl.free(p, queue)
    keys = data % nbins
    np.testing.assert_array_equal(got_bins, np.bincount(keys, minlength=nbins))
    np.testing.assert_array_equal(got_max, [data[keys == k].max() for k in range(nbins)])


# Struct and fixed-array arguments --------------------------------------------------------
@sycl.struct
class Affine:
    scale: np.float32
    shift: np.int64
    negate: np.bool_


sample_t = np.dtype([("tag", np.int8), ("value", np.float64), ("count", np.int16),
                     ("weights", np.float32, (3,))], align=True)
weights_t = np.dtype((np.float32, (4,)))


@sycl.kernel
def apply_affine(it: sycl.item[1], p: Affine, w: weights_t,
                 x: sycl.accessor[np.float32, 1, sycl.read_only],
                 y: sycl.accessor[np.float32, 1, sycl.write_only]):
    v = x[it] * p.scale + np.float32(p.shift) + w[it.get_id(0) % 4]
    if p.negate:
        v = -v
    y[it] = v


@sycl.kernel
def update_samples(it: sycl.item[1], samples: sycl.accessor[sample_t, 1, sycl.read_write],
                   total: sycl.accessor[np.float64, 1, sycl.write_only]):
    s = samples[it]
    s.value = s.value * 2.0 + s.tag
    s.count += 1
    acc = 0.0
    for k in range(len(s.weights)):
        acc += s.weights[k]
    s.weights[0] = np.float32(acc)
    samples[it] = s
    total[it] = acc + s.value


@pytest.mark.parametrize("form", ["instance", "tuple", "void"])
def test_struct_and_array_arguments(queue, rng, form):
    x = rng.standard_normal(257).astype(np.float32)
    w = rng.standard_normal(4).astype(np.float32)
    scale, shift, negate = np.float32(rng.uniform(-3, 3)), int(rng.integers(-50, 50)), True
    if form == "instance":
        p = Affine(scale, shift, negate)
    elif form == "tuple":
        p = (scale, shift, negate)
    else:
        p = np.array((scale, shift, negate), dtype=Affine.dtype)[()]
    y = np.zeros_like(x)
    with sycl.buffer(x) as bx, sycl.buffer(y) as by:
        queue.submit(lambda cgh: cgh.parallel_for(
            sycl.range(x.size), apply_affine, p, w, sycl.accessor(bx, cgh, sycl.read_only),
            sycl.accessor(by, cgh, sycl.write_only))).wait()
    expected = -(x * scale + np.float32(shift) + w[np.arange(x.size) % 4])
    np.testing.assert_allclose(y, expected, rtol=1e-6, atol=1e-5)


def test_struct_dtype_buffer_field_read_write(queue, rng):
    n = 300
    samples = np.zeros(n, sample_t)
    samples["tag"] = rng.integers(-128, 128, n)
    samples["value"] = rng.standard_normal(n)
    samples["count"] = rng.integers(-1000, 1000, n)
    samples["weights"] = rng.standard_normal((n, 3))
    original = samples.copy()
    total = np.zeros(n)
    with sycl.buffer(samples) as bs, sycl.buffer(total) as bt:
        queue.submit(lambda cgh: cgh.parallel_for(
            sycl.range(n), update_samples, sycl.accessor(bs, cgh, sycl.read_write),
            sycl.accessor(bt, cgh, sycl.write_only))).wait()
    wsum = original["weights"].astype(np.float64).sum(axis=1)
    new_value = original["value"] * 2.0 + original["tag"]
    np.testing.assert_array_equal(samples["tag"], original["tag"])
    np.testing.assert_allclose(samples["value"], new_value, rtol=1e-12)
    np.testing.assert_array_equal(samples["count"], original["count"] + 1)
    np.testing.assert_allclose(samples["weights"][:, 0], wsum.astype(np.float32), rtol=1e-5)
    np.testing.assert_array_equal(samples["weights"][:, 1:], original["weights"][:, 1:])
    np.testing.assert_allclose(total, wsum + new_value, rtol=1e-5, atol=1e-5)


# Nested device-function calls ------------------------------------------------------------
@sycl.device
def square(x: np.float64) -> np.float64:
    return x * x


@sycl.device
def sum_of_squares(a: np.float64, b: np.float64) -> np.float64:
    return square(a) + square(b)


@sycl.device
def clamp_norm(a, b, limit: np.float64):
    n = sycl.math.sqrt(sum_of_squares(a, b))
    if n > limit:
        return limit
    return n


@sycl.device
def sign_and_abs(v: np.int32):
    if v < 0:
        return np.int32(-1), -v
    return np.int32(1), v


@sycl.kernel
def nested_calls(it: sycl.item[1], a: sycl.global_ptr[np.float64],
                 b: sycl.global_ptr[np.float64], k: sycl.global_ptr[np.int32],
                 out: sycl.global_ptr[np.float64], limit: np.float64):
    i = it.get_id(0)
    s, m = sign_and_abs(k[i])
    out[i] = clamp_norm(a[i], b[i], limit) * np.float64(s) + np.float64(m)


def test_nested_device_function_calls(queue, rng):
    require(queue.get_device(), sycl.aspect.fp64)
    n = 513
    a, b = rng.standard_normal(n), rng.standard_normal(n)
    k = rng.integers(-100, 100, n).astype(np.int32)
    limit = 1.25
    ptrs = [sycl.malloc_shared(n, dt, queue) for dt in (np.float64, np.float64, np.int32,
                                                          np.float64)]
    try:
        for p, v in zip(ptrs, (a, b, k, np.full(n, np.nan))):
            np.asarray(p)[:] = v
        queue.parallel_for(sycl.range(n), nested_calls, *ptrs, np.float64(limit)).wait()
        got = np.asarray(ptrs[3]).copy()
    finally:
        for p in ptrs:
            sycl.free(p, queue)
    expected = np.minimum(np.sqrt(a * a + b * b), limit) * np.sign(k) + np.abs(k)
    expected[k == 0] = np.minimum(np.sqrt(a * a + b * b), limit)[k == 0]
    np.testing.assert_allclose(got, expected, rtol=1e-12)


# Python semantics of // and % on negative numbers ---------------------------------------
@sycl.kernel
def floor_div_mod(it: sycl.item[1], a: sycl.global_ptr[np.int32], b: sycl.global_ptr[np.int32],
                  q: sycl.global_ptr[np.int32], r: sycl.global_ptr[np.int32],
                  q7: sycl.global_ptr[np.int64], r7: sycl.global_ptr[np.int64]):
    i = it.get_id(0)
    q[i] = a[i] // b[i]
    r[i] = a[i] % b[i]
    x = np.int64(a[i])
    q7[i] = x // -7
    r7[i] = x % 7


@sycl.kernel
def float_floor_mod(it: sycl.item[1], a: sycl.global_ptr[np.float64],
                    b: sycl.global_ptr[np.float64], q: sycl.global_ptr[np.float64],
                    r: sycl.global_ptr[np.float64]):
    i = it.get_id(0)
    q[i] = a[i] // b[i]
    r[i] = a[i] % b[i]


def test_integer_floor_division_and_modulo_match_python(queue, rng):
    n = 2000
    a = rng.integers(-10 ** 6, 10 ** 6, n).astype(np.int32)
    b = rng.integers(-50, 50, n).astype(np.int32)
    b[b == 0] = 3
    a[:4], b[:4] = [-7, 7, -7, 7], [2, -2, -2, 2]
    arrays = [sycl.malloc_shared(n, dt, queue) for dt in
              (np.int32, np.int32, np.int32, np.int32, np.int64, np.int64)]
    try:
        np.asarray(arrays[0])[:] = a
        np.asarray(arrays[1])[:] = b
        queue.parallel_for(sycl.range(n), floor_div_mod, *arrays).wait()
        q, r, q7, r7 = (np.asarray(x).copy() for x in arrays[2:])
    finally:
        for x in arrays:
            sycl.free(x, queue)
    np.testing.assert_array_equal(q, a // b)
    np.testing.assert_array_equal(r, a % b)
    assert [int(v) for v in q[:4]] == [-7 // 2, 7 // -2, -7 // -2, 7 // 2]
    assert [int(v) for v in r[:4]] == [-7 % 2, 7 % -2, -7 % -2, 7 % 2]
    np.testing.assert_array_equal(q7, a.astype(np.int64) // -7)
    np.testing.assert_array_equal(r7, a.astype(np.int64) % 7)


def test_float_floor_division_and_modulo_match_python(queue, rng):
    require(queue.get_device(), sycl.aspect.fp64)
    n = 1000
    a = rng.standard_normal(n) * 100
    b = rng.standard_normal(n) * 10
    arrays = [sycl.malloc_shared(n, np.float64, queue) for _ in range(4)]
    try:
        np.asarray(arrays[0])[:] = a
        np.asarray(arrays[1])[:] = b
        queue.parallel_for(sycl.range(n), float_floor_mod, *arrays).wait()
        q, r = np.asarray(arrays[2]).copy(), np.asarray(arrays[3]).copy()
    finally:
        for x in arrays:
            sycl.free(x, queue)
    np.testing.assert_array_equal(q, a // b)
    np.testing.assert_allclose(r, a % b, rtol=1e-12, atol=1e-12)
    assert np.all(np.sign(r[r != 0]) == np.sign(b[r != 0]))


# float32 stays float32 ------------------------------------------------------------------
@sycl.kernel
def f32_math(it: sycl.item[1], x: sycl.accessor[np.float32, 1, sycl.read_only],
             big: sycl.accessor[np.float32, 1, sycl.read_only],
             out: sycl.accessor[np.float32, 2, sycl.write_only]):
    i = it.get_id(0)
    v = x[i]
    out[i, 0] = sycl.math.sin(v) * 2.0 + sycl.math.exp(v * np.float32(0.1))
    out[i, 1] = (big[i] + 1.0) - big[i]          # 1 is lost in float32, not in float64
    t = big[i] * big[i]                          # overflows in float32
    out[i, 2] = sycl.math.sqrt(t)
    out[i, 3] = np.sqrt(sycl.math.fabs(v)) / 3
    out[i, 4] = (v + np.float32(8388608.0)) - np.float32(8388608.0)  # rounds in float32


def test_float32_math_stays_float32(queue, rng):
    n = 512
    x = rng.uniform(-5, 5, n).astype(np.float32)
    big = rng.uniform(1e20, 1e30, n).astype(np.float32)
    big[:: 2] = rng.uniform(1.0e8, 2.0e8, n // 2).astype(np.float32)
    out = np.full((n, 5), np.nan, np.float32)
    with sycl.buffer(x) as bx, sycl.buffer(big) as bb, sycl.buffer(out) as bo:
        queue.submit(lambda cgh: cgh.parallel_for(
            sycl.range(n), f32_math, sycl.accessor(bx, cgh, sycl.read_only),
            sycl.accessor(bb, cgh, sycl.read_only), sycl.accessor(bo, cgh, sycl.write_only)
        )).wait()
    with np.errstate(over="ignore"):
        expected = np.stack([
            np.sin(x) * 2.0 + np.exp(x * np.float32(0.1)),
            (big + np.float32(1.0)) - big,
            np.sqrt(big * big),
            np.sqrt(np.abs(x)) / np.float32(3),
            (x + np.float32(8388608.0)) - np.float32(8388608.0)], axis=1)
    assert expected.dtype == np.float32
    np.testing.assert_allclose(out[:, 0], expected[:, 0], rtol=2e-6, atol=2e-6)
    np.testing.assert_array_equal(out[:, 1], expected[:, 1])
    assert np.all(out[1::2, 2] == np.inf) and np.all(np.isfinite(out[::2, 2]))
    np.testing.assert_allclose(out[:, 2], expected[:, 2], rtol=1e-6)
    np.testing.assert_allclose(out[:, 3], expected[:, 3], rtol=2e-7)
    np.testing.assert_array_equal(out[:, 4], expected[:, 4])
    assert not np.array_equal(out[:, 4], x)


# USM and buffers ------------------------------------------------------------------------
@sycl.kernel
def saxpy(it: sycl.item[1], a: np.float32, x: sycl.global_ptr[np.float32],
          y: sycl.global_ptr[np.float32]):
    i = it.get_id(0)
    y[i] = a * x[i] + y[i]


@sycl.kernel
def saxpy_acc(it: sycl.item[1], a: np.float32, x: sycl.accessor[np.float32, 1, sycl.read_only],
              y: sycl.accessor[np.float32, 1, sycl.read_write]):
    y[it] = a * x[it] + y[it]


@pytest.mark.parametrize("kind", ["device", "shared", "host"])
def test_usm_kinds(queue, rng, kind):
    n = 4099
    x = rng.standard_normal(n).astype(np.float32)
    y = rng.standard_normal(n).astype(np.float32)
    malloc = {"device": sycl.malloc_device, "shared": sycl.malloc_shared,
              "host": sycl.malloc_host}[kind]
    dx, dy = malloc(n, np.float32, queue), malloc(n, np.float32, queue)
    try:
        assert isinstance(dx, sycl.usm_array)
        assert dx.shape == (n,) and dx.dtype == np.float32 and dx.nbytes == 4 * n
        assert str(getattr(dx.usm_type, "name", dx.usm_type)) == kind
        assert dx.ptr != 0 and dx.ptr != dy.ptr
        e1 = queue.memcpy(dx, x)
        e2 = queue.copy(y, dy)
        e3 = queue.parallel_for(sycl.range(n), saxpy, np.float32(2.5), dx, dy,
                                depends_on=[e1, e2])
        back = np.empty(n, np.float32)
        queue.memcpy(back, dy, depends_on=[e3]).wait()
    finally:
        sycl.free(dx, queue)
        sycl.free(dy, queue)
    ax = np.float32(2.5) * x
    # CUDA contracts a * x + y into one fma (nvcc's -fmad=true default, see
    # backends/cuda/lowering.py): the product is not rounded, so the results may differ
    # from NumPy's by that rounding, at most half an ulp of a * x.
    np.testing.assert_allclose(back, ax + y, rtol=1e-6,
                               atol=float(np.finfo(np.float32).eps * np.abs(ax).max()))


def test_usm_fill_memset_and_partial_copy(queue, rng):
    n = 100
    d = sycl.malloc_device(n, np.int32, queue)
    try:
        value = np.int32(rng.integers(-10 ** 6, 10 ** 6))
        queue.fill(d, value).wait()
        out = np.zeros(n, np.int32)
        queue.copy(d, out).wait()
        assert np.all(out == value)
        queue.memset(d, 0xFF, num_bytes=40).wait()
        queue.copy(d, out).wait()
        assert np.all(out[:10] == -1) and np.all(out[10:] == value)
        src = rng.integers(-100, 100, n).astype(np.int32)
        queue.copy(src, d, count=7).wait()
        queue.copy(d, out).wait()
        np.testing.assert_array_equal(out[:7], src[:7])
        assert np.all(out[7:10] == -1) and np.all(out[10:] == value)
    finally:
        sycl.free(d, queue)


def test_buffer_writes_back_on_close(queue, rng):
    n = 777
    x = rng.standard_normal(n).astype(np.float32)
    y = rng.standard_normal(n).astype(np.float32)
    y0 = y.copy()
    bx, by = sycl.buffer(x), sycl.buffer(y)
    queue.submit(lambda cgh: cgh.parallel_for(
        sycl.range(n), saxpy_acc, np.float32(-1.5), sycl.accessor(bx, cgh, sycl.read_only),
        sycl.accessor(by, cgh, sycl.read_write)))
    by.close()
    bx.close()
    np.testing.assert_allclose(y, np.float32(-1.5) * x + y0, rtol=1e-6, atol=1e-6)


def test_buffer_from_shape_with_host_accessor(queue, rng):
    n = 64
    x = rng.standard_normal(n).astype(np.float32)
    bx = sycl.buffer((n,), np.float32)
    by = sycl.buffer((n,), np.float32)
    with sycl.host_accessor(bx, sycl.write_only) as view:
        view[:] = x
    with sycl.host_accessor(by, sycl.write_only) as view:
        view[:] = 1.0
    for _ in range(3):
        queue.submit(lambda cgh: cgh.parallel_for(
            sycl.range(n), saxpy_acc, np.float32(2.0), sycl.accessor(bx, cgh, sycl.read_only),
            sycl.accessor(by, cgh, sycl.read_write)))
    with sycl.host_accessor(by, sycl.read_only) as view:
        got = np.array(view)
    np.testing.assert_allclose(got, 1.0 + 3 * 2.0 * x, rtol=1e-5)


# Three command groups on one buffer: RAW, WAR, WAW on an out-of-order queue ----------------
@sycl.kernel
def slow_fill(it: sycl.item[1], seed: sycl.accessor[np.float32, 1, sycl.read_only],
              b: sycl.accessor[np.float32, 1, sycl.write_only]):
    v = seed[it]
    # enough work that a command started too early would read stale data
    for _k in range(3000):
        v = v * np.float32(0.5) + seed[it]
    b[it] = v


@sycl.kernel
def doubled(it: sycl.item[1], b: sycl.accessor[np.float32, 1, sycl.read_only],
            c: sycl.accessor[np.float32, 1, sycl.write_only]):
    acc = b[it]
    for _k in range(1000):
        acc = acc * np.float32(1.0)
    c[it] = acc * np.float32(2)


@sycl.kernel
def overwrite(it: sycl.item[1], b: sycl.accessor[np.float32, 1, sycl.write_only]):
    b[it] = np.float32(-7.0)


@sycl.kernel
def plus_one(it: sycl.item[1], b: sycl.accessor[np.float32, 1, sycl.read_write]):
    b[it] = b[it] + np.float32(1)


def test_raw_war_waw_on_out_of_order_queue(device, rng):
    q = sycl.queue(device, in_order=False)
    assert not q.is_in_order()
    n = 4096
    seed = rng.uniform(1, 2, n).astype(np.float32)
    b_init = rng.standard_normal(n).astype(np.float32)
    c = np.zeros(n, np.float32)
    b = b_init.copy()
    with sycl.buffer(seed) as bs, sycl.buffer(b) as bb, sycl.buffer(c) as bc:
        # 1: write b (slow);  2: read b -> c (RAW on 1);  3: write b (WAR on 2, WAW on 1)
        q.submit(lambda cgh: cgh.parallel_for(sycl.range(n), slow_fill,
                                              sycl.accessor(bs, cgh, sycl.read_only),
                                              sycl.accessor(bb, cgh, sycl.write_only)))
        q.submit(lambda cgh: cgh.parallel_for(sycl.range(n), doubled,
                                              sycl.accessor(bb, cgh, sycl.read_only),
                                              sycl.accessor(bc, cgh, sycl.write_only)))
        q.submit(lambda cgh: cgh.parallel_for(sycl.range(n), overwrite,
                                              sycl.accessor(bb, cgh, sycl.write_only)))
        q.submit(lambda cgh: cgh.parallel_for(sycl.range(n), plus_one,
                                              sycl.accessor(bb, cgh, sycl.read_write)))
    first = seed.copy()
    for _ in range(3000):
        first = first * np.float32(0.5) + seed
    np.testing.assert_allclose(c, first * 2, rtol=1e-6)
    np.testing.assert_array_equal(b, np.full(n, -6.0, np.float32))


def test_single_task_and_events(queue, rng):
    @sycl.kernel
    def total(x: sycl.global_ptr[np.int64], n: np.int64, out: sycl.global_ptr[np.int64]):
        s = np.int64(0)
        for i in range(n):
            s += x[i]
        out[0] = s

    n = 333
    x = rng.integers(-10 ** 12, 10 ** 12, n).astype(np.int64)
    dx = sycl.malloc_shared(n, np.int64, queue)
    out = sycl.malloc_shared(1, np.int64, queue)
    try:
        np.asarray(dx)[:] = x
        ev = queue.single_task(total, dx, np.int64(n), out)
        assert isinstance(ev, sycl.event)
        ev.wait()
        assert int(np.asarray(out)[0]) == int(x.sum())
    finally:
        sycl.free(dx, queue)
        sycl.free(out, queue)
