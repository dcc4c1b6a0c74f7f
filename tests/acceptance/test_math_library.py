"""The math library beyond the basics (SYCL 2020 4.17.5 and Python's ``math``): each
function on every device, in float32 and float64, against a float64 (or ``math``)
reference over a sweep of inputs, within SYCL's ULP bounds; the functions with two
results (frexp, lgamma_r, remquo) included; math on vec2 to vec16 element by element
against NumPy; misuse as compile errors naming the line; the CUDA lowering as PTX."""
import importlib.util
import math
import re
from fractions import Fraction

import numpy as np
import pytest

import pysycl as sycl

M = sycl.math
ROWS = ("erf", "erfc", "log1p", "expm1", "cbrt", "tgamma", "lgamma", "asinh", "acosh",
        "atanh", "hypot", "fmod", "remainder", "ldexp", "degrees", "radians", "sign",
        "modf_frac", "modf_int", "sin_of_sincos", "cos_of_sincos", "fract", "isfinite",
        "native_exp10", "recip", "divide", "frexp_mant", "frexp_exp", "lgamma_r", "lgamma_r_sign",
        "remquo", "remquo_quo")


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
    mant, exp = math.frexp(v)
    out[26 * n + i] = mant
    out[27 * n + i] = exp
    lg, sign = M.lgamma_r(v)
    out[28 * n + i] = lg
    out[29 * n + i] = sign
    rem, quo = M.remquo(v, half * 3)
    out[30 * n + i] = rem
    out[31 * n + i] = quo


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


def _c_lgamma(t: float) -> float:
    """C's lgamma: +inf at the poles and at +-inf."""
    if math.isnan(t):
        return math.nan
    return math.lgamma(t) if math.isfinite(t) and not (t <= 0 and t == int(t)) else math.inf


def _gamma_sign(t: float) -> float:
    """The sign of tgamma(t) where it is defined (not at poles, -inf or NaN: NaN here)."""
    if math.isnan(t) or t == -math.inf or t <= 0 and t == int(t):
        return math.nan
    return 1.0 if t == math.inf else math.copysign(1.0, math.gamma(t))


def _quo_low_bits(x: float, y: float) -> float:
    """remquo's quotient: the 3 low bits of x / y rounded to nearest even (exactly, with
    fractions), with the sign of x / y; 0 where the remainder is NaN or x / y is 0."""
    if not math.isfinite(x) or math.isnan(y) or y == 0 or math.isinf(y):
        return 0.0
    n = round(Fraction(x) / Fraction(y))       # round() of a Fraction: half to even
    low = abs(n) % 8
    return float(-low if (x < 0) != (y < 0) else low)


def _fma(a: float, b: float, c: float) -> float:
    """a * b + c rounded once (float64's correct rounding of the exact value)."""
    if not all(map(math.isfinite, (a, b, c))):
        return a * b + c
    return float(Fraction(a) * Fraction(b) + Fraction(c))


def _reference(x: np.ndarray) -> dict:
    v = x.astype(np.float64)
    h = 0.5
    each = np.vectorize
    with np.errstate(all="ignore"):
        gamma = each(_c_tgamma)(v)
        lgam = each(_c_lgamma)(v)
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
            "recip": 1 / v, "divide": v / h, "frexp_mant": np.frexp(v)[0],
            "frexp_exp": np.frexp(v)[1].astype(float), "lgamma_r": lgam,
            "lgamma_r_sign": each(_gamma_sign)(v),
            "remquo": each(lambda t: math.remainder(t, 3 * h) if math.isfinite(t) else np.nan)(v),
            "remquo_quo": each(_quo_low_bits)(v, 3 * h)}


# SYCL 2020's bounds for the full-precision functions (ULP), 0 for the exact ones. The
# relaxed forms (native, half_precision) compute here at the full forms' accuracy.
ULPS = {"erf": 16, "erfc": 16, "log1p": 2, "expm1": 3, "cbrt": 2, "tgamma": 16,
        "lgamma": 16, "asinh": 4, "acosh": 4, "atanh": 5, "hypot": 4, "fmod": 0,
        "remainder": 0, "ldexp": 0, "degrees": 2, "radians": 2, "sign": 0, "modf_frac": 0,
        "modf_int": 0, "sin_of_sincos": 4, "cos_of_sincos": 4, "fract": 0, "isfinite": 0,
        "native_exp10": 3, "recip": 1, "divide": 1, "frexp_mant": 0, "frexp_exp": 0,
        "lgamma_r": 16, "lgamma_r_sign": 0, "remquo": 0, "remquo_quo": 0}
# C leaves lgamma_r's sign at the poles (0 and the negative integers) and NaN
# unspecified, and remquo's quotient is only defined to its 3 low bits: the rows that
# keep only the defined part of a result before comparing.
DEFINED = {
    "lgamma_r_sign": lambda x, got: np.where(
        (x <= 0) & (x == np.floor(x)) | np.isnan(x) | (x == -np.inf), np.nan, got),
    "remquo_quo": lambda x, got: np.sign(got) * (np.abs(got) % 8),
}


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
        assert_within_ulps(name, x, got[row], ref[name], ULPS[name])


def assert_within_ulps(name: str, x, have, ref, ulp_bound: float):
    """``have`` (the device's results at ``x``, in their dtype) against the float64
    reference ``ref``: NaN and infinities where the reference has them, and finite
    values within ``ulp_bound`` ULP of it (rows of ``DEFINED`` compared as it says)."""
    dtype = have.dtype
    with np.errstate(over="ignore"):     # tgamma(40) is inf in float32
        want = ref.astype(dtype)
    if name in DEFINED:
        have, want = DEFINED[name](x, have), DEFINED[name](x, want)
    assert np.array_equal(np.isnan(have), np.isnan(want)), \
        f"{name}: NaN where the reference has none (or the reverse) at " \
        f"{x[np.isnan(have) != np.isnan(want)][:5]}"
    both = ~np.isnan(want)
    inf = np.isinf(want) & both
    assert np.array_equal(have[inf], want[inf]), f"{name}: infinities differ"
    fin = both & ~inf
    scale = np.abs(want[fin])
    if name.startswith("lgamma"):   # near its zeros lgamma's error is absolute (libm's too)
        scale = np.maximum(scale, 1)
    ulps = np.abs(have[fin].astype(np.float64) - ref[fin]) / \
        np.spacing(scale.astype(dtype)).astype(np.float64)
    bound = ulp_bound + 0.5     # the reference itself is rounded to dtype
    worst = int(np.argmax(ulps)) if ulps.size else 0
    assert not ulps.size or ulps[worst] <= bound, \
        f"{name}({x[fin][worst]!r}) = {have[fin][worst]!r}, expected " \
        f"{ref[fin][worst]!r}: {ulps[worst]:.1f} ulp > {ulp_bound}"


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


# Math on vecs --------------------------------------------------------------------------
# SYCL 2020 4.17.5 defines the math functions element by element on vec<float, N> and
# vec<double, N>: a sample of them (a scalar beside a vec where SYCL takes one, the pair
# results, the relational functions' -1/0 masks) on every vec size.
VEC_SIZES = (2, 3, 4, 8, 16)
VEC_ROWS = {   # name: SYCL's ULP bound (float)
    "sqrt": 3, "exp": 3, "log": 3, "sin": 4, "atan2": 6, "pow": 16, "hypot": 4,
    "fmax_scalar": 0, "fmin": 0, "ldexp_vec": 0, "ldexp_int": 0, "erf": 16, "fma": 0,
    "floor": 0, "copysign": 0, "cbrt": 2, "degrees": 2, "sign": 0, "fmod": 0, "modf_frac": 0,
    "cos_of_sincos": 4, "fract": 0, "frexp_mant": 0, "lgamma_r": 16, "remquo": 0}
VEC_INT_ROWS = ("frexp_exp", "lgamma_r_sign", "remquo_quo")
VEC_MASK_ROWS = ("isnan", "isinf", "isfinite", "signbit")
NF, NI, NM = len(VEC_ROWS), len(VEC_INT_ROWS), len(VEC_MASK_ROWS)


@sycl.device
def evaluate_vec(a, b, k, s, out, ints, masks, i):
    """``VEC_ROWS`` of the vecs ``a`` (positive), ``b`` (signed, with specials) and the int
    vec ``k`` (and the scalar ``s``) into row ``i`` of ``out``, ``ints`` and ``masks``."""
    f = i * NF
    out[f + 0] = np.sqrt(a)
    out[f + 1] = np.exp(b)
    out[f + 2] = math.log(a)
    out[f + 3] = M.sin(b)
    out[f + 4] = np.arctan2(a, b)
    out[f + 5] = M.pow(a, b)
    out[f + 6] = np.hypot(a, b)
    out[f + 7] = np.fmax(b, s)
    out[f + 8] = M.fmin(a, b)
    out[f + 9] = M.ldexp(b, k)
    out[f + 10] = math.ldexp(b, 3)
    out[f + 11] = math.erf(b)
    out[f + 12] = M.fma(a, b, a)
    out[f + 13] = np.floor(b)
    out[f + 14] = np.copysign(a, b)
    out[f + 15] = np.cbrt(b)
    out[f + 16] = np.degrees(b)
    out[f + 17] = np.sign(b)
    out[f + 18] = np.fmod(b, a)
    frac, _whole = np.modf(b)
    out[f + 19] = frac
    _sin, cos = M.sincos(b)
    out[f + 20] = cos
    part, _floor = M.fract(b)
    out[f + 21] = part
    mant, exp = np.frexp(b)
    out[f + 22] = mant
    lg, sign = M.lgamma_r(b)
    out[f + 23] = lg
    rem, quo = M.remquo(b, a)
    out[f + 24] = rem
    g = i * NI
    ints[g] = exp
    ints[g + 1] = sign
    ints[g + 2] = quo
    h = i * NM
    masks[h] = np.isnan(b)
    masks[h + 1] = math.isinf(b)
    masks[h + 2] = M.isfinite(b)
    masks[h + 3] = np.signbit(b)


_vec_kernels: dict = {}


def vec_kernel(dtype, n: int):
    """The kernel of ``evaluate_vec`` on ``sycl.vec(dtype, n)`` values."""
    dt = np.dtype(dtype)
    if (dt, n) not in _vec_kernels:
        V, IV = sycl.vec(dt, n), sycl.vec(np.int32, n)
        MV = sycl.vec(np.int32 if dt == np.float32 else np.int64, n)

        @sycl.kernel(name=f"math_on_vec_{dt.name}_{n}")
        def math_on_vec(i: sycl.id[1], a: sycl.global_ptr[V], b: sycl.global_ptr[V],
                        k: sycl.global_ptr[IV], s: dt.type, out: sycl.global_ptr[V],
                        ints: sycl.global_ptr[IV], masks: sycl.global_ptr[MV]):
            evaluate_vec(a[i], b[i], k[i], s, out, ints, masks, i)
        _vec_kernels[dt, n] = math_on_vec
    return _vec_kernels[dt, n]


def _vec_inputs(dtype, n: int, items: int):
    rng = np.random.default_rng(n)
    a = rng.uniform(0.1, 4, (items, n)).astype(dtype)
    b = rng.uniform(-6, 6, (items, n)).astype(dtype)
    special = np.array([np.nan, np.inf, -np.inf, -0.0, 0.0, -2.0, 3.0, 1e-30], dtype)
    b.flat[rng.choice(b.size, special.size, replace=False)] = special
    k = rng.integers(-5, 6, (items, n)).astype(np.int32)
    return a, b, k


def _vec_reference(a, b, k, s) -> dict:
    a, b, s = a.astype(np.float64), b.astype(np.float64), float(s)
    each = np.vectorize
    with np.errstate(all="ignore"):
        frac, _ = np.modf(b)
        below_one = np.nextafter(1.0, 0.0)
        return {
            "sqrt": np.sqrt(a), "exp": np.exp(b), "log": np.log(a), "sin": np.sin(b),
            "atan2": np.arctan2(a, b), "pow": np.power(a, b), "hypot": np.hypot(a, b),
            "fmax_scalar": np.fmax(b, s), "fmin": np.fmin(a, b), "ldexp_vec": np.ldexp(b, k),
            "ldexp_int": np.ldexp(b, 3), "erf": each(math.erf)(b), "fma": each(_fma)(a, b, a),
            "floor": np.floor(b), "copysign": np.copysign(a, b), "cbrt": np.cbrt(b),
            "degrees": np.degrees(b), "sign": np.sign(b), "fmod": np.fmod(b, a),
            "modf_frac": frac, "cos_of_sincos": np.cos(b),
            "fract": np.where(np.isinf(b), np.copysign(0.0, b),
                              np.minimum(b - np.floor(b), below_one)),
            "frexp_mant": np.frexp(b)[0], "lgamma_r": each(_c_lgamma)(b),
            "remquo": each(lambda x, y: math.remainder(x, y) if math.isfinite(x)
                           else np.nan)(b, a),
            "frexp_exp": np.frexp(b)[1], "lgamma_r_sign": each(_gamma_sign)(b),
            "remquo_quo": each(_quo_low_bits)(b, a),
            "isnan": np.isnan(b), "isinf": np.isinf(b), "isfinite": np.isfinite(b),
            "signbit": np.signbit(b)}


@pytest.mark.parametrize("n", VEC_SIZES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_math_on_vecs_element_by_element(queue, dtype, n):
    if dtype == np.float64 and not queue.get_device().has(sycl.aspect.fp64):
        pytest.skip("no fp64 on this device")
    items = 24
    a, b, k = _vec_inputs(dtype, n, items)
    V, IV = sycl.vec(dtype, n), sycl.vec(np.int32, n)
    MV = sycl.vec(np.int32 if dtype == np.float32 else np.int64, n)

    def shared(host, vt, rows=1):
        mem = sycl.malloc_shared(items * rows, vt, queue)
        if host is not None:
            np.asarray(mem)[:, :n] = host
        return mem
    out, ints, masks = shared(None, V, NF), shared(None, IV, NI), shared(None, MV, NM)
    s = dtype(0.5)
    queue.parallel_for(items, vec_kernel(dtype, n), shared(a, V), shared(b, V), shared(k, IV),
                       s, out, ints, masks).wait()
    # (a vec3 takes four slots; the fourth is padding)
    got = out.to_numpy()[:, :n].reshape(items, NF, n)
    got_ints = ints.to_numpy()[:, :n].reshape(items, NI, n)
    got_masks = masks.to_numpy()[:, :n].reshape(items, NM, n)
    ref = _vec_reference(a, b, k, s)
    for row, (name, bound) in enumerate(VEC_ROWS.items()):
        assert_within_ulps(name, b.ravel(), got[:, row].ravel(), ref[name].ravel(), bound)
    for row, name in enumerate(VEC_INT_ROWS):
        assert_within_ulps(name, b.ravel(), got_ints[:, row].ravel().astype(dtype),
                           ref[name].ravel().astype(np.float64), 0)
    for row, name in enumerate(VEC_MASK_ROWS):
        np.testing.assert_array_equal(got_masks[:, row], np.where(ref[name], -1, 0),
                                      err_msg=f"{name} mask")
        assert got_masks.dtype == MV.base


def _compile(body: str, folder):
    """A kernel whose last line is ``body``: its IR (or the compile error)."""
    path = folder / f"math_case_{abs(hash(body))}.py"
    path.write_text("import math\nimport numpy as np\nimport pysycl as sycl\n"
                    "F4, F3, D4 = [sycl.vec(t, n) for t, n in "
                    "((np.float32, 4), (np.float32, 3), (np.float64, 4))]\n"
                    "I4, I3 = sycl.vec(np.int32, 4), sycl.vec(np.int32, 3)\n@sycl.kernel\n"
                    "def bad(i: sycl.id[1], f4: sycl.global_ptr[F4], f3: sycl.global_ptr[F3],\n"
                    "        d4: sycl.global_ptr[D4], i4: sycl.global_ptr[I4],\n"
                    "        i3: sycl.global_ptr[I3], o: sycl.global_ptr[F4]):\n"
                    "    x, y, d, k, k3 = f4[i], f3[i], d4[i], i4[i], i3[i]\n"
                    f"    {body}\n")
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.bad.ir_module()


@pytest.mark.parametrize("body, message", [
    ("a, b = math.frexp(np.int32(3))", "frexp() takes a float, not int32"),
    ("a, b = sycl.math.lgamma_r(7)", "lgamma_r() takes a float, not Python int"),
    ("a, b = sycl.math.remquo(k, k)", "remquo() takes float vecs, not vec<i32,4>"),
    ("o[i] = np.sqrt(k)", "sqrt() takes float vecs, not vec<i32,4>"),
    ("o[i] = np.hypot(x, y)", "hypot(): vec arguments of different lengths, vec<f32,4> and "
     "vec<f32,3>"),
    ("a, b = sycl.math.remquo(x, d)", "vec arguments of different element types"),
    ("o[i] = np.hypot(x, np.float32(1))", "hypot() of a vec<f32,4> takes a vec<f32,4> here, "
     "not a scalar"),
    ("o[i] = np.fmax(np.float32(1), x)", "fmax() of a vec<f32,4> takes a vec<f32,4> here"),
    ("o[i] = np.fmax(x, np.float64(1))", "a float64 scalar with a vec<f32,4> would change"),
    ("o[i] = math.ldexp(x, 1.5)", "ldexp's exponent is an integer, not Python float"),
    ("o[i] = math.ldexp(x, x)", "ldexp's exponent is an integer, not vec<f32,4>"),
    ("o[i] = math.ldexp(np.float32(1), k)", "the exponent is a vec<i32,4> but x is a scalar"),
    ("o[i] = math.ldexp(x, k3)", "ldexp(): vec arguments of different lengths"),
    ("o[i] = sycl.math.dot(x, y)", "dot(): vec arguments of different lengths"),
    ("o[i] = sycl.math.length(k)", "length() takes float vecs, not vec<i32,4>"),
    ("o[i] = sycl.math.cross(x, np.float32(1))", "cross() of a vec<f32,4> takes a vec<f32,4>"),
])
def test_misused_math_is_a_compile_error_naming_the_line(body, message, tmp_path):
    with pytest.raises(sycl.compile_error, match=re.escape(message)) as info:
        _compile(body, tmp_path)
    assert info.value.lineno == 11


def test_mixed_vec_and_scalar_forms_sycl_allows_compile(tmp_path):
    for body in ("o[i] = np.fmax(x, 0.5)", "o[i] = sycl.math.fmin(x, np.float32(2))",
                 "o[i] = math.ldexp(x, np.int64(2))", "o[i] = math.ldexp(x, k)",
                 "o[i] = math.ldexp(x, k.convert(np.int64))"):
        assert _compile(body, tmp_path).kernels


@pytest.mark.parametrize("kernel", [lambda: math_f32, lambda: math_f64,
                                    lambda: vec_kernel(np.float32, 3),
                                    lambda: vec_kernel(np.float64, 16)],
                         ids=["f32", "f64", "vec3_f32", "vec16_f64"])
def test_math_compiles_to_ptx_without_a_gpu(kernel):
    """The CUDA lowering of every function here (libdevice, own lgamma sign, lane by lane
    for vecs) links into PTX; the cuda-marked tests above run it on a GPU."""
    from pysycl.backends.cuda.compiler import compile_ptx, find_libdevice
    from pysycl.backends.cuda.lowering import CudaLowering
    from pysycl.backends.cuda.target import cuda_target
    from pysycl.codegen import lower_module
    libdevice = find_libdevice()
    if libdevice is None:
        pytest.skip("libdevice.10.bc not found")
    m = kernel().ir_module()
    name = m.kernels[0].name
    ptx = compile_ptx(str(lower_module(m, CudaLowering(cuda_target((9, 0))))), [name],
                      cpu="sm_90", libdevice=libdevice)
    assert ".entry" in ptx
    assert ".extern .func" not in ptx and "__nv_" not in ptx


_v4 = sycl.vec(np.float32, 4)
_v3 = sycl.vec(np.float64, 3)


@sycl.kernel
def geometric(it: sycl.item[1], a: sycl.global_ptr[_v4], b: sycl.global_ptr[_v4],
              c: sycl.global_ptr[_v3], d: sycl.global_ptr[_v3], out: sycl.global_ptr[np.float64],
              cross4: sycl.global_ptr[_v4], cross3: sycl.global_ptr[_v3],
              unit: sycl.global_ptr[_v4]):
    i = it.get_id(0)
    x = a[i]
    y = b[i]
    out[i * 6 + 0] = sycl.math.dot(x, y)
    out[i * 6 + 1] = sycl.math.length(x)
    out[i * 6 + 2] = sycl.math.distance(x, y)
    out[i * 6 + 3] = sycl.math.dot(c[i], d[i])
    out[i * 6 + 4] = sycl.math.fast_length(c[i])
    out[i * 6 + 5] = sycl.math.length(np.float64(c[i][0]))
    cross4[i] = sycl.math.cross(x, y)
    cross3[i] = sycl.math.cross(c[i], d[i])
    unit[i] = sycl.math.normalize(x)


def test_geometric_functions_match_numpy(queue):
    """SYCL 2020 4.17.8: dot, cross, length, distance, normalize (and fast_*) on float
    vecs of 3 and 4 elements and on scalars; a zero vec normalizes to zero."""
    rng = np.random.default_rng(48)
    n = 24
    a = rng.standard_normal((n, 4)).astype(np.float32)
    a[0] = 0
    b = rng.standard_normal((n, 4)).astype(np.float32)
    c, d = rng.standard_normal((n, 3)), rng.standard_normal((n, 3))

    def shared(values, vt, width):
        mem = sycl.malloc_shared(n, vt, queue)
        np.asarray(mem).view(values.dtype).reshape(n, width)[:, :values.shape[1]] = values
        return mem
    args = [shared(a, _v4, 4), shared(b, _v4, 4), shared(c, _v3, 4), shared(d, _v3, 4)]
    out = sycl.malloc_shared(n * 6, np.float64, queue)
    cross4, cross3, unit = (sycl.malloc_shared(n, t, queue) for t in (_v4, _v3, _v4))
    queue.parallel_for(n, geometric, *args, out, cross4, cross3, unit).wait()
    got = out.to_numpy().reshape(n, 6)
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    np.testing.assert_allclose(got[:, 0], (a64 * b64).sum(1), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got[:, 1], np.linalg.norm(a64, axis=1), rtol=1e-6)
    np.testing.assert_allclose(got[:, 2], np.linalg.norm(a64 - b64, axis=1), rtol=1e-6)
    np.testing.assert_allclose(got[:, 3], (c * d).sum(1), rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(got[:, 4], np.linalg.norm(c, axis=1), rtol=1e-12)
    np.testing.assert_array_equal(got[:, 5], np.abs(c[:, 0]))
    c4 = np.asarray(cross4).view(np.float32).reshape(n, 4)
    np.testing.assert_allclose(c4[:, :3], np.cross(a[:, :3], b[:, :3]), rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(c4[:, 3], 0)
    c3 = np.asarray(cross3).view(np.float64).reshape(n, 4)[:, :3]
    np.testing.assert_allclose(c3, np.cross(c, d), rtol=1e-12, atol=1e-15)
    u = np.asarray(unit).view(np.float32).reshape(n, 4)
    np.testing.assert_allclose(u[1:], a[1:] / np.linalg.norm(a[1:], axis=1, keepdims=True),
                               rtol=1e-5)
    np.testing.assert_array_equal(u[0], 0)
    # The host forms (@sycl.device helpers run in Python) agree.
    assert sycl.math.dot(c[1], d[1]) == pytest.approx((c[1] * d[1]).sum())
    np.testing.assert_allclose(sycl.math.cross(c[1], d[1]), np.cross(c[1], d[1]))
    np.testing.assert_allclose(sycl.math.normalize(c[1]), c[1] / np.linalg.norm(c[1]))


@sycl.kernel
def common_functions(it: sycl.item[1], x: sycl.global_ptr[np.float32],
                     k: sycl.global_ptr[np.int32], out: sycl.global_ptr[np.float32],
                     out_int: sycl.global_ptr[np.int32], v: sycl.global_ptr[_v4],
                     out_vec: sycl.global_ptr[_v4]):
    i = it.get_id(0)
    a = x[i]
    out[i * 5 + 0] = sycl.math.clamp(a, np.float32(-0.5), np.float32(0.5))
    out[i * 5 + 1] = sycl.math.mix(a, np.float32(2), np.float32(0.25))
    out[i * 5 + 2] = sycl.math.step(np.float32(0.1), a)
    out[i * 5 + 3] = sycl.math.smoothstep(np.float32(-1), np.float32(1), a)
    out[i * 5 + 4] = np.clip(a, -0.25, 0.25)
    out_int[i] = sycl.math.clamp(k[i], -3, 3)
    w = v[i]
    out_vec[i] = (sycl.math.step(np.float32(0), w) * np.float32(10) +
                  sycl.math.smoothstep(np.float32(-1), np.float32(1), w))


def test_common_functions_match_numpy(queue):
    """SYCL 2020 4.17.7: clamp (also np.clip, and on integers), mix, step, smoothstep,
    with scalar edges beside a vec."""
    rng = np.random.default_rng(50)
    n = 40
    xs = (rng.standard_normal(n) * 2).astype(np.float32)
    xs[:3] = [0.1, -1.0, 1.0]                          # on the edges
    ks = rng.integers(-10, 10, n).astype(np.int32)
    vs = (rng.standard_normal((n, 4)) * 2).astype(np.float32)
    x, k = sycl.malloc_shared(n, np.float32, queue), sycl.malloc_shared(n, np.int32, queue)
    x[:], k[:] = xs, ks
    v = sycl.malloc_shared(n, _v4, queue)
    np.asarray(v).view(np.float32).reshape(n, 4)[:] = vs
    out = sycl.malloc_shared(n * 5, np.float32, queue)
    out_int = sycl.malloc_shared(n, np.int32, queue)
    out_vec = sycl.malloc_shared(n, _v4, queue)
    queue.parallel_for(n, common_functions, x, k, out, out_int, v, out_vec).wait()
    got = out.to_numpy().reshape(n, 5)

    def smooth(e0, e1, t):
        t = np.clip((t - e0) / (e1 - e0), 0, 1)
        return t * t * (3 - 2 * t)
    np.testing.assert_array_equal(got[:, 0], np.clip(xs, -0.5, 0.5))
    np.testing.assert_allclose(got[:, 1], xs + (2 - xs) * np.float32(0.25), rtol=1e-6)
    np.testing.assert_array_equal(got[:, 2], (xs >= np.float32(0.1)).astype(np.float32))
    np.testing.assert_allclose(got[:, 3], smooth(-1, 1, xs), rtol=1e-6, atol=1e-7)
    np.testing.assert_array_equal(got[:, 4], np.clip(xs, -0.25, 0.25))
    np.testing.assert_array_equal(out_int.to_numpy(), np.clip(ks, -3, 3))
    np.testing.assert_allclose(np.asarray(out_vec).view(np.float32).reshape(n, 4),
                               (vs >= 0) * 10 + smooth(-1, 1, vs), rtol=1e-6, atol=1e-6)


_INTEGER_FUNCTIONS = ("popcount(a)", "clz(a)", "ctz(a)", "abs_diff(a, b)", "add_sat(a, b)",
                      "sub_sat(a, b)", "hadd(a, b)", "rhadd(a, b)", "rotate(a, b)",
                      "mul_hi(a, b)", "mad_hi(a, b, c)")


def _integer_kernel(dtype: str):
    body = "\n".join(f"    o[i * {len(_INTEGER_FUNCTIONS)} + {k}] = sycl.math.{call}"
                     for k, call in enumerate(_INTEGER_FUNCTIONS))
    return sycl.kernel(name=f"integer_functions_{dtype}", source=(
        f"def integer_functions(it: sycl.item[1], x: sycl.global_ptr[np.{dtype}],\n"
        f"                      y: sycl.global_ptr[np.{dtype}], z: sycl.global_ptr[np.{dtype}],\n"
        f"                      o: sycl.global_ptr[np.{dtype}]):\n"
        "    i = it.get_id(0)\n    a = x[i]\n    b = y[i]\n    c = z[i]\n" + body + "\n"))


def _integer_reference(call: str, x: int, y: int, z: int, bits: int, signed: bool) -> int:
    """The function on Python ints (exact), wrapped into the type."""
    u = x & ((1 << bits) - 1)
    lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)
    k = y % bits
    value = {
        "popcount": bin(u).count("1"), "clz": bits - u.bit_length(),
        "ctz": (u & -u).bit_length() - 1 if u else bits, "abs_diff": abs(x - y),
        "add_sat": min(max(x + y, lo), hi), "sub_sat": min(max(x - y, lo), hi),
        "hadd": (x + y) >> 1, "rhadd": (x + y + 1) >> 1,
        "rotate": (u << k | u >> (bits - k)) if k else u,
        "mul_hi": (x * y) >> bits, "mad_hi": ((x * y) >> bits) + z}[call.split("(")[0]]
    value &= (1 << bits) - 1
    return value - (1 << bits) if signed and value >> (bits - 1) else value


@pytest.mark.parametrize("dtype", ["int8", "uint8", "int16", "uint16", "int32", "uint32",
                                   "int64", "uint64"])
def test_integer_functions_match_exact_arithmetic(queue, dtype):
    """SYCL 2020 4.17.6 integer functions on every integer type, with the extremes,
    zero and shift counts at and past the width among random values."""
    rng = np.random.default_rng(51)
    dt = np.dtype(dtype)
    info = np.iinfo(dt)
    n = 48
    bits = dt.itemsize * 8
    values = []
    for _ in range(3):
        v = rng.integers(info.min, info.max, n, dtype=dt, endpoint=True)
        v[:6] = [0, 1, info.max, info.min, info.max - 1, 2]
        values.append(v)
    values[1][6:9] = [0, bits, bits + 1]
    mems = [sycl.malloc_shared(n, dt, queue) for _ in range(3)]
    for mem, v in zip(mems, values):
        mem[:] = v
    out = sycl.malloc_shared(n * len(_INTEGER_FUNCTIONS), dt, queue)
    queue.parallel_for(n, _integer_kernel(dtype), *mems, out).wait()
    got = out.to_numpy().reshape(n, len(_INTEGER_FUNCTIONS))
    for k, call in enumerate(_INTEGER_FUNCTIONS):
        want = [_integer_reference(call, int(a), int(b), int(c), bits, info.min < 0)
                for a, b, c in zip(*values)]
        np.testing.assert_array_equal(got[:, k], np.array(want, dtype=dt), err_msg=call)


@sycl.kernel
def integer_vec_functions(it: sycl.item[1], a: sycl.global_ptr[sycl.vec(np.int32, 4)],
                          b: sycl.global_ptr[sycl.vec(np.int32, 4)],
                          out: sycl.global_ptr[sycl.vec(np.int32, 4)],
                          hi: sycl.global_ptr[np.int16], lo: sycl.global_ptr[np.uint16],
                          wide: sycl.global_ptr[np.int32]):
    i = it.get_id(0)
    out[i] = sycl.math.popcount(a[i]) + sycl.math.sub_sat(a[i], b[i])
    wide[i] = sycl.math.upsample(hi[i], lo[i]) + sycl.math.mad24(np.int32(3), np.int32(5), np.int32(1))


def test_integer_functions_on_vecs_and_upsample(queue):
    rng = np.random.default_rng(52)
    n = 16
    av = rng.integers(-2**31, 2**31, (n, 4)).astype(np.int32)
    bv = rng.integers(-2**31, 2**31, (n, 4)).astype(np.int32)
    hs = rng.integers(-2**15, 2**15, n).astype(np.int16)
    ls = rng.integers(0, 2**16, n).astype(np.uint16)
    v4 = sycl.vec(np.int32, 4)
    a, b, out = (sycl.malloc_shared(n, v4, queue) for _ in range(3))
    np.asarray(a).view(np.int32).reshape(n, 4)[:] = av
    np.asarray(b).view(np.int32).reshape(n, 4)[:] = bv
    hi, lo = sycl.malloc_shared(n, np.int16, queue), sycl.malloc_shared(n, np.uint16, queue)
    hi[:], lo[:] = hs, ls
    wide = sycl.malloc_shared(n, np.int32, queue)
    queue.parallel_for(n, integer_vec_functions, a, b, out, hi, lo, wide).wait()
    pop = np.vectorize(lambda v: bin(int(v) & 0xFFFFFFFF).count("1"))(av)
    sat = np.clip(av.astype(np.int64) - bv, -2**31, 2**31 - 1)
    np.testing.assert_array_equal(np.asarray(out).view(np.int32).reshape(n, 4),
                                  (pop + sat).astype(np.int32))
    np.testing.assert_array_equal(wide.to_numpy(),
                                  (hs.astype(np.int32) << 16 | ls.astype(np.int32)) + 16)
    # The host forms agree (a @sycl.device helper run in Python).
    assert sycl.math.popcount(np.int8(-1)) == 8 and sycl.math.clz(np.uint32(1)) == 31
    assert sycl.math.add_sat(np.int8(100), np.int8(100)) == 127
    assert sycl.math.mul_hi(np.int64(-2), np.int64(3)) == -1


_f4 = sycl.vec(np.float32, 4)
_i4 = sycl.vec(np.int32, 4)
_RELATIONS = ("isequal", "isnotequal", "isgreater", "isgreaterequal", "isless", "islessequal",
              "islessgreater", "isordered", "isunordered")


@sycl.kernel
def relational_functions(it: sycl.item[1], x: sycl.global_ptr[np.float64],
                         y: sycl.global_ptr[np.float64], out: sycl.global_ptr[np.int32],
                         va: sycl.global_ptr[_f4], vb: sycl.global_ptr[_f4],
                         bits: sycl.global_ptr[_i4], mask: sycl.global_ptr[_i4],
                         picked: sycl.global_ptr[_f4]):
    i = it.get_id(0)
    a = x[i]
    b = y[i]
    base = i * 12
    out[base + 0] = 1 if sycl.math.isequal(a, b) else 0
    out[base + 1] = 1 if sycl.math.isnotequal(a, b) else 0
    out[base + 2] = 1 if sycl.math.isgreater(a, b) else 0
    out[base + 3] = 1 if sycl.math.isgreaterequal(a, b) else 0
    out[base + 4] = 1 if sycl.math.isless(a, b) else 0
    out[base + 5] = 1 if sycl.math.islessequal(a, b) else 0
    out[base + 6] = 1 if sycl.math.islessgreater(a, b) else 0
    out[base + 7] = 1 if sycl.math.isordered(a, b) else 0
    out[base + 8] = 1 if sycl.math.isunordered(a, b) else 0
    out[base + 9] = 1 if sycl.math.isnormal(a) else 0
    out[base + 10] = sycl.math.any(bits[i])
    out[base + 11] = sycl.math.all(bits[i])
    mask[i] = sycl.math.islessequal(va[i], vb[i])
    picked[i] = sycl.math.select(va[i], vb[i], bits[i])


def test_relational_functions_match_numpy(queue):
    """SYCL 2020 4.17.9: comparisons give bools on scalars and -1/0 masks on vecs, with
    NaN, zero, a subnormal and infinity among the values; any/all test the most
    significant bits; select picks b where c's most significant bit is set."""
    rng = np.random.default_rng(55)
    n = 32
    xs, ys = rng.standard_normal(n), rng.standard_normal(n)
    xs[:6] = [np.nan, 1.0, 0.0, 1e-310, np.inf, 2.0]
    ys[:6] = [1.0, np.nan, -0.0, 1.0, 1.0, 2.0]
    av = rng.standard_normal((n, 4)).astype(np.float32)
    bv = rng.standard_normal((n, 4)).astype(np.float32)
    bv[0] = av[0]
    iv = rng.integers(-2**31, 2**31, (n, 4)).astype(np.int32)
    iv[0], iv[1] = -1, 5
    x, y = sycl.malloc_shared(n, np.float64, queue), sycl.malloc_shared(n, np.float64, queue)
    x[:], y[:] = xs, ys
    va, vb, picked = (sycl.malloc_shared(n, _f4, queue) for _ in range(3))
    bits, mask = sycl.malloc_shared(n, _i4, queue), sycl.malloc_shared(n, _i4, queue)
    np.asarray(va).view(np.float32).reshape(n, 4)[:] = av
    np.asarray(vb).view(np.float32).reshape(n, 4)[:] = bv
    np.asarray(bits).view(np.int32).reshape(n, 4)[:] = iv
    out = sycl.malloc_shared(n * 12, np.int32, queue)
    queue.parallel_for(n, relational_functions, x, y, out, va, vb, bits, mask, picked).wait()
    got = out.to_numpy().reshape(n, 12)
    with np.errstate(invalid="ignore"):
        want = [xs == ys, xs != ys, xs > ys, xs >= ys, xs < ys, xs <= ys,
                (xs < ys) | (xs > ys), ~(np.isnan(xs) | np.isnan(ys)),
                np.isnan(xs) | np.isnan(ys),
                np.isfinite(xs) & (np.abs(xs) >= np.finfo(np.float64).tiny),
                (iv < 0).any(1), (iv < 0).all(1)]
    for k, w in enumerate(want):
        np.testing.assert_array_equal(got[:, k], w.astype(np.int32),
                                      err_msg=(_RELATIONS + ("isnormal", "any", "all"))[k])
    np.testing.assert_array_equal(np.asarray(mask).view(np.int32).reshape(n, 4),
                                  np.where(av <= bv, -1, 0))
    np.testing.assert_array_equal(np.asarray(picked).view(np.float32).reshape(n, 4),
                                  np.where(iv < 0, bv, av))
    assert sycl.math.bitselect(np.uint8(0xF0), np.uint8(0x0F), np.uint8(0x3C)) == 0xCC
