"""Constants from the host: a module-level NumPy array of numbers, or a tuple of numbers
indexed at run time, is frozen into the image as a read-only table; its bytes are part
of the IR (so of the cache key); the captured array becomes read-only, so changing it
later raises instead of leaving a stale kernel."""
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import pysycl as sycl
from pysycl.errors import compile_error, errc
from pysycl.frontend import registry
from pysycl.ir.printer import print_module

_rng = np.random.default_rng(1807)
F32_TABLE = _rng.standard_normal(37).astype(np.float32)
I16_GRID = _rng.integers(-30000, 30000, (5, 7)).astype(np.int16)
F64_CUBE = _rng.random((3, 4, 2))
U8_TABLE = _rng.integers(0, 256, 11).astype(np.uint8)
COEFFS = tuple(float(x) for x in _rng.standard_normal(6))
INT_PAIRS = tuple((int(a), int(b)) for a, b in _rng.integers(-99, 99, (4, 2)))


@sycl.kernel
def k_1d(it: sycl.item[1], x: sycl.global_ptr[np.float32], out: sycl.global_ptr[np.float32],
         bytes_out: sycl.global_ptr[np.int32]):
    i = it.get_id(0)
    out[i] = x[i] * F32_TABLE[i % 37] + F32_TABLE[len(F32_TABLE) - 1]
    bytes_out[i] = U8_TABLE[i % 11]


@sycl.kernel
def k_nd(it: sycl.item[1], out: sycl.global_ptr[np.int32], cube: sycl.global_ptr[np.float64]):
    i = it.get_id(0)
    out[i] = I16_GRID[i % 5, i % 7] + I16_GRID[i % 5][(i + 1) % 7]
    cube[i] = F64_CUBE[i % 3, i % 4, i % 2]


@sycl.kernel
def k_tuple(it: sycl.item[1], x: sycl.global_ptr[np.float32], out: sycl.global_ptr[np.float32],
            pairs: sycl.global_ptr[np.int64]):
    i = it.get_id(0)
    out[i] = x[i] * COEFFS[i % 6]          # Python floats stay weak: float32 result
    pairs[i] = INT_PAIRS[i % 4][i % 2] - INT_PAIRS[i % 4][0]


def test_arrays_of_one_and_more_dimensions_match_numpy(queue):
    n = 200
    i = np.arange(n)
    x = sycl.malloc_shared(n, np.float32, queue)
    out = sycl.malloc_shared(n, np.float32, queue)
    b = sycl.malloc_shared(n, np.int32, queue)
    x[:] = _rng.standard_normal(n).astype(np.float32)
    queue.parallel_for(n, k_1d, x, out, b).wait()
    np.testing.assert_allclose(out.to_numpy(), x.to_numpy() * F32_TABLE[i % 37] + F32_TABLE[-1],
                               rtol=1e-6, atol=1e-6)
    np.testing.assert_array_equal(b.to_numpy(), U8_TABLE[i % 11])

    g = sycl.malloc_shared(n, np.int32, queue)
    c = sycl.malloc_shared(n, np.float64, queue)
    queue.parallel_for(n, k_nd, g, c).wait()
    want = (I16_GRID[i % 5, i % 7] + I16_GRID[i % 5, (i + 1) % 7]).astype(np.int32)  # int16 wraps
    np.testing.assert_array_equal(g.to_numpy(), want)
    np.testing.assert_array_equal(c.to_numpy(), F64_CUBE[i % 3, i % 4, i % 2])


def test_tuples_indexed_at_run_time(queue):
    n = 120
    i = np.arange(n)
    x = sycl.malloc_shared(n, np.float32, queue)
    out = sycl.malloc_shared(n, np.float32, queue)
    p = sycl.malloc_shared(n, np.int64, queue)
    x[:] = _rng.standard_normal(n).astype(np.float32)
    queue.parallel_for(n, k_tuple, x, out, p).wait()
    np.testing.assert_allclose(out.to_numpy(), x.to_numpy() * np.float32(np.array(COEFFS)[i % 6]),
                               rtol=1e-6)
    pairs = np.array(INT_PAIRS)
    np.testing.assert_array_equal(p.to_numpy(), pairs[i % 4, i % 2] - pairs[i % 4, 0])


def test_table_bytes_are_in_the_ir_and_the_array_is_frozen():
    text = print_module(k_1d.ir_module(), locs=False)
    assert F32_TABLE.tobytes().hex() in text and "ptr<constant,[37 x f32]>" in text
    assert not F32_TABLE.flags.writeable
    with pytest.raises(ValueError, match="read-only"):
        F32_TABLE[0] = 1


# Kernels that must not compile ------------------------------------------------------
OBJECTS = np.array([1, "a", None], dtype=object)
HUGE = np.zeros(64 * 1024 // 8 + 1)
WRITTEN = np.arange(8, dtype=np.float32)


@sycl.kernel
def k_writes(it: sycl.item[1]):
    WRITTEN[it.get_id(0)] = np.float32(1)


@sycl.kernel
def k_objects(it: sycl.item[1], out: sycl.global_ptr[np.float64]):
    out[0] = OBJECTS[0]


@sycl.kernel
def k_huge(it: sycl.item[1], out: sycl.global_ptr[np.float64]):
    out[0] = HUGE[it.get_id(0)]


@pytest.mark.parametrize("kfn, words", [
    (k_writes, ["cannot write to 'WRITTEN'", "read-only table"]),
    (k_objects, ["'OBJECTS'", "dtype object", "only arrays of numbers"]),
    (k_huge, ["'HUGE'", "65544 bytes", "1 to 65536 bytes"]),
])
def test_refusals_name_the_array(kfn, words):
    with pytest.raises(compile_error) as info:
        kfn.ir_module()
    assert info.value.code() == errc.build
    for w in words:
        assert w in info.value.msg, info.value.msg
    assert "kernel argument" in info.value.hint


_MUTATION_SCRIPT = textwrap.dedent("""
    import numpy as np
    import pysycl as sycl

    TABLE = np.random.default_rng(5).random(16).astype(np.float32)
    BASE = np.arange(32, dtype=np.float32)
    ROWS = BASE.reshape(4, 8)    # a view: its base is frozen with it

    @sycl.kernel
    def scale(it: sycl.item[1], out: sycl.global_ptr[np.float32]):
        i = it.get_id(0)
        out[i] = TABLE[i] * np.float32(3) + ROWS[i % 4, i % 8]

    q = sycl.queue(sycl.device.get_devices()[DEVICE])
    out = sycl.malloc_shared(16, np.float32, q)
    i = np.arange(16)
    want = TABLE * np.float32(3) + ROWS[i % 4, i % 8]
    q.parallel_for(16, scale, out).wait()
    np.testing.assert_allclose(out.to_numpy(), want, rtol=1e-6)
    for write in (lambda: TABLE.__setitem__(0, 1.0), lambda: TABLE.fill(0),
                  lambda: ROWS.__setitem__((1, 1), 2.0), lambda: BASE.__setitem__(3, 2.0)):
        try:
            write()
        except ValueError as e:
            assert "read-only" in str(e), e
        else:
            raise AssertionError("the frozen table was written")
    q.parallel_for(16, scale, out).wait()
    np.testing.assert_allclose(out.to_numpy(), want, rtol=1e-6)
    print("ok")
""")


def test_mutating_a_frozen_table_raises_and_the_kernel_stays_right(device, tmp_path):
    script = tmp_path / "mutate.py"
    index = sycl.device.get_devices().index(device)
    script.write_text(_MUTATION_SCRIPT.replace("DEVICE", str(index)))
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-3000:]


# Keep these kernels out of other tests' whole-program bundles.
registry.forget_module(__name__)


@pytest.fixture(autouse=True)
def _forget_kernels_defined_in_tests():
    yield
    registry.forget_module(__name__)
