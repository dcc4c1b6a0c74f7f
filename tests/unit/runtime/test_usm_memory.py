"""USM kinds, NumPy/DLPack interop and the memory commands."""
import numpy as np
import pytest

from runtime_api import sycl


@pytest.fixture
def q():
    return sycl.queue(sycl.cpu_selector_v)


@pytest.mark.parametrize("kind", ["device", "shared", "host"])
def test_usm_kinds_are_host_views_on_native_cpu(q, kind):
    a = getattr(sycl, f"malloc_{kind}")((4, 3), np.float32, q)
    assert a.shape == (4, 3) and a.dtype == np.float32 and a.nbytes == 48
    assert a.usm_type == kind and a.device == q.get_device() and a.ptr % 64 == 0
    view = np.asarray(a)
    view[:] = np.arange(12, dtype=np.float32).reshape(4, 3)
    assert view.ctypes.data == a.ptr            # no copy
    assert np.asarray(a)[3, 2] == 11
    sycl.free(a, q)
    with pytest.raises(sycl.exception) as e:
        np.asarray(a)
    assert e.value.code() == sycl.errc.invalid
    sycl.free(a, q)                              # twice is harmless
    sycl.free(None, q)                           # a null pointer: no effect (4.8.3)
    sycl.free(0, q.get_context())
    with pytest.raises(sycl.exception) as e:
        sycl.free(np.zeros(3), q)
    assert e.value.code() == sycl.errc.invalid


def test_dlpack_round_trip_is_zero_copy(q):
    a = sycl.malloc_shared(5, np.int64, q)
    assert a.__dlpack_device__() == (1, 0)
    x = np.from_dlpack(a)
    x[:] = [1, 2, 3, 4, 5]
    assert x.ctypes.data == a.ptr
    assert np.asarray(a).tolist() == [1, 2, 3, 4, 5]
    del x
    cap = a.__dlpack__()        # an unconsumed capsule frees its tensor when it dies
    del cap


def test_no_cuda_array_interface_on_cpu(q):
    a = sycl.malloc_device(2, np.float32, q)
    assert not hasattr(a, "__cuda_array_interface__")


def test_memcpy_copy_fill_memset(q):
    src = np.arange(8, dtype=np.int32)
    d = sycl.malloc_device(8, np.int32, q)
    e1 = q.copy(src, d)
    out = np.zeros(8, np.int32)
    q.memcpy(out, d, depends_on=e1).wait()
    assert out.tolist() == src.tolist()
    q.fill(d, 7, count=3).wait()
    q.copy(d, out).wait()
    assert out.tolist() == [7, 7, 7, 3, 4, 5, 6, 7]
    q.memset(d, 0xFF, num_bytes=8).wait()
    q.copy(d, out, 2).wait()
    assert out[:2].tolist() == [-1, -1]
    f = sycl.malloc_shared(6, np.float64, q)
    q.submit(lambda cgh: cgh.fill(f, 2.5)).wait()
    assert np.asarray(f).tolist() == [2.5] * 6


def test_memory_errors_are_invalid(q):
    d = sycl.malloc_device(4, np.int32, q)
    with pytest.raises(sycl.exception) as e:
        q.memcpy(d, np.zeros(8, np.int32))
    assert e.value.code() == sycl.errc.invalid
    with pytest.raises(sycl.exception) as e:
        q.fill(d, 1, count=5)
    assert e.value.code() == sycl.errc.invalid
    q.fill(d, 1).wait()   # the queue still works
    assert np.asarray(d).tolist() == [1] * 4


def test_copy_refuses_other_element_types_memcpy_takes_bytes(q):
    # copy<T> moves elements of one type: float32 values copied into int32 memory would
    # otherwise arrive as bit patterns. memcpy still copies the bytes.
    rng = np.random.default_rng(11)
    src = rng.random(8, dtype=np.float32)
    d = sycl.malloc_shared(8, np.int32, q)
    d[:] = rng.integers(-100, 100, 8)
    before = d.to_numpy().copy()
    dg_mem = sycl.device_global(np.dtype((np.int32, (8,))))
    for dst in (d, dg_mem):
        with pytest.raises(sycl.exception) as e:
            q.copy(src, dst)
        assert e.value.code() == sycl.errc.invalid and "float32" in str(e.value)
    np.testing.assert_array_equal(d.to_numpy(), before)
    f = sycl.malloc_shared(8, np.float32, q)
    with pytest.raises(sycl.exception) as e:
        q.copy(d, f)
    assert e.value.code() == sycl.errc.invalid
    q.memcpy(f, src).wait()                      # bytes: allowed
    np.testing.assert_array_equal(f.to_numpy(), src)
    u = rng.integers(0, 2**32, 8, dtype=np.uint64).astype(np.uint32)
    q.copy(u, d).wait()                          # same-size integers: the value mod 2**32
    np.testing.assert_array_equal(d.to_numpy(), u.astype(np.int32))


def test_fill_value_out_of_range_is_errc_invalid(q):
    d = sycl.malloc_shared(4, np.int32, q)
    d[:] = [1, 2, 3, 4]
    with pytest.raises(sycl.exception) as e:
        q.fill(d, 2**40)
    assert e.value.code() == sycl.errc.invalid and "int32" in str(e.value)
    assert d.to_numpy().tolist() == [1, 2, 3, 4]


def test_one_command_per_group(q):
    d = sycl.malloc_device(4, np.int32, q)

    def cgf(cgh):
        cgh.fill(d, 1)
        cgh.memset(d, 0)
    with pytest.raises(sycl.exception) as e:
        q.submit(cgf)
    assert e.value.code() == sycl.errc.invalid and "one command" in str(e.value)


def test_memcpy_memset_fill_take_usm_addresses(queue):
    """``q.memcpy(a.ptr + k, ...)``: addresses inside an allocation, as C++ passes
    ``ptr + k``; the rest of the allocation bounds the copy."""
    rng = np.random.default_rng(7)
    rows, cols = 6, 5
    grid = rng.random((rows, cols), dtype=np.float32)
    a = sycl.malloc_device((rows, cols), np.float32, queue)
    queue.memcpy(a, grid, grid.nbytes).wait()
    row = cols * 4
    got = np.empty(cols, np.float32)
    queue.memcpy(got, a.ptr + 3 * row, row).wait()
    np.testing.assert_array_equal(got, grid[3])
    new = rng.random(cols, dtype=np.float32)
    queue.memcpy(a.ptr + 5 * row, new, row).wait()                  # the last row
    queue.memcpy(a.ptr + 0 * row, a.ptr + 2 * row, row).wait()      # within the allocation
    queue.fill(a.ptr + 4 * row + 8, np.float32(-2.5), 3).wait()     # typed by the value
    queue.memset(a.ptr + 1 * row, 0, row).wait()
    expect = grid.copy()
    expect[5], expect[0], expect[4, 2:], expect[1] = new, grid[2], -2.5, 0
    whole = np.empty_like(grid)
    queue.memcpy(whole, a, grid.nbytes).wait()
    np.testing.assert_array_equal(whole, expect)
    out = np.empty(2, np.float32)
    queue.copy(a.ptr + 4 * row, out, 2).wait()                      # elements of the host side's type
    np.testing.assert_array_equal(out, expect[4, :2])
    with pytest.raises(sycl.exception) as err:
        queue.memcpy(got, a.ptr + 5 * row + 4, row).wait()          # runs past the end
    assert err.value.code() == sycl.errc.invalid
    with pytest.raises(sycl.exception):
        queue.memcpy(got, 12345, row)                                # not USM
    with pytest.raises(sycl.exception):
        queue.copy(a.ptr, a.ptr + row, 2)                            # no element type
