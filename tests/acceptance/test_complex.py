"""Complex numbers in kernels (NumPy's complex64/complex128, Python's complex; SYCL's
``sycl::ext::oneapi::experimental::complex``): arithmetic and promotion with real
numbers, comparisons, parts, math functions and powers on every device against NumPy on
random data, with tolerances from the part type's epsilon; special values against
NumPy's scalar results; arrays through USM, buffers and host NumPy arrays; scalar
kernel arguments; and the PTX of a complex kernel (built with no GPU)."""

import cmath
import re
import sys
import warnings

import numpy as np
import pytest

import pysycl as sycl

DTYPES = [np.complex64, np.complex128]
M = sycl.math


def part_type(dt):
    return np.dtype(dt).type(0).real.dtype.type


def make_arith(dt):
    F = part_type(dt)

    @sycl.kernel
    def arith(i: sycl.id[1], a: sycl.global_ptr[dt], b: sycl.global_ptr[dt], x: F,
              out: sycl.global_ptr[dt], n: np.int64):
        z, w = a[i], b[i]
        out[0 * n + i] = z + w
        out[1 * n + i] = z - w
        out[2 * n + i] = z * w
        out[3 * n + i] = z / w
        out[4 * n + i] = -z
        out[5 * n + i] = z + x               # mixed with the real part type
        out[6 * n + i] = x - z
        out[7 * n + i] = z * x
        out[8 * n + i] = x / z
        out[9 * n + i] = z * 2 - 1.5         # Python numbers are weak
        out[10 * n + i] = z * 1j + (2 - 0.5j)
        out[11 * n + i] = np.conj(z)
        out[12 * n + i] = z.conjugate() + M.conj(w)
        out[13 * n + i] = dt(z.imag, z.real)
        out[14 * n + i] = complex(x, -x) * z
        y = z
        y *= w
        y /= 3
        y -= 0.25j
        out[15 * n + i] = y
    return arith


def make_parts(dt):
    F = part_type(dt)

    @sycl.kernel
    def parts(i: sycl.id[1], a: sycl.global_ptr[dt], b: sycl.global_ptr[dt],
              out: sycl.global_ptr[F], n: np.int64):
        z, w = a[i], b[i]
        out[0 * n + i] = abs(z)
        out[1 * n + i] = np.abs(w)
        out[2 * n + i] = z.real
        out[3 * n + i] = z.imag
        out[4 * n + i] = np.real(w) - np.imag(w)
        out[5 * n + i] = np.angle(z)
        out[6 * n + i] = cmath.phase(w)
        out[7 * n + i] = M.arg(z)
        out[8 * n + i] = M.norm(z)
        out[9 * n + i] = 1 if z == w else 0
        out[10 * n + i] = 1 if z != w else 0
        out[11 * n + i] = 1 if z else 0
        out[12 * n + i] = 1 if z == z.real else 0
    return parts


def make_functions(dt):
    @sycl.kernel
    def functions(i: sycl.id[1], a: sycl.global_ptr[dt], b: sycl.global_ptr[dt],
                  out: sycl.global_ptr[dt], n: np.int64):
        z, w = a[i], b[i]
        out[0 * n + i] = np.sqrt(z)
        out[1 * n + i] = cmath.sqrt(w)
        out[2 * n + i] = M.sqrt(z)
        out[3 * n + i] = np.exp(z)
        out[4 * n + i] = cmath.exp(w)
        out[5 * n + i] = M.exp(z)
        out[6 * n + i] = np.log(z)
        out[7 * n + i] = cmath.log(w)
        out[8 * n + i] = M.log(z)
        out[9 * n + i] = z ** 2
        out[10 * n + i] = z ** 5
        out[11 * n + i] = z ** -3
        out[12 * n + i] = z ** 0.5
        out[13 * n + i] = z ** w
        out[14 * n + i] = M.polar(abs(z), np.angle(z))
        out[15 * n + i] = cmath.rect(abs(w), np.angle(w))
        r, phi = cmath.polar(z)
        out[16 * n + i] = dt(r, phi)
        out[17 * n + i] = 2.0 ** z
    return functions


KERNELS = {dt: (make_arith(dt), make_parts(dt), make_functions(dt)) for dt in DTYPES}


def numpy_arith(z, w, x):
    F = x.dtype.type
    y = z * w
    y /= 3
    y -= 0.25j
    return [z + w, z - w, z * w, z / w, -z, z + x, x - z, z * x, x / z, z * 2 - 1.5,
            z * 1j + (2 - 0.5j), np.conj(z), np.conj(z) + np.conj(w),
            (z.imag + 1j * z.real).astype(z.dtype), complex(1, -1) * F(x) * z, y]


def numpy_parts(z, w):
    F = z.real.dtype.type
    as_f = lambda v: np.asarray(v).astype(F)    # noqa: E731
    return [as_f(np.abs(z)), as_f(np.abs(w)), z.real, z.imag, w.real - w.imag,
            as_f(np.angle(z)), as_f(np.angle(w)), as_f(np.angle(z)),
            z.real * z.real + z.imag * z.imag, as_f(z == w), as_f(z != w), as_f(z != 0),
            as_f(z.imag == 0)]


def scalar_power(z, e):
    """NumPy's scalar ``**`` element by element (NumPy's array ``**`` takes other paths
    for some exponents: ``a ** 2`` is ``np.square``, ``a ** 0.5`` ``np.sqrt``)."""
    with np.errstate(all="ignore"):
        return np.array([zi ** ei for zi, ei in zip(z, np.broadcast_to(e, z.shape))], z.dtype)


def numpy_functions(z, w):
    t = z.dtype.type
    return [np.sqrt(z), np.sqrt(w), np.sqrt(z), np.exp(z), np.exp(w), np.exp(z), np.log(z),
            np.log(w), np.log(z), scalar_power(z, t(2)), scalar_power(z, t(5)),
            scalar_power(z, t(-3)), scalar_power(z, t(0.5)), scalar_power(z, w), z, w,
            (np.abs(z) + 1j * np.angle(z)).astype(z.dtype), scalar_power(np.full_like(z, 2), z)]


def random_complex(rng, n, dt, scale=3.0):
    """Random numbers with the cases functions treat apart: negative reals with +0 and
    -0 imaginary parts (sqrt's and log's branch cut), positive reals, imaginary numbers,
    zeros, a NaN part."""
    F = part_type(dt)
    z = (rng.standard_normal(n) * scale + 1j * rng.standard_normal(n) * scale).astype(dt)
    k = n // 8
    z.imag[:k] = 0.0
    z.real[:k] = -np.abs(z.real[:k])                      # negative reals, +0j
    z.imag[k:2 * k] = -0.0
    z.real[k:2 * k] = -np.abs(z.real[k:2 * k])            # negative reals, -0j
    z.imag[2 * k:2 * k + 4] = F(0)                        # positive and negative reals
    z.real[2 * k + 4:2 * k + 8] = F(0)                    # imaginary numbers
    return z


def assert_close(got, want, dt, ulps, what):
    """Element-wise ``|got - want| <= ulps * eps * |want|`` (the complex modulus: a part
    much smaller than the other may carry that absolute error); NaN and infinite parts
    must match exactly."""
    got, want = np.asarray(got), np.asarray(want)
    eps = np.finfo(part_type(dt)).eps
    for g, w in ((got.real, want.real), (got.imag, want.imag)) if np.iscomplexobj(want) \
            else ((got, want),):
        np.testing.assert_array_equal(np.isnan(g), np.isnan(w), err_msg=f"{what}: NaN parts")
        inf = np.isinf(w)
        np.testing.assert_array_equal(g[inf], w[inf], err_msg=f"{what}: infinite parts")
    finite = np.isfinite(want) if not np.iscomplexobj(want) else \
        np.isfinite(want.real) & np.isfinite(want.imag)
    scale = np.abs(want[finite].astype(np.complex128 if np.iscomplexobj(want) else np.float64))
    err = np.abs(got[finite].astype(np.complex128) - want[finite])
    tol = ulps * eps * np.maximum(scale, np.finfo(part_type(dt)).tiny)
    bad = np.flatnonzero(err > tol)
    assert not bad.size, (f"{what}: {bad.size} elements off, first {got[finite][bad[0]]!r} "
                          f"for {want[finite][bad[0]]!r} (error {err[bad[0]] / scale[bad[0]] / eps:.1f} "
                          "ulps)")


def _skip_without_fp64(queue, dt):
    if dt is np.complex128 and not queue.get_device().has(sycl.aspect.fp64):
        pytest.skip("no fp64 on this device")


def _usm(q, host):
    a = sycl.malloc_shared(host.size, host.dtype, q)
    a[:] = host
    return a


@pytest.mark.parametrize("dt", DTYPES, ids=lambda d: np.dtype(d).name)
def test_arithmetic_and_promotion_match_numpy(queue, dt):
    _skip_without_fp64(queue, dt)
    rng = np.random.default_rng(11)
    n = 256
    z, w = random_complex(rng, n, dt), random_complex(rng, n, dt)[::-1].copy()
    x = part_type(dt)(rng.standard_normal() * 2)
    out = sycl.malloc_shared(16 * n, dt, queue)
    queue.parallel_for(n, KERNELS[dt][0], _usm(queue, z), _usm(queue, w), x, out, n).wait()
    got = out.to_numpy().reshape(16, n)
    with np.errstate(all="ignore"):
        want = numpy_arith(z, w, x)
    for k, wk in enumerate(want):
        assert_close(got[k], np.asarray(wk).astype(dt), dt, 4, f"row {k}")


@pytest.mark.parametrize("dt", DTYPES, ids=lambda d: np.dtype(d).name)
def test_parts_modulus_phase_and_comparisons(queue, dt):
    _skip_without_fp64(queue, dt)
    rng = np.random.default_rng(12)
    n = 256
    z = random_complex(rng, n, dt)
    w = z.copy()
    w[::3] = random_complex(rng, n, dt)[::3]              # some equal, some not
    w.imag[1::7] = z.imag[1::7] + 1                        # equal real parts only
    out = sycl.malloc_shared(13 * n, part_type(dt), queue)
    queue.parallel_for(n, KERNELS[dt][1], _usm(queue, z), _usm(queue, w), out, n).wait()
    got = out.to_numpy().reshape(13, n)
    for k, wk in enumerate(numpy_parts(z, w)):
        assert_close(got[k], wk, dt, 2, f"row {k}")


@pytest.mark.parametrize("dt", DTYPES, ids=lambda d: np.dtype(d).name)
def test_functions_and_powers_match_numpy(queue, dt):
    _skip_without_fp64(queue, dt)
    rng = np.random.default_rng(13)
    n = 256
    z = random_complex(rng, n, dt, scale=2.0)
    w = random_complex(rng, n, dt, scale=1.0)[::-1].copy()
    z[-1] = 0                                              # 0 ** w, log(0), 2 ** 0
    out = sycl.malloc_shared(18 * n, dt, queue)
    queue.parallel_for(n, KERNELS[dt][2], _usm(queue, z), _usm(queue, w), out, n).wait()
    got = out.to_numpy().reshape(18, n)
    with np.errstate(all="ignore"):
        want = numpy_functions(z, w)
    # exp(w log z): the error of log z (about its size) grows through exp.
    ulps = [8] * 9 + [4, 8, 8, 64, 64, 8, 8, 8, 64]
    for k, (wk, u) in enumerate(zip(want, ulps)):
        assert_close(got[k], np.asarray(wk).astype(dt), dt, u, f"row {k}")
    # The branch cut: sqrt and log of a negative real keep the sign of its zero imag part.
    cut = (z.imag == 0) & (z.real < 0)
    for k in (0, 2, 6, 8):
        np.testing.assert_array_equal(np.signbit(got[k].imag[cut]), np.signbit(z.imag[cut]))


SPECIAL = [0.0, -0.0, 1.0, -1.0, 2.5, -3.0, np.inf, -np.inf, np.nan, 1e-40, 1e-310,
           1e30, -1e30, 1e38, 1e300, -1e300]


def make_special(dt):
    @sycl.kernel
    def special(i: sycl.id[1], a: sycl.global_ptr[dt], b: sycl.global_ptr[dt],
                out: sycl.global_ptr[dt], n: np.int64):
        z, w = a[i], b[i]
        out[0 * n + i] = z / w
        out[1 * n + i] = z * w
        out[2 * n + i] = np.sqrt(z)
        out[3 * n + i] = np.exp(z)
        out[4 * n + i] = np.log(z)
        out[5 * n + i] = abs(z)
        out[6 * n + i] = np.angle(z)
        out[7 * n + i] = z ** 2
        out[8 * n + i] = z ** -3
    return special


SPECIAL_KERNELS = {dt: make_special(dt) for dt in DTYPES}


@pytest.mark.parametrize("dt", DTYPES, ids=lambda d: np.dtype(d).name)
def test_special_values_large_and_tiny_magnitudes_match_numpy(queue, dt):
    """Smith's division and hypot do not overflow for huge parts nor lose tiny ones;
    C99's values for zeros, infinities and NaNs, as NumPy's scalars give them."""
    _skip_without_fp64(queue, dt)
    F = part_type(dt)
    with np.errstate(all="ignore"):
        vals = np.array(SPECIAL, dtype=F)
        vals = np.unique(vals[np.isfinite(vals) | ~np.isfinite(np.array(SPECIAL))])
    vals = np.concatenate([vals, [F(-0.0)]])
    z = np.empty(vals.size ** 2, dt)
    z.real, z.imag = np.repeat(vals, vals.size), np.tile(vals, vals.size)
    w = np.roll(z, 37)
    n = z.size
    out = sycl.malloc_shared(9 * n, dt, queue)
    queue.parallel_for(n, SPECIAL_KERNELS[dt], _usm(queue, z), _usm(queue, w), out, n).wait()
    got = out.to_numpy().reshape(9, n)
    with np.errstate(all="ignore"):
        want = [np.array([x / y for x, y in zip(z, w)]), np.array([x * y for x, y in zip(z, w)]),
                np.sqrt(z), np.exp(z), np.log(z), np.abs(z), np.angle(z), scalar_power(z, dt(2)),
                scalar_power(z, dt(-3))]
    for k, wk in enumerate(want):
        wk = np.asarray(wk).astype(dt)
        if k in (1, 7, 8) and queue.get_device().backend == sycl.backend.cuda:
            wk = _fused_infinities(got[k], wk)
        assert_close(got[k], wk, dt, 8, f"row {k}")


def _fused_infinities(got, want):
    """``want`` with the NaN parts that ``got`` has as infinities: NVPTX contracts
    ``a*c - b*d`` into one fused multiply-add (as nvcc does), which keeps an overflowing
    product exact, so ``inf - inf = NaN`` of the separate operations becomes an infinity
    (products and powers by repeated multiplication meet it: ``(1e300+infj) * (1e30+1j)``
    has the real part ``-inf``, where NumPy has NaN)."""
    want = want.copy()
    for part in ("real", "imag"):
        g, w = getattr(got, part), getattr(want, part)
        mask = np.isnan(w) & np.isinf(g)
        w[mask] = g[mask]
    return want


@sycl.kernel
def scale_2d(it: sycl.item[2], src: sycl.accessor[np.complex64, 2, sycl.read_only],
             dst: sycl.accessor[np.complex128, 2, sycl.write_only], s: np.complex128):
    z = src[it]
    dst[it] = z * s + np.conj(z) / (1 + abs(z))


def test_buffers_and_accessors_of_complex_numbers(queue):
    _skip_without_fp64(queue, np.complex128)
    rng = np.random.default_rng(14)
    src = random_complex(rng, 48, np.complex64).reshape(6, 8)
    dst = np.zeros((6, 8), np.complex128)
    s = complex(rng.standard_normal(), rng.standard_normal())
    with sycl.buffer(src) as bs, sycl.buffer(dst) as bd:
        queue.submit(lambda h: h.parallel_for(
            sycl.range(6, 8), scale_2d, sycl.accessor(bs, h, sycl.read_only),
            sycl.accessor(bd, h, sycl.write_only), s)).wait()
    z = src.astype(np.complex128)                 # closing bd wrote it back to dst
    assert_close(dst, z * s + np.conj(z) / (1 + np.abs(src).astype(np.float64)),
                 np.complex64, 8, "buffer")


@sycl.kernel
def dft(i: sycl.id[1], x: sycl.global_ptr[np.complex128], out: sycl.global_ptr[np.complex128],
        n: np.int64):
    acc = 0j
    for k in range(n):
        acc += x[k] * np.exp(-2j * np.pi * k * i / n)
    out[i] = acc


def test_numpy_arrays_locals_and_literals_a_dft(queue):
    """Host NumPy arrays as arguments (used in place, or staged where the device cannot
    reach host memory); a Python-complex local accumulating complex128 values."""
    _skip_without_fp64(queue, np.complex128)
    rng = np.random.default_rng(15)
    x = rng.standard_normal(64) + 1j * rng.standard_normal(64)
    out = np.zeros(64, np.complex128)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)     # the staging notice
        queue.parallel_for(64, dft, x, out, 64).wait()
    # A sum of n terms: each output is off by at most a few n eps of the terms' sizes.
    bound = 4 * x.size * np.finfo(np.float64).eps * np.abs(x).sum()
    assert np.abs(out - np.fft.fft(x)).max() <= bound


@sycl.kernel
def scalar_arguments(i: sycl.id[1], s: np.complex64, d: np.complex128,
                     out: sycl.global_ptr[np.complex128]):
    out[0] = s
    out[1] = d
    out[2] = s * d


@pytest.mark.parametrize("s, d", [(1.5 - 2.25j, np.complex128(3e200 + 1e-300j)),
                                  (np.complex64(-0.5j), 2.0), (3, 1j)])
def test_scalar_kernel_arguments(queue, s, d):
    _skip_without_fp64(queue, np.complex128)
    out = sycl.malloc_shared(3, np.complex128, queue)
    queue.parallel_for(1, scalar_arguments, s, d, out).wait()
    want = [np.complex64(s), np.complex128(d), np.complex64(s) * np.complex128(d)]
    np.testing.assert_array_equal(out.to_numpy(), np.array(want, np.complex128))


def test_argument_errors_name_the_parameter(queue):
    with pytest.raises(sycl.exception) as info:
        queue.parallel_for(1, KERNELS[np.complex64][0], np.zeros(1, np.complex64),
                           np.zeros(1, np.complex64), 1j, np.zeros(16, np.complex64), 1)
    assert info.value.code() == sycl.errc.kernel_argument
    assert isinstance(info.value, TypeError) and "'x'" in str(info.value)
    out = sycl.malloc_shared(3, np.complex128, queue)
    with pytest.raises(sycl.exception) as info:          # as a float32 parameter would
        queue.parallel_for(1, scalar_arguments, 1j * 1e300, 1.0, out)
    assert info.value.code() == sycl.errc.kernel_argument
    assert isinstance(info.value, OverflowError) and "overflows complex64" in str(info.value)


@sycl.struct
class Wave:
    amplitude: np.complex64
    k: np.float32


@sycl.device
def evaluate(w, t):
    return w.amplitude * np.exp(np.complex64(0, w.k * t))


@sycl.kernel
def waves(i: sycl.id[1], ws: sycl.global_ptr[Wave], t: np.float32,
          out: sycl.global_ptr[np.complex64]):
    out[i] = evaluate(ws[i], t)


def test_struct_fields_and_device_functions(queue):
    rng = np.random.default_rng(16)
    host = np.zeros(32, Wave.dtype)
    host["amplitude"] = random_complex(rng, 32, np.complex64)
    host["k"] = rng.standard_normal(32).astype(np.float32)
    ws = sycl.malloc_shared(32, Wave.dtype, queue)
    queue.copy(host, ws).wait()
    out = sycl.malloc_shared(32, np.complex64, queue)
    queue.parallel_for(32, waves, ws, np.float32(0.75), out).wait()
    want = host["amplitude"] * np.exp(1j * (host["k"] * np.float32(0.75))).astype(np.complex64)
    assert_close(out.to_numpy(), want, np.complex64, 8, "waves")


def test_ptx_of_complex_kernels_needs_no_gpu():
    """The CUDA images build without a device; complex parameters are ``byval``
    structs, ``.param`` arrays of 8 and 16 bytes aligned as their part type, as the
    KernelArgs hold them (the driver checks the sizes against the PTX at launch)."""
    from pysycl.bundle import aot
    kb = aot.compile_modules([sys.modules[__name__]], ["nvptx64-sm_90"], "executable")
    ptx = {kid.get_name().rsplit(".", 1)[1]: img.asm["ptx"] for img in kb
           for kid in img.get_kernel_ids()}
    assert {"scale_2d", "dft", "scalar_arguments", "waves"} <= set(ptx)
    params = re.findall(r"\.param (.*)_param_(\d)(\[\d+\])?", ptx["scalar_arguments"])
    assert [(p[0].split()[:3], p[2]) for p in params[:2]] == [
        ([".align", "4", ".b8"], "[8]"), ([".align", "8", ".b8"], "[16]")]


TABLE = np.array([1 + 2j, -3j, 0.5], np.complex64)      # frozen into the image
PHASES = (1j, 2.0, -1 - 1j)                             # Python numbers: weak
ROTATION = sycl.specialization_id(np.complex64, np.complex64(0.5 - 1j))
OFFSET = sycl.device_global(np.complex128)


@sycl.kernel
def set_offset(i: sycl.id[1], v: np.complex128):
    OFFSET.set(v)


@sycl.kernel
def constants_and_memory(it: sycl.nd_item[1], h: sycl.kernel_handler,
                         out: sycl.global_ptr[np.complex64], t: np.int64,
                         tmp: sycl.local_accessor[np.complex64, 1]):
    i, lid = it.get_global_id(0), it.get_local_id(0)
    arr = sycl.private_array(np.complex64, 4)
    for j in range(4):
        arr[j] = np.complex64(j, -j)
    rot = h.get_specialization_constant(ROTATION)
    tmp[lid] = TABLE[i % 3] + PHASES[t] + arr[i % 4] * rot + OFFSET.get()
    sycl.group_barrier(it.get_group())
    out[i] = tmp[it.get_local_range(0) - 1 - lid]


def test_tables_spec_constants_device_globals_and_local_memory(queue):
    _skip_without_fp64(queue, np.complex128)
    rng = np.random.default_rng(17)
    rot = np.complex64(complex(*rng.standard_normal(2)))
    offset = complex(*rng.standard_normal(2))
    out = sycl.malloc_shared(16, np.complex64, queue)
    queue.parallel_for(1, set_offset, offset).wait()

    def cg(h):
        h.set_specialization_constant(ROTATION, rot)
        h.parallel_for(sycl.nd_range(16, 8), constants_and_memory, out, 2,
                       sycl.local_accessor(np.complex64, 8, h))
    queue.submit(cg).wait()
    i = np.arange(16)
    arr = np.array([np.complex64(j, -j) for j in range(4)])
    before = (TABLE[i % 3] + PHASES[2] + arr[i % 4] * rot + offset).astype(np.complex64)
    want = before.reshape(2, 8)[:, ::-1].ravel()
    assert_close(out.to_numpy(), want, np.complex64, 4, "constants")
