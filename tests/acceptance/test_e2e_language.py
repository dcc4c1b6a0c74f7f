"""The kernel language, construct by construct (KERNEL_LANGUAGE.md), run end to end on every
device and compared with the same code run by NumPy/Python on random data."""
import math
import os
import re
import traceback

import numpy as np
import pytest

import pysycl as sycl

RNG_SEED = 20240917


@pytest.fixture
def rng():
    return np.random.default_rng(RNG_SEED)


def require(device, *aspects):
    for a in aspects:
        if not device.has(a):
            pytest.skip(f"{device.name} lacks aspect {a.name}")


class Val:
    """A NumPy array passed by value (a fixed-array kernel argument), not through USM."""

    def __init__(self, value):
        self.value = value


def run(queue, kernel, where, *args):
    """Launch ``kernel`` over ``where`` (an int, range or nd_range) with ``args``; NumPy
    arrays travel in shared USM and come back as copies (in argument order)."""
    bufs, out = [], []
    try:
        launch_args = []
        for a in args:
            if isinstance(a, Val):
                launch_args.append(a.value)
            elif isinstance(a, np.ndarray):
                p = sycl.malloc_shared(a.shape, a.dtype, queue)
                np.asarray(p)[...] = a
                bufs.append(p)
                launch_args.append(p)
            else:
                launch_args.append(a)
        space = sycl.range(where) if isinstance(where, int) else where
        queue.parallel_for(space, kernel, *launch_args).wait()
        queue.wait_and_throw()   # kernel errors (debug checks) are asynchronous
        out = [np.asarray(p).copy() for p in bufs]
    finally:
        for p in bufs:
            sycl.free(p, queue)
    return out


def single(queue, kernel, *args):
    """``single_task`` with the same argument handling as :func:`run`."""
    bufs = []
    try:
        launch_args = []
        for a in args:
            if isinstance(a, np.ndarray):
                p = sycl.malloc_shared(a.shape, a.dtype, queue)
                np.asarray(p)[...] = a
                bufs.append(p)
                launch_args.append(p)
            else:
                launch_args.append(a)
        queue.single_task(kernel, *launch_args).wait()
        queue.wait_and_throw()
        return [np.asarray(p).copy() for p in bufs]
    finally:
        for p in bufs:
            sycl.free(p, queue)


def ints(rng, n, dtype, lo=None, hi=None):
    info = np.iinfo(dtype)
    lo = info.min if lo is None else lo
    hi = info.max if hi is None else hi
    return rng.integers(lo, hi, size=n, endpoint=True, dtype=np.int64 if info.min < 0 or
                        info.max < 2 ** 63 else np.uint64).astype(dtype)


def image_text(queue, kernel, stage):
    """A stage (``"ir"``, ``"llvm"``) of the kernel's executable image for the device."""
    exe = sycl.get_kernel_bundle(queue.get_context(), sycl.bundle_state.executable,
                                 kernel=kernel)
    img = next(i for i in exe if i.has_kernel(kernel))
    return img.asm[stage]


# Values and types -----------------------------------------------------------------------
@sycl.kernel
def promotion(it: sycl.item[1], f32: sycl.global_ptr[np.float32], i32: sycl.global_ptr[np.int32],
              i8: sycl.global_ptr[np.int8], u32: sycl.global_ptr[np.uint32],
              u64: sycl.global_ptr[np.uint64], i64: sycl.global_ptr[np.int64],
              of32: sycl.global_ptr[np.float32], oi32: sycl.global_ptr[np.int32],
              oi16: sycl.global_ptr[np.int16], oi64: sycl.global_ptr[np.int64],
              of64: sycl.global_ptr[np.float64], types: sycl.global_ptr[np.int32]):
    i = it.get_id(0)
    a = f32[i] + 3            # float32 + int literal: float32
    b = a * 2.5               # float32 * float literal: float32
    c = i32[i] + 1            # int32 + 1: int32 (wraps)
    d = i8[i] + i32[i]        # int8 + int32: int32
    e = u32[i] + i32[i]       # uint32 + int32: int64
    f = u64[i] + 1.5          # uint64 + float literal: float64
    g = i32[i] * np.int16(3)  # int32 * int16: int32
    h = i8[i] + np.int8(100)  # int8 + int8: int8 (wraps)
    of32[i * 2] = a
    of32[i * 2 + 1] = b
    oi32[i * 2] = c
    oi32[i * 2 + 1] = d + g
    oi16[i] = h
    oi64[i] = e + i64[i] // 1024
    of64[i] = f
    if i == 0:
        # Reassigning with the expected type compiles only if the inferred type is it.
        x1 = a
        x1 = np.float32(1.0)
        x2 = c
        x2 = np.int32(1)
        x3 = h
        x3 = np.int8(1)
        x4 = e
        x4 = np.int64(1)
        x5 = f
        x5 = 1.0
        types[0] = np.int32(x1 + x2 + x3 + x4) + np.int32(x5) + 3


def test_numpy_promotion_with_weak_literals(queue, rng):
    n = 300
    f32 = (rng.standard_normal(n) * 100).astype(np.float32)
    i32 = ints(rng, n, np.int32)
    i8 = ints(rng, n, np.int8)
    u32 = ints(rng, n, np.uint32)
    u64 = rng.integers(0, 2 ** 63, n, dtype=np.int64).astype(np.uint64) * np.uint64(2)
    i64 = ints(rng, n, np.int64)
    i32[0] = np.iinfo(np.int32).max  # c wraps
    outs = run(queue, promotion, n, f32, i32, i8, u32, u64, i64, np.zeros(2 * n, np.float32),
               np.zeros(2 * n, np.int32), np.zeros(n, np.int16), np.zeros(n, np.int64),
               np.zeros(n, np.float64), np.zeros(1, np.int32))
    of32, oi32, oi16, oi64, of64, types = outs[6:]
    with np.errstate(over="ignore"):
        a = f32 + 3
        b = a * 2.5
        c = i32 + 1
        d = i8 + i32
        e = u32 + i32
        f = u64 + 1.5
        g = i32 * np.int16(3)
        h = i8 + np.int8(100)
    assert a.dtype == np.float32 and b.dtype == np.float32 and c.dtype == np.int32
    assert d.dtype == np.int32 and e.dtype == np.int64 and f.dtype == np.float64
    assert h.dtype == np.int8
    np.testing.assert_array_equal(of32[0::2], a)
    np.testing.assert_array_equal(of32[1::2], b)
    np.testing.assert_array_equal(oi32[0::2], c)
    assert oi32[0] == np.iinfo(np.int32).min
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(oi32[1::2], d + g)
        np.testing.assert_array_equal(oi64, e + i64 // 1024)
    np.testing.assert_array_equal(oi16, h.astype(np.int16))
    np.testing.assert_array_equal(of64, f)
    assert types[0] == 4 + 1 + 1 + 1 + 1


@sycl.kernel
def overflow(it: sycl.item[1], a: sycl.global_ptr[np.int32], b: sycl.global_ptr[np.uint8],
             c: sycl.global_ptr[np.int64], oa: sycl.global_ptr[np.int32],
             ob: sycl.global_ptr[np.uint8], oc: sycl.global_ptr[np.int64]):
    i = it.get_id(0)
    oa[i] = a[i] * a[i] + np.int32(2147483647)
    ob[i] = b[i] * np.uint8(7) - np.uint8(200)
    x = c[i]
    x *= 3
    x -= np.int64(9223372036854775807)
    oc[i] = -x


def test_integer_overflow_wraps(queue, rng):
    n = 400
    a, b, c = ints(rng, n, np.int32), ints(rng, n, np.uint8), ints(rng, n, np.int64)
    oa, ob, oc = run(queue, overflow, n, a, b, c, np.zeros(n, np.int32), np.zeros(n, np.uint8),
                     np.zeros(n, np.int64))[3:]
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(oa, a * a + np.int32(2147483647))
        np.testing.assert_array_equal(ob, b * np.uint8(7) - np.uint8(200))
        np.testing.assert_array_equal(oc, -(c * 3 - np.int64(9223372036854775807)))


@sycl.kernel
def division(it: sycl.item[1], a: sycl.global_ptr[np.int64], b: sycl.global_ptr[np.int64],
             x: sycl.global_ptr[np.float32], y: sycl.global_ptr[np.float32],
             oi: sycl.global_ptr[np.int64], of: sycl.global_ptr[np.float32],
             td: sycl.global_ptr[np.float64], tf: sycl.global_ptr[np.float32]):
    i = it.get_id(0)
    oi[i * 4] = a[i] // b[i]
    oi[i * 4 + 1] = a[i] % b[i]
    oi[i * 4 + 2] = a[i] // -3
    oi[i * 4 + 3] = a[i] % -3
    of[i * 2] = x[i] // y[i]
    of[i * 2 + 1] = x[i] % y[i]
    td[i] = a[i] / b[i]             # int / int: true division in float64
    tf[i] = x[i] / 4                # float32 / int literal: float32


def test_floor_division_modulo_and_true_division(queue, rng):
    n = 500
    a = ints(rng, n, np.int64, -10 ** 12, 10 ** 12)
    b = ints(rng, n, np.int64, -1000, 1000)
    b[b == 0] = -7
    x = (rng.standard_normal(n) * 50).astype(np.float32)
    y = (rng.standard_normal(n) * 5).astype(np.float32)
    a[:4], b[:4] = [-7, 7, -7, 7], [2, -2, -2, 2]
    oi, of, td, tf = run(queue, division, n, a, b, x, y, np.zeros(4 * n, np.int64),
                         np.zeros(2 * n, np.float32), np.zeros(n, np.float64),
                         np.zeros(n, np.float32))[4:]
    np.testing.assert_array_equal(oi[0::4], a // b)
    np.testing.assert_array_equal(oi[1::4], a % b)
    np.testing.assert_array_equal(oi[2::4], a // -3)
    np.testing.assert_array_equal(oi[3::4], a % -3)
    np.testing.assert_array_equal(of[0::2], x // y)
    np.testing.assert_allclose(of[1::2], x % y, rtol=1e-5, atol=1e-4)
    np.testing.assert_array_equal(td, a / b)
    np.testing.assert_array_equal(tf, x / 4)


@sycl.kernel
def conversions(it: sycl.item[1], f: sycl.global_ptr[np.float64], i: sycl.global_ptr[np.int64],
                o32: sycl.global_ptr[np.int32], o64: sycl.global_ptr[np.int64],
                of: sycl.global_ptr[np.float64], of32: sycl.global_ptr[np.float32],
                ob: sycl.global_ptr[np.bool_]):
    k = it.get_id(0)
    o32[k] = np.int32(f[k])
    o64[k] = int(f[k])
    of[k] = float(i[k]) / 3
    of32[k] = np.float32(i[k])
    ob[k] = bool(i[k] % 3)


def test_conversions_truncate_toward_zero(queue, rng):
    n = 300
    f = rng.standard_normal(n) * 1000
    f[:4] = [-2.7, 2.7, -0.5, 0.5]
    i = ints(rng, n, np.int64, -10 ** 9, 10 ** 9)
    o32, o64, of, of32, ob = run(queue, conversions, n, f, i, np.zeros(n, np.int32),
                                 np.zeros(n, np.int64), np.zeros(n), np.zeros(n, np.float32),
                                 np.zeros(n, np.bool_))[2:]
    np.testing.assert_array_equal(o32, f.astype(np.int32))
    np.testing.assert_array_equal(o64, np.trunc(f).astype(np.int64))
    assert list(o64[:4]) == [-2, 2, 0, 0]
    np.testing.assert_array_equal(of, i.astype(np.float64) / 3)
    np.testing.assert_array_equal(of32, i.astype(np.float32))
    np.testing.assert_array_equal(ob, (i % 3) != 0)


def test_reassigning_a_local_with_another_type_names_the_first_line(queue):
    @sycl.kernel
    def retyped(it: sycl.item[1], out: sycl.global_ptr[np.float32]):
        v = out[it.get_id(0)]        # FIRST
        v = np.int32(3)              # SECOND
        out[it.get_id(0)] = v
    with pytest.raises(sycl.compile_error) as info:
        run(queue, retyped, 4, np.ones(4, np.float32))
    e = info.value
    first = retyped.py_function.__code__.co_firstlineno + 2
    assert e.lineno == first + 1
    assert f"line {first}" in str(e) and "float32" in str(e)


# Tuples ---------------------------------------------------------------------------------
@sycl.device
def divmod_(a, b):
    return a // b, a % b


@sycl.device
def swap_scaled(p: np.float32, q: np.float32):
    return q * np.float32(2), p


@sycl.kernel
def tuples(it: sycl.item[2], a: sycl.accessor[np.int32, 2, sycl.read_only],
           out: sycl.accessor[np.int32, 3, sycl.write_only],
           f: sycl.global_ptr[np.float32]):
    r, c = it.get_id()
    idx = (r, c)
    q, m = divmod_(a[idx], np.int32(7))
    out[r, c, 0] = q
    out[r, c, 1] = m
    t = divmod_(a[r, c], np.int32(-5))
    out[r, c, 2] = t[0] + t[1]
    x, y = f[0], f[1]
    x, y = y, x
    if r == 0 and c == 0:
        u, v = swap_scaled(x, y)
        f[2] = u
        f[3] = v


def test_tuples_multiple_returns_index_tuples_unpacking(queue, rng):
    shape = (13, 9)
    a = ints(rng, shape, np.int32, -10 ** 6, 10 ** 6)
    out = np.zeros(shape + (3,), np.int32)
    f = np.array([1.5, -2.25, 0, 0], np.float32)
    with sycl.buffer(a) as ba, sycl.buffer(out) as bo:
        df = sycl.malloc_shared(4, np.float32, queue)
        np.asarray(df)[:] = f
        queue.submit(lambda cgh: cgh.parallel_for(
            sycl.range(*shape), tuples, sycl.accessor(ba, cgh, sycl.read_only),
            sycl.accessor(bo, cgh, sycl.write_only), df)).wait()
        got_f = np.asarray(df).copy()
        sycl.free(df, queue)
    np.testing.assert_array_equal(out[..., 0], a // 7)
    np.testing.assert_array_equal(out[..., 1], a % 7)
    np.testing.assert_array_equal(out[..., 2], a // -5 + a % -5)
    np.testing.assert_array_equal(got_f[2:], [1.5 * 2, -2.25])  # swapped, then swapped back


# Structs, fixed arrays, private arrays, vec ------------------------------------------------
@sycl.struct
class Point:
    x: np.int32
    y: np.float32


@sycl.struct
class Segment:
    a: Point
    b: Point
    w: np.float64


arr4_t = np.dtype((np.float32, (4,)))


@sycl.kernel
def structs(it: sycl.item[1], segs: sycl.accessor[Segment, 1, sycl.read_write],
            out: sycl.global_ptr[np.float64]):
    i = it.get_id(0)
    s = segs[i]
    p = Point(1, 2.0)                 # construction from values
    q = Point((np.int32(3), np.float32(0.5)))   # from a tuple
    p.x += s.a.x                       # nested field read
    s.b.y = s.b.y * q.y + p.y          # nested field write
    s.a = q
    segs[i] = s
    segs[i].w = s.w + 1.0              # in-place write through the accessor
    out[i] = p.x + s.b.y


def test_structs_fields_nested_construction(queue, rng):
    n = 64
    segs = np.zeros(n, Segment.dtype)
    segs["a"]["x"] = ints(rng, n, np.int32, -1000, 1000)
    segs["a"]["y"] = rng.standard_normal(n).astype(np.float32)
    segs["b"]["x"] = ints(rng, n, np.int32, -1000, 1000)
    segs["b"]["y"] = rng.standard_normal(n).astype(np.float32)
    segs["w"] = rng.standard_normal(n)
    orig = segs.copy()
    out = np.zeros(n)
    with sycl.buffer(segs) as bs:
        d = sycl.malloc_shared(n, np.float64, queue)
        queue.submit(lambda cgh: cgh.parallel_for(
            n, structs, sycl.accessor(bs, cgh, sycl.read_write), d)).wait()
        out = np.asarray(d).copy()
        sycl.free(d, queue)
    by = orig["b"]["y"] * np.float32(0.5) + np.float32(2.0)
    np.testing.assert_array_equal(segs["b"]["y"], by)
    np.testing.assert_array_equal(segs["a"]["x"], 3)
    np.testing.assert_array_equal(segs["a"]["y"], np.float32(0.5))
    np.testing.assert_array_equal(segs["w"], orig["w"] + 1.0)
    np.testing.assert_allclose(out, (1 + orig["a"]["x"]) + by.astype(np.float64), rtol=1e-12)


@sycl.kernel
def arrays(it: sycl.item[1], w: arr4_t, x: sycl.global_ptr[np.float32],
           out: sycl.global_ptr[np.float32], cnt: sycl.global_ptr[np.int64]):
    i = it.get_id(0)
    total = np.float32(0)
    for v in w:                       # iteration over a fixed array
        total += v * x[i]
    scratch = sycl.private_array(np.float32, 8)
    for k in range(len(scratch)):
        scratch[k] = x[i] * k
    acc = np.float32(0)
    for k in range(7, -1, -2):
        acc += scratch[k]
    out[i] = total + acc + w[i % len(w)]
    cnt[i] = len(w) * 10 + len(scratch)


def test_fixed_arrays_and_private_array(queue, rng):
    n = 100
    w = rng.standard_normal(4).astype(np.float32)
    x = rng.standard_normal(n).astype(np.float32)
    out, cnt = run(queue, arrays, n, Val(w), x, np.zeros(n, np.float32), np.zeros(n, np.int64))[1:]
    total = np.zeros(n, np.float32)
    for v in w:
        total += v * x
    acc = np.zeros(n, np.float32)
    for k in range(7, -1, -2):
        acc += x * np.float32(k)
    np.testing.assert_allclose(out, total + acc + w[np.arange(n) % 4], rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(cnt, 48)


# Weak values: a range variable, `n = 3`, `acc = 0.0` are Python numbers (NEP 50 weak) --------
@sycl.kernel
def weak_values(it: sycl.item[1], x: sycl.global_ptr[np.float32], n: np.int32,
                out: sycl.global_ptr[np.float32], cnt: sycl.global_ptr[np.int32]):
    i = it.get_id(0)
    acc = 0.0                          # becomes float32 with the first `+= float32`
    for k in range(4):
        acc += x[i * 4 + k] * k        # float32 * Python int: float32
    scale = 3
    half = 0.5
    c = cnt[i]
    for j in range(n):
        c += j * 2 - 1                 # int32 + Python int: int32
    t = float(n) * x[i * 4]            # float(...) is a Python float: float32 result
    m = max(x[i * 4 + 1], 0)
    out[i] = acc * scale + half * x[i * 4] + (1 if acc > 0 else 0) + t / 4 - m
    cnt[i] = c


class _Item:
    def __init__(self, i):
        self.i = i

    def get_id(self, d):
        return np.int64(self.i)


def test_weak_python_numbers_match_numpy(queue, rng):
    """The kernel body run by Python on NumPy scalars is the reference: same values, and
    the float32 arithmetic stays float32 (no float64 anywhere in the compiled code)."""
    n = 64
    x = rng.standard_normal(4 * n).astype(np.float32)
    cnt0 = rng.integers(-1000, 1000, n).astype(np.int32)
    out, cnt = run(queue, weak_values, n, x, np.int32(5), np.zeros(n, np.float32), cnt0.copy())[1:]
    ref_out, ref_cnt = np.zeros(n, np.float32), cnt0.copy()
    for i in range(n):
        weak_values.py_function(_Item(i), x, np.int32(5), ref_out, ref_cnt)
    np.testing.assert_allclose(out, ref_out, rtol=2e-6, atol=1e-6)
    np.testing.assert_array_equal(cnt, ref_cnt)
    ir = image_text(queue, weak_values, "ir")
    # `half = 0.5` is stored as a float64 Python float, but no arithmetic is float64
    arith = [ln for ln in ir.splitlines() if ": f64" in ln and
             not any(w in ln for w in ("var.load", "const", "cast"))]
    assert not arith, arith
    if queue.get_device().backend == sycl.backend.native_cpu:
        # optimised LLVM: no double arithmetic and no float -> double (float(n) converts an
        # int32 to a Python float, i.e. through double, as Python does)
        from pysycl.backends.native_cpu.compiler import NativeCpuCompiler
        llvm = NativeCpuCompiler().optimized_ir(image_text(queue, weak_values, "llvm"))
        assert not re.search(r"\b(fadd|fsub|fmul|fdiv|frem)( [a-z]+)* double|fpext|@llvm\.\w+\.f64",
                             llvm), llvm


@sycl.kernel
def weak_accumulate(it: sycl.item[1], x: sycl.global_ptr[np.float32], m: np.int64,
                    out: sycl.global_ptr[np.float32], out64: sycl.global_ptr[np.float64]):
    i = it.get_id(0)
    acc = 0.0
    acc64 = np.float64(0.0)            # an explicit float64 accumulator stays float64
    for k in range(m):
        acc += x[i * m + k]
        acc64 += x[i * m + k]
    out[i] = acc
    out64[i] = acc64


def test_float32_accumulator_like_numpy(queue, rng):
    n, m = 32, 50
    x = (rng.standard_normal(n * m) * 1000).astype(np.float32)
    out, out64 = run(queue, weak_accumulate, n, x, np.int64(m), np.zeros(n, np.float32),
                     np.zeros(n, np.float64))[1:]
    ref, ref64 = np.zeros(n, np.float32), np.zeros(n, np.float64)
    for i in range(n):
        weak_accumulate.py_function(_Item(i), x, m, ref, ref64)
    np.testing.assert_array_equal(out, ref)          # float32 additions in the same order
    np.testing.assert_array_equal(out64, ref64)


v4 = sycl.vec(np.float32, 4)


@sycl.kernel
def vecs(it: sycl.item[1], a: sycl.global_ptr[v4], b: sycl.global_ptr[v4],
         out: sycl.global_ptr[v4], s: sycl.global_ptr[np.float32]):
    i = it.get_id(0)
    x = a[i]
    y = b[i]
    z = x * y + x - y / np.float32(2)
    z = z * np.float32(3)
    z[0] = z[0] + y[3]
    out[i] = z
    t = np.float32(0)
    for k in range(4):
        t += z[k]
    s[i] = t


@sycl.kernel
def vec_swizzle_calls(it: sycl.item[1], a: sycl.global_ptr[v4], out: sycl.global_ptr[v4]):
    i = it.get_id(0)
    x = a[i]
    out[i] = x.wzyx() + sycl.vec(np.float32, 4)(x.x(), x.g(), x.s2(), x.w()) * np.float32(10)


def test_vec_elements_and_swizzles_called_as_in_cpp(queue, rng):
    # C++ writes v.x() and, with simple swizzles, v.wzyx(): the call forms of the
    # attributes v.x, v.wzyx.
    n = 24
    a = rng.standard_normal((n, 4)).astype(np.float32)
    src = sycl.malloc_shared(n, v4, queue)
    out = sycl.malloc_shared(n, v4, queue)
    np.asarray(src).view(np.float32).reshape(n, 4)[...] = a
    queue.parallel_for(n, vec_swizzle_calls, src, out).wait()
    got = np.asarray(out).view(np.float32).reshape(n, 4)
    np.testing.assert_allclose(got, a[:, ::-1] + a * np.float32(10), rtol=1e-6)


def test_vec_elementwise_and_indexing(queue, rng):
    n = 50
    a = rng.standard_normal((n, 4)).astype(np.float32)
    b = rng.standard_normal((n, 4)).astype(np.float32)
    ptrs = [sycl.malloc_shared(n, v4, queue) for _ in range(3)]
    ds = sycl.malloc_shared(n, np.float32, queue)
    try:
        for p, x in zip(ptrs, (a, b, np.zeros_like(a))):
            np.asarray(p).view(np.float32).reshape(n, 4)[...] = x
        queue.parallel_for(n, vecs, *ptrs, ds).wait()
        got = np.asarray(ptrs[2]).view(np.float32).reshape(n, 4).copy()
        s = np.asarray(ds).copy()
    finally:
        for p in ptrs + [ds]:
            sycl.free(p, queue)
    z = (a * b + a - b / np.float32(2)) * np.float32(3)
    z[:, 0] += b[:, 3]
    np.testing.assert_allclose(got, z, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(s, z.sum(axis=1), rtol=1e-5, atol=1e-5)


# Statements -----------------------------------------------------------------------------
@sycl.device
def classify(v: np.int64) -> np.int64:
    if v < -100:
        return -2
    elif v < 0:
        return -1
    elif v == 0:
        return 0
    else:
        pass
    return 1


@sycl.kernel
def control(it: sycl.item[1], a: sycl.global_ptr[np.int64], out: sycl.global_ptr[np.int64]):
    i = it.get_id(0)
    v = a[i]
    out[i * 6] = classify(v)
    # for with an int32 counter and a negative step
    s = np.int64(0)
    for k in range(np.int32(10), np.int32(-3), np.int32(-3)):
        s += k * v
    out[i * 6 + 1] = s
    # for over uint8 with 2 args
    t = np.int64(0)
    for u in range(np.uint8(3), np.uint8(9)):
        t += u
    out[i * 6 + 2] = t
    # while with break and continue
    n = np.int64(0)
    j = v % 50
    while True:
        j += 1
        if j % 3 == 0:
            continue
        n += j
        if j > 60:
            break
    out[i * 6 + 3] = n
    # conditional expression and chained comparison
    out[i * 6 + 4] = v * 2 if -500 < v <= 500 else -v
    out[i * 6 + 5] = 1 if 0 <= v < 100 < 1000 else 0


def py_classify(v):
    if v < -100:
        return -2
    elif v < 0:
        return -1
    elif v == 0:
        return 0
    return 1


def test_statements(queue, rng):
    n = 300
    a = ints(rng, n, np.int64, -1000, 1000)
    a[:3] = [0, -100, 100]
    (out,) = run(queue, control, n, a, np.zeros(6 * n, np.int64))[1:]
    exp = []
    for v in a.tolist():
        s = sum(k * v for k in range(10, -3, -3))
        j, m = v % 50, 0
        while True:
            j += 1
            if j % 3 == 0:
                continue
            m += j
            if j > 60:
                break
        exp += [py_classify(v), s, sum(range(3, 9)), m, v * 2 if -500 < v <= 500 else -v,
                1 if 0 <= v < 100 < 1000 else 0]
    np.testing.assert_array_equal(out, exp)


@sycl.device
def bump(counter: sycl.global_ptr[np.int32], k: np.int64) -> np.bool_:
    counter[k] += 1
    return True


@sycl.kernel
def short_circuit(it: sycl.item[1], a: sycl.global_ptr[np.int64],
                  counter: sycl.global_ptr[np.int32], out: sycl.global_ptr[np.int64]):
    i = it.get_id(0)
    v = a[i]
    r1 = v > 0 and bump(counter, i * 3)          # runs only when v > 0
    r2 = v > 0 or bump(counter, i * 3 + 1)       # runs only when v <= 0
    r3 = not (v % 2 == 0) and not bump(counter, i * 3 + 2)
    out[i * 4] = 1 if r1 else 0
    out[i * 4 + 1] = 1 if r2 else 0
    out[i * 4 + 2] = 1 if r3 else 0
    out[i * 4 + 3] = v or 7                        # value semantics: v unless zero


def test_and_or_not_short_circuit(queue, rng):
    n = 200
    a = ints(rng, n, np.int64, -5, 5)
    counter, out = run(queue, short_circuit, n, a, np.zeros(3 * n, np.int32),
                       np.zeros(4 * n, np.int64))[1:]
    np.testing.assert_array_equal(counter[0::3], a > 0)
    np.testing.assert_array_equal(counter[1::3], a <= 0)
    np.testing.assert_array_equal(counter[2::3], a % 2 != 0)
    np.testing.assert_array_equal(out[0::4], a > 0)
    np.testing.assert_array_equal(out[1::4], np.ones(n))
    np.testing.assert_array_equal(out[2::4], np.zeros(n))
    np.testing.assert_array_equal(out[3::4], np.where(a != 0, a, 7))


@sycl.kernel
def static_unrolled(it: sycl.item[1], x: sycl.global_ptr[np.float32],
                    out: sycl.global_ptr[np.float32]):
    i = it.get_id(0)
    acc = np.float32(0)
    for k in sycl.static_range(4):
        acc += x[i * 4 + k] * (k + 1)      # a Python int: float32 * (k + 1) is float32
    out[i] = acc


def test_static_range_is_unrolled(queue, rng):
    n = 64
    x = rng.standard_normal(4 * n).astype(np.float32)
    (out,) = run(queue, static_unrolled, n, x, np.zeros(n, np.float32))[1:]
    np.testing.assert_allclose(out, (x.reshape(n, 4) * np.arange(1, 5)).sum(axis=1), rtol=1e-5)
    if queue.get_device().backend == sycl.backend.native_cpu:
        ir = image_text(queue, static_unrolled, "ir")
        assert " for " not in ir and "for " not in ir.replace("wg.items", ""), ir
        llvm = image_text(queue, static_unrolled, "llvm")
        body = llvm[llvm.index("static_unrolled"):]
        # the kernel body has no back edge of its own: a fully unrolled loop
        assert "unroll" not in body or "llvm.loop" not in body


@sycl.kernel
def with_assert(it: sycl.item[1], a: sycl.global_ptr[np.int64], out: sycl.global_ptr[np.int64]):
    i = it.get_id(0)
    assert a[i] >= 0, "negative input"
    out[i] = a[i] + 1


def test_assert_removed_without_debug(queue, rng):
    a = ints(rng, 16, np.int64, -10, 10)
    (out,) = run(queue, with_assert, 16, a, np.zeros(16, np.int64))[1:]
    np.testing.assert_array_equal(out, a + 1)


def test_assert_checked_in_debug_builds(queue, monkeypatch):
    monkeypatch.setenv("PYSYCL_DEBUG", "assert")

    @sycl.kernel
    def checked(it: sycl.item[1], a: sycl.global_ptr[np.int64], out: sycl.global_ptr[np.int64]):
        i = it.get_id(0)
        assert a[i] >= 0, "negative input"
        out[i] = a[i] + 1
    a = np.arange(8, dtype=np.int64)
    (out,) = run(queue, checked, 8, a, np.zeros(8, np.int64))[1:]
    np.testing.assert_array_equal(out, a + 1)
    a[5] = -3
    with pytest.raises(sycl.exception) as info:
        run(queue, checked, 8, a, np.zeros(8, np.int64))
    assert info.value.code() == sycl.errc.kernel
    line = checked.py_function.__code__.co_firstlineno + 3
    assert f"{os.path.basename(__file__)}:{line}" in str(info.value)
    assert "negative input" in str(info.value)


# Memory access ----------------------------------------------------------------------------
@sycl.kernel
def accessor_forms(it: sycl.item[2], a: sycl.accessor[np.float64, 2, sycl.read_only],
                   b: sycl.accessor[np.float64, 2, sycl.write_only],
                   sizes: sycl.accessor[np.int64, 1, sycl.read_write]):
    r = it.get_id(0)
    c = it.get_id(1)
    idx = sycl.id(r, c)
    rows, cols = a.get_range()
    b[it] = a[r, c] * 2.0 + a[idx] + a[(rows - 1 - r, c)]
    if r == 0 and c == 0:
        sizes[0] = rows * 1000 + cols
        sizes[1] = a.get_range(1) + sizes.get_range(0)


def test_accessor_indexing_forms(queue, rng):
    shape = (7, 11)
    a = rng.standard_normal(shape)
    b = np.zeros(shape)
    sizes = np.zeros(2, np.int64)
    with sycl.buffer(a) as ba, sycl.buffer(b) as bb, sycl.buffer(sizes) as bs:
        queue.submit(lambda cgh: cgh.parallel_for(
            sycl.range(*shape), accessor_forms, sycl.accessor(ba, cgh, sycl.read_only),
            sycl.accessor(bb, cgh, sycl.write_only), sycl.accessor(bs, cgh, sycl.read_write))).wait()
    np.testing.assert_array_equal(b, a * 2.0 + a + a[::-1])
    np.testing.assert_array_equal(sizes, [7011, 13])


@sycl.kernel
def chained_subscripts(nd: sycl.nd_item[2], a: sycl.accessor[np.float32, 2, sycl.read_only],
                       b: sycl.accessor[np.float32, 2, sycl.read_only],
                       c: sycl.accessor[np.float32, 2, sycl.read_write],
                       tile: sycl.local_accessor[np.float32, 2], k_dim: np.int64):
    i = nd.get_global_id(0)
    j = nd.get_global_id(1)
    li = nd.get_local_id(0)
    lj = nd.get_local_id(1)
    acc = np.float32(0)
    for k in range(k_dim):
        acc += a[i][k] * b[k][j]
    tile[li][lj] = acc
    sycl.group_barrier(nd.get_group())
    c[i][j] += tile[li][lj]


def test_chained_accessor_subscripts_index_one_element(queue, rng):
    # C++'s acc[i][j] on a 2-D accessor (SYCL 2020 4.7.6.9) is one element, as acc[i, j].
    a = rng.random((8, 5), dtype=np.float32)
    b = rng.random((5, 6), dtype=np.float32)
    c = rng.random((8, 6), dtype=np.float32)
    want = c + a @ b
    with sycl.buffer(a) as ba, sycl.buffer(b) as bb, sycl.buffer(c) as bc:
        queue.submit(lambda cgh: cgh.parallel_for(
            sycl.nd_range(sycl.range(8, 6), sycl.range(4, 3)), chained_subscripts,
            sycl.accessor(ba, cgh, sycl.read_only), sycl.accessor(bb, cgh, sycl.read_only),
            sycl.accessor(bc, cgh, sycl.read_write),
            sycl.local_accessor(np.float32, (4, 3), cgh), 5)).wait()
    np.testing.assert_allclose(c, want, rtol=1e-5)


@sycl.kernel
def accessor_sizes(nd: sycl.nd_item[1], a: sycl.accessor[np.float64, 2, sycl.read_only],
                   out: sycl.global_ptr[np.int64], tile: sycl.local_accessor[np.int16, 2]):
    if nd.get_global_id(0) == 0:
        out[0] = a.size()
        out[1] = a.byte_size()
        out[2] = a.get_count()
        out[3] = a.get_size()
        out[4] = tile.size()
        out[5] = tile.byte_size()


def test_accessor_size_and_byte_size_in_kernels(queue, rng):
    # SYCL 2020 accessor::size() / byte_size() (and the deprecated get_count/get_size)
    # of a ranged accessor count its range, not the buffer.
    rows, cols = (int(v) for v in rng.integers(3, 9, 2))
    data = rng.random((rows + 2, cols + 3))
    out = sycl.malloc_shared(6, np.int64, queue)
    with sycl.buffer(data) as b:
        queue.submit(lambda cgh: cgh.parallel_for(
            sycl.nd_range(4, 4), accessor_sizes,
            sycl.accessor(b, cgh, sycl.range(rows, cols), sycl.id(1, 2), sycl.read_only), out,
            sycl.local_accessor(np.int16, (cols, 5), cgh))).wait()
    n = rows * cols
    assert out.to_numpy().tolist() == [n, 8 * n, n, 8 * n, cols * 5, 2 * cols * 5]


@sycl.kernel
def id_index(i: sycl.id[1], x: sycl.accessor[np.int32, 1, sycl.read_only],
             y: sycl.accessor[np.int32, 1, sycl.write_only]):
    y[i] = x[i] * 3


@sycl.kernel
def usm_pointers(it: sycl.item[1], p: sycl.global_ptr[np.int64], out: sycl.global_ptr[np.int64]):
    i = it.get_id(0)
    q = p + 1                       # pointer arithmetic
    r = q - 1
    out[i] = q[i] - r[i] + (p + i)[0]


def test_id_index_and_usm_pointer_arithmetic(queue, rng):
    n = 200
    x = ints(rng, n, np.int32, -10 ** 6, 10 ** 6)
    y = np.zeros(n, np.int32)
    with sycl.buffer(x) as bx, sycl.buffer(y) as by:
        queue.submit(lambda cgh: cgh.parallel_for(
            n, id_index, sycl.accessor(bx, cgh, sycl.read_only),
            sycl.accessor(by, cgh, sycl.write_only))).wait()
    np.testing.assert_array_equal(y, x * 3)
    p = ints(rng, n + 1, np.int64, -10 ** 9, 10 ** 9)
    (out,) = run(queue, usm_pointers, n, p, np.zeros(n, np.int64))[1:]
    np.testing.assert_array_equal(out, p[1:] - p[:-1] + p[:-1])


@sycl.kernel
def local_reverse(nd: sycl.nd_item[1], x: sycl.accessor[np.float32, 1, sycl.read_only],
                  y: sycl.accessor[np.float32, 1, sycl.write_only],
                  tile: sycl.local_accessor[np.float32, 1]):
    lid = nd.get_local_id(0)
    n = tile.get_range(0)
    tile[lid] = x[nd.get_global_id(0)]
    sycl.group_barrier(nd.get_group())
    y[nd.get_global_id(0)] = tile[n - 1 - lid]


def test_local_accessor_shared_by_the_group(queue, rng):
    wg, groups = 16, 5
    x = rng.standard_normal(wg * groups).astype(np.float32)
    y = np.zeros_like(x)
    with sycl.buffer(x) as bx, sycl.buffer(y) as by:
        queue.submit(lambda cgh: cgh.parallel_for(
            sycl.nd_range(wg * groups, wg), local_reverse, sycl.accessor(bx, cgh, sycl.read_only),
            sycl.accessor(by, cgh, sycl.write_only), cgh.local_accessor(np.float32, wg))).wait()
    np.testing.assert_array_equal(y, x.reshape(groups, wg)[:, ::-1].ravel())


def test_bounds_checks_raise_errc_kernel(queue, monkeypatch):
    monkeypatch.setenv("PYSYCL_DEBUG", "bounds")

    @sycl.kernel
    def shifted(it: sycl.item[1], x: sycl.accessor[np.float32, 1, sycl.read_only],
                y: sycl.accessor[np.float32, 1, sycl.write_only]):
        y[it] = x[it.get_id(0) + 1]
    x = np.arange(10, dtype=np.float32)
    y = np.zeros(10, np.float32)
    with pytest.raises(sycl.exception) as info:
        with sycl.buffer(x) as bx, sycl.buffer(y) as by:
            queue.submit(lambda cgh: cgh.parallel_for(
                10, shifted, sycl.accessor(bx, cgh, sycl.read_only),
                sycl.accessor(by, cgh, sycl.write_only))).wait()
            queue.wait_and_throw()
    assert info.value.code() == sycl.errc.kernel
    line = shifted.py_function.__code__.co_firstlineno + 3
    assert f"{os.path.basename(__file__)}:{line}" in str(info.value), str(info.value)
    assert "'x'" in str(info.value)
    # In range: no error, right result.
    y = np.zeros(9, np.float32)
    with sycl.buffer(x) as bx, sycl.buffer(y) as by:
        queue.submit(lambda cgh: cgh.parallel_for(
            9, shifted, sycl.accessor(bx, cgh, sycl.read_only),
            sycl.accessor(by, cgh, sycl.write_only))).wait()
        queue.wait_and_throw()
    np.testing.assert_array_equal(y, x[1:])


# Work-item functions ----------------------------------------------------------------------
@sycl.kernel
def item_queries(it: sycl.item[2], out: sycl.accessor[np.int64, 3, sycl.write_only]):
    r, c = it.get_id(0), it.get_id(1)
    out[r, c, 0] = it.get_range(0) * 100 + it.get_range(1)
    out[r, c, 1] = it.get_linear_id()
    out[r, c, 2] = it[0] * 10 + it[1]


def test_item_functions(queue):
    shape = (5, 6)
    out = np.zeros(shape + (3,), np.int64)
    with sycl.buffer(out) as bo:
        queue.submit(lambda cgh: cgh.parallel_for(
            sycl.range(*shape), item_queries, sycl.accessor(bo, cgh, sycl.write_only))).wait()
    r, c = np.indices(shape)
    np.testing.assert_array_equal(out[..., 0], 506)
    np.testing.assert_array_equal(out[..., 1], r * 6 + c)
    np.testing.assert_array_equal(out[..., 2], r * 10 + c)


@sycl.kernel
def nd_queries(nd: sycl.nd_item[2], out: sycl.global_ptr[np.int64]):
    gl = nd.get_global_linear_id()
    base = gl * 16
    out[base + 0] = nd.get_global_id(0) * 100 + nd.get_global_id(1)
    out[base + 1] = nd.get_local_id(0) * 100 + nd.get_local_id(1)
    out[base + 2] = nd.get_group(0) * 100 + nd.get_group(1)
    out[base + 3] = nd.get_global_range(0) * 100 + nd.get_global_range(1)
    out[base + 4] = nd.get_local_range(0) * 100 + nd.get_local_range(1)
    out[base + 5] = nd.get_group_range(0) * 100 + nd.get_group_range(1)
    out[base + 6] = gl
    out[base + 7] = nd.get_local_linear_id()
    g = nd.get_group()
    out[base + 8] = g.get_group_id(0) * 100 + g.get_group_id(1)
    out[base + 9] = g.get_local_id(1) + g.get_local_range(0) * 1000
    sg = nd.get_sub_group()
    out[base + 10] = sg.get_local_id()
    out[base + 11] = sg.get_local_range()
    lsum = sycl.reduce_over_group(g, nd.get_local_linear_id(), sycl.plus())
    out[base + 12] = lsum
    out[base + 13] = sycl.reduce_over_group(sg, np.int32(1), sycl.plus())
    out[base + 14] = g.get_group_linear_id()
    out[base + 15] = g.get_local_linear_id()


def test_nd_item_group_and_sub_group_functions(queue):
    G, L = (4, 6), (2, 3)
    n = G[0] * G[1]
    (out,) = run(queue, nd_queries, sycl.nd_range(sycl.range(*G), sycl.range(*L)),
                 np.full(16 * n, -1, np.int64))
    out = out.reshape(G[0], G[1], 16)
    r, c = np.indices(G)
    lr, lc = r % L[0], c % L[1]
    gr, gc = r // L[0], c // L[1]
    np.testing.assert_array_equal(out[..., 0], r * 100 + c)
    np.testing.assert_array_equal(out[..., 1], lr * 100 + lc)
    np.testing.assert_array_equal(out[..., 2], gr * 100 + gc)
    np.testing.assert_array_equal(out[..., 3], 406)
    np.testing.assert_array_equal(out[..., 4], 203)
    np.testing.assert_array_equal(out[..., 5], 202)
    np.testing.assert_array_equal(out[..., 6], r * G[1] + c)
    np.testing.assert_array_equal(out[..., 7], lr * L[1] + lc)
    np.testing.assert_array_equal(out[..., 8], gr * 100 + gc)
    np.testing.assert_array_equal(out[..., 9], lc + 2000)
    sg_size = out[..., 11]
    assert np.all(sg_size >= 1)
    assert np.all(out[..., 10] < sg_size)
    np.testing.assert_array_equal(out[..., 12], sum(range(L[0] * L[1])))
    np.testing.assert_array_equal(out[..., 13], sg_size)
    np.testing.assert_array_equal(out[..., 14], gr * (G[1] // L[1]) + gc)
    np.testing.assert_array_equal(out[..., 15], lr * L[1] + lc)


@sycl.kernel
def nd_item_barriers(nd: sycl.nd_item[1], x: sycl.global_ptr[np.int32],
                     out: sycl.global_ptr[np.int32], tile: sycl.local_accessor[np.int32, 1]):
    lid = nd.get_local_id(0)
    size = nd.get_local_range(0)
    tile[lid] = x[nd.get_global_id(0)]
    nd.barrier()
    total = np.int32(0)
    for j in range(size):
        total += tile[j]
    nd.barrier(sycl.access.fence_space.local_space)
    tile[lid] = total + lid
    nd.barrier(sycl.access.fence_space.global_and_local)
    out[nd.get_global_id(0)] = tile[(lid + 1) % size]


def test_nd_item_barrier_is_a_work_group_barrier(queue, rng):
    # nd_item::barrier([fence_space]), deprecated in SYCL 2020 but in much SYCL code.
    n, wg = 64, 16
    x = rng.integers(0, 100, n).astype(np.int32)
    xs = sycl.malloc_shared(n, np.int32, queue)
    xs[:] = x
    out = sycl.malloc_shared(n, np.int32, queue)
    queue.submit(lambda cgh: cgh.parallel_for(sycl.nd_range(n, wg), nd_item_barriers, xs, out,
                                              sycl.local_accessor(np.int32, wg, cgh))).wait()
    sums = np.repeat(x.reshape(-1, wg).sum(1), wg)
    np.testing.assert_array_equal(out.to_numpy(), sums + (np.arange(n) + 1) % wg)


@sycl.kernel
def sub_group_index_queries(nd: sycl.nd_item[1], out: sycl.global_ptr[np.int64]):
    sg = nd.get_sub_group()
    base = nd.get_global_id(0) * 4
    out[base + 0] = sg.get_local_id()[0]
    out[base + 1] = sg.get_local_range()[0]
    out[base + 2] = nd.get_sub_group().get_group_id()[0]
    out[base + 3] = sg.get_group_range()[0] * 1000 + sg.get_max_local_range()[0]


def test_sub_group_ids_and_ranges_index_as_one_element(queue):
    # SYCL 2020 4.9.1.8: these return id<1> / range<1>, which C++ code indexes with [0].
    n, wg = 64, 16
    (out,) = run(queue, sub_group_index_queries, sycl.nd_range(n, wg), np.full(4 * n, -1, np.int64))
    out = out.reshape(n, 4)
    size = out[:, 1]
    assert size[0] >= 1 and np.all(size == size[0]) and wg % size[0] == 0
    lid = np.arange(n) % wg
    np.testing.assert_array_equal(out[:, 0], lid % size)
    np.testing.assert_array_equal(out[:, 2], lid // size)
    # The largest sub-group the kernel may have (a CUDA warp: 32, above the 16 items of
    # a 16-item work-group's one sub-group).
    largest = out[:, 3] % 1000
    assert np.all(largest == largest[0]) and largest[0] >= size[0]
    assert largest[0] in queue.get_device().get_info(sycl.info.device.sub_group_sizes)
    np.testing.assert_array_equal(out[:, 3] // 1000, wg // size)


@sycl.kernel
def linear_queries(nd: sycl.nd_item[2], x: sycl.global_ptr[np.float32],
                   out: sycl.global_ptr[np.int64], sums: sycl.global_ptr[np.float32]):
    gl = nd.get_global_linear_id()
    base = gl * 12
    g = nd.get_group()
    sg = nd.get_sub_group()
    out[base + 0] = g.get_group_linear_range()
    out[base + 1] = g.get_local_linear_range()
    out[base + 2] = g.get_max_local_range(0) * 100 + g.get_max_local_range(1)
    out[base + 3] = 1 if g.leader() else 0
    out[base + 4] = sg.get_local_linear_range()
    out[base + 5] = sg.get_group_linear_range()
    out[base + 6] = sg.get_max_local_range()
    out[base + 7] = 1 if sg.leader() else 0
    out[base + 8] = sg.get_group_id()
    out[base + 9] = nd.get_offset(0) * 100 + nd.get_offset(1)
    out[base + 10] = sg.get_local_range()
    out[base + 11] = sg.get_group_range()
    total = sycl.reduce_over_group(sg, x[gl], sycl.plus())
    if sg.leader():
        sums[g.get_group_linear_id() * 64 + sg.get_group_linear_id()] = total


def test_linear_ranges_max_ranges_and_leaders(queue, rng):
    """group/sub_group get_*_linear_range, get_max_local_range and leader(), nd_item
    get_offset (SYCL 2020 4.9.1.5-4.9.1.8); each sub-group's leader writes the sum of
    random values over its sub-group."""
    G, L = (8, 16), (2, 8)
    n = G[0] * G[1]
    x = rng.standard_normal(n).astype(np.float32)
    _x, out, sums = run(queue, linear_queries, sycl.nd_range(sycl.range(*G), sycl.range(*L)),
                        x, np.full(12 * n, -1, np.int64), np.zeros(64 * 12, np.float32))
    out = out.reshape(G[0], G[1], 12)
    r, c = np.indices(G)
    groups = (G[0] // L[0]) * (G[1] // L[1])
    local_linear = (r % L[0]) * L[1] + c % L[1]
    group_linear = (r // L[0]) * (G[1] // L[1]) + c // L[1]
    np.testing.assert_array_equal(out[..., 0], groups)
    np.testing.assert_array_equal(out[..., 1], L[0] * L[1])
    np.testing.assert_array_equal(out[..., 2], L[0] * 100 + L[1])
    np.testing.assert_array_equal(out[..., 3], local_linear == 0)
    sg_size, sg_count, sg_id = out[..., 10], out[..., 11], out[..., 8]
    np.testing.assert_array_equal(out[..., 4], sg_size)
    np.testing.assert_array_equal(out[..., 5], sg_count)
    sg_max = out[..., 6]
    # The most the kernel's sub-groups may hold: one of the device's sizes, at least
    # what any sub-group has (Intel's CPU runtime: 16 for sub-groups of 8 here).
    assert np.all(sg_max == sg_max.flat[0]) and sg_max.flat[0] >= sg_size.max()
    assert sg_max.flat[0] in queue.get_device().sub_group_sizes
    assert queue.get_device().backend != sycl.backend.native_cpu or sg_max.flat[0] == 1
    np.testing.assert_array_equal(out[..., 9], 0)
    # One leader per sub-group; the sub-groups of a work-group cover it.
    leaders = out[..., 7] == 1
    for gid in range(groups):
        mine = group_linear == gid
        assert leaders[mine].sum() == sg_count[mine][0]
        assert sorted(set(sg_id[mine])) == list(range(sg_count[mine][0]))
        for s in range(sg_count[mine][0]):
            members = mine & (sg_id == s)
            assert members.sum() == sg_size[members][0]
            np.testing.assert_allclose(sums[gid * 64 + s], x.reshape(G)[members].sum(),
                                       rtol=1e-5, atol=1e-5)


@sycl.kernel
def offset_queries(nd: sycl.nd_item[1], out: sycl.global_ptr[np.int64]):
    out[nd.get_global_id(0) - nd.get_offset(0)] = nd.get_offset(0) * 1000 + nd.get_global_id(0)


def test_nd_item_get_offset(queue, rng):
    """nd_item::get_offset (deprecated in SYCL 2020, kept for nd_range offsets)."""
    off = int(rng.integers(1, 50))
    try:
        (out,) = run(queue, offset_queries, sycl.nd_range(16, 4, off), np.full(16, -1, np.int64))
    except sycl.exception as e:    # a driver without global offsets (CUDA here) says so
        assert queue.get_device().backend == sycl.backend.cuda
        assert e.code() == sycl.errc.feature_not_supported, e
        (out,) = run(queue, offset_queries, sycl.nd_range(16, 4), np.full(16, -1, np.int64))
        off = 0
    np.testing.assert_array_equal(out, off * 1000 + off + np.arange(16))


@sycl.kernel
def offset_items(it: sycl.item[2], out: sycl.global_ptr[np.int64]):
    base = (it.get_id(0) * 16 + it.get_id(1)) * 3
    out[base] = it.get_linear_id()
    out[base + 1] = it.get_offset(0) * 100 + it.get_offset(1)
    out[base + 2] = it.get_range(0) * 100 + it.get_range(1)


def test_parallel_for_with_an_offset_on_the_handler(queue, rng):
    # cgh.parallel_for(range, id offset, kernel, ...): SYCL 2020's deprecated form; ids
    # run from the offset, linear ids count from it.
    if queue.get_device().backend == sycl.backend.cuda:
        pytest.skip("the CUDA driver takes no global offset")
    rows, cols = 3, 5
    off = tuple(int(v) for v in rng.integers(1, 10, 2))
    out = sycl.malloc_shared(16 * 16 * 3, np.int64, queue)
    out[:] = -1
    queue.submit(lambda cgh: cgh.parallel_for(sycl.range(rows, cols), sycl.id(*off),
                                              offset_items, out)).wait()
    got = out.to_numpy().reshape(16, 16, 3)
    box = got[off[0]:off[0] + rows, off[1]:off[1] + cols]
    r, c = np.indices((rows, cols))
    np.testing.assert_array_equal(box[..., 0], r * cols + c)
    np.testing.assert_array_equal(box[..., 1], off[0] * 100 + off[1])
    np.testing.assert_array_equal(box[..., 2], rows * 100 + cols)
    assert (got != -1).sum() == rows * cols * 3


@sycl.kernel
def offset_groups_2d(nd: sycl.nd_item[2], out: sycl.global_ptr[np.int64]):
    base = (nd.get_global_id(0) * 32 + nd.get_global_id(1)) * 4
    out[base] = nd.get_global_linear_id()
    out[base + 1] = nd.get_group(0) * 100 + nd.get_group(1)
    out[base + 2] = nd.get_local_linear_id()
    out[base + 3] = nd.get_offset(0) * 100 + nd.get_offset(1)


def test_nd_range_offset_in_two_dimensions(queue, rng):
    # Global ids start at the offset; linear and group ids count from it (SYCL 2020
    # 4.9.1.5). OpenCL takes it as the global work offset.
    if queue.get_device().backend == sycl.backend.cuda:
        pytest.skip("the CUDA driver takes no global offset")
    G, L = (8, 6), (2, 3)
    off = tuple(int(v) for v in rng.integers(1, 20, 2))
    (out,) = run(queue, offset_groups_2d, sycl.nd_range(sycl.range(*G), sycl.range(*L),
                                                         sycl.id(*off)),
                 np.full(40 * 32 * 4, -1, np.int64))
    out = out.reshape(40, 32, 4)
    r, c = np.indices(G)
    got = out[off[0]:off[0] + G[0], off[1]:off[1] + G[1]]
    np.testing.assert_array_equal(got[..., 0], r * G[1] + c)
    np.testing.assert_array_equal(got[..., 1], (r // L[0]) * 100 + c // L[1])
    np.testing.assert_array_equal(got[..., 2], (r % L[0]) * L[1] + c % L[1])
    np.testing.assert_array_equal(got[..., 3], off[0] * 100 + off[1])
    assert (out != -1).sum() == G[0] * G[1] * 4          # nothing outside the box


@sycl.kernel
def group_min_max(nd: sycl.nd_item[1], x: sycl.global_ptr[np.float32],
                  out: sycl.global_ptr[np.float32]):
    g = nd.get_group()
    v = x[nd.get_global_id(0)]
    lo = sycl.reduce_over_group(g, v, sycl.minimum())
    hi = sycl.reduce_over_group(g, v, sycl.maximum())
    if nd.get_local_id(0) == 0:
        out[nd.get_group(0) * 2] = lo
        out[nd.get_group(0) * 2 + 1] = hi


def test_reduce_over_group_minimum_maximum(queue, rng):
    wg, groups = 32, 6
    x = rng.standard_normal(wg * groups).astype(np.float32)
    (out,) = run(queue, group_min_max, sycl.nd_range(wg * groups, wg), x,
                 np.zeros(2 * groups, np.float32))[1:]
    np.testing.assert_array_equal(out[0::2], x.reshape(groups, wg).min(axis=1))
    np.testing.assert_array_equal(out[1::2], x.reshape(groups, wg).max(axis=1))


# Atomics -----------------------------------------------------------------------------------
ATOMIC_TYPES = [np.int32, np.int64, np.uint32, np.uint64, np.float32, np.float64]
_atomic_kernels = {}


def atomic_kernel(dtype):
    dt = np.dtype(dtype)
    if dt in _atomic_kernels:
        return _atomic_kernels[dt]
    if dt.kind == "f":
        @sycl.kernel(name=f"e2e_atomics_{dt.name}")
        def atomics(it: sycl.item[1], x: sycl.global_ptr[dt], acc: sycl.global_ptr[dt],
                    old: sycl.global_ptr[dt]):
            i = it.get_id(0)
            v = x[i]
            sycl.atomic_ref(acc, 0).fetch_add(v)
            sycl.atomic_ref(acc, 1).fetch_sub(v)
            sycl.atomic_ref(acc, 2).fetch_min(v)
            sycl.atomic_ref(acc, 3, sycl.memory_order.relaxed,
                            sycl.memory_scope.device).fetch_max(v)
            a = sycl.atomic_ref(acc, 4, order=sycl.memory_order.seq_cst)
            old[i] = a.exchange(v)
            e = sycl.atomic_ref(acc, 5)
            expected = e.load()
            while not e.compare_exchange_strong(expected, expected + v):
                pass
            if i == 0:
                sycl.atomic_ref(acc, 6).store(v * 2)
    else:
        @sycl.kernel(name=f"e2e_atomics_{dt.name}")
        def atomics(it: sycl.item[1], x: sycl.global_ptr[dt], acc: sycl.global_ptr[dt],
                    old: sycl.global_ptr[dt]):
            i = it.get_id(0)
            v = x[i]
            sycl.atomic_ref(acc, 0).fetch_add(v)
            sycl.atomic_ref(acc, 1).fetch_sub(v)
            sycl.atomic_ref(acc, 2).fetch_min(v)
            sycl.atomic_ref(acc, 3, sycl.memory_order.relaxed,
                            sycl.memory_scope.device).fetch_max(v)
            a = sycl.atomic_ref(acc, 4, order=sycl.memory_order.seq_cst)
            old[i] = a.exchange(v)
            e = sycl.atomic_ref(acc, 5)
            expected = e.load()
            while not e.compare_exchange_strong(expected, expected + v):
                pass
            if i == 0:
                sycl.atomic_ref(acc, 6).store(v * 2)
            sycl.atomic_ref(acc, 7).fetch_and(v)
            sycl.atomic_ref(acc, 8).fetch_or(v)
            sycl.atomic_ref(acc, 9).fetch_xor(v)
    _atomic_kernels[dt] = atomics
    return atomics


@pytest.mark.parametrize("dtype", ATOMIC_TYPES, ids=lambda t: np.dtype(t).name)
def test_atomics_every_op_and_type(queue, rng, dtype):
    dt = np.dtype(dtype)
    if dt.itemsize == 8:
        require(queue.get_device(), sycl.aspect.atomic64)
    if dt == np.float64:
        require(queue.get_device(), sycl.aspect.fp64)
    n = 1000
    if dt.kind == "f":
        x = rng.integers(-1000, 1000, n).astype(dt)   # exact sums in any order
    else:
        x = ints(rng, n, dt, 0 if dt.kind == "u" else -10 ** 6, 10 ** 6)
    init = np.zeros(10, dt)
    init[2] = x.max()   # fetch_min from above
    init[3] = x.min()   # fetch_max from below
    init[7] = ~dt.type(0) if dt.kind != "f" else 0
    acc, old = run(queue, atomic_kernel(dt), n, x, init, np.zeros(n, dt))[1:]
    with np.errstate(over="ignore"):
        assert acc[0] == x.sum(dtype=dt) and acc[1] == -x.sum(dtype=dt) if dt.kind != "u" \
            else acc[1] == dt.type(0) - x.sum(dtype=dt)
        assert acc[0] == x.sum(dtype=dt)
    assert acc[2] == x.min() and acc[3] == x.max()
    # exchange: every value is returned once, and one of them stays behind
    assert sorted(np.append(old, acc[4]).tolist()) == sorted(np.append(x, 0).tolist())
    with np.errstate(over="ignore"):
        assert acc[5] == x.sum(dtype=dt)
        assert acc[6] == x[0] * 2
    if dt.kind != "f":
        assert acc[7] == np.bitwise_and.reduce(x)
        assert acc[8] == np.bitwise_or.reduce(x)
        assert acc[9] == np.bitwise_xor.reduce(x)


# Math -----------------------------------------------------------------------------------------
UNARY = ["sqrt", "rsqrt", "exp", "exp2", "log", "log2", "log10", "sin", "cos", "tan", "asin",
         "acos", "atan", "sinh", "cosh", "tanh", "fabs", "floor", "ceil", "trunc", "round"]
REFERENCE = {
    "sqrt": np.sqrt, "rsqrt": lambda a: 1 / np.sqrt(a), "exp": np.exp, "exp2": np.exp2,
    "log": np.log, "log2": np.log2, "log10": np.log10, "sin": np.sin, "cos": np.cos,
    "tan": np.tan, "asin": np.arcsin, "acos": np.arccos, "atan": np.arctan, "sinh": np.sinh,
    "cosh": np.cosh, "tanh": np.tanh, "fabs": np.abs, "floor": np.floor, "ceil": np.ceil,
    "trunc": np.trunc, "round": lambda a: np.sign(a) * np.floor(np.abs(a) + a.dtype.type(0.5)),
    "pow": np.power, "atan2": np.arctan2, "fmin": np.fmin, "fmax": np.fmax,
    "copysign": np.copysign, "fma": lambda a, b, c: a * b + c,
}
_math_kernels = {}


def math_kernel(dtype):
    """Every sycl.math function; ``a`` in (0.1, 0.9) suits every domain, ``b`` is signed."""
    dt = np.dtype(dtype)
    if dt in _math_kernels:
        return _math_kernels[dt]

    @sycl.kernel(name=f"e2e_sycl_math_{dt.name}")
    def sycl_math(it: sycl.item[1], x: sycl.global_ptr[dt], y: sycl.global_ptr[dt],
                  z: sycl.global_ptr[dt], out: sycl.global_ptr[dt]):
        i = it.get_id(0)
        a, b, o = x[i], y[i], i * 32
        m = sycl.math
        out[o + 0] = m.sqrt(a)
        out[o + 1] = m.rsqrt(a)
        out[o + 2] = m.exp(a)
        out[o + 3] = m.exp2(a)
        out[o + 4] = m.log(a)
        out[o + 5] = m.log2(a)
        out[o + 6] = m.log10(a)
        out[o + 7] = m.sin(b)
        out[o + 8] = m.cos(b)
        out[o + 9] = m.tan(a)
        out[o + 10] = m.asin(a)
        out[o + 11] = m.acos(a)
        out[o + 12] = m.atan(b)
        out[o + 13] = m.sinh(a)
        out[o + 14] = m.cosh(a)
        out[o + 15] = m.tanh(b)
        out[o + 16] = m.fabs(b)
        out[o + 17] = m.floor(b)
        out[o + 18] = m.ceil(b)
        out[o + 19] = m.trunc(b)
        out[o + 20] = m.round(b)
        out[o + 21] = m.pow(a, b)
        out[o + 22] = m.atan2(a, b)
        out[o + 23] = m.fmin(a, b)
        out[o + 24] = m.fmax(a, b)
        out[o + 25] = m.copysign(a, b)
        out[o + 26] = m.fma(a, b, a)
        out[o + 27] = 1 if m.isnan(z[i]) else 0
        out[o + 28] = 1 if m.isinf(z[i]) else 0
        out[o + 29] = abs(b) + min(a, b) + max(a, b, 0.5)
        out[o + 30] = np.sqrt(a) + np.arcsin(a) + np.power(a, b) + np.fmin(a, b) + np.abs(b)
        out[o + 31] = math.sqrt(a) + math.asin(a) + math.pow(a, b) + math.fabs(b) + \
            math.exp(a) + math.copysign(a, b) + math.floor(b) + \
            (dt.type(1) if math.isnan(z[i]) else dt.type(0)) + \
            (dt.type(1) if np.isinf(z[i]) else dt.type(0))
    _math_kernels[dt] = sycl_math
    return sycl_math


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["float32", "float64"])
def test_math_functions_in_every_spelling(queue, rng, dtype):
    dt = np.dtype(dtype)
    if dt == np.float64:
        require(queue.get_device(), sycl.aspect.fp64)
    n = 128
    a = rng.uniform(0.1, 0.9, n).astype(dt)
    b = rng.uniform(-4, 4, n).astype(dt)
    z = rng.standard_normal(n).astype(dt)
    z[:6] = [np.nan, np.inf, -np.inf, 0, np.nan, 1]
    kernel = math_kernel(dt)
    (out,) = run(queue, kernel, n, a, b, z, np.zeros(32 * n, dt))[3:]
    out = out.reshape(n, 32)
    args = {name: (b,) if name in ("sin", "cos", "atan", "tanh", "fabs", "floor", "ceil",
                                   "trunc", "round") else (a,) for name in UNARY}
    args.update({"pow": (a, b), "atan2": (a, b), "fmin": (a, b), "fmax": (a, b),
                 "copysign": (a, b), "fma": (a, b, a)})
    rtol = 4e-6 if dt == np.float32 else 1e-13
    for k, name in enumerate(UNARY + ["pow", "atan2", "fmin", "fmax", "copysign", "fma"]):
        expected = REFERENCE[name](*args[name])
        assert expected.dtype == dt
        np.testing.assert_allclose(out[:, k], expected, rtol=rtol, atol=rtol, err_msg=name)
    np.testing.assert_array_equal(out[:, 27], np.isnan(z))
    np.testing.assert_array_equal(out[:, 28], np.isinf(z))
    np.testing.assert_allclose(out[:, 29], np.abs(b) + np.minimum(a, b) + np.maximum(
        np.maximum(a, b), dt.type(0.5)), rtol=rtol)
    np.testing.assert_allclose(out[:, 30], np.sqrt(a) + np.arcsin(a) + np.power(a, b) +
                               np.fmin(a, b) + np.abs(b), rtol=rtol)
    np.testing.assert_allclose(out[:, 31], np.sqrt(a) + np.arcsin(a) + np.power(a, b) +
                               np.abs(b) + np.exp(a) + np.copysign(a, b) + np.floor(b) +
                               np.isnan(z) + np.isinf(z), rtol=rtol)
    if dt == np.float32 and queue.get_device().backend == sycl.backend.native_cpu:
        llvm = image_text(queue, kernel, "llvm")
        assert "double" not in llvm, [ln for ln in llvm.splitlines() if "double" in ln][:5]


# Names: closures and frozen module constants -------------------------------------------------
def make_affine_kernel(scale, shift):
    """A kernel defined in a function reads that function's locals (closure variables)."""
    offset = np.float32(shift)

    @sycl.kernel(name=f"e2e_closure_{scale}_{shift}")
    def affine(it: sycl.item[1], x: sycl.global_ptr[np.float32]):
        i = it.get_id(0)
        x[i] = x[i] * scale + offset
    return affine


def test_closure_variables(queue, rng):
    x = rng.standard_normal(64).astype(np.float32)
    (a,) = run(queue, make_affine_kernel(3, 1.5), 64, x)
    (b,) = run(queue, make_affine_kernel(-2, 0.25), 64, x)
    np.testing.assert_allclose(a, x * 3 + np.float32(1.5), rtol=1e-6)
    np.testing.assert_allclose(b, x * -2 + np.float32(0.25), rtol=1e-6)


FROZEN_SCALE = 7
FROZEN_PAIR = (100, 0.5)
FROZEN_HOST_ARRAY = np.arange(4).astype(object)   # not numbers: cannot be a constant table


def _frozen(it: sycl.item[1], x: sycl.global_ptr[np.int64]):
    i = it.get_id(0)
    x[i] = x[i] * FROZEN_SCALE + FROZEN_PAIR[0]


def test_module_constants_are_frozen_into_the_cache_key(queue, rng, monkeypatch):
    from pysycl.bundle import toolchain
    x = ints(rng, 50, np.int64, -1000, 1000)
    first = sycl.kernel(_frozen, name="e2e_frozen_first")
    (a,) = run(queue, first, 50, x)
    np.testing.assert_array_equal(a, x * 7 + 100)
    ir_first = toolchain.print_ir(first.ir_module())
    monkeypatch.setitem(globals(), "FROZEN_SCALE", 9)
    second = sycl.kernel(_frozen, name="e2e_frozen_second")
    (b,) = run(queue, second, 50, x)
    np.testing.assert_array_equal(b, x * 9 + 100)
    ir_second = toolchain.print_ir(second.ir_module()).replace("e2e_frozen_second",
                                                               "e2e_frozen_first")
    assert ir_first != ir_second          # the value is in the IR, hence in the cache key
    (a2,) = run(queue, first, 50, x)      # the first kernel keeps the value it froze
    np.testing.assert_array_equal(a2, x * 7 + 100)


# Errors ----------------------------------------------------------------------------------------
def compile_error_of(queue, kernel, *args):
    with pytest.raises(sycl.compile_error) as info:
        run(queue, kernel, 4, *args)
    e = info.value
    assert e.code() == sycl.errc.build
    assert os.path.samefile(e.filename, __file__)
    text = str(e)
    line = open(__file__).read().splitlines()[e.lineno - 1]
    assert line.strip() in text and "^" in text
    frames = traceback.extract_tb(e.__traceback__)
    internal = [f for f in frames if any(f"pysycl{os.sep}{layer}{os.sep}" in f.filename for layer in
                                         ("frontend", "ir", "passes", "codegen", "backends"))]
    assert internal == [], internal
    return e


def test_errors_are_compile_errors_without_compiler_frames(queue):
    @sycl.kernel
    def mutable_global(it: sycl.item[1], x: sycl.global_ptr[np.int64]):
        x[it.get_id(0)] = FROZEN_HOST_ARRAY[0]
    e = compile_error_of(queue, mutable_global, np.zeros(4, np.int64))
    assert "FROZEN_HOST_ARRAY" in str(e) and "argument" in str(e)

    @sycl.kernel
    def writes_read_only(it: sycl.item[1], x: sycl.accessor[np.int64, 1, sycl.read_only]):
        x[it] = 1
    with pytest.raises(sycl.compile_error) as info:
        with sycl.buffer(np.zeros(4, np.int64)) as b:
            queue.submit(lambda cgh: cgh.parallel_for(
                4, writes_read_only, sycl.accessor(b, cgh, sycl.read_only))).wait()
    assert "read_only" in str(info.value)

    @sycl.kernel
    def bad_op(it: sycl.item[1], x: sycl.global_ptr[np.float64]):
        x[it.get_id(0)] = x[it.get_id(0)] & 1
    e = compile_error_of(queue, bad_op, np.zeros(4))
    assert e.col == open(__file__).read().splitlines()[e.lineno - 1].index("x[it.get_id(0)] &")

    @sycl.kernel
    def direct(it: sycl.item[1]):
        nope  # noqa: F821
    with pytest.raises(sycl.compile_error) as info:
        direct.ir_module()
    files = [f.filename for f in traceback.extract_tb(info.value.__traceback__)]
    assert not any(f"pysycl{os.sep}frontend{os.sep}" in f for f in files), files


# The kernels of this file (some defined inside tests) include deliberately broken ones: keep them out of the
# application-wide registry that `sycl.get_kernel_bundle(ctx, state)` builds from, as
# a program with a broken kernel would not be one the bundle tests describe.
from pysycl.frontend import registry as _registry  # noqa: E402

_registry.forget_module(__name__)


@pytest.fixture(autouse=True)
def _forget_kernels_defined_in_tests():
    yield
    _registry.forget_module(__name__)
