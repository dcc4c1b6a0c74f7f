"""Rules for the elementary functions of complex numbers beyond ``exp``, ``log`` and
``sqrt`` (``rules_complex``): hyperbolic and trigonometric functions and their
inverses, ``log10`` and ``proj``, the function list of SYCL's
``sycl::ext::oneapi::experimental::complex``.

Like ``rules_complex``, every function is built from the target's real math with
selects only, and with C99 Annex G's special values (G.6.1-G.6.2). The algorithms are
those of FreeBSD's msun, which CUDA's ``thrust::complex`` carries too:

* ``sinh``, ``cosh``: ``sinh x cos y + i cosh x sin y`` and ``cosh x cos y + i sinh x
  sin y``; where ``cosh x`` overflows although the result may not, ``e**(|x|/2)``
  is applied twice.
* ``tanh``: Kahan's algorithm (W. Kahan, "Branch cuts for complex elementary functions,
  or much ado about nothing's sign bit", 1987): ``(beta rho s + i t) / (1 + beta s**2)``
  with ``t = tan y``, ``beta = 1 + t**2``, ``s = sinh x``, ``rho = sqrt(1 + s**2)``;
  for large ``|x|``, ``+-1 + 4i sin y cos y e**(-2|x|)`` (``e**-|x|`` squared), which
  cannot overflow.
* ``asinh`` and ``acos``: T. E. Hull, T. F. Fairgrieve and P. T. P. Tang,
  "Implementing the complex arcsine and arccosine functions using exception handling",
  ACM TOMS 23(3), 1997, with the cases FreeBSD's ``catrig.c`` uses instead of
  exceptions; ``log|z| + log 2`` for large ``|z|``.
* ``atanh``: ``log1p(4x / |z - 1|**2) / 4 + i atan2(2y, (1 - x)(1 + x) - y**2) / 2``,
  with ``catrig.c``'s cases near ``|x| = 1`` and for large ``|z|``.
* ``sin``, ``cos``, ``tan``, ``asin``, ``atan``, ``acosh``: from the ones above at
  ``iz`` or with parts swapped (``sin z = -i sinh(iz)``, ``asin z = swap(asinh(swap
  z))``), which is exact.
* ``log10``: ``log z`` times ``log10(e)``, both parts (NumPy's ``nc_log10``).
"""
from __future__ import annotations

import math

import numpy as np

from .context import rule
from .rules_complex import Parts, complex_operands, log_modulus, log_parts

#: |x| from which tanh(x + iy) is +-1 + i 4 sin y cos y e**(-2|x|) to the part type's
#: precision (FreeBSD's ctanh and ctanhf thresholds).
_TANH_LARGE = {np.dtype(np.float64): 22.0, np.dtype(np.float32): 9.0}
#: Hull et al.'s crossovers: A below it takes log1p of A - 1 (they suggest 1.5; FreeBSD
#: measured 10 to be better), B above it takes atan2 instead of asin(B).
_A_CROSSOVER, _B_CROSSOVER = 10.0, 0.6417


def _hyperbolic(p: Parts, x, y, odd: bool, inf_sign: float = 1.0) -> tuple:
    """(real, imaginary) of ``sinh(x + iy)`` (``odd``) or ``cosh(x + iy)``. ``inf_sign``:
    the sign C99 leaves open of the real part of ``f(+-inf + i inf)`` and ``f(+-inf +
    iNaN)`` (glibc's, which NumPy's results come from: + for sinh and cosh, - for the
    sinh that ``sin`` takes at ``iz``)."""
    ax, sign_x = p.fn("fabs", x), p.fn("copysign", p.c(1.0), x)
    ch, sh = p.fn("cosh", x), p.fn("sinh", x)
    c, s = p.fn("cos", y), p.fn("sin", y)
    first, second = (sh, ch) if odd else (ch, sh)
    r = (p.mul(first, c), p.mul(second, s))
    # cosh x overflows above log(2 max), the result only when e**|x| / 2 times a sine or
    # cosine does. Past that it overflows to an infinity of the right sign.
    re, im = p.scaled_exp(ax, c, s, 0.5)
    scaled = (p.mul(sign_x, re), im) if odd else (re, p.mul(sign_x, im))
    r = p.pick(p.exp_overflows(ax), scaled, r)
    # C99 G.6.2.4-5, the later cases taking precedence.
    nan = p.sub(y, y)                                 # NaN where y is infinite or NaN
    y_not_finite = p.not_(p.isfinite(y))
    r = p.pick(y_not_finite, (nan, nan), r)           # x finite nonzero, or NaN
    r = p.pick(p.all(p.isinf(x), y_not_finite), (p.c(inf_sign * np.inf), nan), r)
    x_zero = p.cmp("==", x, p.c(0.0))
    r = p.pick(p.all(x_zero, y_not_finite), (x, nan) if odd else (nan, x), r)
    y_zero = p.cmp("==", y, p.c(0.0))
    exact = (sh, y) if odd else (ch, p.mul(p.fn("copysign", p.c(0.0), x), y))
    return p.pick(y_zero, exact, r)


def _tanh(p: Parts, x, y) -> tuple:
    """(real, imaginary) of ``tanh(x + iy)``."""
    ax, one = p.fn("fabs", x), p.c(1.0)
    t = p.fn("tan", y)
    beta = p.add(one, p.mul(t, t))                    # 1 / cos(y)**2
    s = p.fn("sinh", x)
    rho = p.fn("sqrt", p.add(one, p.mul(s, s)))      # cosh x
    denom = p.add(one, p.mul(p.mul(beta, s), s))
    r = (p.div(p.mul(p.mul(beta, rho), s), denom), p.div(t, denom))
    # Large |x|: sinh(x)**2 ~ e**(2|x|) / 4 would overflow; its reciprocal does not.
    e = p.fn("exp", p.neg(ax))
    sin_cos = p.mul(p.fn("sin", y), p.fn("cos", y))
    sign_x = p.fn("copysign", one, x)
    far = (sign_x, p.mul(p.mul(p.mul(p.c(4.0), sin_cos), e), e))
    r = p.pick(p.cmp(">=", ax, p.c(_TANH_LARGE[p.info.dtype])), far, r)
    # C99 G.6.2.6 (as revised by DR 471): x finite nonzero and y infinite or NaN: NaN
    # + iNaN, x = +-0: +-0 + iNaN; tanh(+-inf + iy) =
    # +-1 + i0 sin(2y) (the sign of the zero from sin y cos y, or from y when infinite);
    # tanh(NaN + i0) = NaN + i0, other NaN x: NaN + iNaN.
    nan = p.sub(y, y)
    x_or_nan = p.select(p.cmp("==", x, p.c(0.0)), x, nan)
    r = p.pick(p.not_(p.isfinite(y)), (x_or_nan, nan), r)
    zero_sign = p.select(p.isinf(y), y, sin_cos)
    r = p.pick(p.isinf(x), (sign_x, p.fn("copysign", p.c(0.0), zero_sign)), r)
    y_zero = p.cmp("==", y, p.c(0.0))
    return p.pick(p.isnan(x), (x, p.select(y_zero, y, p.mul(x, y))), r)


# asinh and acos: Hull, Fairgrieve and Tang ------------------------------------------------
def _half_excess(p: Parts, a, b, hypot_ab):
    """``(hypot(a, b) - b) / 2`` without cancellation (catrig.c's ``f``)."""
    half = p.c(0.5)
    r = p.mul(p.div(p.mul(a, a), p.add(hypot_ab, b)), half)
    r = p.select(p.cmp("==", b, p.c(0.0)), p.mul(a, half), r)
    return p.select(p.cmp("<", b, p.c(0.0)), p.mul(p.sub(hypot_ab, b), half), r)


def _hull(p: Parts, x, y):
    """Hull et al.'s quantities for ``x, y >= 0`` finite and below ``1/eps``, with
    ``A = (|z + i| + |z - i|) / 2`` and ``B = y / A``: ``(rx, usable, B, root, new_y)``
    where ``rx = log(A + sqrt(A**2 - 1))`` is the real part of ``asinh(x + iy)``, and its
    imaginary part is ``asin(B)`` where ``usable``, else ``atan2(new_y, root)`` (``root``
    is ``sqrt(A**2 - y**2)``, scaled with ``new_y`` where it would underflow)."""
    one, eps = p.c(1.0), float(p.info.eps)
    big = p.c(4 / eps / eps)
    r = p.fn("hypot", x, p.add(y, one))              # |z + i|
    s = p.fn("hypot", x, p.sub(y, one))              # |z - i|
    a = p.fn("fmax", p.mul(p.add(r, s), p.c(0.5)), one)   # A >= 1, also after rounding
    ym1 = p.sub(y, one)
    # x not negligible beside |y - 1|: A - 1 and A - y as sums of _half_excess.
    x_counts = p.cmp(">=", x, p.mul(p.c(eps), p.fn("fabs", ym1)))
    y_is_one = p.cmp("==", y, one)
    y_below_one = p.cmp("<", y, one)
    # The real part: log1p(A - 1 + sqrt((A - 1)(A + 1))) while A is small.
    am1 = p.add(_half_excess(p, x, p.add(one, y), r), _half_excess(p, x, p.sub(one, y), s))
    # log1p(u + sqrt(u (v + 1))) of (A - 1, A) where x counts, else of (y - 1, y) for
    # y > 1: one log1p of the arguments chosen first (a select is exact either way).
    u, v = p.select(x_counts, am1, ym1), p.select(x_counts, a, y)
    near = p.fn("log1p", p.add(u, p.fn("sqrt", p.mul(u, p.add(v, one)))))
    one_minus_y2 = p.mul(p.sub(one, y), p.add(one, y))
    rx = p.select(x_counts, near,
                  p.select(y_below_one, p.div(x, p.fn("sqrt", one_minus_y2)), near))
    rx = p.select(p.all(y_is_one, p.cmp("<", x, p.c(eps * eps / 128))), p.fn("sqrt", x), rx)
    far = p.fn("log", p.add(a, p.fn("sqrt", p.sub(p.mul(a, a), one))))
    rx = p.select(p.cmp(">=", a, p.c(_A_CROSSOVER)), far, rx)
    # The imaginary part: B = y / A, or sqrt(A**2 - y**2) = sqrt((A - y)(A + y)) for atan2.
    b = p.div(y, a)
    amy = p.add(_half_excess(p, x, p.add(y, one), r), _half_excess(p, x, ym1, s))
    root = p.fn("sqrt", one_minus_y2)                                        # y < 1
    y_above = p.all(p.not_(x_counts), p.cmp(">", y, one))   # A = y inexactly; scaled up
    scaled = p.div(p.mul(p.mul(x, big), y), p.fn("sqrt", p.mul(p.add(y, one), ym1)))
    root = p.select(p.cmp(">", y, one), scaled, root)
    root = p.select(x_counts, p.fn("sqrt", p.mul(amy, p.add(a, y))), root)
    near_i = p.all(y_is_one, p.cmp("<", x, p.c(eps / 128)))
    root = p.select(near_i, p.mul(p.fn("sqrt", x), p.fn("sqrt", p.mul(p.add(a, y), p.c(0.5)))),
                    root)
    new_y = p.select(p.all(y_above, p.not_(near_i)), p.mul(y, big), y)
    # y / A may underflow (wrongly, for acos): atan2 of both scaled by 2 / eps.
    tiny_y = p.cmp("<", y, p.c(2.0 ** (p.info.minexp // 2 + 2)))     # 4 sqrt(min)
    root = p.select(tiny_y, p.mul(a, p.c(2 / eps)), root)
    new_y = p.select(tiny_y, p.mul(y, p.c(2 / eps)), new_y)
    usable = p.all(p.cmp("<=", b, p.c(_B_CROSSOVER)), p.not_(tiny_y))
    return rx, usable, b, root, new_y


def _large(p: Parts, ax, ay):
    """Whether ``|z|`` is beyond ``1/eps``, where asinh, acos and atanh take their
    asymptotic forms (infinities included)."""
    recip_eps = p.c(1 / float(p.info.eps))
    return p.any(p.cmp(">", ax, recip_eps), p.cmp(">", ay, recip_eps))


def _tiny(p: Parts, ax, ay, bound: float):
    return p.all(p.cmp("<", ax, p.c(bound)), p.cmp("<", ay, p.c(bound)))


def _any_nan(p: Parts, x, y):
    return p.any(p.isnan(x), p.isnan(y))


def _asinh(p: Parts, x, y) -> tuple:
    """(real, imaginary) of ``asinh(x + iy)``."""
    ax, ay = p.fn("fabs", x), p.fn("fabs", y)
    rx, usable, b, root, new_y = _hull(p, ax, ay)
    ry = p.select(usable, p.fn("asin", b), p.fn("atan2", new_y, root))
    r = (p.fn("copysign", rx, x), p.fn("copysign", ry, y))
    r = p.pick(_tiny(p, ax, ay, math.sqrt(6 * float(p.info.eps)) / 4), (x, y), r)  # z + O(z**3)
    # Large |z|: asinh z = sign(x) (log(2|z|) + i arg(sign(x) z)) + O(1/z**2).
    far = (p.fn("copysign", p.add(log_modulus(p, ax, ay), p.c(math.log(2))), x),
           p.fn("copysign", p.fn("atan2", ay, ax), y))
    r = p.pick(_large(p, ax, ay), far, r)
    # C99 G.6.2.2: asinh(+-inf + iNaN) = +-inf + iNaN, asinh(NaN +- i inf) = +-inf + iNaN
    # (the sign unspecified; glibc's +), asinh(NaN + i0) = NaN + i0, other NaNs NaN + iNaN.
    nan = p.c(np.nan)
    special = p.pick(p.cmp("==", y, p.c(0.0)), (nan, y), (nan, nan))
    special = p.pick(p.isinf(y), (p.fn("fabs", y), nan), special)
    special = p.pick(p.isinf(x), (x, nan), special)
    return p.pick(_any_nan(p, x, y), special, r)


def _pi_over_2(p: Parts):
    """pi / 2 as two parts ``hi + lo`` (``hi`` rounded to the part type)."""
    hi = float(p.info.dtype.type(math.pi / 2))
    return p.c(hi), p.c(math.pi / 2 - hi)


def _acos(p: Parts, x, y) -> tuple:
    """(real, imaginary) of ``acos(x + iy)``, accurate near ``z = 1`` (not computed as
    ``pi/2 - asin z``)."""
    ax, ay = p.fn("fabs", x), p.fn("fabs", y)
    sx, sy = p.signbit(x), p.signbit(y)
    ry, usable, b, root, new_x = _hull(p, ay, ax)
    rx = p.select(usable, p.fn("acos", p.select(sx, p.neg(b), b)),
                  p.fn("atan2", root, p.select(sx, p.neg(new_x), new_x)))
    r = (rx, p.select(sy, ry, p.neg(ry)))
    hi, lo = _pi_over_2(p)
    minus_y = p.neg(y)
    r = p.pick(_tiny(p, ax, ay, math.sqrt(6 * float(p.info.eps)) / 4),
               (p.sub(hi, p.sub(x, lo)), minus_y), r)
    r = p.pick(p.all(p.cmp("==", x, p.c(1.0)), p.cmp("==", y, p.c(0.0))),
               (p.c(0.0), minus_y), r)
    # Large |z|: acos z = |arg z| - i sign(y) log(2|z|) + O(1/z**2).
    log2z = p.add(log_modulus(p, ax, ay), p.c(math.log(2)))
    far = (p.fn("fabs", p.fn("atan2", y, x)), p.select(sy, log2z, p.neg(log2z)))
    r = p.pick(_large(p, ax, ay), far, r)
    # C99 G.6.1.1: acos(+-inf + iNaN) = NaN +- i inf (the sign unspecified), acos(NaN +-
    # i inf) = NaN -+ i inf, acos(+-0 + iNaN) = pi/2 + iNaN, other NaNs NaN + iNaN.
    nan = p.c(np.nan)
    special = p.pick(p.cmp("==", x, p.c(0.0)), (p.add(hi, lo), nan), (nan, nan))
    special = p.pick(p.isinf(y), (nan, minus_y), special)
    special = p.pick(p.isinf(x), (nan, p.c(-np.inf)), special)
    return p.pick(_any_nan(p, x, y), special, r)


def _acosh(p: Parts, x, y) -> tuple:
    """``acosh z = +-i acos z``, the sign making the real part >= 0 (C99 G.6.2.1);
    ``acosh(+-0 + iNaN) = NaN + i pi/2`` as glibc (and NumPy) give it."""
    rx, ry = _acos(p, x, y)
    r = (p.fn("fabs", ry), p.fn("copysign", rx, y))
    r = p.pick(p.isnan(ry), (ry, rx), r)
    r = p.pick(p.isnan(rx), (p.fn("fabs", ry), rx), r)
    return p.pick(p.all(p.isnan(rx), p.isnan(ry)), (ry, rx), r)


# atanh ----------------------------------------------------------------------------------
def _real_part_reciprocal(p: Parts, x, y):
    """``Re(1 / (x + iy)) = x / (x**2 + y**2)`` for a large ``|z|`` without overflow in
    the squares: scaled by a power of two (exact) where a part is near ``sqrt(max)``."""
    m = p.fn("fmax", p.fn("fabs", x), p.fn("fabs", y))
    half_exp = p.info.maxexp // 2
    scale = p.select(p.cmp(">", m, p.c(2.0 ** (half_exp - 2))),
                     p.c(2.0 ** -(half_exp + 8)), p.c(1.0))
    xs, ys = p.mul(x, scale), p.mul(y, scale)
    r = p.mul(p.div(xs, p.add(p.mul(xs, xs), p.mul(ys, ys))), scale)
    # 1/z of an infinite z is a zero (the sign of x, as x / y**2 gives it).
    return p.select(p.any(p.isinf(x), p.isinf(y)), p.fn("copysign", p.c(0.0), x), r)


def _atanh(p: Parts, x, y) -> tuple:
    """(real, imaginary) of ``atanh(x + iy)``."""
    ax, ay = p.fn("fabs", x), p.fn("fabs", y)
    one, two, eps = p.c(1.0), p.c(2.0), float(p.info.eps)
    ln2 = p.c(math.log(2))
    x_is_one = p.cmp("==", ax, one)
    y_negligible = p.cmp("<", ay, p.c(eps))
    axm1 = p.sub(ax, one)
    rx = p.mul(p.fn("log1p", p.div(p.mul(p.c(4.0), ax), p.add(p.mul(axm1, axm1), p.mul(ay, ay)))),
               p.c(0.25))
    rx = p.select(p.all(x_is_one, y_negligible),
                  p.mul(p.sub(ln2, p.fn("log", ay)), p.c(0.5)), rx)
    one_minus_x2 = p.mul(p.sub(one, ax), p.add(one, ax))
    twice_y = p.mul(two, ay)
    # One atan2 of the arguments each case takes (a select is exact either way).
    den = p.select(y_negligible, one_minus_x2, p.sub(one_minus_x2, p.mul(ay, ay)))
    ry = p.fn("atan2", p.select(x_is_one, two, twice_y), p.select(x_is_one, p.neg(ay), den))
    ry = p.mul(ry, p.c(0.5))
    r = (p.fn("copysign", rx, x), p.fn("copysign", ry, y))
    r = p.pick(_tiny(p, ax, ay, math.sqrt(3 * eps) / 2), (x, y), r)     # z + O(z**3)
    # Large |z|: atanh z = 1/z + sign(y) i pi/2 + O(1/z**3).
    hi, lo = _pi_over_2(p)
    half_pi = p.fn("copysign", p.add(hi, lo), y)
    r = p.pick(_large(p, ax, ay), (_real_part_reciprocal(p, x, y), half_pi), r)
    # C99 G.6.2.3: atanh(+-inf + iNaN) = +-0 + iNaN, atanh(NaN +- i inf) = +-0 +- i pi/2
    # (the zero's sign unspecified), other NaNs NaN + iNaN; atanh(+-0 + iNaN) = +-0 + iNaN.
    nan, zero = p.c(np.nan), p.fn("copysign", p.c(0.0), x)
    special = p.pick(p.isinf(y), (zero, half_pi), (nan, nan))
    special = p.pick(p.isinf(x), (zero, nan), special)
    r = p.pick(_any_nan(p, x, y), special, r)
    # Exact or as accurate as the real functions: the real axis inside [-1, 1], and
    # the imaginary axis (atanh(iy) = i atan y).
    r = p.pick(p.cmp("==", x, p.c(0.0)), (x, p.fn("atan", y)), r)
    real_axis = p.all(p.cmp("==", y, p.c(0.0)), p.cmp("<=", ax, one))
    return p.pick(real_axis, (p.fn("atanh", x), y), r)


# The rules ------------------------------------------------------------------------------
def _times_i(f):
    """``g(z) = -i f(iz)``: sin from sinh, tan from tanh (``iz = -y + ix``)."""
    def g(p, x, y):
        re, im = f(p, p.neg(y), x)
        return im, p.neg(re)
    return g


def _swapped(f):
    """``g(z) = swap(f(swap z))`` with ``swap(x + iy) = y + ix``: asin from asinh, atan
    from atanh."""
    def g(p, x, y):
        re, im = f(p, y, x)
        return im, re
    return g


def _log10(p: Parts, x, y) -> tuple:
    re, im = log_parts(p, x, y)
    k = p.c(math.log10(math.e))
    return p.mul(re, k), p.mul(im, k)


def _proj(p: Parts, x, y) -> tuple:
    """The Riemann sphere's projection (C99 7.3.9.4): an infinite part gives
    ``inf + i copysign(0, y)``, anything else is itself."""
    infinite = p.any(p.isinf(x), p.isinf(y))
    return p.pick(infinite, (p.c(np.inf), p.fn("copysign", p.c(0.0), y)), (x, y))


FUNCTIONS = {
    "sinh": lambda p, x, y: _hyperbolic(p, x, y, odd=True),
    "cosh": lambda p, x, y: _hyperbolic(p, x, y, odd=False),
    "tanh": _tanh,
    "asinh": _asinh,
    "acosh": _acosh,
    "atanh": _atanh,
    "sin": _times_i(lambda p, x, y: _hyperbolic(p, x, y, odd=True, inf_sign=-1.0)),
    "cos": lambda p, x, y: _hyperbolic(p, p.neg(y), x, odd=False),   # cosh(iz)
    "tan": _times_i(_tanh),
    "asin": _swapped(_asinh),
    "acos": _acos,
    "atan": _swapped(_atanh),
    "log10": _log10,
    "proj": _proj,
}


@rule(*(f"complex.{name}" for name in FUNCTIONS))
def lower_complex_function(ctx, op):
    p, (z,) = complex_operands(ctx, op)
    return p.make(*FUNCTIONS[op.name.split(".", 1)[1]](p, *p.split(z)))
