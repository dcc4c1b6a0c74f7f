"""The elementary functions of complex numbers (SYCL's
``sycl::ext::oneapi::experimental::complex`` list: trigonometric, hyperbolic and their
inverses, log10, pow, proj) on every device against NumPy: random data in several
regions (near the branch points 1 and i, large and small magnitudes) with tolerances from
the part type's epsilon, C99's special values as NumPy's (glibc's) results give them, the
``np``/``cmath``/``sycl.math`` spellings, and the PTX of these kernels (built with no
GPU)."""

import cmath
import sys

import numpy as np
import pytest

import pysycl as sycl
from test_complex import (DTYPES, SPECIAL, _skip_without_fp64, _usm, assert_close, part_type,
                          random_complex)

M = sycl.math
#: NumPy's names of the functions, in the rows the kernels write them.
NAMES = ["sin", "cos", "tan", "arcsin", "arccos", "arctan", "sinh", "cosh", "tanh",
         "arcsinh", "arccosh", "arctanh", "log10"]


def make_numpy_spelled(dt):
    @sycl.kernel
    def numpy_spelled(i: sycl.id[1], a: sycl.global_ptr[dt], out: sycl.global_ptr[dt],
                      n: np.int64):
        z = a[i]
        out[0 * n + i] = np.sin(z)
        out[1 * n + i] = np.cos(z)
        out[2 * n + i] = np.tan(z)
        out[3 * n + i] = np.arcsin(z)
        out[4 * n + i] = np.arccos(z)
        out[5 * n + i] = np.arctan(z)
        out[6 * n + i] = np.sinh(z)
        out[7 * n + i] = np.cosh(z)
        out[8 * n + i] = np.tanh(z)
        out[9 * n + i] = np.arcsinh(z)
        out[10 * n + i] = np.arccosh(z)
        out[11 * n + i] = np.arctanh(z)
        out[12 * n + i] = np.log10(z)
    return numpy_spelled


def make_cmath_spelled(dt):
    @sycl.kernel
    def cmath_spelled(i: sycl.id[1], a: sycl.global_ptr[dt], out: sycl.global_ptr[dt],
                      n: np.int64):
        z = a[i]
        out[0 * n + i] = cmath.sin(z)
        out[1 * n + i] = cmath.cos(z)
        out[2 * n + i] = cmath.tan(z)
        out[3 * n + i] = cmath.asin(z)
        out[4 * n + i] = cmath.acos(z)
        out[5 * n + i] = cmath.atan(z)
        out[6 * n + i] = cmath.sinh(z)
        out[7 * n + i] = cmath.cosh(z)
        out[8 * n + i] = cmath.tanh(z)
        out[9 * n + i] = cmath.asinh(z)
        out[10 * n + i] = cmath.acosh(z)
        out[11 * n + i] = cmath.atanh(z)
        out[12 * n + i] = cmath.log10(z)
    return cmath_spelled


def make_sycl_spelled(dt):
    @sycl.kernel
    def sycl_spelled(i: sycl.id[1], a: sycl.global_ptr[dt], out: sycl.global_ptr[dt],
                     n: np.int64):
        z = a[i]
        out[0 * n + i] = M.sin(z)
        out[1 * n + i] = M.cos(z)
        out[2 * n + i] = M.tan(z)
        out[3 * n + i] = M.asin(z)
        out[4 * n + i] = M.acos(z)
        out[5 * n + i] = M.atan(z)
        out[6 * n + i] = M.sinh(z)
        out[7 * n + i] = M.cosh(z)
        out[8 * n + i] = M.tanh(z)
        out[9 * n + i] = M.asinh(z)
        out[10 * n + i] = M.acosh(z)
        out[11 * n + i] = M.atanh(z)
        out[12 * n + i] = M.log10(z)
    return sycl_spelled


SPELLINGS = {"np": make_numpy_spelled, "cmath": make_cmath_spelled, "sycl": make_sycl_spelled}
KERNELS = {(s, dt): make(dt) for s, make in SPELLINGS.items() for dt in DTYPES}


def run_rows(queue, kernel, z, rows):
    n = z.size
    out = sycl.malloc_shared(rows * n, z.dtype, queue)
    queue.parallel_for(n, kernel, _usm(queue, z), out, n).wait()
    return out.to_numpy().reshape(rows, n)


def numpy_rows(z):
    with np.errstate(all="ignore"):
        return [getattr(np, name)(z) for name in NAMES]


def regions(rng, n, dt):
    """Random numbers where the functions take different paths: moderate ones with the
    branch cuts' signed zeros, near +-1 and +-i (the branch points), magnitudes from tiny
    to large, and real parts up to 100 (sinh, cosh and tanh at large |x|)."""
    F = part_type(dt)
    span = 6 if dt is np.complex64 else 15
    small = lambda: rng.standard_normal(n) * 10.0 ** rng.uniform(-span, 0, n)   # noqa: E731
    sign = lambda: np.where(rng.random(n) < 0.5, 1.0, -1.0)                        # noqa: E731
    mag = 10.0 ** rng.uniform(-span, span, n)
    parts = [random_complex(rng, n, dt, scale=2.0),
             sign() + small() + 1j * small(),
             1j * sign() + small() + 1j * small(),
             mag * np.exp(1j * rng.uniform(-np.pi, np.pi, n)),
             rng.uniform(-100, 100, n) + 1j * rng.uniform(-3, 3, n)]
    z = np.concatenate([np.asarray(p).astype(dt) for p in parts])
    assert np.isfinite(z.real.astype(F)).all()
    return z


@pytest.mark.parametrize("spelling", list(SPELLINGS))
@pytest.mark.parametrize("dt", DTYPES, ids=lambda d: np.dtype(d).name)
def test_elementary_functions_match_numpy(queue, dt, spelling):
    """Within 8 ULPs of NumPy's results of the same precision (measured: at most 4 on
    the native CPU and OpenCL, where NumPy's complex64 results themselves are up to 3
    ULPs from the exact ones)."""
    _skip_without_fp64(queue, dt)
    rng = np.random.default_rng(31)
    z = regions(rng, 512, dt)
    got = run_rows(queue, KERNELS[spelling, dt], z, len(NAMES))
    for name, g, want in zip(NAMES, got, numpy_rows(z)):
        assert_close(g, want, dt, 8, f"{spelling} {name}")
    # The branch cuts: a real argument beyond them keeps the sign of its zero imaginary
    # part (asin, acos, atanh beyond +-1; asinh, atan beyond +-i on the imaginary axis).
    want = numpy_rows(z)
    for k in (3, 4, 9, 11):
        np.testing.assert_array_equal(np.signbit(got[k].imag), np.signbit(want[k].imag),
                                      err_msg=NAMES[k])


def special_grid(dt):
    """Every pair of special values (zeros of both signs, infinities, NaN, huge and tiny
    numbers) as real and imaginary parts."""
    F = part_type(dt)
    with np.errstate(all="ignore"):
        vals = np.array(SPECIAL, dtype=F)
    vals = np.unique(np.concatenate([vals, [F(-0.0), F(0.5), F(-1e-5), F(50), F(-400)]]))
    z = np.empty(vals.size ** 2, dt)
    z.real, z.imag = np.repeat(vals, vals.size), np.tile(vals, vals.size)
    return z


@pytest.mark.parametrize("dt", DTYPES, ids=lambda d: np.dtype(d).name)
def test_special_values_match_c99_as_numpy_gives_them(queue, dt):
    """C99 Annex G's values for infinities, NaNs and signed zeros (where it leaves a sign
    open, glibc's choice, which NumPy's results come from); no overflow where the result
    is finite (sinh(400 + i) in complex64), none lost for huge arguments."""
    _skip_without_fp64(queue, dt)
    z = special_grid(dt)
    got = run_rows(queue, KERNELS["np", dt], z, len(NAMES))
    for name, g, want in zip(NAMES, got, numpy_rows(z)):
        want = _c99_where_numpy_was_not(name, z, g, want)
        assert_close(g, _either_sign_where_open(g, want), dt, 8, f"special {name}")


def _c99_where_numpy_was_not(name, z, got, want):
    """``want`` with C99 Annex G's value where older NumPy releases gave another:
    arccosh(+-0 + nan j) is nan +- pi/2 j (cacos(+-0 + nan j) = pi/2 + nan j; NumPy 2.2
    gives nan + nan j, NumPy 2.4 C99's value)."""
    if name != "arccosh":
        return want
    want = want.copy()
    at = (z.real == 0) & np.isnan(z.imag)
    want[at] = want.dtype.type(complex(np.nan, np.pi / 2))
    want.imag[at] = np.copysign(want.imag[at], got.imag[at])   # (that sign is open)
    return want


def _either_sign_where_open(got, want):
    """``want`` with the sign of an infinite part taken from ``got`` where the other part
    is NaN: C99 Annex G leaves that sign unspecified, and NumPy releases differ on it
    (2.2 and 2.4 give arcsin(-inf + nan j) opposite signs)."""
    want = want.copy()
    for name, other in (("real", "imag"), ("imag", "real")):
        part, mine = getattr(want, name), getattr(got, name)   # (views: writes go to want)
        open_sign = np.isinf(part) & np.isnan(getattr(want, other)) & np.isinf(mine)
        part[open_sign] = mine[open_sign]
    return want


@sycl.kernel
def powers_and_projections(i: sycl.id[1], a: sycl.global_ptr[np.complex128],
                           b: sycl.global_ptr[np.complex128],
                           x: sycl.global_ptr[np.float32],
                           out: sycl.global_ptr[np.complex128],
                           out32: sycl.global_ptr[np.complex64], n: np.int64):
    z, w, r = a[i], b[i], x[i]
    out[0 * n + i] = np.power(z, w)
    out[1 * n + i] = M.pow(z, w)
    out[2 * n + i] = np.power(z, 3)
    out[3 * n + i] = M.proj(z)
    out[4 * n + i] = M.proj(w)
    out32[0 * n + i] = cmath.sin(r)             # a float32 argument: complex64, as np
    out32[1 * n + i] = cmath.acos(r * 2)        # beyond 1: complex
    out32[2 * n + i] = M.proj(r)


def test_power_function_projection_and_real_arguments(queue):
    _skip_without_fp64(queue, np.complex128)
    rng = np.random.default_rng(32)
    n = 64
    z = random_complex(rng, n, np.complex128, scale=2.0)
    w = random_complex(rng, n, np.complex128, scale=1.0)[::-1].copy()
    z[:4] = [complex(np.inf, 1), complex(-2, -np.inf), complex(np.nan, np.inf), complex(-np.inf, -0.0)]
    x = rng.standard_normal(n).astype(np.float32)
    out = sycl.malloc_shared(5 * n, np.complex128, queue)
    out32 = sycl.malloc_shared(3 * n, np.complex64, queue)
    queue.parallel_for(n, powers_and_projections, _usm(queue, z), _usm(queue, w), _usm(queue, x),
                       out, out32, n).wait()
    got, got32 = out.to_numpy().reshape(5, n), out32.to_numpy().reshape(3, n)
    with np.errstate(all="ignore"):
        power = np.array([zi ** wi for zi, wi in zip(z, w)])     # NumPy's scalar power
        cube = np.array([zi ** 3 for zi in z])
    for k, want in enumerate([power, power, cube]):
        assert_close(got[k, 4:], want[4:], np.complex128, 64, f"power row {k}")
    for k, v in ((3, z), (4, w)):
        want = M.proj(v)                        # the host form: NumPy
        np.testing.assert_array_equal(got[k], want)
        np.testing.assert_array_equal(np.signbit(got[k].imag), np.signbit(want.imag))
    assert np.isinf(got[3, :4].real).all() and (got[3, :4].imag == 0).all()
    assert_close(got32[0], np.sin(x.astype(np.complex64)), np.complex64, 8, "cmath.sin(float32)")
    assert_close(got32[1], np.arccos((x * 2).astype(np.complex64)), np.complex64, 8, "cmath.acos")
    np.testing.assert_array_equal(got32[2], x.astype(np.complex64))


def test_ptx_of_the_elementary_functions_needs_no_gpu():
    """The CUDA images build without a device (the functions through libdevice)."""
    from pysycl.bundle import aot
    kb = aot.compile_modules([sys.modules[__name__]], ["nvptx64-sm_90"], "executable")
    ptx = {kid.get_name().rsplit(".", 1)[1]: img.asm["ptx"] for img in kb
           for kid in img.get_kernel_ids()}
    assert {"numpy_spelled", "powers_and_projections"} <= set(ptx)
    assert all(".entry" in text for text in ptx.values())
    assert "__nv_" not in ptx["numpy_spelled"]        # libdevice linked in, no call left
