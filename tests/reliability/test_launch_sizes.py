"""Launch ranges, USM allocation sizes and scalar kernel arguments are checked against the
device's limits and the parameter's type: a size that would wrap, a dtype kernels cannot
hold and a scalar that would be narrowed are refused with a ``sycl.exception`` that is
also the Python error users catch (``OverflowError``, ``MemoryError``, ``TypeError``),
and the queue keeps working afterwards."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import pysycl as sycl


@sycl.kernel
def fill_value(it: sycl.item[1], out: sycl.global_ptr[np.int32], v: np.int32):
    out[it.get_id(0)] = v


@sycl.kernel
def fill_u8(it: sycl.item[1], out: sycl.global_ptr[np.uint8], v: np.uint8):
    out[it.get_id(0)] = v


@sycl.kernel
def fill_f32(it: sycl.item[1], out: sycl.global_ptr[np.float32], v: np.float32):
    out[it.get_id(0)] = v


@sycl.kernel
def count_items(it: sycl.nd_item[1], out: sycl.global_ptr[np.int64]):
    sycl.atomic_ref(out, 0).fetch_add(np.int64(1))


def _still_works(q, rng):
    """A launch after the refused one gives the right answer."""
    n = 16
    out = sycl.malloc_shared(n, np.int32, q)
    v = int(rng.integers(-1000, 1000))
    q.parallel_for(n, fill_value, out, np.int32(v)).wait()
    q.wait_and_throw()
    np.testing.assert_array_equal(out.to_numpy(), np.full(n, v, np.int32))
    sycl.free(out, q)


def _refused(q, rng, fn, code, pytype):
    with pytest.raises(sycl.exception) as info:
        fn()
        q.wait_and_throw()
    assert info.value.code() == code, str(info.value)
    assert isinstance(info.value, pytype), type(info.value).__mro__
    _still_works(q, rng)
    return str(info.value)


# Ranges ------------------------------------------------------------------------------------
@pytest.mark.parametrize("form", [
    lambda: sycl.range(2**64), lambda: sycl.range(2**63), lambda: sycl.range(4, 2**63),
    lambda: sycl.id(2**63), lambda: sycl.nd_range(2**63, 1),
    lambda: sycl.nd_range(8, 4, offset=(2**63,)),
], ids=["range-2**64", "range-2**63", "range-2d", "id", "nd_range", "offset"])
def test_range_too_big_to_make(form):
    with pytest.raises(sycl.exception) as info:
        form()
    assert isinstance(info.value, OverflowError)
    assert info.value.code() in (sycl.errc.invalid, sycl.errc.nd_range)


@pytest.mark.parametrize("rng_form", [
    2**63, np.uint64(2**63), (2**63,), (np.int64(4), 2**63), [2**64],
], ids=["int", "np.uint64", "tuple", "tuple-np", "list"])
def test_launch_range_too_big(queue, rng, rng_form):
    out = sycl.malloc_shared(4, np.int32, queue)
    msg = _refused(queue, rng, lambda: queue.parallel_for(rng_form, fill_value, out,
                                                          np.int32(1)),
                   sycl.errc.nd_range, OverflowError)
    assert "2**63" in msg


@pytest.mark.parametrize("shape", [(2**32, 2**32), (2**21, 2**21, 2**21)],
                         ids=["2d", "3d"])
def test_launch_with_too_many_work_items(queue, rng, shape):
    nothing = nothing_2d if len(shape) == 2 else nothing_3d
    for form in (shape, sycl.range(*shape)):
        # Twice: the first launch of a range goes the general way, the next the fast one.
        for _ in range(2):
            _refused(queue, rng, lambda: queue.parallel_for(form, nothing),
                     sycl.errc.nd_range, OverflowError)


@sycl.kernel
def nothing_2d(it: sycl.item[2]):
    pass


@sycl.kernel
def nothing_3d(it: sycl.item[3]):
    pass


def test_offset_plus_range_too_big(queue, rng):
    out = sycl.malloc_shared(4, np.int64, queue)
    out[:] = 0
    r = sycl.nd_range(4, 4, offset=(2**63 - 2,))
    _refused(queue, rng, lambda: queue.parallel_for(r, count_items, out),
             sycl.errc.nd_range, OverflowError)


@pytest.mark.parametrize("bad", [4.0, np.float32(4), "4", None, (2.5,), (True,), (-1,), -3,
                                 np.int64(-2), (1, 2, 3, 4), ()],
                         ids=["float", "np.float32", "str", "None", "tuple-float",
                              "tuple-bool", "tuple-neg", "negative", "np-negative", "4d",
                              "empty"])
def test_malformed_launch_range(queue, rng, bad):
    out = sycl.malloc_shared(4, np.int32, queue)
    with pytest.raises(sycl.exception) as info:
        queue.parallel_for(bad, fill_value, out, np.int32(1))
    assert info.value.code() in (sycl.errc.nd_range, sycl.errc.invalid), str(info.value)
    if isinstance(bad, (float, np.floating, str)) or bad is None:
        assert isinstance(info.value, TypeError)
    _still_works(queue, rng)


def test_zero_range_runs_nothing(queue, rng):
    out = sycl.malloc_shared(4, np.int64, queue)
    out[:] = 0
    for r in (0, (0,), sycl.range(0), np.int64(0)):
        queue.parallel_for(r, count_range, out).wait()
    queue.wait_and_throw()
    assert out.to_numpy().tolist() == [0, 0, 0, 0]
    _still_works(queue, rng)


@sycl.kernel
def count_range(it: sycl.item[1], out: sycl.global_ptr[np.int64]):
    sycl.atomic_ref(out, 0).fetch_add(np.int64(1))


@pytest.mark.parametrize("g,l", [(10, 4), ((8, 6), (4, 4)), (8, 0)],
                         ids=["1d", "2d", "zero-local"])
def test_nd_range_local_must_divide(queue, rng, g, l):
    out = sycl.malloc_shared(4, np.int64, queue)
    nd = count_items if isinstance(g, int) else count_items_2d
    _refused(queue, rng, lambda: queue.parallel_for(sycl.nd_range(g, l), nd, out),
             sycl.errc.nd_range, sycl.exception)


@sycl.kernel
def count_items_2d(it: sycl.nd_item[2], out: sycl.global_ptr[np.int64]):
    sycl.atomic_ref(out, 0).fetch_add(np.int64(1))


def test_local_range_over_device_limit(queue, rng):
    out = sycl.malloc_shared(4, np.int64, queue)
    out[:] = 0
    big = queue.get_device().max_work_group_size * 2
    _refused(queue, rng, lambda: queue.parallel_for(sycl.nd_range(big, big), count_items, out),
             sycl.errc.nd_range, sycl.exception)
    # In range: every work-item counted.
    n = queue.get_device().max_work_group_size
    queue.parallel_for(sycl.nd_range(2 * n, n), count_items, out).wait()
    assert int(out.to_numpy()[0]) == 2 * n


# USM sizes and dtypes ------------------------------------------------------------------------
@pytest.mark.parametrize("shape", [(2**62, 4), 2**62, (2**40, 2**40), (2**63,)],
                         ids=["wraps-to-0", "1d", "2d", "2**63"])
def test_usm_allocation_too_big(queue, rng, shape):
    for kind in ("shared", "device", "host"):
        if not queue.get_device().has(f"usm_{kind}_allocations"):
            continue
        with pytest.raises(sycl.exception) as info:
            sycl.malloc(shape, np.float32, queue, kind)
        assert info.value.code() == sycl.errc.memory_allocation
        assert isinstance(info.value, MemoryError)
    _still_works(queue, rng)


@pytest.mark.parametrize("dtype", [object, np.dtype([("a", np.int32), ("o", object)]), "V",
                                   "S", "U", "not a dtype"],
                         ids=["object", "struct-with-object", "void0", "bytes0", "str0", "bad"])
def test_usm_dtype_refused(queue, rng, dtype):
    with pytest.raises(sycl.exception) as info:
        sycl.malloc_shared(4, dtype, queue)
    assert info.value.code() == sycl.errc.invalid
    assert isinstance(info.value, TypeError)
    _still_works(queue, rng)


@pytest.mark.parametrize("shape", [4.5, (2, 3.0), (True, 2), "4", None],
                         ids=["float", "tuple-float", "bool", "str", "None"])
def test_usm_shape_refused(queue, shape):
    with pytest.raises(sycl.exception) as info:
        sycl.malloc_shared(shape, np.float32, queue)
    assert info.value.code() == sycl.errc.invalid
    assert isinstance(info.value, TypeError)


def test_usm_plain_dtypes_still_work(queue, rng):
    """Structured and fixed-size byte dtypes hold plain bytes: allowed, and round-trip."""
    dt = np.dtype([("a", np.int32), ("b", np.float64), ("s", "S5")])
    a = sycl.malloc_shared((3, 2), dt, queue)
    data = np.zeros((3, 2), dt)
    data["a"] = rng.integers(0, 100, (3, 2))
    data["b"] = rng.standard_normal((3, 2))
    data["s"] = b"abcde"
    np.asarray(a)[...] = data
    assert a.nbytes == 6 * dt.itemsize
    np.testing.assert_array_equal(np.asarray(a), data)
    for shape in (np.int64(5), (np.int32(2), 3), sycl.range(2, 3)):
        b = sycl.malloc_shared(shape, np.float32, queue)
        assert b.size == int(np.prod(tuple(shape) if not np.isscalar(shape) else (shape,)))


def test_object_dtype_in_a_fresh_process():
    """The reported crash: NumPy dereferencing garbage object pointers."""
    code = textwrap.dedent("""
        import numpy as np, pysycl as sycl
        q = sycl.queue()
        try:
            a = sycl.malloc_shared(4, object, q)
        except TypeError as e:
            print("refused:", e)
        else:
            print(np.asarray(a).sum())
    """)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       timeout=120, env=dict(os.environ))
    assert r.returncode == 0, r.stderr
    assert "refused:" in r.stdout


# Scalar arguments ----------------------------------------------------------------------------
@pytest.mark.parametrize("value", [np.int64(2**40), 2**40, np.uint64(2**63), np.int64(-2**31 - 1),
                                   2**31, np.float64(1e30), float("inf"), 2.0**40],
                         ids=["np.int64", "int", "np.uint64", "below-min", "just-above-max",
                              "float-huge", "inf", "float-2**40"])
def test_scalar_too_big_for_int32(queue, rng, value):
    out = sycl.malloc_shared(4, np.int32, queue)
    msg = _refused(queue, rng, lambda: queue.parallel_for(4, fill_value, out, value),
                   sycl.errc.kernel_argument, (OverflowError, TypeError))
    assert "'v'" in msg and "fill_value" in msg


@pytest.mark.parametrize("value", [np.int64(-1), -1, 256, np.int16(300), np.uint16(256)],
                         ids=["np-negative", "negative", "256", "np.int16", "np.uint16"])
def test_scalar_out_of_uint8(queue, rng, value):
    out = sycl.malloc_shared(4, np.uint8, queue)
    _refused(queue, rng, lambda: queue.parallel_for(4, fill_u8, out, value),
             sycl.errc.kernel_argument, OverflowError)


@pytest.mark.parametrize("value", [3.5, np.float32(0.25), float("nan"), 1 + 2j, "3", None,
                                   np.array([1], np.int32)],
                         ids=["float", "np.float32", "nan", "complex", "str", "None", "array"])
def test_scalar_information_lost_or_wrong_kind(queue, rng, value):
    out = sycl.malloc_shared(4, np.int32, queue)
    _refused(queue, rng, lambda: queue.parallel_for(4, fill_value, out, value),
             sycl.errc.kernel_argument, TypeError)


def test_scalar_float_overflows_float32(queue, rng):
    out = sycl.malloc_shared(4, np.float32, queue)
    _refused(queue, rng, lambda: queue.parallel_for(4, fill_f32, out, 1e300),
             sycl.errc.kernel_argument, OverflowError)


def test_scalars_that_fit_are_exact(queue, rng):
    """Every value that fits goes through unchanged, whatever its Python or NumPy type."""
    out = sycl.malloc_shared(4, np.int32, queue)
    lo, hi = -2**31, 2**31 - 1
    values = [lo, hi, np.int64(hi), np.uint32(hi), np.int8(-5), True, 7.0, np.float64(-12.0),
              int(rng.integers(lo, hi))]
    for v in values:
        queue.parallel_for(4, fill_value, out, v).wait()
        assert out.to_numpy().tolist() == [int(v)] * 4, v
    f = sycl.malloc_shared(4, np.float32, queue)
    for v in (0.1, np.float64(3.25), 5, float("inf"), float(rng.standard_normal())):
        queue.parallel_for(4, fill_f32, f, v).wait()
        np.testing.assert_array_equal(f.to_numpy(), np.full(4, np.float32(v)))
    queue.wait_and_throw()
