"""Rules for complex numbers (IR types ``c64``/``c128``; ``complex.*`` ops).

A complex value is ``{T, T}`` (real, imaginary; ``types.complex_type``); ``add``,
``sub``, ``neg`` and ``select`` of it are the shared rules (part by part). The rest is
built here
from the target's real math functions (``rules_scalar.real_math``), without branches
(selects only), so every target runs the same algorithm and loops over complex data
still vectorise. The algorithms are those NumPy's results come from:

* ``*``: NumPy's formula ``(ac - bd) + (ad + bc)i`` (no C99 Annex G inf recovery).
* ``/``: NumPy's loop, Smith's algorithm (R. L. Smith, CACM 5(8), 1962): divides by the
  larger part of the divisor first, so no intermediate overflows when ``|b|`` is large.
* ``abs``: ``hypot`` (no overflow or underflow in the squares).
* ``sqrt``: Algorithm 312 (CACM 10(10), 1967) with FreeBSD's ``csqrt`` scaling and
  C99 G.6.4.2 special values; NumPy calls the C library's ``csqrt``.
* ``exp``: ``e**x * cis(y)`` with ``e**(x/2)`` applied twice where ``e**x`` alone would
  overflow, C99 G.6.3.1 special values.
* ``log``: ``log|z| + i atan2(y, x)`` with CPython's care near ``|z| = 1``, for
  subnormal and for overflowing ``|z|`` (NumPy's ``npy_clog`` is that algorithm).
"""
from __future__ import annotations

import math

import numpy as np
from llvmlite import ir as ll

from ..ir.types import ComplexType
from . import types as lt
from .context import LoweringContext, rule
from .rules_scalar import float_const, real_math, select_fields


class Parts:
    """The builder helpers of one rule: parts of complex values, float constants and real
    math at the part type."""

    def __init__(self, ctx: LoweringContext, t: ComplexType):
        self.ctx, self.b, self.t = ctx, ctx.builder, t
        self.llt = lt.complex_type(t).elements[0]
        self.info = np.finfo(t.elem.dtype)

    def split(self, z):
        return self.b.extract_value(z, 0), self.b.extract_value(z, 1)

    def make(self, re, im):
        z = ll.Constant(lt.complex_type(self.t), ll.Undefined)
        return self.b.insert_value(self.b.insert_value(z, re, 0), im, 1)

    def c(self, value: float):
        return float_const(self.llt, value)

    def fn(self, name: str, *args):
        return real_math(self.ctx, name, list(args), self.t.elem)

    # Arithmetic with the target's float flags (CUDA contracts a * b + c into an fma).
    def mul(self, a, b):
        return self.b.fmul(a, b, flags=self.ctx.lowering.float_flags)

    def add(self, a, b):
        return self.b.fadd(a, b, flags=self.ctx.lowering.float_flags)

    def sub(self, a, b):
        return self.b.fsub(a, b, flags=self.ctx.lowering.float_flags)

    def div(self, a, b):
        return self.b.fdiv(a, b)

    def neg(self, a):
        return self.b.fneg(a)

    def cmp(self, pred: str, a, b):
        return self.b.fcmp_ordered(pred, a, b)

    def isnan(self, x):
        return self.b.fcmp_unordered("uno", x, x)

    def isinf(self, x):
        return self.cmp("==", self.fn("fabs", x), self.c(np.inf))

    def select(self, cond, a, b):
        return select_fields(self.b, cond, a, b)

    # Helpers of the functions built part by part (a pair is (real, imaginary)).
    def pick(self, cond, a: tuple, b: tuple) -> tuple:
        """``cond ? a : b`` of two (real, imaginary) pairs."""
        return tuple(self.b.select(cond, x, y) for x, y in zip(a, b))

    def all(self, *conds):
        out = conds[0]
        for c in conds[1:]:
            out = self.b.and_(out, c)
        return out

    def any(self, *conds):
        out = conds[0]
        for c in conds[1:]:
            out = self.b.or_(out, c)
        return out

    def not_(self, cond):
        return self.b.not_(cond)

    def isfinite(self, x):
        return self.cmp("<", self.fn("fabs", x), self.c(np.inf))

    def signbit(self, x):
        """Whether ``x`` has its sign bit set (-0.0 included)."""
        return self.cmp("<", self.fn("copysign", self.c(1.0), x), self.c(0.0))

    def exp_overflows(self, x):
        """Whether ``e**x`` overflows (past ``log(max)``)."""
        return self.cmp(">", x, self.c(float(np.log(self.info.max))))

    def scaled_exp(self, x, c, s, k: float = 1.0) -> tuple:
        """``(k e**x c, k e**x s)`` where ``e**x`` alone overflows but the products need
        not: ``e**(x/2)`` twice (FreeBSD's ``__ldexp_cexp`` does the same with an
        exponent split)."""
        h = self.fn("exp", self.mul(x, self.c(0.5)))
        if k != 1.0:
            c, s = self.mul(self.c(k), c), self.mul(self.c(k), s)
        return self.mul(self.mul(h, c), h), self.mul(self.mul(h, s), h)


def complex_operands(ctx, op) -> tuple[Parts, list]:
    t = op.operands[0].type
    return Parts(ctx, t), [ctx.get(v) for v in op.operands]


@rule("complex.make")
def lower_complex_make(ctx, op):
    p = Parts(ctx, op.type)
    return p.make(*ctx.operands(op))


@rule("complex.real", "complex.imag")
def lower_complex_part(ctx, op):
    p, (z,) = complex_operands(ctx, op)
    return p.split(z)[op.name == "complex.imag"]


@rule("complex.mul")
def lower_complex_mul(ctx, op):
    p, (x, y) = complex_operands(ctx, op)
    (a, b), (c, d) = p.split(x), p.split(y)
    return p.make(p.sub(p.mul(a, c), p.mul(b, d)), p.add(p.mul(a, d), p.mul(b, c)))


@rule("complex.div")
def lower_complex_div(ctx, op):
    """NumPy's complex ``divide`` loop, branch for branch (as selects)."""
    p, (x, y) = complex_operands(ctx, op)
    (ar, ai), (br, bi) = p.split(x), p.split(y)
    abs_r, abs_i = p.fn("fabs", br), p.fn("fabs", bi)
    # |br| >= |bi|: divide by br first.
    rat = p.div(bi, br)
    scl = p.div(p.c(1.0), p.add(br, p.mul(bi, rat)))
    real_first = p.make(p.mul(p.add(ar, p.mul(ai, rat)), scl),
                        p.mul(p.sub(ai, p.mul(ar, rat)), scl))
    # b == 0: a complex inf or nan, as NumPy gives.
    by_zero = p.make(p.div(ar, abs_r), p.div(ai, abs_r))
    zero = ctx.builder.and_(p.cmp("==", abs_r, p.c(0.0)), p.cmp("==", abs_i, p.c(0.0)))
    real_first = p.select(zero, by_zero, real_first)
    # |br| < |bi| (or a NaN part): divide by bi first.
    rat = p.div(br, bi)
    scl = p.div(p.c(1.0), p.add(bi, p.mul(br, rat)))
    imag_first = p.make(p.mul(p.add(p.mul(ar, rat), ai), scl),
                        p.mul(p.sub(p.mul(ai, rat), ar), scl))
    return p.select(p.cmp(">=", abs_r, abs_i), real_first, imag_first)


@rule("complex.abs")
def lower_complex_abs(ctx, op):
    p, (z,) = complex_operands(ctx, op)
    return p.fn("hypot", *p.split(z))


@rule("complex.arg")
def lower_complex_arg(ctx, op):
    p, (z,) = complex_operands(ctx, op)
    re, im = p.split(z)
    return p.fn("atan2", im, re)


@rule("complex.sqrt")
def lower_complex_sqrt(ctx, op):
    p, (z,) = complex_operands(ctx, op)
    a, b = p.split(z)
    ax, ay, bld = p.fn("fabs", a), p.fn("fabs", b), ctx.builder
    # Scale so that |a| + hypot(a, b) cannot overflow (FreeBSD's THRESH is max * (sqrt(2)
    # - 1)), or up when both parts are subnormal (the square root halves the exponent).
    thresh = p.c(float(p.info.max) * (math.sqrt(2) - 1))
    big = bld.or_(p.cmp(">=", ax, thresh), p.cmp(">=", ay, thresh))
    least = p.c(float(p.info.tiny))          # the smallest normal number
    tiny = bld.and_(p.cmp("<", ax, least), p.cmp("<", ay, least))
    up = 2 * (p.info.nmant + 1)               # 2**54 for double, 2**24 for float
    s_in = p.select(big, p.c(0.25), p.select(tiny, p.c(2.0 ** up), p.c(1.0)))
    s_out = p.select(big, p.c(2.0), p.select(tiny, p.c(2.0 ** (-up // 2)), p.c(1.0)))
    sa, sb = p.mul(a, s_in), p.mul(b, s_in)
    h = p.fn("hypot", sa, sb)
    t_pos = p.fn("sqrt", p.mul(p.add(sa, h), p.c(0.5)))
    t_neg = p.fn("sqrt", p.mul(p.sub(h, sa), p.c(0.5)))
    positive = p.cmp(">=", a, p.c(0.0))
    re = p.select(positive, t_pos, p.div(p.fn("fabs", sb), p.mul(p.c(2.0), t_neg)))
    im = p.select(positive, p.div(sb, p.mul(p.c(2.0), t_pos)), p.fn("copysign", t_neg, sb))
    result = p.make(p.mul(re, s_out), p.mul(im, s_out))
    # C99 G.6.4.2, the last case applied first (the earlier ones take precedence).
    nan = p.c(np.nan)
    inf = p.c(np.inf)
    both_nan = p.make(nan, nan)
    b_minus_b = p.sub(b, b)                    # 0, or NaN when b is NaN
    result = p.select(p.isnan(b), both_nan, result)
    a_inf = p.select(bld.fcmp_ordered("<", a, p.c(0.0)),
                     p.make(p.fn("fabs", b_minus_b), p.fn("copysign", a, b)),
                     p.make(a, p.fn("copysign", b_minus_b, b)))
    result = p.select(p.isinf(a), a_inf, result)
    result = p.select(p.isnan(a), both_nan, result)
    result = p.select(p.isinf(b), p.make(inf, b), result)
    zero = bld.and_(p.cmp("==", a, p.c(0.0)), p.cmp("==", b, p.c(0.0)))
    return p.select(zero, p.make(p.c(0.0), b), result)


@rule("complex.exp")
def lower_complex_exp(ctx, op):
    p, (z,) = complex_operands(ctx, op)
    x, y = p.split(z)
    bld = ctx.builder
    c, s = p.fn("cos", y), p.fn("sin", y)
    e = p.fn("exp", x)
    result = p.make(p.mul(e, c), p.mul(e, s))
    # e**x overflows above log(max) although e**x * cos(y) may not.
    result = p.select(p.exp_overflows(x), p.make(*p.scaled_exp(x, c, s)), result)
    # C99 G.6.3.1: y == 0 gives exp(x) + i y exactly; x = -inf with y inf or NaN gives
    # 0 + 0i, x = +inf with them inf + NaN i.
    finite_y = p.cmp("<", p.fn("fabs", y), p.c(np.inf))
    x_minus_inf = bld.and_(p.cmp("==", x, p.c(-np.inf)), bld.not_(finite_y))
    result = p.select(x_minus_inf, p.make(p.c(0.0), p.c(0.0)), result)
    x_plus_inf = bld.and_(p.cmp("==", x, p.c(np.inf)), bld.not_(finite_y))
    result = p.select(x_plus_inf, p.make(x, p.sub(y, y)), result)
    return p.select(p.cmp("==", y, p.c(0.0)), p.make(e, y), result)


@rule("complex.log")
def lower_complex_log(ctx, op):
    p, (z,) = complex_operands(ctx, op)
    return p.make(*log_parts(p, *p.split(z)))


def log_parts(p: Parts, x, y) -> tuple:
    """(real, imaginary) of ``log(x + iy)``: ``log|z| + i atan2(y, x)``; C99 G.6.3.2's
    NaN + iNaN for a NaN real part with a finite imaginary one."""
    ax, ay = p.fn("fabs", x), p.fn("fabs", y)
    re, im = log_modulus(p, ax, ay), p.fn("atan2", y, x)
    nan_x = p.all(p.isnan(ax), p.cmp("<", ay, p.c(np.inf)))
    return p.pick(nan_x, (ax, p.c(np.nan)), (re, im))


def log_modulus(p: Parts, ax, ay):
    """``log(hypot(ax, ay))`` of two magnitudes, CPython's ``cmath.log`` real part
    (NumPy's ``npy_clog``): rescaled where ``|z|`` overflows or both parts are
    subnormal, ``log1p`` for ``|z|`` in [0.71, 1.73]."""
    bld = p.b
    h = p.fn("hypot", ax, ay)
    larger = p.cmp(">", ax, ay)
    am, an = p.select(larger, ax, ay), p.select(larger, ay, ax)
    near = p.mul(p.fn("log1p", p.add(p.mul(p.sub(am, p.c(1.0)), p.add(am, p.c(1.0))),
                                     p.mul(an, an))), p.c(0.5))
    re = p.select(bld.and_(p.cmp(">=", h, p.c(0.71)), p.cmp("<=", h, p.c(1.73))),
                  near, p.fn("log", h))
    ln2, digits = p.c(math.log(2)), p.info.nmant + 1
    # Both parts subnormal (and not both zero): scaled up by 2**digits first.
    up = p.c(2.0 ** digits)
    scaled = p.sub(p.fn("log", p.fn("hypot", p.mul(ax, up), p.mul(ay, up))),
                   p.c(digits * math.log(2)))
    least = p.c(float(p.info.tiny))
    subnormal = bld.and_(bld.and_(p.cmp("<", ax, least), p.cmp("<", ay, least)),
                         bld.or_(p.cmp(">", ax, p.c(0.0)), p.cmp(">", ay, p.c(0.0))))
    re = p.select(subnormal, scaled, re)
    # A part above max / 4: |z| / 2 cannot overflow.
    quarter = p.c(float(p.info.max) / 4)
    halved = p.add(p.fn("log", p.fn("hypot", p.mul(ax, p.c(0.5)), p.mul(ay, p.c(0.5)))), ln2)
    return p.select(bld.or_(p.cmp(">", ax, quarter), p.cmp(">", ay, quarter)), halved, re)
