"""The standard Python exception types users catch: a wrong argument is also a
``TypeError``, an error in kernel source also a ``SyntaxError``, an allocation failure
also a ``MemoryError``; each is a ``sycl.exception`` with its ``errc``. Tracebacks through
the generated argument packers name them (no ``<string>`` frames)."""
import traceback

import numpy as np
import pytest

import pysycl as sycl


@sycl.kernel
def scale(it: sycl.item[1], x: sycl.global_ptr[np.float32], k: np.float32):
    x[it] = x[it] * k


@sycl.kernel
def copy_rows(it: sycl.item[1], src: sycl.accessor[np.float32, 1, sycl.read_only],
              dst: sycl.accessor[np.float32, 1, sycl.write_only]):
    dst[it] = src[it]


def _shared(q, data):
    a = sycl.malloc_shared(data.shape, data.dtype, q)
    q.copy(data, a).wait()
    return a


@pytest.mark.parametrize("bad", ["text", 3, None, [1.0, 2.0]])
def test_a_wrong_pointer_argument_is_a_type_error(queue, bad):
    with pytest.raises(TypeError) as e:
        queue.parallel_for(4, scale, bad, np.float32(2)).wait()
    assert isinstance(e.value, sycl.exception)
    assert e.value.code() == sycl.errc.kernel_argument
    assert "'x'" in str(e.value) and "scale" in str(e.value)


def test_wrong_scalar_dtype_and_count_are_type_errors(queue):
    data = np.random.default_rng(2).random(8).astype(np.float32)
    a = _shared(queue, data)
    wrong_dtype = sycl.malloc_shared(8, np.float64, queue)
    for args in ((a, "two"), (a,), (a, 2.0, 3.0), (wrong_dtype, 2.0)):
        with pytest.raises(TypeError) as e:
            queue.parallel_for(8, scale, *args).wait()
        assert e.value.code() == sycl.errc.kernel_argument, args
    queue.parallel_for(8, scale, a, 3.0).wait()               # the queue still works
    np.testing.assert_allclose(a.to_numpy(), data * 3, rtol=1e-6)


def test_a_usm_array_for_an_accessor_is_a_type_error(queue):
    data = np.random.default_rng(3).random(8).astype(np.float32)
    out = np.zeros_like(data)
    a = _shared(queue, data)
    with sycl.buffer(out) as b_out:
        def cgf(cgh):
            cgh.parallel_for(8, copy_rows, a, sycl.accessor(b_out, cgh, sycl.write_only))
        with pytest.raises(TypeError, match="expected a sycl.accessor"):
            queue.submit(cgf)


def test_kernel_source_errors_are_syntax_errors(queue):
    @sycl.kernel
    def broken(it: sycl.item[1], x: sycl.global_ptr[np.float32]):
        x[it] = not_defined_anywhere  # noqa: F821 - the error this test checks

    a = sycl.malloc_shared(4, np.float32, queue)
    try:
        with pytest.raises(SyntaxError) as e:
            queue.parallel_for(4, broken, a).wait()
    finally:
        # A kernel that does not compile stays registered and other tests' whole-program
        # bundles would leave it out with a warning: a definition of the same name
        # replaces it.
        @sycl.kernel
        def broken(it: sycl.item[1], x: sycl.global_ptr[np.float32]):  # noqa: F811
            x[it] = 0
    err = e.value
    assert isinstance(err, sycl.compile_error) and err.code() == sycl.errc.build
    assert err.filename == __file__ and "not_defined_anywhere" in err.text
    assert err.offset == err.col + 1 and err.msg in str(err)
    # Python's own traceback display shows it as a SyntaxError: file, line, caret.
    shown = "".join(traceback.format_exception_only(type(err), err))
    assert f'File "{__file__}", line {err.lineno}' in shown
    assert "not_defined_anywhere" in shown and "^" in shown


def test_allocation_failures_are_memory_errors(queue):
    too_big = queue.get_device().get_info(sycl.info.device.global_mem_size) // 4 + 1
    for malloc in (sycl.malloc_device, sycl.malloc_shared, sycl.malloc_host):
        with pytest.raises(MemoryError) as e:
            malloc((too_big, 8), np.float32, queue)
        assert e.value.code() == sycl.errc.memory_allocation
    # Any layer's errc.memory_allocation is a MemoryError.
    assert isinstance(sycl.exception(sycl.errc.memory_allocation, "x"), MemoryError)
    assert not isinstance(sycl.exception(sycl.errc.invalid, "x"), MemoryError)


def test_packer_frames_have_a_name(queue):
    data = np.random.default_rng(4).random(8).astype(np.float32)
    a = _shared(queue, data)
    queue.parallel_for(8, scale, a, 2.0).wait()       # the generated fast path exists
    with pytest.raises(TypeError) as e:
        queue.parallel_for(8, scale, a, "x").wait()
    files = [f.filename for f in traceback.extract_tb(e.value.__traceback__)]
    assert "<string>" not in files
    assert any(f.startswith("<pysycl packer of kernel") for f in files), files
    np.testing.assert_allclose(a.to_numpy(), data * 2, rtol=1e-6)
