"""``sycl.vec`` in kernels as SYCL 2020 has it (4.14.2): comparisons giving mask vecs,
masks combined with ``&``/``|``/``^``/``~``, swizzles, ``as_``, ``convert``,
``size``/``byte_size``, on every device against NumPy."""
from __future__ import annotations

import importlib.util
import re

import numpy as np
import pytest

import pysycl as sycl

F4, I4 = sycl.vec(np.float32, 4), sycl.vec(np.int32, 4)
D2, L2 = sycl.vec(np.float64, 2), sycl.vec(np.int64, 2)
U8, C8 = sycl.vec(np.uint8, 8), sycl.vec(np.int8, 8)
F3 = sycl.vec(np.float32, 3)


@sycl.kernel
def compare_f4(i: sycl.id[1], a: sycl.global_ptr[F4], b: sycl.global_ptr[F4],
               out: sycl.global_ptr[I4]):
    x, y = a[i], b[i]
    out[6 * i + 0] = x < y
    out[6 * i + 1] = x <= y
    out[6 * i + 2] = x > np.float32(0.5)
    out[6 * i + 3] = x == y
    out[6 * i + 4] = (x != y) & ~(x >= np.float32(0.25))     # !(a >= c) && a != b
    out[6 * i + 5] = (x > y) | (y > np.float32(0.75)) ^ (x < np.float32(0.1))


@sycl.kernel
def compare_other_types(i: sycl.id[1], d: sycl.global_ptr[D2], u: sycl.global_ptr[U8],
                        dm: sycl.global_ptr[L2], um: sycl.global_ptr[C8]):
    dm[i] = d[i] > np.float64(0)
    um[i] = u[i] >= np.uint8(128)


@sycl.kernel
def reshape_f4(i: sycl.id[1], a: sycl.global_ptr[F4], swz: sycl.global_ptr[F4],
               bits: sycl.global_ptr[I4], conv: sycl.global_ptr[I4],
               parts: sycl.global_ptr[np.float32]):
    v = a[i]
    swz[2 * i] = v.wzyx
    swz[2 * i + 1] = v.swizzle(1, 1, 3, 0)
    bits[i] = v.as_(I4)
    conv[i] = v.convert(np.int32)
    lo, hi = v.lo(), v.hi
    ev, od = v.even(), v.odd
    parts[8 * i + 0] = v.x + v.r + v.s0
    parts[8 * i + 1] = v.w * v.a
    parts[8 * i + 2] = lo.y + hi.x
    parts[8 * i + 3] = ev.y - od.x
    parts[8 * i + 4] = np.float32(v.size())
    parts[8 * i + 5] = np.float32(v.byte_size())
    parts[8 * i + 6] = v.xy.y + v.zw.x
    parts[8 * i + 7] = v.s3


@pytest.fixture
def rng():
    return np.random.default_rng(7)


def _shared(q, host, dtype):
    a = sycl.malloc_shared(host.shape[0], dtype, q)
    np.asarray(a)[...] = host
    return a


def test_comparisons_give_mask_vecs(queue, rng):
    n = 64
    x = rng.random((n, 4), dtype=np.float32)
    y = rng.random((n, 4), dtype=np.float32)
    y[::5] = x[::5]                                 # some equal elements
    out = sycl.malloc_shared(6 * n, I4, queue)
    queue.parallel_for(n, compare_f4, _shared(queue, x, F4), _shared(queue, y, F4), out).wait()
    got = out.to_numpy().reshape(n, 6, 4)
    mask = lambda c: np.where(c, -1, 0).astype(np.int32)   # noqa: E731
    want = [x < y, x <= y, x > 0.5, x == y, (x != y) & ~(x >= 0.25),
            (x > y) | ((y > 0.75) ^ (x < 0.1))]
    for k, w in enumerate(want):
        np.testing.assert_array_equal(got[:, k], mask(w), err_msg=f"row {k}")


def test_mask_element_types_follow_the_element_size(queue, rng):
    if not queue.get_device().has(sycl.aspect.fp64):
        pytest.skip("no fp64")
    n = 32
    d = rng.standard_normal((n, 2))
    u = rng.integers(0, 256, (n, 8), dtype=np.uint8)
    dm = sycl.malloc_shared(n, L2, queue)
    um = sycl.malloc_shared(n, C8, queue)
    queue.parallel_for(n, compare_other_types, _shared(queue, d, D2), _shared(queue, u, U8),
                       dm, um).wait()
    assert dm.to_numpy().dtype == np.int64 and um.to_numpy().dtype == np.int8
    np.testing.assert_array_equal(dm.to_numpy(), np.where(d > 0, -1, 0))
    np.testing.assert_array_equal(um.to_numpy(), np.where(u >= 128, -1, 0))


def test_swizzles_as_convert_and_sizes(queue, rng):
    n = 16
    x = (rng.standard_normal((n, 4)) * 50).astype(np.float32)
    swz = sycl.malloc_shared(2 * n, F4, queue)
    bits = sycl.malloc_shared(n, I4, queue)
    conv = sycl.malloc_shared(n, I4, queue)
    parts = sycl.malloc_shared(8 * n, np.float32, queue)
    queue.parallel_for(n, reshape_f4, _shared(queue, x, F4), swz, bits, conv, parts).wait()
    s = swz.to_numpy().reshape(n, 2, 4)
    np.testing.assert_array_equal(s[:, 0], x[:, ::-1])
    np.testing.assert_array_equal(s[:, 1], x[:, [1, 1, 3, 0]])
    np.testing.assert_array_equal(bits.to_numpy(), x.view(np.int32))
    np.testing.assert_array_equal(conv.to_numpy(), x.astype(np.int32))
    p = parts.to_numpy().reshape(n, 8)
    np.testing.assert_allclose(p[:, 0], 3 * x[:, 0], rtol=1e-6)
    np.testing.assert_allclose(p[:, 1], x[:, 3] * x[:, 3], rtol=1e-6)
    np.testing.assert_allclose(p[:, 2], x[:, 1] + x[:, 2], rtol=1e-6)
    np.testing.assert_allclose(p[:, 3], x[:, 2] - x[:, 1], rtol=1e-6)
    assert (p[:, 4] == 4).all() and (p[:, 5] == 16).all()
    np.testing.assert_allclose(p[:, 6], x[:, 1] + x[:, 2], rtol=1e-6)
    np.testing.assert_array_equal(p[:, 7], x[:, 3])


def _compile(body: str, folder):
    path = folder / f"vec_case_{abs(hash(body))}.py"
    path.write_text("import numpy as np\nimport pysycl as sycl\n"
                    "F4, I4, F3 = sycl.vec(np.float32, 4), sycl.vec(np.int32, 4), "
                    "sycl.vec(np.float32, 3)\n@sycl.kernel\n"
                    "def bad(i: sycl.id[1], a: sycl.global_ptr[F4], b: sycl.global_ptr[I4]):\n"
                    f"    {body}\n")
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.bad.ir_module()


@pytest.mark.parametrize("body, message", [
    ("b[i] = a[i].q", "'q' is not a swizzle"),
    ("b[i] = a[i].s4", "'s4' is not a swizzle"),
    ("b[i] = a[i].as_(F3)", "differ in size"),
    ("b[i] = a[i].as_(np.int32)", "takes a sycl.vec type"),
    ("b[i] = a[i] < b[i]", "cannot compare"),
    ("b[i] = a[i].swizzle(0, 9)", "constants in 0..3"),
    ("b[i] = a[i].rotate()", "'rotate' is not a method"),
])
def test_misused_vecs_are_compile_errors(body, message, tmp_path):
    with pytest.raises(sycl.compile_error, match=re.escape(message)):
        _compile(body, tmp_path)
