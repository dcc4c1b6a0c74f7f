"""``sycl.usm_array`` as an array on every device: views by slicing (kernel arguments at
their offset, alive without their base), reshape, astype, copy, host copies, a repr with
values, NumPy ufuncs, and ``__sycl_usm_array_interface__`` both ways. Checked against
NumPy on random data."""
import gc

import numpy as np
import pytest

import pysycl as sycl


@sycl.kernel
def affine(it: sycl.item[1], x: sycl.global_ptr[np.float64], a: np.float64, b: np.float64):
    x[it] = a * x[it] + b


@sycl.kernel
def add_rows(it: sycl.item[1], x: sycl.global_ptr[np.float64], y: sycl.global_ptr[np.float64],
             out: sycl.global_ptr[np.float64]):
    out[it] = x[it] + y[it]


KINDS = ["device", "shared", "host"]


def _filled(q, kind, data):
    a = getattr(sycl, f"malloc_{kind}")(data.shape, data.dtype, q)
    q.copy(np.ascontiguousarray(data), a).wait()
    return a


@pytest.mark.parametrize("kind", KINDS)
def test_slices_are_views_that_kernels_use_at_their_offset(queue, kind):
    rng = np.random.default_rng(61)
    data = rng.standard_normal(40)
    a = _filled(queue, kind, data)
    part = a[10:25]
    assert isinstance(part, sycl.usm_array) and part.shape == (15,) and part.size == 15
    assert part.ptr == a.ptr + 10 * a.itemsize and part.usm_type == kind
    queue.parallel_for(15, affine, part, 3.0, -1.0).wait()
    want = data.copy()
    want[10:25] = 3 * want[10:25] - 1
    np.testing.assert_allclose(a.copy_to_host(), want)
    # views of views, and through reshape
    grid = a.reshape(4, 10)
    row = grid[2]
    assert row.shape == (10,) and row.ptr == a.ptr + 20 * a.itemsize
    queue.parallel_for(10, affine, row, 1.0, 100.0).wait()
    want[20:30] += 100
    np.testing.assert_allclose(a.copy_to_host(), want)
    np.testing.assert_allclose(grid[1:3].copy_to_host(), want.reshape(4, 10)[1:3])


@pytest.mark.parametrize("kind", KINDS)
def test_views_and_copies_in_memory_commands(queue, kind):
    rng = np.random.default_rng(62)
    data = rng.standard_normal(32)
    a = _filled(queue, kind, data)
    patch = rng.standard_normal(8)
    queue.copy(patch, a[4:12]).wait()                      # into a view
    out = np.zeros(8)
    queue.memcpy(out, a[20:28]).wait()                     # from a view
    np.testing.assert_array_equal(out, data[20:28])
    queue.fill(a[30:], 7.5).wait()
    queue.memcpy(a.ptr + 28 * a.itemsize, patch, 2 * a.itemsize).wait()   # an address
    want = data.copy()
    want[4:12], want[30:], want[28:30] = patch, 7.5, patch[:2]
    np.testing.assert_array_equal(a.copy_to_host(), want)
    with pytest.raises(sycl.exception):
        queue.copy(np.zeros(9), a[4:12]).wait()            # bounded by the view


@pytest.mark.parametrize("kind", KINDS)
def test_a_view_keeps_its_memory(queue, kind):
    data = np.random.default_rng(63).standard_normal(16)
    a = _filled(queue, kind, data)
    tail = a[8:]
    ctx = queue.get_context()
    del a
    gc.collect()
    assert sycl.get_pointer_type(tail.ptr, ctx) == sycl.usm.alloc[kind]
    queue.parallel_for(8, affine, tail, 2.0, 0.0).wait()
    np.testing.assert_allclose(tail.copy_to_host(), 2 * data[8:])
    with pytest.raises(sycl.exception, match="free the array it was made from"):
        sycl.free(tail, queue)


@pytest.mark.parametrize("kind", KINDS)
def test_astype_copy_and_reshape(queue, kind):
    rng = np.random.default_rng(64)
    data = rng.integers(-1000, 1000, (6, 7)).astype(np.int32)
    a = _filled(queue, kind, data)
    f = a.astype(np.float64)
    assert f.dtype == np.float64 and f.shape == (6, 7) and f.usm_type == kind and f.ptr != a.ptr
    np.testing.assert_array_equal(f.copy_to_host(), data.astype(np.float64))
    c = a.copy()
    queue.fill(a, np.int32(0)).wait()                       # the copy is independent
    np.testing.assert_array_equal(c.copy_to_host(), data)
    assert a.astype(np.int32, copy=False) is a
    flat = c.reshape(-1)
    assert flat.shape == (42,) and flat.ptr == c.ptr
    np.testing.assert_array_equal(flat.copy_to_host(), data.reshape(-1))
    with pytest.raises(sycl.exception):
        c.reshape(5, -1)


@pytest.mark.parametrize("kind", KINDS)
def test_repr_shows_values(queue, kind):
    data = np.random.default_rng(65).integers(0, 10 ** 6, 5).astype(np.int64)
    a = _filled(queue, kind, data)
    text = repr(a)
    assert text.startswith("sycl.usm_array([") and f"usm_type='{kind}'" in text
    assert all(str(v) in text for v in data)


def test_host_reachable_arithmetic_through_ufuncs(queue):
    rng = np.random.default_rng(66)
    x, y = rng.standard_normal(50), rng.standard_normal(50)
    a, b = _filled(queue, "shared", x), _filled(queue, "shared", y)
    np.testing.assert_allclose(a + b, x + y)
    np.testing.assert_allclose(2 * a - 1, 2 * x - 1)
    np.testing.assert_allclose(np.sqrt(np.abs(a)), np.sqrt(np.abs(x)))
    np.testing.assert_array_equal(a > b, x > y)
    assert isinstance(a * 2, np.ndarray)
    assert np.isclose(np.sum(a), x.sum()) and np.isclose(a.max(), x.max())
    out = np.multiply(a, b, out=a)                          # in place, into USM
    assert out is a
    np.testing.assert_allclose(a.copy_to_host(), x * y)
    a += 1.0
    np.testing.assert_allclose(a.copy_to_host(), x * y + 1)
    np.testing.assert_allclose(a[10:20] * 2, (x * y + 1)[10:20] * 2)
    assert a[3] == (x * y + 1)[3] and a[1:3].tolist() == list((x * y + 1)[1:3])


def test_device_memory_refuses_numpy_with_the_fix(queue):
    d = sycl.malloc_device(8, np.float64, queue)
    if d._host:
        pytest.skip("device USM here is host memory")
    for use in (lambda: np.asarray(d), lambda: d + 1, lambda: d[2], lambda: d.sum(),
                lambda: d.reshape(2, 4)[:, 1]):
        with pytest.raises(TypeError, match=r"to_numpy\(\)"):
            use()
    data = np.random.default_rng(67).standard_normal(8)
    queue.copy(data, d).wait()
    np.testing.assert_array_equal(d[2:6].to_numpy(), data[2:6])   # views need no host


class Foreign:
    """Another library's array exposing ``__sycl_usm_array_interface__`` (as dpnp does)."""

    def __init__(self, owner, offset, count):
        iface = owner.__sycl_usm_array_interface__
        self.owner = owner
        self.__sycl_usm_array_interface__ = dict(iface, shape=(count,), offset=offset)


@pytest.mark.parametrize("kind", KINDS)
def test_sycl_usm_array_interface_both_ways(queue, kind):
    rng = np.random.default_rng(68)
    data = rng.standard_normal(24)
    a = _filled(queue, kind, data)
    iface = a.__sycl_usm_array_interface__
    assert iface["data"] == (a.ptr, False) and iface["shape"] == (24,)
    assert iface["typestr"] == np.dtype(np.float64).str and iface["version"] == 1
    assert iface["strides"] is None and iface["syclobj"] is a.get_context()
    assert a[6:].__sycl_usm_array_interface__["data"][0] == a.ptr + 6 * 8
    # Imported: as kernel arguments and as memory-command sides.
    x, y = Foreign(a, 0, 8), Foreign(a, 8, 8)
    out = sycl.malloc_shared(8, np.float64, queue)
    queue.parallel_for(8, add_rows, x, y, out).wait()
    np.testing.assert_allclose(out.to_numpy(), data[:8] + data[8:16])
    back = np.zeros(8)
    queue.memcpy(back, Foreign(a, 16, 8)).wait()
    np.testing.assert_array_equal(back, data[16:])
    queue.copy(np.arange(8.0), Foreign(a, 16, 8)).wait()
    np.testing.assert_array_equal(a.copy_to_host()[16:], np.arange(8.0))


def test_foreign_interface_memory_pysycl_did_not_allocate_is_refused(queue):
    host = np.zeros(4)

    class Stranger:
        __sycl_usm_array_interface__ = {"data": (host.ctypes.data, False), "shape": (4,),
                                        "strides": None, "typestr": host.dtype.str,
                                        "version": 1, "syclobj": None}
    out = sycl.malloc_shared(4, np.float64, queue)
    with pytest.raises(sycl.exception, match="not USM pysycl allocated"):
        queue.parallel_for(4, add_rows, Stranger(), out, out).wait()
    with pytest.raises(sycl.exception, match="not USM pysycl allocated"):
        queue.memcpy(out, Stranger()).wait()
