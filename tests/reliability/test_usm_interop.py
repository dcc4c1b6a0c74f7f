"""Device USM used as host memory is a TypeError naming the fix; DLPack exports whose
consumer refuses them or lets go run no Python code (no SystemError, no crash)."""
import numpy as np
import pytest

import pysycl as sycl
from reliability_helpers import device_prelude


def _device_only(queue):
    a = sycl.malloc_device(8, np.float32, queue)
    if a._host:
        pytest.skip(f"device USM of {queue.get_device().name} is host memory")
    return a


def test_device_usm_as_numpy_is_a_type_error(queue):
    a = _device_only(queue)
    for use in (lambda: np.asarray(a), lambda: a[0], lambda: a.__setitem__(0, 1.0),
                lambda: np.array([a])):
        with pytest.raises(TypeError) as e:
            use()
        assert isinstance(e.value, sycl.exception) and e.value.code() == sycl.errc.invalid
        assert "to_numpy()" in str(e.value) and "q.memcpy" in str(e.value)
    data = np.random.default_rng(7).random(8, dtype=np.float32)
    queue.copy(data, a).wait()
    np.testing.assert_array_equal(a.to_numpy(), data)     # the fix the message names


def test_host_reachable_usm_indexes_like_numpy(queue):
    ref = np.random.default_rng(1).integers(-100, 100, (4, 5), dtype=np.int32)
    a = sycl.malloc_shared(ref.shape, np.int32, queue)
    a[...] = ref
    assert a[2, 3] == ref[2, 3]
    np.testing.assert_array_equal(a[1:3], ref[1:3])
    np.testing.assert_array_equal(np.asarray(a, dtype=np.float64), ref.astype(np.float64))
    assert np.asarray(a, copy=True).ctypes.data != a.ptr
    assert np.asarray(a).ctypes.data == a.ptr


def test_interop_errors_in_a_subprocess(device, run_python):
    # The former failures: RecursionError (SIGSEGV with a raised limit) and SystemError.
    out = run_python("""
        sys.setrecursionlimit(100000)
        a = sycl.malloc_device(4, np.float32, q)
        results = []
        for use in (lambda: np.asarray(a), lambda: a[0]):
            try:
                use()
                results.append("ok")
            except TypeError:
                results.append("TypeError")
        try:
            x = np.from_dlpack(a)
            results.append("ok" if np.asarray(x).shape == (4,) else "bad")
        except (RuntimeError, BufferError, TypeError) as e:
            results.append("refused")
        gc.collect()
        print(results)
    """, device_prelude(device))
    results = eval(out.strip().splitlines()[-1])
    if device.backend.name == "native_cpu":   # all of its memory is host memory
        assert results == ["ok", "ok", "ok"]
    else:
        assert results[:2] == ["TypeError", "TypeError"]
        assert results[2] in ("ok", "refused")


def test_dlpack_capsules_are_released_without_python_callbacks(queue):
    from pysycl.runtime import dlpack
    a = sycl.malloc_shared(16, np.int64, queue)
    before = dlpack.sweep()
    caps = [a.__dlpack__() for _ in range(5)] + [a.__dlpack__(max_version=(1, 0))]
    assert dlpack.sweep() == before + 6
    del caps                                       # never consumed
    assert dlpack.sweep() == before


def test_dlpack_consumer_keeps_memory_and_releases_it(device, queue):
    if device.backend.name != "native_cpu":
        pytest.skip("NumPy imports CPU DLPack memory only")
    ref = np.random.default_rng(3).random(32)
    a = sycl.malloc_shared(32, np.float64, queue)
    a[:] = ref
    x = np.from_dlpack(a)
    ptr = a.ptr
    sycl.free(a)
    del a
    b = sycl.malloc_shared(32, np.float64, queue)
    b[:] = -1.0
    np.testing.assert_array_equal(x, ref)          # still the freed array's memory
    assert sycl.get_pointer_type(ptr, queue.get_context()) == sycl.usm.alloc.shared
    del x, b
    import gc
    gc.collect()
    assert sycl.get_pointer_type(ptr, queue.get_context()) == sycl.usm.alloc.unknown


@pytest.mark.parametrize("kind", ["shared", "host"])
def test_host_reachable_usm_imports_as_cpu_memory(queue, kind):
    ref = np.random.default_rng(12).random((3, 4))
    a = getattr(sycl, f"malloc_{kind}")(ref.shape, np.float64, queue)
    queue.copy(ref, a).wait()
    x = np.from_dlpack(a, device="cpu")
    assert x.ctypes.data == a.ptr                 # zero copy
    np.testing.assert_array_equal(x, ref)
    x[0, 0] = -1.0
    assert a.to_numpy()[0, 0] == -1.0


def test_device_usm_refuses_cpu_import_with_the_fix(queue):
    a = _device_only(queue)
    with pytest.raises(BufferError, match=r"a\.to_numpy\(\)"):
        np.from_dlpack(a, device="cpu")
