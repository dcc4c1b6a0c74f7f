"""The math library beyond the basics (SYCL 2020 4.17.5 and Python's ``math``): each
function on every device, in float32 and float64, against a float64 (or ``math``)
reference over a sweep of inputs, within SYCL's ULP bounds."""
from __future__ import annotations

import math

import numpy as np
import pytest

import pysycl as sycl

M = sycl.math
ROWS = ("erf", "erfc", "log1p", "expm1", "cbrt", "tgamma", "lgamma", "asinh", "acosh",
        "atanh", "hypot", "fmod", "remainder", "ldexp", "degrees", "radians", "sign",
        "modf_frac", "modf_int", "sin_of_sincos", "cos_of_sincos", "fract", "isfinite",
        "native_exp10", "recip", "divide")


@sycl.device
def evaluate(v, half, out, n, i):
    """Every function of ``ROWS`` at ``v`` into column ``i`` of ``out`` (rows of ``n``)."""
    out[0 * n + i] = math.erf(v)
    out[1 * n + i] = math.erfc(v)
    out[2 * n + i] = np.log1p(v)
    out[3 * n + i] = np.expm1(v)
    out[4 * n + i] = np.cbrt(v)
    out[5 * n + i] = M.tgamma(v)
    out[6 * n + i] = math.lgamma(v)
    out[7 * n + i] = np.arcsinh(v)
    out[8 * n + i] = M.acosh(abs(v) + 1)     # (no a * b + c: CUDA would fuse it)
    out[9 * n + i] = M.atanh(v * half * half * half)
    out[10 * n + i] = np.hypot(v, half)
    out[11 * n + i] = np.fmod(v, half)
    out[12 * n + i] = math.remainder(v, half)
    out[13 * n + i] = M.ldexp(v, np.int32(i % 7 - 3))
    out[14 * n + i] = np.degrees(v)
    out[15 * n + i] = M.radians(v)
    out[16 * n + i] = np.sign(v)
    frac, whole = M.modf(v)
    out[17 * n + i] = frac
    out[18 * n + i] = whole
    s, c = M.sincos(v)
    out[19 * n + i] = s
    out[20 * n + i] = c
    f, _floor = M.fract(v)
    out[21 * n + i] = f
    out[22 * n + i] = 1 if np.isfinite(v) else 0
    out[23 * n + i] = M.native.exp10(v * half)
    out[24 * n + i] = M.half_precision.recip(v)
    out[25 * n + i] = M.native.divide(v, half)


@sycl.kernel
def math_f32(i: sycl.id[1], x: sycl.global_ptr[np.float32], out: sycl.global_ptr[np.float32],
             n: np.int64):
    evaluate(x[i], np.float32(0.5), out, n, i)


@sycl.kernel
def math_f64(i: sycl.id[1], x: sycl.global_ptr[np.float64], out: sycl.global_ptr[np.float64],
             n: np.int64):
    evaluate(x[i], 0.5, out, n, i)


def _c_tgamma(t: float) -> float:
    """C's tgamma: poles at +-0 give +-inf, negative integers and -inf NaN."""
    if t == 0:
        return math.copysign(math.inf, t)
    if math.isnan(t) or t == -math.inf or t < 0 and t == int(t):
        return math.nan
    if t == math.inf:
        return math.inf
    return math.gamma(t)


def _reference(x: np.ndarray) -> dict:
    v = x.astype(np.float64)
    h = 0.5
    each = np.vectorize
    with np.errstate(all="ignore"):
        gamma = each(_c_tgamma)(v)
        lgam = each(lambda t: math.lgamma(t) if math.isfinite(t) and
                    not (t <= 0 and t == int(t)) else (np.nan if math.isnan(t) else np.inf))(v)
        rem = each(lambda t: math.remainder(t, h) if math.isfinite(t) else np.nan)(v)
        ints = np.arange(v.size) % 7 - 3
        frac, whole = np.modf(v)
        below_one = np.nextafter(x.dtype.type(1), x.dtype.type(0))
        return {
            "erf": each(math.erf)(v), "erfc": each(math.erfc)(v), "log1p": np.log1p(v),
            "expm1": np.expm1(v), "cbrt": np.cbrt(v), "tgamma": gamma, "lgamma": lgam,
            "asinh": np.arcsinh(v), "acosh": np.arccosh((np.abs(x) + 1).astype(np.float64)),
            "atanh": np.arctanh(v * h ** 3), "hypot": np.hypot(v, h), "fmod": np.fmod(v, h),
            "remainder": rem, "ldexp": np.ldexp(v, ints), "degrees": np.degrees(v),
            "radians": np.radians(v), "sign": np.sign(v), "modf_frac": frac,
            "modf_int": whole, "sin_of_sincos": np.sin(v), "cos_of_sincos": np.cos(v),
            "fract": np.where(np.isinf(v), np.copysign(0.0, v),
                              np.minimum(v - np.floor(v), below_one)),
            "isfinite": np.isfinite(v).astype(float), "native_exp10": 10.0 ** (v * h),
            "recip": 1 / v, "divide": v / h}


# SYCL 2020's bounds for the full-precision functions (ULP), 0 for the exact ones. The
# relaxed forms (native, half_precision) compute here at the full forms' accuracy.
ULPS = {"erf": 16, "erfc": 16, "log1p": 2, "expm1": 3, "cbrt": 2, "tgamma": 16,
        "lgamma": 16, "asinh": 4, "acosh": 4, "atanh": 5, "hypot": 4, "fmod": 0,
        "remainder": 0, "ldexp": 0, "degrees": 2, "radians": 2, "sign": 0, "modf_frac": 0,
        "modf_int": 0, "sin_of_sincos": 4, "cos_of_sincos": 4, "fract": 0, "isfinite": 0,
        "native_exp10": 3, "recip": 1, "divide": 1}


def _inputs(dtype) -> np.ndarray:
    rng = np.random.default_rng(2026)
    sweep = np.concatenate([rng.uniform(-6, 6, 700), rng.uniform(-0.01, 0.01, 100),
                            rng.uniform(-40, 40, 150), np.linspace(-3, 3, 41)])
    special = [0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 2.0, 10.0, np.inf, -np.inf, np.nan]
    return np.concatenate([sweep, special]).astype(dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_math_library_within_sycl_ulp_bounds(queue, dtype):
    if dtype == np.float64 and not queue.get_device().has(sycl.aspect.fp64):
        pytest.skip("no fp64 on this device")
    x = _inputs(dtype)
    n = x.size
    dx = sycl.malloc_shared(n, dtype, queue)
    out = sycl.malloc_shared(len(ROWS) * n, dtype, queue)
    dx[:] = x
    kernel = math_f32 if dtype == np.float32 else math_f64
    queue.parallel_for(n, kernel, dx, out, np.int64(n)).wait()
    got = out.to_numpy().reshape(len(ROWS), n)
    ref = _reference(x)
    for row, name in enumerate(ROWS):
        with np.errstate(over="ignore"):     # tgamma(40) is inf in float32
            want = ref[name].astype(dtype)
        have = got[row]
        assert np.array_equal(np.isnan(have), np.isnan(want)), \
            f"{name}: NaN where the reference has none (or the reverse) at " \
            f"{x[np.isnan(have) != np.isnan(want)][:5]}"
        both = ~np.isnan(want)
        inf = np.isinf(want) & both
        assert np.array_equal(have[inf], want[inf]), f"{name}: infinities differ"
        fin = both & ~inf
        scale = np.abs(want[fin])
        if name == "lgamma":   # near its zeros lgamma's error is absolute (libm's too)
            scale = np.maximum(scale, 1)
        ulps = np.abs(have[fin].astype(np.float64) - ref[name][fin]) / \
            np.spacing(scale.astype(dtype)).astype(np.float64)
        bound = ULPS[name] + 0.5     # the reference itself is rounded to dtype
        worst = int(np.argmax(ulps)) if ulps.size else 0
        assert not ulps.size or ulps[worst] <= bound, \
            f"{name}({x[fin][worst]!r}) = {have[fin][worst]!r}, expected " \
            f"{ref[name][fin][worst]!r}: {ulps[worst]:.1f} ulp > {ULPS[name]}"


def test_modf_and_fract_keep_signs_of_zero_and_infinity(queue):
    x = np.array([-0.0, 0.0, -np.inf, np.inf, -2.5], np.float32)
    dx = sycl.malloc_shared(x.size, np.float32, queue)
    out = sycl.malloc_shared(len(ROWS) * x.size, np.float32, queue)
    dx[:] = x
    queue.parallel_for(x.size, math_f32, dx, out, np.int64(x.size)).wait()
    got = out.to_numpy().reshape(len(ROWS), x.size)
    frac, whole = np.modf(x)
    np.testing.assert_array_equal(np.signbit(got[ROWS.index("modf_frac")]), np.signbit(frac))
    np.testing.assert_array_equal(got[ROWS.index("modf_int")], whole)
    np.testing.assert_array_equal(got[ROWS.index("fract")][2:4], [0.0, 0.0])
