"""What ``sycl.buffer(x)`` holds: a list is data, an int / tuple of ints / ``sycl.range``
is a shape, an array is used (and written back); a read-only array makes a read-only
buffer. Results are checked against NumPy on random data."""
import numpy as np
import pytest

import pysycl as sycl


@sycl.kernel
def axpy(it: sycl.item[1], a: np.float64, x: sycl.accessor[np.float64, 1, sycl.read_only],
         y: sycl.accessor[np.float64, 1, sycl.read_write]):
    y[it] = a * x[it] + y[it]


@sycl.kernel
def add_one(it: sycl.item[1], x: sycl.accessor[np.int64, 1, sycl.read_only],
            y: sycl.accessor[np.int64, 1, sycl.write_only]):
    y[it] = x[it] + 1


@sycl.kernel
def fill_index(it: sycl.item[2], y: sycl.accessor[np.float32, 2, sycl.write_only]):
    y[it] = np.float32(it.get_id(0) * 100 + it.get_id(1))


def test_a_list_of_floats_is_data(queue):
    rng = np.random.default_rng(71)
    xs, ys = rng.random(33).tolist(), rng.random(33).tolist()
    bx, by = sycl.buffer(xs), sycl.buffer(ys)
    assert bx.shape == (33,) and bx.dtype == np.float64
    queue.submit(lambda cgh: cgh.parallel_for(
        33, axpy, 2.5, sycl.accessor(bx, cgh, sycl.read_only),
        sycl.accessor(by, cgh, sycl.read_write))).wait()
    with sycl.host_accessor(by, sycl.read_only) as got:
        np.testing.assert_allclose(got, 2.5 * np.array(xs) + np.array(ys))


def test_a_list_of_ints_is_data_not_a_shape(queue):
    values = np.random.default_rng(72).integers(-1000, 1000, 2).tolist()
    bx = sycl.buffer(values)
    assert bx.shape == (2,) and bx.dtype == np.int64
    by = sycl.buffer((2,), np.int64)                     # a tuple of ints is a shape
    queue.submit(lambda cgh: cgh.parallel_for(
        2, add_one, sycl.accessor(bx, cgh, sycl.read_only),
        sycl.accessor(by, cgh, sycl.write_only, sycl.no_init))).wait()
    with sycl.host_accessor(by, sycl.read_only) as got:
        assert got.tolist() == [v + 1 for v in values]
    with sycl.host_accessor(bx, sycl.read_only) as kept:
        assert kept.tolist() == values


@pytest.mark.parametrize("shape", [sycl.range(3, 5), (3, 5)])
def test_shapes_make_zeroed_buffers(queue, shape):
    b = sycl.buffer(shape, np.float32)
    assert b.shape == (3, 5) and b.dtype == np.float32
    with sycl.host_accessor(b, sycl.read_only) as v:
        assert not v.any()
    queue.submit(lambda cgh: cgh.parallel_for(
        sycl.range(3, 5), fill_index, sycl.accessor(b, cgh, sycl.write_only))).wait()
    with sycl.host_accessor(b, sycl.read_only) as v:
        np.testing.assert_array_equal(v, np.add.outer(np.arange(3) * 100, np.arange(5)))
    assert sycl.buffer(7).shape == (7,) and sycl.buffer(shape=(2, 2)).shape == (2, 2)


def test_nested_lists_with_a_dtype():
    rows = np.random.default_rng(73).random((3, 4)).tolist()
    b = sycl.buffer(rows, np.float32)
    with sycl.host_accessor(b, sycl.read_only) as v:
        assert v.shape == (3, 4) and v.dtype == np.float32
        np.testing.assert_array_equal(v, np.array(rows, np.float32))


def test_lists_that_are_not_numbers_are_type_errors():
    for bad in (["a", object()], [[1.0, 2.0], [3.0]]):
        with pytest.raises(TypeError) as e:
            sycl.buffer(bad)
        assert e.value.code() == sycl.errc.invalid


def test_a_read_only_array_makes_a_read_only_buffer(queue):
    rng = np.random.default_rng(74)
    x = rng.random(16)
    x.flags.writeable = False
    y = rng.random(16)
    want = 0.5 * x + y
    bx = sycl.buffer(x)
    with pytest.raises(sycl.exception, match="read-only array") as e:
        queue.submit(lambda cgh: sycl.accessor(bx, cgh, sycl.read_write))
    assert e.value.code() == sycl.errc.accessor
    with pytest.raises(sycl.exception, match="read-only array"):
        sycl.host_accessor(bx)                          # read_write by default
    with sycl.buffer(y) as by:                          # read access is fine
        queue.submit(lambda cgh: cgh.parallel_for(
            16, axpy, 0.5, sycl.accessor(bx, cgh, sycl.read_only),
            sycl.accessor(by, cgh, sycl.read_write))).wait()
    np.testing.assert_allclose(y, want)                 # written back into y
    bx.close()


def test_a_non_contiguous_array_is_written_back(queue):
    rng = np.random.default_rng(75)
    whole = rng.random((16, 2))
    column, before = whole[:, 1], whole.copy()
    xs = rng.random(16)
    with sycl.buffer(xs) as bx, sycl.buffer(column) as by:
        queue.submit(lambda cgh: cgh.parallel_for(
            16, axpy, -3.0, sycl.accessor(bx, cgh, sycl.read_only),
            sycl.accessor(by, cgh, sycl.read_write))).wait()
    np.testing.assert_allclose(whole[:, 1], -3.0 * xs + before[:, 1])
    np.testing.assert_array_equal(whole[:, 0], before[:, 0])
